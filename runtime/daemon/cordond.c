/* SPDX-License-Identifier: MIT */
/*
 * cordond: the privileged half of cordon (SPEC §7). It listens on a Unix socket (its own, or
 * the one systemd passes with socket activation), authenticates each caller by SO_PEERCRED, and
 * runs the caller's commands in the local backend as that caller.
 *
 * Threads: libmicrohttpd's listener and one thread per connection; this main thread waits for
 * signals and, between them, watches connections (disconnects cancel runs, slow requests are
 * dropped) and expires idle sessions.
 */
#define _GNU_SOURCE
#include "backends/docker/docker.h"
#include "runtime/daemon/daemon.h"
#include "runtime/fsutil.h"
#include "backends/daytona/daytona.h"
#include "runtime/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

struct daemon_config cfg = {
	.socket_path = NULL,
	.group = DAEMON_GROUP,
	.max_runs = 64,
	.max_runs_per_caller = 16,
	.max_sessions_per_caller = 32,
	.max_connections = 512,
	.max_conns_per_caller = 128,
	.max_body = 1 << 20,
	.max_file = 64 << 20,
	.max_bodies = 256 << 20,
	.max_bodies_per_caller = 128 << 20, /* two uploads of the default --max-file */
	.request_timeout = 10,
	.session_idle = 3600,
	.runner_idle = 30,
	.grace = 10,
	.max_output_cap = 4 << 20,
};

atomic_bool daemon_stopping;

unsigned http_runs_in_flight(void);

static char *notify_socket;

void daemon_log(const char *fmt, ...)
{
	va_list ap;

	flockfile(stderr);
	fputs("cordond: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	funlockfile(stderr);
}

/*
 * sd_notify(), but with the socket path saved at startup: NOTIFY_SOCKET is removed from the
 * environment so that no command (a profile with env_inherit) ever sees it.
 */
static void notify(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void notify(const char *fmt, ...)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;
	char msg[512];
	size_t n;
	va_list ap;

	if (!notify_socket)
		return;
	n = strlen(notify_socket);
	if (n < 2 || n >= sizeof(sa.sun_path) ||
	    (notify_socket[0] != '/' && notify_socket[0] != '@'))
		return;
	memcpy(sa.sun_path, notify_socket, n);
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = '\0';
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	(void)sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa,
		     (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n));
}

/*
 * The daemon's own environment reaches commands only through a profile with env_inherit, and
 * then it should say nothing about the daemon: keep PATH and LANG, drop the rest (NOTIFY_SOCKET,
 * LISTEN_*, INVOCATION_ID, credentials an administrator's shell might have exported).
 */
static int sanitize_environment(void)
{
	const char *lang = getenv("LANG"), *ns = getenv("NOTIFY_SOCKET");
	const char *profile_path = getenv("CORDON_PROFILE_PATH");
	const char *trace = getenv("CORDON_TRACE_SETUP");
	const char *prebuild = getenv("CORDON_PREBUILD");
	_cleanup_free_ char *prebuild_copy = prebuild ? strdup(prebuild) : NULL;
	_cleanup_free_ char *lang_copy = lang ? strdup(lang) : NULL;
	_cleanup_free_ char *pp_copy = profile_path ? strdup(profile_path) : NULL;
	_cleanup_free_ char *trace_copy = trace ? strdup(trace) : NULL;

	notify_socket = ns ? strdup(ns) : NULL;
	if (clearenv() != 0)
		return -1;
	if (setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", 1) < 0)
		return -1;
	if (lang_copy && setenv("LANG", lang_copy, 1) < 0)
		return -1;
	/* Where profiles are looked up is the administrator's choice, kept for the library. */
	if (pp_copy && setenv("CORDON_PROFILE_PATH", pp_copy, 1) < 0)
		return -1;
	/* The per-step setup timeline on stderr (docs/daemon.md), a diagnostic. */
	if (trace_copy && setenv("CORDON_TRACE_SETUP", trace_copy, 1) < 0)
		return -1;
	/* CORDON_PREBUILD=0: the runners build every sandbox on demand (docs/daemon.md). */
	if (prebuild_copy && setenv("CORDON_PREBUILD", prebuild_copy, 1) < 0)
		return -1;
	return 0;
}

/*
 * systemd's socket activation (sd_listen_fds(3)), without libsystemd and the half-dozen
 * libraries it would load into the daemon (each one more mapping to copy at every clone of a
 * sandbox): the fds from 3 on, LISTEN_FDS of them, when LISTEN_PID is ours. The variables are
 * removed either way. Negative errno on a malformed value.
 */
#define LISTEN_FDS_START 3

static int listen_fds(void)
{
	const char *pid_s = getenv("LISTEN_PID"), *fds_s = getenv("LISTEN_FDS");
	unsigned long long pid, n;
	char *end;
	int r = 0;

	if (!pid_s || !fds_s)
		goto out;
	errno = 0;
	pid = strtoull(pid_s, &end, 10);
	if (errno || end == pid_s || *end) {
		r = -EINVAL;
		goto out;
	}
	if (pid != (unsigned long long)getpid())
		goto out;
	errno = 0;
	n = strtoull(fds_s, &end, 10);
	if (errno || end == fds_s || *end || n > 64) {
		r = -EINVAL;
		goto out;
	}
	for (int fd = LISTEN_FDS_START; fd < LISTEN_FDS_START + (int)n; fd++)
		if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
			r = -errno;
			goto out;
		}
	r = (int)n;
out:
	(void)unsetenv("LISTEN_PID");
	(void)unsetenv("LISTEN_FDS");
	(void)unsetenv("LISTEN_FDNAMES");
	return r;
}

