/* SPDX-License-Identifier: MIT */
/*
 * cordon: the command line. argv → profile + request → cordon_run() → print → exit status.
 * Exit statuses (SPEC §2): the command's own; 124 timeout; 125 cordon failed (one line on
 * stderr, nothing ran); 126 refused by the policy.
 */
#define _GNU_SOURCE
#include <cordon/cordon.h>

#include "backends/backend.h"
#include "backends/docker/agent.h"
#include "backends/docker/docker.h"
#include "backends/local/doctor.h"
#include "runtime/cleanup.h"
#include "runtime/fsutil.h"
#include "runtime/cli/client.h"
#include "runtime/daemon/daemon.h"
#include "runtime/profile.h"
#include "runtime/result.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <jansson.h>

static volatile int cancelled;

static void on_signal(int sig)
{
	cancelled = sig;
}

/* SIGINT, SIGTERM and SIGHUP set `cancelled` (the run in progress ends, reported as theirs). */
static void watch_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	(void)sigaction(SIGINT, &sa, NULL);
	(void)sigaction(SIGTERM, &sa, NULL);
	(void)sigaction(SIGHUP, &sa, NULL);
}

int cli_fail(const char *fmt, ...)
{
	va_list ap;

	fputs("cordon: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return CORDON_EXIT_FAILURE;
}

static int fail_err(const cordon_error *e)
{
	char buf[512];

	return cli_fail("%s", cordon_err_str(e, buf, sizeof(buf)));
}

/*
 * The subcommands, one row each (the table is at the end of this file): what `cordon --help`
 * lists and `cordon NAME --help` prints. run and check parse their own options
 * (parse_run_opts); the others share parse_small, driven by the row: its options, how many
 * operands it takes and the function that does the work. Every one has -h/--help (usage on
 * stdout, exit 0); an option it does not know, or one without its value, is one line naming
 * it and exit 125 (SPEC §2), as for run.
 */
struct small_args {
	const char *workdir; /* -w, --workdir */
	const char *backend; /* -b, --backend */
	const char *profile; /* -p, --profile */
	int argc;	     /* the operands */
	char **argv;
};

struct subcommand {
	const char *name;
	const char *synopsis; /* after "cordon NAME" */
	const char *summary;  /* one line, for `cordon --help` */
	const char *help;     /* the rest of `cordon NAME --help` */
	/* run and check: the whole argv (argv[0] is the name) */
	int (*raw)(const struct subcommand *sc, int argc, char **argv);
	/* the others: their options (each with a short letter, plus help), operands, work */
	const struct option *options;
	int min_args, max_args;
	int (*run)(const struct small_args *a);
};

static void print_usage(const struct subcommand *sc, FILE *f)
{
	fprintf(f, "Usage: cordon %s%s%s\n\n%s", sc->name, *sc->synopsis ? " " : "", sc->synopsis,
		sc->help);
}

/*
 * The long option of opts that argv[optind - 1] gave a value it does not take (--keep=1), or
 * NULL. getopt_long answers that with '?' and optopt set to the option's val, which is neither
 * an unknown option's 0 nor a letter to print (OPT_KEEP is 256): without this, the line named
 * "-" or "-h". Matched by the name as written (getopt takes unambiguous prefixes, --kee=1)
 * and val, so an unknown short option after "--env=A=1" is not taken for it.
 */
static const struct option *value_not_taken(const struct option *opts, char **argv)
{
	const char *a = argv[optind - 1], *eq;

	if (optopt == 0 || strncmp(a, "--", 2) != 0 || !(eq = strchr(a, '=')))
		return NULL;
	for (const struct option *o = opts; o->name; o++)
		if (o->has_arg == no_argument && o->val == optopt &&
		    strncmp(o->name, a + 2, (size_t)(eq - a - 2)) == 0)
			return o;
	return NULL;
}

/* getopt's ':' (an option without its value) or '?' (an unknown one, or a value given to one
 * that takes none), in one line naming it. */
static int option_error(const struct subcommand *sc, const struct option *opts, int c, char **argv)
{
	char shortopt[3] = { '-', (char)optopt, '\0' };
	const struct option *o;

	if (c == ':')
		return cli_fail("%s: option '%s' needs a value", sc->name, argv[optind - 1]);
	if ((o = value_not_taken(opts, argv)))
		return cli_fail("%s: option '--%s' takes no value (see cordon %s --help)", sc->name,
				o->name, sc->name);
	/* optopt is the letter of an unknown short option (maybe inside a cluster: -kZ), and 0
	 * for an unknown long one, which optind has passed. */
	return cli_fail("%s: unknown option '%s' (see cordon %s --help)", sc->name,
			optopt ? shortopt : argv[optind - 1], sc->name);
}

#define RUN_OPTIONS_HELP                                                                           \
	"Options (each also settable in a profile; the command line wins):\n"                      \
	"  -p, --profile NAME|PATH      profile to load (default: default)\n"                      \
	"  -b, --backend local|docker|daytona\n"                                                   \
	"                               where to run (default: the profile's, else local)\n"       \
	"  -w, --workdir DIR            working directory, bind-mounted read-write; created if\n"  \
	"                               missing (default: a fresh temp dir, removed afterwards)\n" \
	"      --keep                   keep the temp workdir and print its path on stderr\n"      \
	"      --allow PATTERN          add to the allow-list (AG2 `allowed`)\n"                   \
	"      --block PATTERN          add to the block-list (AG2 `blocked`)\n"                   \
	"      --ignore GLOB            add an ignored path pattern (AG2 `ignore`)\n"              \
	"      --readonly               AG2 read-only mode, and the workdir mounted read-only\n"   \
	"                               (unless --allow is given: AG2's explicit list wins)\n"     \
	"      --policy-mode compat|strict\n"                                                      \
	"                               AG2's filter byte for byte, or its restricted mode\n"      \
	"  -e, --env KEY=VALUE          set a variable for the command\n"                          \
	"  -t, --timeout SECONDS        wall-clock limit, decimal > 0 (default 60)\n"              \
	"      --max-output N           output cap in characters, integer >= 0 (default 100000)\n" \
	"      --network none|host      private network namespace, or the host's (default none)\n" \
	"      --image IMAGE            docker image / daytona image (built FROM it; replaces\n"   \
	"                               the profile's snapshot)\n"                                 \
	"      --format text|json       output format (default text)\n"                            \
	"      --via auto|daemon|direct\n"                                                         \
	"                               through cordond's socket, or in this process (default\n"   \
	"                               auto: the daemon when its socket answers)\n"               \
	"      --stdin                  pass stdin to the command (default: /dev/null)\n"          \
	"  -h, --help                   show this help\n"

enum {
	OPT_KEEP = 256,
	OPT_ALLOW,
	OPT_BLOCK,
	OPT_IGNORE,
	OPT_READONLY,
	OPT_POLICY_MODE,
	OPT_MAX_OUTPUT,
	OPT_NETWORK,
	OPT_IMAGE,
	OPT_FORMAT,
	OPT_VIA,
	OPT_STDIN,
};

static const struct option run_options[] = {
	{ "profile", required_argument, NULL, 'p' },
	{ "backend", required_argument, NULL, 'b' },
	{ "workdir", required_argument, NULL, 'w' },
	{ "keep", no_argument, NULL, OPT_KEEP },
	{ "allow", required_argument, NULL, OPT_ALLOW },
	{ "block", required_argument, NULL, OPT_BLOCK },
	{ "ignore", required_argument, NULL, OPT_IGNORE },
	{ "readonly", no_argument, NULL, OPT_READONLY },
	{ "policy-mode", required_argument, NULL, OPT_POLICY_MODE },
	{ "env", required_argument, NULL, 'e' },
	{ "timeout", required_argument, NULL, 't' },
	{ "max-output", required_argument, NULL, OPT_MAX_OUTPUT },
	{ "network", required_argument, NULL, OPT_NETWORK },
	{ "image", required_argument, NULL, OPT_IMAGE },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "via", required_argument, NULL, OPT_VIA },
	{ "stdin", no_argument, NULL, OPT_STDIN },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

/* The command line's settings, applied on top of the loaded profile. */
struct cli_opts {
	const char *profile;
	const char *backend;
	const char *workdir;
	bool keep;
	struct cordon_list allow, block, ignore, env;
	bool readonly;
	int mode; /* -1: the profile's */
	const char *timeout;
	const char *max_output;
	int network; /* -1: the profile's */
	const char *image;
	bool json;
	const char *via;
	bool pass_stdin;
};

static void cli_opts_free(struct cli_opts *o)
{
	cordon_list_free(&o->allow);
	cordon_list_free(&o->block);
	cordon_list_free(&o->ignore);
	cordon_list_free(&o->env);
}

static bool valid_env_name(const char *s, size_t n)
{
	if (n == 0 || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(s[i] == '_' || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9')))
			return false;
	return true;
}

/* Parse run/check options; returns 0, or an exit status (125 on a bad option, 0 for --help
 * through *done). */
static int parse_run_opts(const struct subcommand *sc, int argc, char **argv, struct cli_opts *o,
			  int *ret_optind, bool *done)
{
	cordon_error e = { 0 };
	int c;

	*o = (struct cli_opts){ .profile = "default", .mode = -1, .network = -1, .via = "auto" };
	optind = 1;
	opterr = 0;
	/* '+': stop at the first word of the command, so `cordon run ls -la` works. */
	while ((c = getopt_long(argc, argv, "+:p:b:w:e:t:h", run_options, NULL)) != -1) {
		switch (c) {
		case 'p':
			o->profile = optarg;
			break;
		case 'b':
			if (strcmp(optarg, "local") && strcmp(optarg, "docker") &&
			    strcmp(optarg, "daytona"))
				return cli_fail(
					"--backend: unknown backend '%s' (expected local, docker "
					"or daytona)",
					optarg);
			o->backend = optarg;
			break;
		case 'w':
			if (!*optarg)
				return cli_fail("--workdir: empty path");
			o->workdir = optarg;
			break;
		case OPT_KEEP:
			o->keep = true;
			break;
		case OPT_ALLOW:
			if (cordon_list_add(&o->allow, optarg, &e) < 0)
				return fail_err(&e);
			break;
		case OPT_BLOCK:
			if (cordon_list_add(&o->block, optarg, &e) < 0)
				return fail_err(&e);
			break;
		case OPT_IGNORE:
			if (cordon_list_add(&o->ignore, optarg, &e) < 0)
				return fail_err(&e);
			break;
		case OPT_READONLY:
			o->readonly = true;
			break;
		case OPT_POLICY_MODE:
			if (!strcmp(optarg, "compat"))
				o->mode = CORDON_MODE_COMPAT;
			else if (!strcmp(optarg, "strict"))
				o->mode = CORDON_MODE_STRICT;
			else
				return cli_fail(
					"--policy-mode: invalid mode '%s' (expected compat or "
					"strict)",
					optarg);
			break;
		case 'e': {
			const char *eq = strchr(optarg, '=');

			if (!eq || !valid_env_name(optarg, (size_t)(eq - optarg)))
				return cli_fail(
					"--env: expected KEY=VALUE with a valid variable name, "
					"got '%s'",
					optarg);
			if (cordon_list_add(&o->env, optarg, &e) < 0)
				return fail_err(&e);
			break;
		}
		case 't': {
			double d;

			if (profile_parse_seconds(optarg, &d, &e) < 0)
				return cli_fail("--timeout: %s", e.msg);
			o->timeout = optarg;
			break;
		}
		case OPT_MAX_OUTPUT: {
			int64_t n;

			if (profile_parse_count(optarg, &n, &e) < 0)
				return cli_fail("--max-output: %s", e.msg);
			o->max_output = optarg;
			break;
		}
		case OPT_NETWORK:
			if (!strcmp(optarg, "none"))
				o->network = CORDON_NET_NONE;
			else if (!strcmp(optarg, "host"))
				o->network = CORDON_NET_HOST;
			else
				return cli_fail(
					"--network: invalid value '%s' (expected none or host)",
					optarg);
			break;
		case OPT_IMAGE:
			if (!*optarg)
				return cli_fail("--image: empty image name");
			o->image = optarg;
			break;
		case OPT_FORMAT: /* the last one wins, as for every option */
			if (!strcmp(optarg, "json") || !strcmp(optarg, "text"))
				o->json = !strcmp(optarg, "json");
			else
				return cli_fail(
					"--format: invalid value '%s' (expected text or json)",
					optarg);
			break;
		case OPT_VIA:
			if (strcmp(optarg, "auto") && strcmp(optarg, "daemon") &&
			    strcmp(optarg, "direct"))
				return cli_fail(
					"--via: invalid value '%s' (expected auto, daemon or "
					"direct)",
					optarg);
			o->via = optarg;
			break;
		case OPT_STDIN:
			o->pass_stdin = true;
			break;
		case 'h':
			print_usage(sc, stdout);
			*done = true;
			return 0;
		default:
			return option_error(sc, run_options, c, argv);
		}
	}
	*ret_optind = optind;
	return 0;
}

static int append_list(struct cordon_list *dst, const struct cordon_list *src, cordon_error *e)
{
	for (size_t i = 0; i < src->n; i++)
		if (cordon_list_add(dst, src->v[i], e) < 0)
			return -1;
	return 0;
}

static int set_string(char **dst, const char *s, cordon_error *e)
{
	char *d = strdup(s);

	if (!d)
		return cordon_err(e, ENOMEM, "out of memory");
	free(*dst);
	*dst = d;
	return 0;
}

/*
 * The Daytona backend lives in cordon-remote, the same CLI linked dynamically with libcurl
 * (docs/daytona.md says why this one is static). A command that needs it is handed over whole:
 * the program next to this one (a build tree), else the installed one in LIBEXECDIR, checked
 * like a binary root would run (a regular file owned by root or by this binary's owner,
 * writable by no one else), and exec'd through the fd that was checked.
 */
static char **main_argv;
static bool remote_handoff; /* this process is cordon-remote, exec'd by cordon */
extern int daytona_gc(const struct cordon_profile *p, unsigned *ret_removed, unsigned *ret_skipped,
		      cordon_error *e) __attribute__((weak));

/*
 * The usable cordon-remote: an O_PATH fd of it, its path in path (PATH_MAX + 32 bytes), and in
 * dir the directory searched first; -1 when there is none.
 */
static int find_remote(char *path, char *dir)
{
	char self[PATH_MAX], cand[2][PATH_MAX + 32];
	struct stat me, st;
	ssize_t n;

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0 || stat("/proc/self/exe", &me) < 0)
		return -1;
	self[n] = '\0';
	memcpy(dir, self, (size_t)n + 1);
	*strrchr(dir, '/') = '\0';
	(void)snprintf(cand[0], sizeof(cand[0]), "%s/cordon-remote", dir);
	(void)snprintf(cand[1], sizeof(cand[1]), "%s/cordon-remote", CORDON_LIBEXECDIR);
	for (int i = 0; i < 2; i++) {
		int fd = open(cand[i], O_PATH | O_CLOEXEC);

		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & S_IXUSR) &&
		    !(st.st_mode & (S_IWGRP | S_IWOTH)) &&
		    (st.st_uid == 0 || st.st_uid == me.st_uid)) {
			memcpy(path, cand[i], sizeof(cand[i]));
			return fd;
		}
		close(fd);
	}
	return -1;
}