static bool is_listening_unix_stream(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int type = 0, listening = 0;
	socklen_t l = sizeof(type);

	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l) < 0 || type != SOCK_STREAM)
		return false;
	l = sizeof(listening);
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &l) < 0 || !listening)
		return false;
	return getsockname(fd, (struct sockaddr *)&ss, &len) == 0 && ss.ss_family == AF_UNIX;
}

static ino_t own_socket_ino;
static dev_t own_socket_dev;

static bool socket_answers(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || strlen(path) >= sizeof(sa.sun_path))
		return false;
	strcpy(sa.sun_path, path);
	return connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
}

/*
 * Our own socket: mode 0660, owner root, group cordon. It is bound under a temporary name with
 * the umask already giving 0660 (never a moment with wider permissions), given its group, and
 * renamed over the final path, which atomically replaces a stale socket left by a crash. A path
 * that holds anything but a socket, or a socket a live daemon answers on, is left alone.
 */
static int bind_socket(const char *path, cordon_error *e)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *dir = NULL, *tmp = NULL;
	struct group gr, *grp = NULL;
	char buf[4096];
	struct stat st;
	mode_t old;

	if (path[0] != '/')
		return cordon_err(e, 0, "--socket: '%s' is not an absolute path", path);
	if (strlen(path) + 16 >= sizeof(sa.sun_path))
		return cordon_err(e, ENAMETOOLONG, "--socket: '%s'", path);
	dir = strdup(path);
	if (!dir)
		return cordon_err(e, ENOMEM, "out of memory");
	*strrchr(dir, '/') = '\0';
	if (*dir && mkdir(dir, 0755) < 0 && errno != EEXIST)
		return cordon_err(e, errno, "mkdir '%s'", dir);
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return cordon_err(e, EEXIST, "'%s' exists and is not a socket", path);
		if (socket_answers(path))
			return cordon_err(e, EADDRINUSE, "another daemon answers on '%s'", path);
	}
	if (asprintf(&tmp, "%s.%d.tmp", path, (int)getpid()) < 0) {
		tmp = NULL;
		return cordon_err(e, ENOMEM, "out of memory");
	}
	(void)unlink(tmp);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return cordon_err(e, errno, "socket");
	strcpy(sa.sun_path, tmp);
	old = umask(0117);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int err = errno;

		umask(old);
		return cordon_err(e, err, "bind '%s'", tmp);
	}
	umask(old);
	if (getgrnam_r(cfg.group, &gr, buf, sizeof(buf), &grp) == 0 && grp && geteuid() == 0 &&
	    fchownat(AT_FDCWD, tmp, 0, grp->gr_gid, AT_SYMLINK_NOFOLLOW) < 0) {
		int err = errno;

		(void)unlink(tmp);
		return cordon_err(e, err, "chown '%s'", tmp);
	}
	if (rename(tmp, path) < 0) {
		int err = errno;

		(void)unlink(tmp);
		return cordon_err(e, err, "rename '%s'", path);
	}
	if (listen(fd, 256) < 0)
		return cordon_err(e, errno, "listen '%s'", path);
	if (lstat(path, &st) == 0) {
		own_socket_ino = st.st_ino;
		own_socket_dev = st.st_dev;
	}
	return TAKE_FD(fd);
}