static int exec_remote(const char *backend)
{
	char path[PATH_MAX + 32], dir[PATH_MAX] = "?";
	_cleanup_close_ int fd = -1;

	if (remote_handoff)
		return cli_fail("backend '%s' is not available in this build (cordon-remote lacks "
				"it too)",
				backend);
	fd = find_remote(path, dir);
	if (fd < 0)
		return cli_fail("backend '%s' needs cordon-remote, which is not in %s nor in %s",
				backend, dir, CORDON_LIBEXECDIR);
	if (setenv("CORDON_REMOTE_HANDOFF", "1", 1) < 0)
		return cli_fail("out of memory");
	(void)syscall(SYS_execveat, fd, "", main_argv, environ, AT_EMPTY_PATH);
	return cli_fail("backend '%s': exec %s: %s", backend, path, strerror(errno));
}

/* Load the profile and put the command line on top of it. */
static int resolve_profile(const struct cli_opts *o, struct cordon_profile **ret, cordon_error *e)
{
	struct cordon_profile *p = NULL;

	if (cordon_profile_load(o->profile, &p, e) < 0)
		return -1;
	if (append_list(&p->allowed, &o->allow, e) < 0 ||
	    append_list(&p->blocked, &o->block, e) < 0 ||
	    append_list(&p->ignore, &o->ignore, e) < 0 || append_list(&p->env, &o->env, e) < 0)
		goto fail;
	if (o->readonly)
		p->readonly = true;
	if (o->mode >= 0)
		p->mode = (enum cordon_mode)o->mode;
	if (o->network >= 0)
		profile_set_network(p, (enum cordon_network)o->network);
	if (o->backend && set_string(&p->backend, o->backend, e) < 0)
		goto fail;
	if (o->timeout) {
		if (profile_parse_seconds(o->timeout, &p->timeout, e) < 0 ||
		    set_string(&p->timeout_text, o->timeout, e) < 0)
			goto fail;
	}
	if (o->max_output && profile_parse_count(o->max_output, &p->max_output, e) < 0)
		goto fail;
	if (o->image) {
		if (set_string(&p->docker_image, o->image, e) < 0 ||
		    set_string(&p->daytona_image, o->image, e) < 0)
			goto fail;
		/* Daytona: --image replaces the profile's snapshot (docs/daytona.md), as
		 * cordond's session "image" does. */
		free(p->daytona_snapshot);
		p->daytona_snapshot = NULL;
	}
	*ret = p;
	return 0;
fail:
	cordon_profile_free(p);
	return -1;
}

/* Words joined by single spaces, as SPEC §2 says. */
static char *join_words(int argc, char **argv)
{
	size_t len = 1;
	char *s, *q;

	for (int i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	s = malloc(len);
	if (!s)
		return NULL;
	q = s;
	for (int i = 0; i < argc; i++) {
		size_t n = strlen(argv[i]);

		if (i)
			*q++ = ' ';
		memcpy(q, argv[i], n);
		q += n;
	}
	*q = '\0';
	return s;
}

static int cmd_run(const struct subcommand *sc, int argc, char **argv)
{
	_cleanup_free_ char *command = NULL;
	struct cordon_profile *profile = NULL;
	struct cli_opts o;
	cordon_error e = { 0 };
	bool check_only = !strcmp(sc->name, "check"), done = false;
	int first = 0, rc;

	rc = parse_run_opts(sc, argc, argv, &o, &first, &done);
	if (rc || done)
		goto out;
	if (first >= argc) {
		rc = cli_fail("%s: no command given (see cordon run --help)", argv[0]);
		goto out;
	}
	command = join_words(argc - first, argv + first);
	if (!command) {
		rc = cli_fail("out of memory");
		goto out;
	}
	if (command[strspn(command, " \t\n")] == '\0') {
		rc = cli_fail("%s: empty command", argv[0]);
		goto out;
	}
	/* Option values are checked here whichever way the run goes (the daemon checks again). */
	if (o.timeout && profile_parse_seconds(o.timeout, &(double){ 0 }, &e) < 0) {
		rc = fail_err(&e);
		goto out;
	}
	if (o.max_output && profile_parse_count(o.max_output, &(int64_t){ 0 }, &e) < 0) {
		rc = fail_err(&e);
		goto out;
	}
	if (o.backend && !backend_lookup(o.backend)) {
		rc = strcmp(o.backend, "daytona")
			     ? cli_fail("backend '%s' is not available in this build", o.backend)
			     : exec_remote(o.backend);
		goto out;
	}
	/*
	 * cordond's socket, when it refused this caller and the run went on here (--via auto): a
	 * direct run that cannot be set up says so too, since the daemon is how this host meant
	 * such runs to go (where unprivileged user namespaces are off, or /proc is masked, as in
	 * many containers, only it can sandbox them).
	 */
	const char *refused_by = NULL;

	if (!check_only && strcmp(o.via, "direct") != 0) {
		/*
		 * Through cordond (runtime/cli/client.c): auto falls back to a direct run only when
		 * no daemon answers or the daemon cannot express the request. The daemon loads the
		 * profile itself (by name), so it is not loaded here first.
		 */
		const char *sock = client_socket_path();
		/*
		 * Under --via auto the CLI sends cordond local runs only. A Docker run
		 * (--backend docker, or a profile that names it) is then the caller's, with the
		 * caller's own access to Docker, as it was before cordond served them. --via daemon
		 * sends it to cordond: a one-shot session with cordond's access and its rules for
		 * members (the images the administrator allows: docs/daemon.md).
		 */
		bool daemon_only = !strcmp(o.via, "daemon"), unreachable = false;
		bool other_backend = o.backend && strcmp(o.backend, "local");
		const char *why =
			other_backend && !daemon_only
				? "the CLI sends cordond local runs only under --via auto "
				  "(--backend docker runs directly; --via daemon sends it)"
				: client_cannot_send(o.profile, o.pass_stdin, o.image, command,
						     o.workdir, &o.env, &o.allow, &o.block,
						     &o.ignore);
		struct cordon_profile *pp = NULL;
		const char *own_path = getenv("CORDON_PROFILE_PATH");
		char digest[17] = "";
		double run_timeout = 0;
		cordon_error pe;

		/* Nor, under auto, a profile that names another backend (a profile that does not
		 * load is left to the daemon, which says so). Loaded for its timeout too. */
		if (!why && (!o.backend || other_backend) &&
		    cordon_profile_load(o.profile, &pp, &pe) < 0)
			pp = NULL;
		if (!why && pp && !o.backend && !daemon_only && strcmp(pp->backend, "local"))
			why = "the CLI sends cordond local runs only under --via auto (the profile "
			      "names another backend; --via daemon sends it)";
		/*
		 * With a CORDON_PROFILE_PATH of ours, our profile of that name may not be
		 * cordond's: it compares their digests (a mismatch runs here under auto).
		 */
		if (!why && pp && own_path && *own_path && profile_digest(pp, digest, &pe) < 0)
			digest[0] = '\0';
		if (pp)
			run_timeout = pp->timeout;
		if (o.timeout)
			(void)profile_parse_seconds(o.timeout, &run_timeout, &pe);
		cordon_profile_free(pp);

		if (why && daemon_only) {
			rc = cli_fail("--via daemon: %s", why);
			goto out;
		}
		if (!why) {
			struct client_request cr = {
				.socket_path = sock,
				.command = command,
				.profile = o.profile,
				.workdir = o.workdir,
				.keep = o.keep,
				.allow = &o.allow,
				.block = &o.block,
				.ignore = &o.ignore,
				.env = &o.env,
				.readonly = o.readonly,
				.mode = o.mode,
				.network = o.network,
				.timeout = o.timeout,
				.max_output = o.max_output,
				.backend = o.backend,
				.json = o.json,
				.profile_digest = digest[0] ? digest : NULL,
				/* The run's own timeout, cordond's grace and a margin (60 s without). */
				.answer_wait_s = (run_timeout > 0 ? run_timeout : 60) + 30,
				.quiet_profile_mismatch = !daemon_only,
				.cancel = &cancelled,
			};

			watch_signals();
			(void)signal(SIGPIPE, SIG_IGN);
			rc = client_run(&cr, &unreachable);
			int err = errno; /* connect()'s, when unreachable */

			if (!unreachable)
				goto out;
			/* cordond's profile of that name is another file: run it here, as ours. */
			if (err == ENOTSUP)
				goto direct;
			/*
			 * The socket is there and its mode keeps this caller out: cordond does not
			 * serve them. --via auto runs here then, as SPEC §2 has it ("daemon if its
			 * socket answers, else direct"): a direct run is as confined, in the
			 * caller's own user namespace. --via daemon says why it cannot.
			 */
			if ((err == EACCES || err == EPERM) && daemon_only) {
				rc = cli_fail("--via %s: permission denied on cordond's socket %s "
					      "(only root and members of group cordon may use it; "
					      "--via direct runs without it)",
					      o.via, sock);
				goto out;
			}
			if (err == EACCES || err == EPERM)
				refused_by = sock;
			if (daemon_only) {
				rc = cli_fail("--via daemon: cordond is not reachable at %s: %s",
					      sock, strerror(err));
				goto out;
			}
		}
	}

direct:
	if (resolve_profile(&o, &profile, &e) < 0) {
		rc = fail_err(&e);
		goto out;
	}
	if (!backend_lookup(profile->backend)) {
		rc = strcmp(profile->backend, "daytona")
			     ? cli_fail("backend '%s' is not available in this build",
					profile->backend)
			     : exec_remote(profile->backend);
		goto out;
	}

	struct cordon_request rq = {
		.command = command,
		.profile = profile,
		.workdir = o.workdir,
		.workdir_fd = -1, /* the sandbox opens the resolved path itself */
		.keep = o.keep,
		.pass_stdin = o.pass_stdin,
		.stdin_fd = 0,
		.cancel = &cancelled,
	};

	if (check_only) {
		_cleanup_free_ char *refusal = NULL;

		if (cordon_check(&rq, &refusal, &e) < 0) {
			rc = fail_err(&e);
			goto out;
		}
		if (o.json) {
			/* The refusal quotes the command's bytes ("Access denied: <path>" as
			 * they are): "s?" refused one that is not UTF-8 and nothing was printed. */
			json_t *j = json_pack("{s:b,s:o}", "allowed", !refusal, "refused",
					      result_json_text(refusal));
			char *s = j ? json_dumps(j, JSON_PRESERVE_ORDER) : NULL;

			if (s)
				printf("%s\n", s);
			free(s);
			json_decref(j);
		} else {
			printf("%s\n", refusal ? refusal : "allowed");
		}
		rc = refusal ? CORDON_EXIT_REFUSED : 0;
		goto out;
	}

	watch_signals();
	/* A closed stdout must give EPIPE to us, not kill cordon before it cleans up. */
	(void)signal(SIGPIPE, SIG_IGN);

	int out_err = 0;
	struct cordon_result res;
	if (cordon_run(&rq, &res, &e) < 0) {
		char buf[512];

		rc = refused_by && !cancelled
			     ? cli_fail("%s (cordond's socket %s refused this user: only root and "
					"members of group cordon may use it)",
					cordon_err_str(&e, buf, sizeof(buf)), refused_by)
			     : fail_err(&e);
		/* Cut short by a signal (a hung dockerd's call): the signal's status, as a run's. */
		if (cancelled)
			rc = 128 + cancelled;
		goto out;
	}
	if (o.keep && !o.workdir)
		fprintf(stderr, "cordon: kept workdir %s\n", res.workdir);
	if (o.json) {
		_cleanup_free_ char *js = NULL;

		if (cordon_result_to_json(&res, &js, &e) < 0) {
			cordon_result_free(&res);
			rc = fail_err(&e);
			goto out;
		}
		if (fsutil_write_all(1, js, strlen(js)) < 0 || fsutil_write_all(1, "\n", 1) < 0)
			out_err = errno;
	} else if (fsutil_write_all(1, res.output, res.output_len) < 0 ||
		   fsutil_write_all(1, "\n", 1) < 0) {
		out_err = errno;
	}
	/*
	 * The status is the printed result's: a signal that cut the run short is in it
	 * (terminated by that signal: 128 + n), one that came after the command's end is not.
	 */
	rc = res.status;
	cordon_result_free(&res);
	if (out_err)
		rc = cancelled ? 128 + cancelled
			       : cli_fail("writing the result: %s", strerror(out_err));
out:
	cordon_profile_free(profile);
	cli_opts_free(&o);
	return rc;
}

static int cmd_profiles(const struct small_args *a)
{
	char **lines = NULL;
	cordon_error e = { 0 };

	if (profile_list(&lines, &e) < 0)
		return fail_err(&e);
	for (char **l = lines; l && *l; l++) {
		char *name = *l, *path = strchr(name, '\t'), *desc = NULL;

		if (path) {
			*path++ = '\0';
			desc = strchr(path, '\t');
			if (desc)
				*desc++ = '\0';
		}
		printf("%-16s %-40s %s\n", name, path ? path : "", desc ? desc : "");
		free(*l);
	}
	free(lines);
	return 0;
}

static int cmd_profile(const struct small_args *a)
{
	struct cordon_profile *p = NULL;
	_cleanup_free_ char *text = NULL;
	cordon_error e = { 0 };

	if (a->argc != 2 || strcmp(a->argv[0], "show"))
		return cli_fail("usage: cordon profile show NAME");
	if (cordon_profile_load(a->argv[1], &p, &e) < 0)
		return fail_err(&e);
	if (cordon_profile_format(p, &text, &e) < 0) {
		cordon_profile_free(p);
		return fail_err(&e);
	}
	fputs(text, stdout);
	cordon_profile_free(p);
	return 0;
}

static int cmd_tool_schema(const struct small_args *a)
{
	const char *workdir = a->workdir;
	_cleanup_free_ char *desc = NULL, *out = NULL;
	json_t *j;

	if (workdir && !*workdir)
		return cli_fail("tool-schema: --workdir: empty path");
	/* AG2's SandboxShellTool description, rendered with its workdir. */
	if (asprintf(&desc, "Execute a shell command in the working directory: %s",
		     workdir ? workdir : "(a fresh temporary directory per command)") < 0)
		return cli_fail("out of memory");
	j = json_pack("{s:s,s:{s:s,s:s,s:{s:s,s:{s:{s:s,s:s}},s:[s]}}}", "type", "function",
		      "function", "name", "run_shell_command", "description", desc, "parameters",
		      "type", "object", "properties", "command", "type", "string", "description",
		      "The shell command to run.", "required", "command");
	if (!j)
		return cli_fail("out of memory");
	out = json_dumps(j, JSON_PRESERVE_ORDER | JSON_INDENT(2));
	json_decref(j);
	if (!out)
		return cli_fail("out of memory");
	printf("%s\n", out);
	return 0;
}

static int cmd_doctor(const struct small_args *a)
{
	_cleanup_free_ char *text = NULL;
	cordon_error e = { 0 };

	if (doctor_report(a->workdir, &text, &e) < 0)
		return fail_err(&e);
	fputs(text, stdout);
	{
		_cleanup_free_ char *api = NULL, *server = NULL, *agent = NULL;
		cordon_error de = { 0 };
		char buf[300];

		/* The Docker backend is optional: its absence is a line, not a failure. */
		if (docker_probe(&api, &server, &de) == 0) {
			printf("docker: available; Engine %s, API %s (backend docker)\n",
			       server ? server : "?", api);
			agent = agent_binary();
			if (agent)
				printf("docker agent: %s (mounted into the containers)\n", agent);
			else
				printf("docker agent: none (no usable static cordon binary: "
				       "commands go through Docker's exec API)\n");
		} else
			printf("docker: unavailable (%s)\n", cordon_err_str(&de, buf, sizeof(buf)));
	}
	{
		/* The Daytona backend: its program and configuration, without a request (nor
		 * the key: only whether there is one). */
		char path[PATH_MAX + 32], dir[PATH_MAX] = "?";
		const char *key = getenv("DAYTONA_API_KEY"), *url = getenv("DAYTONA_API_URL");
		int fd = find_remote(path, dir);

		if (fd < 0) {
			printf("daytona: unavailable (no cordon-remote in %s nor in %s)\n", dir,
			       CORDON_LIBEXECDIR);
		} else {
			close(fd);
			printf("daytona: %s; DAYTONA_API_KEY %s; API %s (backend daytona)\n", path,
			       key && *key ? "set" : "not set (required)",
			       url && *url ? url : "https://app.daytona.io/api (the default)");
		}
	}
	return 0;
}

/*
 * What gc removed, and on a line of its own what it kept because it cannot prove them orphans
 * from here (backends/orphan.h): never silently, so that a gc run from the wrong place (another
 * pid namespace, a container) says why its orphans are still there.
 */
static int gc_report(const char *things, unsigned removed, const char *kept_things, unsigned kept,
		     const char *why)
{
	printf("removed %u orphaned %s\n", removed, things);
	if (kept)
		printf("kept %u %s that cannot be proven orphans from here (%s)\n", kept,
		       kept_things, why);
	return 0;
}

static int cmd_gc(const struct small_args *a)
{
	cordon_error e = { 0 };
	const char *backend = a->backend ? a->backend : "docker", *profile = a->profile;
	struct cordon_profile *p = NULL;
	unsigned n = 0, skipped = 0;
	int rc;

	if (!strcmp(backend, "docker")) {
		if (profile)
			return cli_fail("gc: --profile is for --backend daytona");
		if (docker_gc(&n, &skipped, &e) < 0)
			return fail_err(&e);
		return gc_report("container(s)", n, "container(s) of cordon's", skipped,
				 "another pid namespace or machine, a /proc that hides others' "
				 "processes, an older cordon's labels, or labels cordon did not "
				 "write");
	}
	if (strcmp(backend, "daytona"))
		return cli_fail("gc: invalid backend '%s' (expected docker or daytona)", backend);
	if (!daytona_gc)
		return exec_remote(backend);
	if (cordon_profile_load(profile ? profile : "default", &p, &e) < 0)
		return fail_err(&e);
	rc = daytona_gc(p, &n, &skipped, &e);
	cordon_profile_free(p);
	if (rc < 0)
		return fail_err(&e);
	return gc_report("sandbox(es)", n, "sandbox(es) of this machine", skipped,
			 "another pid namespace, a /proc that hides others' processes, or "
			 "labels cordon did not write");
}

static int cmd_version(const struct small_args *a)
{
	printf("cordon %s\n", CORDON_VERSION);
	return 0;
}

#define OPTION_HELP                                                                                \
	{                                                                                          \
		"help", no_argument, NULL, 'h'                                                     \
	}
static const struct option options_none[] = { OPTION_HELP, { 0 } };
static const struct option options_workdir[] = {
	{ "workdir", required_argument, NULL, 'w' },
	OPTION_HELP,
	{ 0 },
};
static const struct option options_gc[] = {
	{ "backend", required_argument, NULL, 'b' },
	{ "profile", required_argument, NULL, 'p' },
	OPTION_HELP,
	{ 0 },
};

#define HELP_ONLY "Options:\n  -h, --help          show this help\n"

static const struct subcommand subcommands[] = {
	{ "run", "[OPTIONS] [--] COMMAND...",
	  "run COMMAND (words joined by spaces) as `sh -c COMMAND`",
	  "Run COMMAND (its words joined by single spaces) as `sh -c COMMAND` in a sandbox, once\n"
	  "the policy allows it; print AG2's result string.\n\n" RUN_OPTIONS_HELP
	  "\nExit status: the command's own (a signal n gives 128+n); 124 when the timeout fired;\n"
	  "125 when cordon itself failed; 126 when the policy refused the command.\n",
	  .raw = cmd_run },
	{ "check", "[OPTIONS] [--] COMMAND...", "policy decision only; runs nothing",
	  "The policy's decision on COMMAND, as `cordon run` would take it: \"allowed\" or the\n"
	  "refusal. Runs nothing and makes nothing; --workdir is checked as run\n"
	  "checks it.\n\n" RUN_OPTIONS_HELP
	  "\nExit status: 0 allowed; 126 refused; 125 when cordon itself failed.\n",
	  .raw = cmd_run },
	{ "profiles", "", "list profiles (name, path, description)",
	  "List the profiles on the profile path: name, path, one-line description.\n"
	  "\n" HELP_ONLY,
	  .options = options_none, .run = cmd_profiles },
	{ "profile", "show NAME", "print the fully resolved profile",
	  "Print profile NAME (or a path), fully resolved, in profile syntax.\n"
	  "\n" HELP_ONLY,
	  .options = options_none, .min_args = 0, .max_args = 2, .run = cmd_profile },
	{ "doctor", "[--workdir DIR]", "which isolation features this host provides",
	  "Which isolation features this kernel and host provide and which cordon will use, and\n"
	  "whether the Docker and Daytona backends are available.\n\n"
	  "Options:\n"
	  "  -w, --workdir DIR   whether DIR's file system (default: the current directory's)\n"
	  "                      takes idmapped mounts\n"
	  "  -h, --help          show this help\n",
	  .options = options_workdir, .run = cmd_doctor },
	{ "gc", "[--backend docker|daytona] [--profile NAME]",
	  "remove containers / sandboxes left by dead cordon runs",
	  "Remove the Docker containers (or Daytona sandboxes) of cordon runs that were killed\n"
	  "before they could remove them. Daytona: only this machine's (by its machine id, not\n"
	  "its hostname), made on an earlier boot, or on this boot in this pid namespace by a\n"
	  "process that is gone; the others of this machine are kept and counted.\n\n"
	  "Options:\n"
	  "  -b, --backend docker|daytona   which backend's leftovers (default docker)\n"
	  "  -p, --profile NAME             daytona: the profile with its API settings\n"
	  "                                 (default: default)\n"
	  "  -h, --help                     show this help\n",
	  .options = options_gc, .run = cmd_gc },
	{ "tool-schema", "[--workdir DIR]", "JSON function-calling schema of run_shell_command",
	  "The JSON function-calling schema of AG2's run_shell_command tool.\n\n"
	  "Options:\n"
	  "  -w, --workdir DIR   the workdir its description names\n"
	  "  -h, --help          show this help\n",
	  .options = options_workdir, .run = cmd_tool_schema },
	{ "version", "", "print the version", "Print cordon's version.\n\n" HELP_ONLY,
	  .options = options_none, .run = cmd_version },
};

static const struct subcommand *subcommand_find(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(subcommands); i++)
		if (!strcmp(subcommands[i].name, name))
			return &subcommands[i];
	return NULL;
}