static void unlink_own_socket(const char *path)
{
	struct stat st;

	/* Only if it is still the one we made: a newer daemon may have replaced it. */
	if (own_socket_ino && lstat(path, &st) == 0 && st.st_ino == own_socket_ino &&
	    st.st_dev == own_socket_dev)
		(void)unlink(path);
}

/*
 * Every connection holds two fds (its socket and the watcher's dup), every run in flight
 * about six (its connection's, its workdir twice, its runner's socket and directory), every
 * session one, every idle runner two: the defaults alone (512 connections, 64 runs) need over
 * 1,400, and sessions (32 per member, members unbounded) more, while systemd and login
 * shells give 1024. At 1024, one member's sessions or connections made every caller's runs
 * fail with EMFILE and left their workdirs behind. So the soft limit is raised to the hard
 * one (systemd's default is 524288). The sandboxes must not see that: a program that closes
 * every fd up to sysconf(_SC_OPEN_MAX) would make half a million syscalls. The soft limit
 * cordond was given goes to its runners, which set it back before anything else (runner.c),
 * so commands keep the limit they would have had.
 */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	cfg.nofile_soft = (unsigned long)rl.rlim_cur;
	if (rl.rlim_cur >= rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		daemon_log("cannot raise RLIMIT_NOFILE to %lu: %s", (unsigned long)rl.rlim_max,
			   strerror(errno));
}

static const char usage[] =
	"Usage: cordond [OPTIONS]\n"
	"\n"
	"The cordon daemon: runs commands for root and members of group cordon, as the caller,\n"
	"over HTTP/1.1 + JSON on a Unix socket (socket activation when systemd passes one).\n"
	"\n"
	"  --socket PATH                 socket to create (default " DAEMON_DEFAULT_SOCKET ")\n"
	"  --config FILE                 read options from FILE (key = value, the long names)\n"
	"  --group NAME                  group whose members may call (default cordon)\n"
	"  --max-runs N                  runs in flight, all callers (default 64)\n"
	"  --max-runs-per-caller N       runs in flight per uid (default 16)\n"
	"  --max-sessions-per-caller N   live sessions per uid (default 32)\n"
	"  --max-connections N           open connections (default 512)\n"
	"  --max-connections-per-caller N  open connections per uid (default 128)\n"
	"  --max-body BYTES              JSON request body limit (default 1048576)\n"
	"  --max-file BYTES              file upload limit (default 67108864)\n"
	"  --max-bodies BYTES            request bodies held at once, all (default 268435456)\n"
	"  --max-bodies-per-caller BYTES  request bodies held at once per uid (default 134217728)\n"
	"  --max-output-cap N            largest max_output a request may ask (default 4194304)\n"
	"  --request-timeout SECONDS     to send a whole request; idle keep-alive (default 10)\n"
	"  --session-idle SECONDS        idle sessions are removed after (default 3600)\n"
	"  --runner-idle SECONDS         idle runners beyond the busiest of the last SECONDS to\n"
	"                                twice that stop (default 30)\n"
	"  --grace SECONDS               SIGTERM waits this long for runs (default 10)\n"
	"  --docker-image IMAGE          an image members may name for a docker session, besides\n"
	"                                their profile's [docker] image (repeatable; root: any)\n"
	"  --daytona-image IMAGE         the same for daytona sessions and [daytona] image\n"
	"  -h, --help, --version\n";

enum {
	O_SOCKET = 256,
	O_CONFIG,
	O_GROUP,
	O_MAX_RUNS,
	O_MAX_RUNS_PC,
	O_MAX_SESS_PC,
	O_MAX_CONNS,
	O_MAX_CONNS_PC,
	O_MAX_BODY,
	O_MAX_FILE,
	O_MAX_BODIES,
	O_MAX_BODIES_PC,
	O_MAX_OUTPUT_CAP,
	O_REQ_TIMEOUT,
	O_SESSION_IDLE,
	O_RUNNER_IDLE,
	O_GRACE,
	O_DOCKER_IMAGE,
	O_DAYTONA_IMAGE,
	O_VERSION,
};