static void print_main_usage(FILE *f)
{
	fputs("Usage: cordon COMMAND [OPTIONS]\n\n"
	      "Run untrusted shell commands so that they cannot hurt the machine.\n\n"
	      "Commands:\n",
	      f);
	for (size_t i = 0; i < ARRAY_SIZE(subcommands); i++) {
		const struct subcommand *sc = &subcommands[i];
		int w = fprintf(f, "  %s%s%s", sc->name, *sc->synopsis ? " " : "", sc->synopsis);

		/* The summaries in a column; a long synopsis puts its summary below it. */
		if (w > 34)
			fprintf(f, "\n%*s", 35, "");
		else
			fprintf(f, "%*s", 35 - w, "");
		fprintf(f, "%s\n", sc->summary);
	}
	fputs("\nExit status of run: the command's own (a signal n gives 128+n); 124 timeout;\n"
	      "125 cordon failed (nothing ran); 126 refused by the policy.\n"
	      "`cordon COMMAND --help` describes COMMAND and its options.\n",
	      f);
}

/*
 * A subcommand other than run and check: its options (the row's, and -h/--help), then its
 * operands, as many as the row allows. GNU getopt's order, so that `cordon profile show NAME
 * --help` is help too (`--` ends the options).
 */
static int cmd_small(const struct subcommand *sc, int argc, char **argv)
{
	struct small_args a = { 0 };
	char shortopts[16] = ":";
	size_t n = 1;
	int c;

	for (const struct option *o = sc->options; o->name && n + 3 < sizeof(shortopts); o++) {
		shortopts[n++] = (char)o->val;
		if (o->has_arg == required_argument)
			shortopts[n++] = ':';
	}
	shortopts[n] = '\0';
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, sc->options, NULL)) != -1) {
		switch (c) {
		case 'h':
			print_usage(sc, stdout);
			return 0;
		case 'w':
			a.workdir = optarg;
			break;
		case 'b':
			a.backend = optarg;
			break;
		case 'p':
			a.profile = optarg;
			break;
		default:
			return option_error(sc, sc->options, c, argv);
		}
	}
	a.argc = argc - optind;
	a.argv = argv + optind;
	if (a.argc > sc->max_args)
		return cli_fail("%s: unexpected argument '%s' (see cordon %s --help)", sc->name,
				a.argv[sc->max_args], sc->name);
	if (a.argc < sc->min_args)
		return cli_fail("%s: missing argument (usage: cordon %s %s)", sc->name, sc->name,
				sc->synopsis);
	return sc->run(&a);
}