static const struct option options[] = {
	{ "socket", required_argument, NULL, O_SOCKET },
	{ "config", required_argument, NULL, O_CONFIG },
	{ "group", required_argument, NULL, O_GROUP },
	{ "max-runs", required_argument, NULL, O_MAX_RUNS },
	{ "max-runs-per-caller", required_argument, NULL, O_MAX_RUNS_PC },
	{ "max-sessions-per-caller", required_argument, NULL, O_MAX_SESS_PC },
	{ "max-connections", required_argument, NULL, O_MAX_CONNS },
	{ "max-connections-per-caller", required_argument, NULL, O_MAX_CONNS_PC },
	{ "max-body", required_argument, NULL, O_MAX_BODY },
	{ "max-file", required_argument, NULL, O_MAX_FILE },
	{ "max-bodies", required_argument, NULL, O_MAX_BODIES },
	{ "max-bodies-per-caller", required_argument, NULL, O_MAX_BODIES_PC },
	{ "max-output-cap", required_argument, NULL, O_MAX_OUTPUT_CAP },
	{ "request-timeout", required_argument, NULL, O_REQ_TIMEOUT },
	{ "session-idle", required_argument, NULL, O_SESSION_IDLE },
	{ "runner-idle", required_argument, NULL, O_RUNNER_IDLE },
	{ "grace", required_argument, NULL, O_GRACE },
	{ "docker-image", required_argument, NULL, O_DOCKER_IMAGE },
	{ "daytona-image", required_argument, NULL, O_DAYTONA_IMAGE },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, O_VERSION },
	{ 0 },
};

/* "FILE:LINE" while a --config line is applied: its errors name it rather than the option. */
static const char *opt_where;

/* One line on stderr: what is wrong with option NAME (a --config line names FILE:LINE, key). */
static void __attribute__((format(printf, 2, 3))) opt_error(const char *name, const char *fmt, ...)
{
	va_list ap;

	if (opt_where)
		fprintf(stderr, "cordond: %s: %s: ", opt_where, name);
	else
		fprintf(stderr, "cordond: --%s: ", name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int parse_uint(const char *name, const char *s, unsigned long long max,
		      unsigned long long *ret)
{
	char *end = NULL;
	unsigned long long v;

	errno = 0;
	if (!*s || *s == '-')
		goto bad;
	v = strtoull(s, &end, 10);
	if (errno || *end || v == 0 || v > max)
		goto bad;
	*ret = v;
	return 0;
bad:
	opt_error(name, "expected an integer between 1 and %llu, got '%s'", max, s);
	return -1;
}

static int parse_secs(const char *name, const char *s, double *ret)
{
	char *end = NULL;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || !*s || *end || !(v > 0) || v > 31536000) {
		opt_error(name, "expected a number of seconds > 0, got '%s'", s);
		return -1;
	}
	*ret = v;
	return 0;
}

static int load_config(const char *path);

/* Apply one option; returns 0, or -1 after printing why. */
static int apply_option(int id, const char *name, const char *val)
{
	unsigned long long u;
	double d;

	switch (id) {
	case O_SOCKET:
		cfg.socket_path = strdup(val);
		if (!cfg.socket_path)
			opt_error(name, "out of memory");
		return cfg.socket_path ? 0 : -1;
	case O_CONFIG:
		return load_config(val);
	case O_GROUP:
		if (!*val) {
			opt_error(name, "empty name");
			return -1;
		}
		cfg.group = strdup(val);
		if (!cfg.group)
			opt_error(name, "out of memory");
		return cfg.group ? 0 : -1;
	case O_MAX_RUNS:
	case O_MAX_RUNS_PC:
	case O_MAX_SESS_PC:
	case O_MAX_CONNS:
	case O_MAX_CONNS_PC:
		if (parse_uint(name, val, 100000, &u) < 0)
			return -1;
		if (id == O_MAX_RUNS)
			cfg.max_runs = (unsigned)u;
		else if (id == O_MAX_RUNS_PC)
			cfg.max_runs_per_caller = (unsigned)u;
		else if (id == O_MAX_SESS_PC)
			cfg.max_sessions_per_caller = (unsigned)u;
		else if (id == O_MAX_CONNS)
			cfg.max_connections = (unsigned)u;
		else
			cfg.max_conns_per_caller = (unsigned)u;
		return 0;
	case O_MAX_BODY:
	case O_MAX_FILE:
	case O_MAX_BODIES:
	case O_MAX_BODIES_PC:
	case O_MAX_OUTPUT_CAP:
		if (parse_uint(name, val, 1ULL << 40, &u) < 0)
			return -1;
		if (id == O_MAX_BODY)
			cfg.max_body = (size_t)u;
		else if (id == O_MAX_FILE)
			cfg.max_file = (size_t)u;
		else if (id == O_MAX_BODIES)
			cfg.max_bodies = (size_t)u;
		else if (id == O_MAX_BODIES_PC)
			cfg.max_bodies_per_caller = (size_t)u;
		else
			cfg.max_output_cap = (int64_t)u;
		return 0;
	case O_REQ_TIMEOUT:
		if (parse_uint(name, val, 3600, &u) < 0)
			return -1;
		cfg.request_timeout = (unsigned)u;
		return 0;
	case O_SESSION_IDLE:
	case O_RUNNER_IDLE:
	case O_GRACE:
		if (parse_secs(name, val, &d) < 0)
			return -1;
		if (id == O_GRACE)
			cfg.grace = d;
		else if (id == O_RUNNER_IDLE)
			cfg.runner_idle = d;
		else
			cfg.session_idle = d;
		return 0;
	case O_DOCKER_IMAGE:
	case O_DAYTONA_IMAGE: {
		_cleanup_free_ char *norm = NULL;
		cordon_error e;

		/* Kept as written: that string is what dockerd is given (image.c). */
		if (image_normalize(val, &norm, &e) < 0 ||
		    cordon_list_add(id == O_DOCKER_IMAGE ? &cfg.docker_images : &cfg.daytona_images,
				    val, &e) < 0) {
			opt_error(name, "%s", e.msg);
			return -1;
		}
		return 0;
	}
	}
	return -1;
}

static int load_config(const char *path)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	char line[1024];
	int lineno = 0;

	if (!f) {
		fprintf(stderr, "cordond: --config: '%s': %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *k = line, *v, *eq, *end;
		const struct option *o;

		lineno++;
		k += strspn(k, " \t");
		k[strcspn(k, "\r\n")] = '\0';
		if (!*k || *k == '#' || *k == ';' || !strcmp(k, "[cordond]"))
			continue;
		eq = strchr(k, '=');
		if (!eq) {
			fprintf(stderr, "cordond: %s:%d: expected key = value\n", path, lineno);
			return -1;
		}
		v = eq + 1;
		for (end = eq; end > k && (end[-1] == ' ' || end[-1] == '\t'); end--)
			;
		*end = '\0';
		v += strspn(v, " \t");
		for (end = v + strlen(v); end > v && (end[-1] == ' ' || end[-1] == '\t'); end--)
			;
		*end = '\0';
		for (o = options; o->name; o++)
			if (!strcmp(o->name, k) && o->has_arg == required_argument &&
			    o->val != O_CONFIG)
				break;
		if (!o->name) {
			fprintf(stderr, "cordond: %s:%d: unknown key '%s'\n", path, lineno, k);
			return -1;
		}
		{
			char where[PATH_MAX + 16];
			int rc;

			(void)snprintf(where, sizeof(where), "%s:%d", path, lineno);
			opt_where = where;
			rc = apply_option(o->val, o->name, v);
			opt_where = NULL;
			if (rc < 0)
				return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct MHD_Daemon *d;
	cordon_error e = { 0 };
	char ebuf[512];
	sigset_t set;
	int c, lfd, n;
	bool activated = false;
	double last_sweep = 0;
	unsigned last_runs = (unsigned)-1, last_sessions = (unsigned)-1;

	opterr = 0;
	/* "+:": stop at the first operand; ':' for an option without its value. */
	while ((c = getopt_long(argc, argv, "+:h", options, NULL)) != -1) {
		if (c == 'h') {
			fputs(usage, stdout);
			return 0;
		}
		if (c == O_VERSION) {
			printf("cordond %s\n", CORDON_VERSION);
			return 0;
		}
		if (c == ':') {
			fprintf(stderr, "cordond: option '%s' needs a value\n", argv[optind - 1]);
			return 2;
		}
		if (c == '?') {
			const char *a = argv[optind - 1], *eq = strchr(a, '=');
			const struct option *o = options;

			/* optopt: the letter of an unknown short option, 0 for a long one, and the
			 * val of a long option given a value it does not take (--help=1), which
			 * the line must name rather than as "-h". Matched by the name as written
			 * (a prefix) and val: "--socket=/x -Zh" is an unknown -Z. */
			for (; optopt && eq && !strncmp(a, "--", 2) && o->name; o++)
				if (o->has_arg == no_argument && o->val == optopt &&
				    !strncmp(o->name, a + 2, (size_t)(eq - a - 2)))
					break;
			if (optopt && eq && !strncmp(a, "--", 2) && o->name)
				fprintf(stderr, "cordond: option '--%s' takes no value\n", o->name);
			else if (optopt)
				fprintf(stderr,
					"cordond: unknown option '-%c' (see cordond --help)\n",
					optopt);
			else
				fprintf(stderr,
					"cordond: unknown option '%s' (see cordond --help)\n",
					argv[optind - 1]);
			return 2;
		}
		const char *name = "";

		for (const struct option *o = options; o->name; o++)
			if (o->val == c)
				name = o->name;
		if (apply_option(c, name, optarg) < 0)
			return 2;
	}
	if (optind < argc) {
		fprintf(stderr, "cordond: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	raise_nofile();
	if (geteuid() != 0)
		daemon_log("not running as root: commands run as cordond's own user");
	else if (setgroups(0, NULL) < 0) /* the daemon's own groups are nobody's business */
		daemon_log("setgroups: %s", strerror(errno));

	/*
	 * Signals are taken synchronously by this thread (sigtimedwait): block them before any
	 * other thread exists, so every thread inherits the mask.
	 */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	/* Before the environment is cleaned: LISTEN_PID and LISTEN_FDS live there. */
	n = listen_fds();
	if (n < 0) {
		daemon_log("LISTEN_PID/LISTEN_FDS: %s", strerror(-n));
		return 1;
	}
	{
		/* The Daytona backend's key and URLs: kept by the backend, gone from environ. */
		cordon_error de = { 0 };
		char buf[512];

		if (daytona_capture_env(&de) < 0) {
			daemon_log("%s", cordon_err_str(&de, buf, sizeof(buf)));
			return 1;
		}
	}
	{
		/* Read by the runners (docs/daemon.md): a value they would not understand is ours
		 * to refuse, before anything starts. */
		const char *pb = getenv("CORDON_PREBUILD");

		if (pb && strcmp(pb, "0") != 0 && strcmp(pb, "1") != 0) {
			daemon_log("CORDON_PREBUILD must be 0 or 1, not '%s'", pb);
			return 1;
		}
	}
	if (sanitize_environment() < 0) {
		daemon_log("cannot set up the environment");
		return 1;
	}
	if (n > 1) {
		daemon_log("expected one socket from systemd, got %d", n);
		return 1;
	}
	if (n == 1) {
		/* systemd's socket wins: --socket in a unit is then only documentation. */
		lfd = LISTEN_FDS_START;
		if (!is_listening_unix_stream(lfd)) {
			daemon_log(
				"the socket systemd passed is not a listening Unix stream socket");
			return 1;
		}
		activated = true;
	} else {
		if (!cfg.socket_path)
			cfg.socket_path = DAEMON_DEFAULT_SOCKET;
		lfd = bind_socket(cfg.socket_path, &e);
		if (lfd < 0) {
			daemon_log("%s", cordon_err_str(&e, ebuf, sizeof(ebuf)));
			return 1;
		}
	}
	/* Files the daemon creates for a caller (uploads, their directories) get 0644/0755. */
	umask(022);

	/*
	 * Under systemd's Delegate=yes on a cgroup v2 host, without DelegateSubgroup= (systemd
	 * 252 in Debian 12): out of the unit's cgroup into a leaf of it, so that the runs'
	 * cgroups can be made below the unit. Before any thread or child exists.
	 */
	switch (cordon_claim_cgroup_delegation(&e)) {
	case 1:
		daemon_log("moved into a 'supervisor' leaf of the cgroup delegated to cordond: "
			   "the runs' cgroups go below it");
		break;
	case -1:
		daemon_log("%s (the runs' cgroups go where cordon finds room)",
			   cordon_err_str(&e, ebuf, sizeof(ebuf)));
		break;
	}
	/* Many runs from one process: the cgroup layout is read once, not for each run. */
	cordon_cache_host_layout();
	/*
	 * What a killed cordond left (SIGKILL, OOM): its runners' directories (with root's runs'
	 * workdirs in them) and its members' temp workdirs, held by nobody now (fsutil.h). Those of
	 * another cordond or cordon that runs are held and stay (a directory is marked only once
	 * its holder has its lock, so no age is needed for that); and the cgroups of its dead
	 * runners (2 s covers a run between its cgroup's creation and its attach).
	 */
	(void)fsutil_temp_sweep("/tmp", "cordond-runner-", 0, FSUTIL_ANY_OWNER);
	(void)fsutil_temp_sweep("/tmp", "cordon-", 0, FSUTIL_ANY_OWNER);
	cordon_reap_stale(2);
	{
		/* Containers of runs whose process died (SIGKILL): nothing else removes them. No
		 * Docker daemon is not an error here. */
		cordon_error ge;
		unsigned gone = 0, kept = 0;

		if (docker_gc(&gone, &kept, &ge) == 0) {
			if (gone)
				daemon_log("removed %u orphaned Docker container(s)", gone);
			if (kept)
				daemon_log(
					"kept %u Docker container(s) that cannot be proven orphans "
					"from here",
					kept);
		}
	}
	/* Runs happen in runner processes, not in this one (runners.c). */
	runners_start();
	d = http_start(lfd, &e);
	if (!d) {
		daemon_log("%s", cordon_err_str(&e, ebuf, sizeof(ebuf)));
		if (!activated)
			unlink_own_socket(cfg.socket_path);
		return 1;
	}
	daemon_log("listening on %s (pid %d)",
		   activated ? "the socket from systemd" : cfg.socket_path, (int)getpid());
	notify("READY=1\nSTATUS=Listening on %s",
	       activated ? "the activation socket" : cfg.socket_path);

	for (;;) {
		struct timespec ts = { 0, 50 * 1000 * 1000 };
		int sig = sigtimedwait(&set, NULL, &ts);
		double now = now_s();

		if (sig == SIGTERM || sig == SIGINT)
			break;
		if (sig == SIGHUP)
			daemon_log("SIGHUP: nothing to reload (options are read at start)");
		http_watch_once(0);
		if (now - last_sweep >= 1.0) {
			unsigned r = http_runs_in_flight(), s;

			sessions_expire();
			runners_trim();
			s = sessions_count();
			if (r != last_runs || s != last_sessions)
				notify("STATUS=%u runs in flight, %u sessions", r, s);
			last_runs = r;
			last_sessions = s;
			last_sweep = now;
		}
	}

	/*
	 * Stopping: refuse new work (new connections are no longer accepted; requests on open
	 * connections get 503), give in-flight runs the grace time, then kill what is left. Nothing
	 * the users made is removed: session workdirs stay where they are.
	 */
	atomic_store(&daemon_stopping, true);
	notify("STOPPING=1\nSTATUS=Stopping: %u runs in flight", http_runs_in_flight());
	daemon_log("stopping: %u runs in flight, grace %.1fs", http_runs_in_flight(), cfg.grace);
	lfd = MHD_quiesce_daemon(d);
	if (lfd >= 0)
		(void)close(lfd);
	if (!activated)
		unlink_own_socket(cfg.socket_path);
	double deadline = now_s() + cfg.grace;
	while (http_runs_in_flight() > 0 && now_s() < deadline)
		http_watch_once(20);
	if (http_runs_in_flight() > 0) {
		daemon_log("grace time over: killing %u runs", http_runs_in_flight());
		deadline = now_s() + 10;
		while (http_runs_in_flight() > 0 && now_s() < deadline) {
			http_cancel_all();
			http_watch_once(20);
		}
	}
	MHD_stop_daemon(d);
	/* Every connection is finished, so every runner is back: stop them. */
	runners_stop();
	sessions_shutdown();
	cordon_remove_cgroup_parents();
	daemon_log("stopped");
	return 0;
}