static int dispatch(int argc, char **argv);

/*
 * Output that could not be written is cordon's failure, not a success (found in review:
 * `cordon run ... > /dev/full` exited 0 with the result lost): 125 and a line saying so.
 */
int main(int argc, char **argv)
{
	int rc = dispatch(argc, argv);

	if ((fflush(stdout) != 0 || ferror(stdout)) && rc == 0)
		rc = cli_fail("writing the output: %s", strerror(errno ? errno : EIO));
	return rc;
}

static int dispatch(int argc, char **argv)
{
	const struct subcommand *sc;
	const char *cmd;

	main_argv = argv;
	if (getenv("CORDON_REMOTE_HANDOFF")) {
		/* Not passed on to the command (a profile may inherit the environment). */
		remote_handoff = true;
		(void)unsetenv("CORDON_REMOTE_HANDOFF");
	}
	if (argc < 2) {
		print_main_usage(stderr);
		return CORDON_EXIT_FAILURE;
	}
	cmd = argv[1];
	/* cordond's helper (runtime/daemon/runner.c): not for people; serves fd 3. */
	if (!strcmp(cmd, "__cordond-runner") && argc == 2)
		return runner_main(3);
	/* The Docker backend's agent, the main process of its containers (docker/agent.h). */
	if (!strcmp(cmd, "__docker-agent"))
		return docker_agent_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "__docker-init"))
		return docker_init_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		print_main_usage(stdout);
		return 0;
	}
	sc = subcommand_find(!strcmp(cmd, "--version") ? "version" : cmd);
	if (!sc)
		return cli_fail("unknown command '%s' (see cordon --help)", cmd);
	return sc->raw ? sc->raw(sc, argc - 1, argv + 1) : cmd_small(sc, argc - 1, argv + 1);
}
