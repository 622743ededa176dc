/* SPDX-License-Identifier: MIT */
/*
 * Integration tests: drive the built build/cordon as a user would, and check stdout byte for
 * byte, the exit status, and that nothing is left behind.
 */
#define _GNU_SOURCE
#include "tests/lib/testutil.h"

#include <cordon/cordon.h>
#include <criterion/parameterized.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <signal.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define A(...) ((const char *const[]){ __VA_ARGS__, NULL })

struct cli_case {
	const char *name;
	const char *const *args;
	const char *out; /* exact stdout */
	int status;
};

/* AG2's result strings (ag2-behaviour.md §2-§4), through the real binary. */
static const struct cli_case cases[] = {
	{ "plain", A("run", "--", "echo hi"), "hi\n", 0 },
	{ "words joined", A("run", "--", "echo", "a", "b"), "a b\n", 0 },
	{ "no dashdash", A("run", "echo", "-n", "x"), "x\n", 0 },
	{ "stdout then stderr", A("run", "--", "printf out; printf err >&2"), "outerr\n", 0 },
	{ "stderr first written", A("run", "--", "printf err >&2; printf out"), "outerr\n", 0 },
	{ "strip", A("run", "--", "printf '\\n\\n  x  \\n\\n'"), "x\n", 0 },
	{ "crlf", A("run", "--", "printf 'a\\r\\nb\\rc'"), "a\nb\nc\n", 0 },
	{ "exit code", A("run", "--", "echo x; exit 3"), "x\n[exit code: 3]\n", 3 },
	{ "exit code no output", A("run", "--", "exit 7"), "[exit code: 7]\n", 7 },
	{ "exit wraps", A("run", "--", "exit 300"), "[exit code: 44]\n", 44 },
	{ "shell killed", A("run", "--", "kill -9 $$"), "[exit code: -9]\n", 137 },
	/* dash reports the signal, as it does under AG2. */
	{ "child killed", A("run", "--", "sh -c 'kill -15 $$'"), "Terminated\n[exit code: 143]\n",
	  143 },
	{ "empty output", A("run", "--", "true"), "\n", 0 },
	{ "timeout", A("run", "-t", "1", "--", "echo partial; sleep 5"),
	  "Command timed out after 1s\n[exit code: 124]\n", 124 },
	{ "timeout as written", A("run", "--timeout", "0.5", "--", "sleep 5"),
	  "Command timed out after 0.5s\n[exit code: 124]\n", 124 },
	{ "timeout 1.0", A("run", "-t", "1.0", "--", "sleep 5"),
	  "Command timed out after 1.0s\n[exit code: 124]\n", 124 },
	/* Python's str() of the float AG2 would get, not the digits as written. */
	{ "timeout 1.50", A("run", "-t", "1.50", "--", "sleep 5"),
	  "Command timed out after 1.5s\n[exit code: 124]\n", 124 },
	{ "timeout 0.250", A("run", "-t", "0.250", "--", "sleep 5"),
	  "Command timed out after 0.25s\n[exit code: 124]\n", 124 },
	{ "timeout 01", A("run", "-t", "01", "--", "sleep 5"),
	  "Command timed out after 1s\n[exit code: 124]\n", 124 },
	{ "writes forever", A("run", "-t", "1", "--", "yes"),
	  "Command timed out after 1s\n[exit code: 124]\n", 124 },
	{ "truncate", A("run", "--max-output", "5", "--", "echo hello world"),
	  "hello\n[truncated: showing first 5 of 11 chars]\n", 0 },
	{ "truncate zero", A("run", "--max-output", "0", "--", "echo abc"),
	  "\n[truncated: showing first 0 of 3 chars]\n", 0 },
	{ "truncate exact", A("run", "--max-output", "3", "--", "echo abc"), "abc\n", 0 },
	{ "truncate code points", A("run", "--max-output", "2", "--", "printf 'h\\303\\251llo'"),
	  "h\xc3\xa9\n[truncated: showing first 2 of 5 chars]\n", 0 },
	{ "truncate + exit", A("run", "--max-output", "2", "--", "echo abcd; exit 1"),
	  "ab\n[truncated: showing first 2 of 4 chars]\n[exit code: 1]\n", 1 },
	{ "invalid utf8", A("run", "--", "printf 'a\\377b'"),
	  "a\xef\xbf\xbd"
	  "b\n",
	  0 },
	{ "allow refuses", A("run", "--allow", "ls", "--", "cat x"),
	  "Command not allowed: 'cat x'\n", 126 },
	{ "allow word boundary", A("run", "--allow", "echo", "--", "echox"),
	  "Command not allowed: 'echox'\n", 126 },
	{ "allow operators", A("run", "--allow", "echo", "--", "echo a > f"),
	  "Command not allowed (shell operators are not permitted in restricted mode): "
	  "'echo a > f'\n",
	  126 },
	{ "allow passes", A("run", "--allow", "echo", "--", "echo ok"), "ok\n", 0 },
	{ "block", A("run", "--block", "rm", "--", "rm -rf x"), "Command not allowed: 'rm -rf x'\n",
	  126 },
	{ "block repr quotes", A("run", "--block", "echo", "--", "echo \"it's\""),
	  "Command not allowed: 'echo \"it\\'s\"'\n", 126 },
	{ "block repr dq", A("run", "--block", "echo", "--", "echo it's"),
	  "Command not allowed: \"echo it's\"\n", 126 },
	{ "readonly refuses", A("run", "--readonly", "--", "touch x"),
	  "Command not allowed: 'touch x'\n", 126 },
	{ "readonly allows", A("run", "--readonly", "--", "echo fine"), "fine\n", 0 },
	{ "ignore outside", A("run", "--ignore", "x", "--", "cat /etc/hostname"),
	  "Access denied: /etc/hostname\n", 126 },
	{ "strict no shell",
	  A("run", "--policy-mode", "strict", "--allow", "echo", "--", "echo", "$HOME"), "$HOME\n",
	  0 },
	{ "strict refuses operators",
	  A("run", "--policy-mode", "strict", "--allow", "echo", "--", "echo a & touch b"),
	  "Command not allowed (shell syntax is not available in restricted mode): "
	  "'echo a & touch b'\n",
	  126 },
	{ "check allowed", A("check", "--allow", "ls", "--", "ls -la"), "allowed\n", 0 },
	{ "check refused", A("check", "--allow", "ls", "--", "rm x"),
	  "Command not allowed: 'rm x'\n", 126 },
	/* A refusal quoting bytes that are not UTF-8, as JSON: U+FFFD, as `run --format json`
	 * shows it; it printed nothing at all. */
	{ "check json not UTF-8",
	  A("check", "--format", "json", "--ignore", "x", "--", "cat /etc/x\xff"),
	  "{\"allowed\": false, \"refused\": \"Access denied: /etc/x\xef\xbf\xbd\"}\n", 126 },
	{ "version", A("version"), "cordon " CORDON_VERSION "\n", 0 },
	{ "missing sh on PATH", A("run", "-e", "PATH=/nonexistent", "--", "echo hi"),
	  "Command not found: [Errno 2] No such file or directory: 'sh'\n[exit code: 127]\n", 127 },
};

ParameterizedTestParameters(cli, table)
{
	return cr_make_param_array(struct cli_case, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(const struct cli_case *c, cli, table)
{
	struct tu_run r;
	tu_cordon_run(&r, c->args);
	cr_expect_str_eq(r.out, c->out, "[%s] stdout: got '%s' want '%s' (stderr: %s)", c->name,
			 r.out, c->out, r.err);
	cr_expect_eq(r.status, c->status, "[%s] status %d want %d (stderr: %s)", c->name, r.status,
		     c->status, r.err);
	cr_expect_eq(r.leaked, 0, "[%s] a temp workdir was left behind", c->name);
	tu_run_free(&r);
}

struct bad_case {
	const char *name;
	const char *const *args;
	const char *err_has; /* must appear in the one stderr line */
};

/*
 * Bad input: one line on stderr naming the problem, exit 125, nothing run (the command would
 * create MARK), no temp dir left.
 */
#define MARK "touch /tmp/cordon-test-ran"
static const struct bad_case bad[] = {
	{ "timeout 0", A("run", "-t", "0", "--", MARK), "--timeout" },
	{ "timeout abc", A("run", "--timeout", "abc", "--", MARK), "--timeout" },
	{ "timeout -1", A("run", "--timeout", "-1", "--", MARK), "--timeout" },
	{ "timeout inf", A("run", "--timeout", "inf", "--", MARK), "--timeout" },
	{ "timeout nan", A("run", "--timeout", "nan", "--", MARK), "--timeout" },
	{ "timeout empty", A("run", "--timeout", "", "--", MARK), "--timeout" },
	{ "max-output -5", A("run", "--max-output", "-5", "--", MARK), "--max-output" },
	{ "max-output 1e99", A("run", "--max-output", "1e99", "--", MARK), "--max-output" },
	{ "max-output huge", A("run", "--max-output", "99999999999999999999999", "--", MARK),
	  "--max-output" },
	{ "env no equals", A("run", "--env", "NOEQUALS", "--", MARK), "--env" },
	{ "env bad name", A("run", "-e", "1X=2", "--", MARK), "--env" },
	{ "backend nope", A("run", "--backend", "nope", "--", MARK), "--backend" },
	{ "profile missing", A("run", "--profile", "missing", "--", MARK), "missing" },
	{ "profile bad path", A("run", "--profile", "/nonexistent/x.conf", "--", MARK),
	  "/nonexistent/x.conf" },
	{ "policy-mode", A("run", "--policy-mode", "lax", "--", MARK), "--policy-mode" },
	{ "network", A("run", "--network", "bridge", "--", MARK), "--network" },
	{ "format", A("run", "--format", "xml", "--", MARK), "--format" },
	{ "via", A("run", "--via", "ssh", "--", MARK), "--via" },
	{ "unknown option", A("run", "--frobnicate", "--", MARK), "--frobnicate" },
	{ "missing value", A("run", "--timeout"), "--timeout" },
	/* A value given to an option that takes none names it (it said "unknown option '-'"). */
	{ "keep with a value", A("run", "--keep=1", "--", MARK), "option '--keep' takes no value" },
	{ "stdin with a value", A("run", "--std=x", "--", MARK),
	  "option '--stdin' takes no value" },
	{ "help with a value", A("version", "--help=1"),
	  "version: option '--help' takes no value" },
	{ "no command", A("run"), "no command" },
	{ "empty command", A("run", "--", ""), "empty command" },
	{ "blank command", A("run", "--", "  "), "empty command" },
	{ "workdir is a file", A("run", "-w", "/etc/hostname", "--", MARK), "/etc/hostname" },
	{ "workdir under a file", A("run", "-w", "/etc/hostname/sub", "--", MARK), "workdir" },
	{ "workdir empty", A("run", "-w", "", "--", MARK), "--workdir" },
	{ "workdir /tmp", A("run", "-w", "/tmp", "--", MARK), "cannot be /, /tmp" },
	{ "workdir in /dev", A("run", "-w", "/dev/shm/cordon-test-notmade/x", "--", MARK),
	  "cannot be /, /tmp" },
	{ "check workdir in /proc", A("check", "-w", "/proc/x", "--", MARK), "cannot be /, /tmp" },
	{ "unknown command", A("frob"), "frob" },
	{ "profile show missing", A("profile", "show", "missing"), "missing" },
	{ "profile usage", A("profile", "list"), "profile show" },
	{ "via daemon without daemon", A("run", "--via", "daemon", "--", MARK), "daemon" },
	{ "check bad option", A("check", "--timeout", "x", "--", MARK), "--timeout" },
	{ "check workdir is a file", A("check", "-w", "/etc/hostname", "--", MARK),
	  "/etc/hostname" },
	{ "check workdir under a file", A("check", "-w", "/etc/hostname/sub", "--", MARK),
	  "workdir" },
};

ParameterizedTestParameters(cli, bad_input)
{
	return cr_make_param_array(struct bad_case, bad, sizeof(bad) / sizeof(bad[0]));
}

ParameterizedTest(const struct bad_case *c, cli, bad_input)
{
	struct tu_run r;
	(void)unlink("/tmp/cordon-test-ran");
	tu_cordon_run(&r, c->args);
	cr_expect_eq(r.status, 125, "[%s] status %d (stderr: %s)", c->name, r.status, r.err);
	cr_expect_str_eq(r.out, "", "[%s] stdout not empty: %s", c->name, r.out);
	cr_expect(strstr(r.err, c->err_has), "[%s] stderr does not name '%s': %s", c->name,
		  c->err_has, r.err);
	cr_expect(r.err_len > 0 && strchr(r.err, '\n') == r.err + r.err_len - 1,
		  "[%s] stderr is not exactly one line: '%s'", c->name, r.err);
	cr_expect(!strncmp(r.err, "cordon: ", 8), "[%s] stderr: %s", c->name, r.err);
	cr_expect(access("/tmp/cordon-test-ran", F_OK) != 0, "[%s] the command ran", c->name);
	cr_expect_eq(r.leaked, 0, "[%s] a temp dir was left behind", c->name);
	tu_run_free(&r);
}

static void write_profile(const char *dir, const char *name, const char *text)
{
	tu_write_file(dir, name, text);
}

Test(cli, bad_profiles)
{
	char *d = tu_tmpdir(), *p, *big;
	struct {
		const char *file, *text, *err_has;
	} pcases[] = {
		{ "syntax.conf", "[policy\nreadonly = true\n", "syntax.conf:1" },
		{ "section.conf", "[bogus]\nx = 1\n", "syntax" },
		{ "key.conf", "[policy]\nfrobnicate = 1\n", "key.conf:2" },
		{ "value.conf", "[limits]\ntimeout = abc\n", "value.conf:2" },
		{ "loop-a.conf", "[profile]\ninclude = loop-b\n", "loop" },
		{ "loop-b.conf", "[profile]\ninclude = loop-a\n", "loop" },
	};

	for (size_t i = 0; i < sizeof(pcases) / sizeof(pcases[0]); i++)
		write_profile(d, pcases[i].file, pcases[i].text);
	cr_assert(asprintf(&p, "CORDON_PROFILE_PATH=%s", d) > 0);
	for (size_t i = 0; i < sizeof(pcases) / sizeof(pcases[0]); i++) {
		struct tu_run r;
		char *path;
		const char *argv[] = { tu_cordon(), "run", "-p", NULL, "--", MARK, NULL };

		if (!strcmp(pcases[i].file, "section.conf"))
			continue; /* checked below with its own message */
		cr_assert(asprintf(&path, "%s/%s", d, pcases[i].file) > 0);
		argv[3] = path;
		(void)unlink("/tmp/cordon-test-ran");
		tu_exec(&r, NULL, (char *[]){ p, NULL }, (char *const *)argv);
		cr_expect_eq(r.status, 125, "%s: status %d (%s)", pcases[i].file, r.status, r.err);
		cr_expect(strstr(r.err, pcases[i].err_has), "%s: stderr '%s' lacks '%s'",
			  pcases[i].file, r.err, pcases[i].err_has);
		cr_expect(access("/tmp/cordon-test-ran", F_OK) != 0, "%s: ran", pcases[i].file);
		tu_run_free(&r);
		free(path);
	}

	/* An unknown section names the file, the line and the section. */
	{
		struct tu_run r;
		char *path;

		cr_assert(asprintf(&path, "%s/section.conf", d) > 0);
		tu_cordon_run(&r, A("run", "-p", path, "--", MARK));
		cr_expect_eq(r.status, 125);
		cr_expect(strstr(r.err, "section.conf:1") && strstr(r.err, "bogus"), "%s", r.err);
		tu_run_free(&r);
		free(path);
	}

	/* A 10 MB line. */
	{
		struct tu_run r;
		char *path;
		size_t n = 10u << 20;
		FILE *f;

		cr_assert(asprintf(&path, "%s/long.conf", d) > 0);
		f = fopen(path, "w");
		cr_assert(f);
		big = malloc(n);
		memset(big, 'a', n);
		fputs("[profile]\ndescription = ", f);
		fwrite(big, 1, n, f);
		fputs("\n", f);
		fclose(f);
		free(big);
		tu_cordon_run(&r, A("run", "-p", path, "--", MARK));
		cr_expect_eq(r.status, 125, "%s", r.err);
		cr_expect(strstr(r.err, "long.conf:2"), "%s", r.err);
		cr_expect(r.err_len < 1024, "error line is %zu bytes", r.err_len);
		tu_run_free(&r);
		free(path);
	}
	free(p);
	tu_rmtree(d);
	free(d);
}

Test(cli, help)
{
	struct tu_run r;

	tu_cordon_run(&r, A("--help"));
	cr_expect_eq(r.status, 0);
	cr_expect(strstr(r.out, "cordon run") && strstr(r.out, "doctor"));
	tu_run_free(&r);
	tu_cordon_run(&r, A("run", "--help"));
	cr_expect_eq(r.status, 0);
	/* Every option of SPEC §2 is documented. */
	const char *opts[] = { "--profile",    "--backend", "--workdir",     "--keep",	"--allow",
			       "--block",      "--ignore",  "--readonly",    "--env",	"--timeout",
			       "--max-output", "--network", "--policy-mode", "--image", "--format",
			       "--via",	       "--stdin" };
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		cr_expect(strstr(r.out, opts[i]), "run --help lacks %s", opts[i]);
	tu_run_free(&r);
}

/*
 * Every subcommand has -h/--help (its usage on stdout, exit 0, as run's) and says which option
 * it does not know in one line with exit 125 (found in review: `cordon doctor --help` was
 * "unexpected argument", 125). The same shared parser serves them all (runtime/cli/main.c).
 */
Test(cli, subcommand_help_and_unknown_options)
{
	static const char *const cmds[][3] = {
		{ "run" },    { "check" }, { "profiles" },    { "profile" }, { "profile", "show" },
		{ "doctor" }, { "gc" },	   { "tool-schema" }, { "version" },
	};

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		const char *h[] = { "--help", "-h" };
		const char *unknown[] = { "--frobnicate", "-Z" };
		char want[64];

		snprintf(want, sizeof(want), "Usage: cordon %s", cmds[i][0]);
		for (size_t k = 0; k < 2; k++) {
			const char *args[5] = { cmds[i][0], cmds[i][1] ? cmds[i][1] : h[k],
						cmds[i][1] ? h[k] : NULL };
			struct tu_run r;

			tu_cordon_run(&r, args);
			cr_expect_eq(r.status, 0, "%s %s: %d (%s)", cmds[i][0], h[k], r.status,
				     r.err);
			cr_expect(!strncmp(r.out, want, strlen(want)), "%s %s: stdout '%s'",
				  cmds[i][0], h[k], r.out);
			cr_expect(strstr(r.out, "-h, --help"), "%s: usage lacks --help: %s",
				  cmds[i][0], r.out);
			cr_expect_str_eq(r.err, "", "%s %s", cmds[i][0], h[k]);
			tu_run_free(&r);
		}
		for (size_t k = 0; k < 2; k++) {
			const char *args[6] = { cmds[i][0], cmds[i][1] ? cmds[i][1] : unknown[k],
						cmds[i][1] ? unknown[k] : NULL };
			char named[64];
			struct tu_run r;

			snprintf(named, sizeof(named), "unknown option '%s'", unknown[k]);
			tu_cordon_run(&r, args);
			cr_expect_eq(r.status, 125, "%s %s: %d (%s)", cmds[i][0], unknown[k],
				     r.status, r.err);
			cr_expect(strstr(r.err, named), "%s %s: stderr '%s'", cmds[i][0],
				  unknown[k], r.err);
			cr_expect(r.err_len > 0 && strchr(r.err, '\n') == r.err + r.err_len - 1,
				  "%s %s: not one line: '%s'", cmds[i][0], unknown[k], r.err);
			cr_expect_str_eq(r.out, "", "%s %s", cmds[i][0], unknown[k]);
			tu_run_free(&r);
		}
	}
	{
		/* A value-taking option without its value names the option. */
		struct tu_run r;

		tu_cordon_run(&r, A("doctor", "--workdir"));
		cr_expect_eq(r.status, 125);
		cr_expect(strstr(r.err, "doctor: option '--workdir' needs a value"), "%s", r.err);
		tu_run_free(&r);
		/* An option of another subcommand is unknown here. */
		tu_cordon_run(&r, A("doctor", "--backend", "docker"));
		cr_expect_eq(r.status, 125);
		cr_expect(strstr(r.err, "doctor: unknown option '--backend'"), "%s", r.err);
		tu_run_free(&r);
		/* The main usage lists every subcommand. */
		tu_cordon_run(&r, A("--help"));
		cr_expect_eq(r.status, 0);
		for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
			cr_expect(strstr(r.out, cmds[i][0]), "cordon --help lacks %s", cmds[i][0]);
		tu_run_free(&r);
	}
}

/* ---- the docs name what the programs take (so that they cannot drift apart again) ---- */

/* A file of the source tree, whole; fails the test when it cannot be read. */
static char *src_text(const char *rel)
{
	char path[512], *buf;
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%s/%s", CORDON_SRCDIR, rel);
	f = fopen(path, "re");
	cr_assert(f, "%s: %s", path, strerror(errno));
	cr_assert(fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0);
	buf = calloc(1, (size_t)n + 1);
	cr_assert(buf && fread(buf, 1, (size_t)n, f) == (size_t)n);
	fclose(f);
	return buf;
}

static bool is_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* Whether text has word (a long option "--keep", a key "tmp_size") with no name character
 * on either side: "--keep" is not found in "--keeping", nor "pids" in "max_pids". */
static bool has_word(const char *text, const char *end, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = text; (p = strstr(p, word)) && p + n <= end; p++)
		if ((p == text || !is_name_char(p[-1])) && !is_name_char(p[n]))
			return true;
	return false;
}

/* The next long option ("--name") a help text names from *p on, into opt; false at its end. */
static bool next_long_option(const char *text, const char **p, char *opt, size_t size)
{
	for (; (*p = strstr(*p, "--")); *p += 2) {
		const char *s = *p;
		size_t n = 2;

		if (s > text && is_name_char(s[-1]))
			continue;
		while (n < size - 1 && is_name_char(s[n]))
			n++;
		if (n == 2) /* "[--] COMMAND" */
			continue;
		memcpy(opt, s, n);
		opt[n] = '\0';
		*p += n;
		return true;
	}
	return false;
}

/*
 * Every long option a subcommand's --help lists is in cordon(1). Before, nothing tied the two:
 * a new option could ship with no word in the man page.
 */
Test(cli, every_help_option_is_in_the_man_page)
{
	static const char *const subs[] = { "run",    "check", "profiles",    "profile",
					    "doctor", "gc",    "tool-schema", "version" };
	char *man = src_text("packaging/man/cordon.1.scd");
	const char *man_end = man + strlen(man);
	size_t seen = 0;

	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
		struct tu_run r;

		tu_cordon_run(&r, A(subs[i], "--help"));
		cr_assert_eq(r.status, 0, "%s --help: %d", subs[i], r.status);
		char opt[64];

		for (const char *p = r.out; next_long_option(r.out, &p, opt, sizeof(opt));) {
			seen++;
			cr_expect(has_word(man, man_end, opt),
				  "cordon %s --help lists %s, which cordon.1.scd does not name",
				  subs[i], opt);
		}
		tu_run_free(&r);
	}
	cr_expect_gt(seen, 20, "only %zu options found in the usages", seen);
	free(man);
}

/*
 * Every key the shipped profiles resolve to (cordon profile show, which prints every scalar
 * key and each list that is set) is named in its section's paragraph of cordon-profile(5).
 */
Test(cli, every_profile_key_is_in_cordon_profile_5)
{
	char *man = src_text("packaging/man/cordon-profile.5.scd");
	struct tu_run list;
	size_t seen = 0;

	tu_cordon_run(&list, A("profiles"));
	cr_assert_eq(list.status, 0);
	for (char *line = strtok(list.out, "\n"); line; line = strtok(NULL, "\n")) {
		char name[64], section[64] = "", head[80];
		const char *para = NULL, *para_end = NULL;
		struct tu_run r;

		if (sscanf(line, "%63s", name) != 1)
			continue;
		tu_cordon_run(&r, A("profile", "show", name));
		cr_assert_eq(r.status, 0, "profile show %s: %s", name, r.err);
		for (char *l = r.out, *nl; *l; l = nl + 1) {
			char key[64];

			nl = strchr(l, '\n');
			if (!nl)
				break;
			if (sscanf(l, "[%63[a-z]]", section) == 1) {
				/* "*[limits]* timeout ..." up to the blank line after it */
				snprintf(head, sizeof(head), "*[%s]*", section);
				para = strstr(man, head);
				cr_assert(para, "cordon-profile.5.scd has no paragraph %s", head);
				para_end = strstr(para, "\n\n");
				if (!para_end)
					para_end = para + strlen(para);
				continue;
			}
			if (!para || sscanf(l, "%63[a-z_] =", key) != 1)
				continue;
			seen++;
			cr_expect(has_word(para, para_end, key),
				  "profile %s: [%s] %s is not in cordon-profile.5.scd's [%s] "
				  "paragraph",
				  name, section, key, section);
		}
		tu_run_free(&r);
	}
	cr_expect_gt(seen, 40, "only %zu keys found", seen);
	tu_run_free(&list);
	free(man);
}

/* Every long option of cordond --help is in cordond(8) and in docs/daemon.md's table. */
Test(cli, every_cordond_option_is_documented)
{
	const char *bin = getenv("CORDOND_BIN");
	char *const argv[] = { (char *)(bin && *bin ? bin : "build/cordond"), "--help", NULL };
	char *man = src_text("packaging/man/cordond.8.scd"), *doc = src_text("docs/daemon.md");
	size_t seen = 0;
	struct tu_run r;
	char opt[64];

	tu_exec(&r, NULL, NULL, argv);
	cr_assert_eq(r.status, 0, "cordond --help: %d %s", r.status, r.err);
	for (const char *p = r.out; next_long_option(r.out, &p, opt, sizeof(opt));) {
		if (!strcmp(opt, "--help") || !strcmp(opt, "--version"))
			continue;
		seen++;
		cr_expect(has_word(man, man + strlen(man), opt), "cordond.8.scd does not name %s",
			  opt);
		cr_expect(has_word(doc, doc + strlen(doc), opt), "docs/daemon.md does not name %s",
			  opt);
	}
	cr_expect_gt(seen, 15, "only %zu options found in cordond --help", seen);
	tu_run_free(&r);
	free(man);
	free(doc);
}

Test(cli, json_result)
{
	struct tu_run r;
	json_error_t je;
	json_t *j;

	tu_cordon_run(&r, A("run", "--format", "json", "--", "printf out; printf err >&2; exit 2"));
	cr_assert_eq(r.status, 2, "%s", r.err);
	j = json_loads(r.out, 0, &je);
	cr_assert(j, "not JSON: %s", r.out);
	cr_expect_str_eq(json_string_value(json_object_get(j, "output")), "outerr\n[exit code: 2]");
	cr_expect_str_eq(json_string_value(json_object_get(j, "stdout")), "out");
	cr_expect_str_eq(json_string_value(json_object_get(j, "stderr")), "err");
	cr_expect_eq(json_integer_value(json_object_get(j, "exit_code")), 2);
	cr_expect(json_is_null(json_object_get(j, "signal")));
	cr_expect(json_is_false(json_object_get(j, "timed_out")));
	cr_expect(json_is_null(json_object_get(j, "refused")));
	cr_expect(json_is_false(json_object_get(j, "truncated")));
	cr_expect_eq(json_integer_value(json_object_get(j, "stdout_bytes")), 3);
	cr_expect_eq(json_integer_value(json_object_get(j, "stderr_bytes")), 3);
	cr_expect(json_is_number(json_object_get(j, "duration_ms")));
	cr_expect(json_is_number(json_object_get(j, "cpu_ms")));
	cr_expect(json_is_false(json_object_get(j, "oom_killed")));
	cr_expect_str_eq(json_string_value(json_object_get(j, "backend")), "local");
	cr_expect(!strncmp(json_string_value(json_object_get(j, "workdir")), "/tmp/cordon-", 12));
	json_decref(j);
	tu_run_free(&r);

	/* A timeout keeps the partial output in JSON; a refusal names itself. */
	tu_cordon_run(&r, A("run", "--format", "json", "-t", "1", "--", "echo partial; sleep 9"));
	cr_assert_eq(r.status, 124);
	j = json_loads(r.out, 0, &je);
	cr_assert(j);
	cr_expect(json_is_true(json_object_get(j, "timed_out")));
	cr_expect_str_eq(json_string_value(json_object_get(j, "stdout")), "partial\n");
	cr_expect_str_eq(json_string_value(json_object_get(j, "output")),
			 "Command timed out after 1s\n[exit code: 124]");
	json_decref(j);
	tu_run_free(&r);

	tu_cordon_run(&r, A("run", "--format", "json", "--allow", "ls", "--", "rm x"));
	cr_assert_eq(r.status, 126);
	j = json_loads(r.out, 0, &je);
	cr_assert(j);
	cr_expect_str_eq(json_string_value(json_object_get(j, "refused")),
			 "Command not allowed: 'rm x'");
	json_decref(j);
	tu_run_free(&r);

	tu_cordon_run(&r, A("run", "--format", "json", "--", "kill -9 $$"));
	cr_assert_eq(r.status, 137);
	j = json_loads(r.out, 0, &je);
	cr_assert(j);
	cr_expect_eq(json_integer_value(json_object_get(j, "signal")), 9);
	cr_expect_eq(json_integer_value(json_object_get(j, "exit_code")), -9);
	json_decref(j);
	tu_run_free(&r);
}

Test(cli, workdir_and_ignore)
{
	char *d = tu_tmpdir(), *want, *sub;
	struct tu_run r;

	tu_write_file(d, ".env", "SECRET=1\n");
	tu_cordon_run(&r, A("run", "-w", d, "--ignore", ".env", "--", "cat .env"));
	cr_assert(asprintf(&want, "Access denied: %s/.env\n", d) > 0);
	cr_expect_str_eq(r.out, want);
	cr_expect_eq(r.status, 126);
	free(want);
	tu_run_free(&r);

	/* The command runs in the workdir, and files persist there. */
	tu_cordon_run(&r, A("run", "-w", d, "--", "pwd; echo made > f.txt"));
	cr_assert(asprintf(&want, "%s\n", d) > 0);
	cr_expect_str_eq(r.out, want);
	free(want);
	tu_run_free(&r);
	tu_cordon_run(&r, A("run", "-w", d, "--", "cat f.txt"));
	cr_expect_str_eq(r.out, "made\n");
	tu_run_free(&r);

	/* A missing workdir is created with its parents. */
	cr_assert(asprintf(&sub, "%s/a/b/c", d) > 0);
	tu_cordon_run(&r, A("run", "-w", sub, "--", "pwd"));
	cr_assert(asprintf(&want, "%s\n", sub) > 0);
	cr_expect_str_eq(r.out, want);
	free(want);
	free(sub);
	tu_run_free(&r);
	tu_rmtree(d);
	free(d);
}

/*
 * cordon check takes -w through the same code as cordon run (runtime/run.c, prepare_workdir):
 * a workdir run refuses gives check the same line and status (found in review: check said
 * "allowed" for a workdir that is a regular file, a path through one, or, as root, a
 * symlink). A missing workdir is judged as the path the run would make, and check makes
 * nothing.
 */
Test(cli, check_validates_workdir_as_run)
{
	char *d = tu_tmpdir(), *file, *under, *link, *through, *missing;
	struct {
		const char *path;
		int status; /* run's and check's */
	} rows[5];
	size_t n = 0;

	tu_write_file(d, "file", "x");
	cr_assert(asprintf(&file, "%s/file", d) > 0);
	cr_assert(asprintf(&under, "%s/file/sub", d) > 0);
	cr_assert(asprintf(&link, "%s/link", d) > 0);
	cr_assert(asprintf(&through, "%s/link/sub", d) > 0);
	cr_assert(asprintf(&missing, "%s/a/b", d) > 0);
	cr_assert(symlink(d, link) == 0);
	rows[n++] = (typeof(rows[0])){ file, 125 };
	rows[n++] = (typeof(rows[0])){ under, 125 };
	/* As root no symlink is followed on the way to a workdir (docs/security.md). */
	rows[n++] = (typeof(rows[0])){ link, geteuid() == 0 ? 125 : 0 };
	rows[n++] = (typeof(rows[0])){ through, geteuid() == 0 ? 125 : 0 };
	rows[n++] = (typeof(rows[0])){ "/etc/hostname", 125 };
	for (size_t i = 0; i < n; i++) {
		struct tu_run run, check;

		tu_cordon_run(&run, A("run", "--via", "direct", "-w", rows[i].path, "--", "true"));
		tu_cordon_run(&check, A("check", "-w", rows[i].path, "--", "true"));
		cr_expect_eq(run.status, rows[i].status, "run -w %s: %d (%s)", rows[i].path,
			     run.status, run.err);
		cr_expect_eq(check.status, run.status, "check -w %s: %d, run: %d (%s)",
			     rows[i].path, check.status, run.status, check.err);
		cr_expect_str_eq(check.err, run.err, "check -w %s", rows[i].path);
		cr_expect_str_eq(check.out, rows[i].status ? "" : "allowed\n", "check -w %s",
				 rows[i].path);
		tu_run_free(&run);
		tu_run_free(&check);
	}
	{
		/* Missing: allowed, judged where it would be, and not made. */
		struct tu_run r;
		char *cmd, *want;

		cr_assert(asprintf(&cmd, "cat %s/a/b/.env", d) > 0);
		tu_cordon_run(&r, A("check", "-w", missing, "--", "ls"));
		cr_expect_eq(r.status, 0, "%s", r.err);
		cr_expect_str_eq(r.out, "allowed\n");
		tu_run_free(&r);
		tu_cordon_run(&r, A("check", "-w", missing, "--ignore", ".env", "--", cmd));
		cr_assert(asprintf(&want, "Access denied: %s/a/b/.env\n", d) > 0);
		cr_expect_eq(r.status, 126, "%s", r.err);
		cr_expect_str_eq(r.out, want);
		tu_run_free(&r);
		cr_expect(access(missing, F_OK) != 0 && errno == ENOENT, "check made %s", missing);
		free(cmd);
		free(want);
	}
	free(file);
	free(under);
	free(link);
	free(through);
	free(missing);
	tu_rmtree(d);
	free(d);
}

Test(cli, keep_prints_and_keeps)
{
	struct tu_run r;
	char path[256];

	const char *argv[] = { tu_cordon(), "run", "--keep", "--", "echo kept > k.txt", NULL };

	tu_exec(&r, NULL, NULL, (char *const *)argv);
	cr_assert_eq(r.status, 0);
	cr_assert(sscanf(r.err, "cordon: kept workdir %255s", path) == 1, "%s", r.err);
	cr_expect(!strncmp(path, "/tmp/cordon-", 12));
	cr_expect(strstr(r.err, path));
	{
		char *f;
		struct stat st;

		cr_assert(asprintf(&f, "%s/k.txt", path) > 0);
		cr_expect(stat(f, &st) == 0, "kept file missing");
		free(f);
	}
	tu_rmtree(path);
	tu_run_free(&r);
}

Test(cli, environment_scrubbed)
{
	struct tu_run r;
	const char *argv[] = { tu_cordon(), "run", "-e",
			       "FOO=bar",   "--",  "echo $FOO ${SECRET_TOKEN:-none} ${PATH:+path}",
			       NULL };

	tu_exec(&r, NULL, (char *[]){ "SECRET_TOKEN=hunter2", NULL }, (char *const *)argv);
	cr_expect_str_eq(r.out, "bar none path\n", "%s", r.err);
	tu_run_free(&r);
}

Test(cli, environment_inherit_ag2_compat)
{
	struct tu_run r;
	const char *argv[] = { tu_cordon(),  "run", "-p",
			       "ag2-compat", "--",  "echo ${SECRET_TOKEN:-none}",
			       NULL };

	tu_exec(&r, NULL, (char *[]){ "SECRET_TOKEN=hunter2", NULL }, (char *const *)argv);
	cr_expect_str_eq(r.out, "hunter2\n", "%s", r.err);
	tu_run_free(&r);
}

Test(cli, stdin_passed_only_when_asked)
{
	struct tu_run r;
	const char *with[] = { tu_cordon(), "run", "--stdin", "--", "cat", NULL };
	const char *without[] = { tu_cordon(), "run", "--", "cat", NULL };

	tu_exec(&r, "from stdin\n", NULL, (char *const *)with);
	cr_expect_str_eq(r.out, "from stdin\n");
	tu_run_free(&r);
	tu_exec(&r, "from stdin\n", NULL, (char *const *)without);
	cr_expect_str_eq(r.out, "\n");
	cr_expect_eq(r.status, 0);
	tu_run_free(&r);
}

/*
 * The command reopens its stdin, stdout and stderr by a path, as scripts do (`> /dev/stdout`,
 * `cat /dev/stdin`, /proc/self/fd/N). As root the command runs as uid 65534 and the pipes were
 * root's, 0600: each of these was "Permission denied" (found in red team); an ordinary
 * caller's run, whose pipes and command are both its own, always worked.
 */
Test(cli, the_command_reopens_its_stdio_by_path)
{
	struct tu_run r;
	const char *argv[] = { tu_cordon(),
			       "run",
			       "--stdin",
			       "--",
			       "cat /dev/stdin; echo a > /dev/stdout; echo b > /dev/stderr; "
			       "exec 3>/proc/self/fd/1; echo c >&3; "
			       "python3 -c 'open(\"/proc/self/fd/1\", \"w\").write(\"d\\n\")'",
			       NULL };

	tu_exec(&r, "in\n", NULL, (char *const *)argv);
	cr_expect_str_eq(r.out, "in\na\nc\nd\nb\n", "stderr: %s", r.err);
	cr_expect_eq(r.status, 0);
	tu_run_free(&r);
}

/* The timeout kills the whole tree: a grandchild must not live on to touch its file. */
Test(cli, timeout_kills_tree)
{
	char *d = tu_tmpdir(), *late, *cmd;
	struct tu_run r;

	cr_assert(asprintf(&late, "%s/late", d) > 0);
	cr_assert(asprintf(&cmd, "(sleep 2; touch %s) & sleep 9", late) > 0);
	tu_cordon_run(&r, A("run", "-t", "1", "--", cmd));
	cr_expect_eq(r.status, 124);
	tu_run_free(&r);
	sleep(2);
	cr_expect(access(late, F_OK) != 0, "a grandchild outlived the timeout");
	free(late);
	free(cmd);
	tu_rmtree(d);
	free(d);
}

/* A finished command is not a timeout just because a background job holds its pipes. */
Test(cli, background_job_does_not_hold_result)
{
	struct tu_run r;

	/* Not a timing test: waiting for the job would take 20 s and end in the 30 s timeout. */
	tu_cordon_run(&r, A("run", "-t", "30", "--", "(sleep 20; echo bg) & echo fg"));
	cr_expect_str_eq(r.out, "fg\n");
	cr_expect_eq(r.status, 0);
	cr_expect_lt(r.ms, 15000, "took %.0f ms: cordon waited for the background job", r.ms);
	tu_run_free(&r);
}

/*
 * Capture is bounded: 2 GB of output, cordon's peak RSS under 16 MiB, and every byte counted.
 */
Test(cli, two_gigabytes_bounded, .timeout = 120)
{
	struct tu_run r;
	struct rusage ru;
	json_error_t je;
	json_t *j;

	tu_cordon_run(&r, A("run", "--format", "json", "-t", "100", "--",
			    "head -c 2000000000 /dev/zero"));
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(getrusage(RUSAGE_CHILDREN, &ru) == 0);
	j = json_loads(r.out, JSON_ALLOW_NUL, &je);
	cr_assert(j, "not JSON: %s", je.text);
	cr_expect_eq(json_integer_value(json_object_get(j, "stdout_bytes")), 2000000000LL);
	cr_expect(json_is_true(json_object_get(j, "truncated")));
	cr_expect_lt(ru.ru_maxrss, 16 * 1024, "peak RSS of cordon (or a child) %ld KiB",
		     ru.ru_maxrss);
	json_decref(j);
	tu_run_free(&r);
}

/*
 * A flood on stdout or stderr is read by a thread of its own once it passes 4 MiB
 * (runtime/relay.h), both at once here: both counted exactly, decoded across every chunk
 * boundary (the character count of the truncation note is exact), and a flood that does not
 * end (a timeout; a writer left behind by the shell) ends the run as before.
 */
Test(cli, floods_read_by_threads_of_their_own, .timeout = 120)
{
	struct tu_run r;
	json_error_t je;
	json_t *j;

	tu_cordon_run(&r, A("run", "--format", "json", "-t", "100", "--",
			    "yes 'h\303\251llo w\303\266rld' | head -c 50000000 & "
			    "yes e | head -c 9000000 >&2; wait"));
	cr_assert_eq(r.status, 0, "%s", r.err);
	j = json_loads(r.out, 0, &je);
	cr_assert(j, "not JSON: %s", je.text);
	cr_expect_eq(json_integer_value(json_object_get(j, "stdout_bytes")), 50000000LL);
	cr_expect_eq(json_integer_value(json_object_get(j, "stderr_bytes")), 9000000LL);
	/* 3,571,428 lines of 12 characters and "h\u00e9llo w"; 4,500,000 "e\n" less the last \n */
	cr_expect(strstr(json_string_value(json_object_get(j, "output")),
			 "\n[truncated: showing first 100000 of 51857142 chars]") != NULL,
		  "%.200s", json_string_value(json_object_get(j, "output")));
	cr_expect(strncmp(json_string_value(json_object_get(j, "output")),
			  "h\303\251llo w\303\266rld\n", 14) == 0);
	json_decref(j);
	tu_run_free(&r);

	/* A flood that never ends: the timeout, AG2's text, exit 124. */
	tu_cordon_run(&r, A("run", "-t", "1", "--", "yes"));
	cr_expect_eq(r.status, 124, "%s", r.err);
	cr_expect(strstr(r.out, "Command timed out after 1s") != NULL, "%.200s", r.out);
	cr_expect_lt(r.ms, 10000, "took %.0f ms", r.ms);
	tu_run_free(&r);

	/* The shell is done while a writer it started floods on: the run ends with the shell. */
	tu_cordon_run(&r, A("run", "--format", "json", "-t", "60", "--",
			    "yes & head -c 20000000 /dev/zero; exit 0"));
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_lt(r.ms, 30000, "took %.0f ms: the flood outlived its shell", r.ms);
	j = json_loads(r.out, JSON_ALLOW_NUL, &je);
	cr_assert(j, "not JSON: %s", je.text);
	cr_expect_geq(json_integer_value(json_object_get(j, "stdout_bytes")), 20000000LL);
	cr_expect(json_is_false(json_object_get(j, "timed_out")));
	json_decref(j);
	tu_run_free(&r);
}

Test(cli, tool_schema)
{
	struct tu_run r;
	json_error_t je;
	json_t *j;

	tu_cordon_run(&r, A("tool-schema", "--workdir", "/srv/x"));
	cr_assert_eq(r.status, 0);
	j = json_loads(r.out, 0, &je);
	cr_assert(j);
	cr_expect_str_eq(json_string_value(json_object_get(j, "type")), "function");
	json_t *f = json_object_get(j, "function");
	cr_expect_str_eq(json_string_value(json_object_get(f, "name")), "run_shell_command");
	cr_expect_str_eq(json_string_value(json_object_get(f, "description")),
			 "Execute a shell command in the working directory: /srv/x");
	json_t *params = json_object_get(f, "parameters");
	cr_expect_str_eq(
		json_string_value(json_object_get(
			json_object_get(json_object_get(params, "properties"), "command"), "type")),
		"string");
	json_decref(j);
	tu_run_free(&r);
	tu_cordon_run(&r, A("tool-schema", "--bogus"));
	cr_expect_eq(r.status, 125);
	tu_run_free(&r);
}

Test(cli, profiles_list_and_show)
{
	struct tu_run r;
	const char *names[] = { "default",    "readonly",	"strict",
				"ag2-compat", "shell-executor", "network" };

	tu_cordon_run(&r, A("profiles"));
	cr_assert_eq(r.status, 0, "%s", r.err);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		cr_expect(strstr(r.out, names[i]), "profiles lacks %s", names[i]);
	tu_run_free(&r);

	/* profile show round-trips through the CLI: show → load the text → show again. */
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char *d = tu_tmpdir(), *path;
		struct tu_run r2;

		tu_cordon_run(&r, A("profile", "show", names[i]));
		cr_assert_eq(r.status, 0, "%s: %s", names[i], r.err);
		tu_write_file(d, "shown.conf", r.out);
		cr_assert(asprintf(&path, "%s/shown.conf", d) > 0);
		tu_cordon_run(&r2, A("profile", "show", path));
		cr_expect_eq(r2.status, 0, "%s: %s", names[i], r2.err);
		/* The name line may differ; everything else must be identical. */
		const char *a = strstr(r.out, "[policy]"), *b = strstr(r2.out, "[policy]");
		cr_expect(a && b && !strcmp(a, b), "%s does not round-trip:\n%s\n---\n%s", names[i],
			  r.out, r2.out);
		tu_run_free(&r);
		tu_run_free(&r2);
		free(path);
		tu_rmtree(d);
		free(d);
	}
}

/* cordon gc: every bad argument is one line, exit 125, and nothing removed or contacted. */
Test(cli, gc_bad_arguments)
{
	static const struct {
		const char *args[6];
		const char *msg;
	} gc_cases[] = {
		{ { "gc", "--bogus" }, "gc: unknown option '--bogus'" },
		{ { "gc", "--backend" }, "gc: option '--backend' needs a value" },
		{ { "gc", "stray" }, "gc: unexpected argument 'stray'" },
		{ { "gc", "--backend", "local" }, "gc: invalid backend 'local'" },
		{ { "gc", "--profile", "default" }, "gc: --profile is for --backend daytona" },
		{ { "gc", "--backend", "daytona", "--profile", "no-such-profile" },
		  "no-such-profile" },
	};

	for (size_t i = 0; i < sizeof(gc_cases) / sizeof(gc_cases[0]); i++) {
		struct tu_run r;
		const char *argv[8] = { tu_cordon() };
		char *const env[] = { "PATH=/usr/bin:/bin", NULL };
		size_t n = 1;

		for (size_t k = 0; gc_cases[i].args[k]; k++)
			argv[n++] = gc_cases[i].args[k];
		tu_exec(&r, NULL, env, (char *const *)argv);
		cr_expect_eq(r.status, 125, "%s: status %d", gc_cases[i].msg, r.status);
		cr_expect(strstr(r.err, gc_cases[i].msg), "want '%s' in: %s", gc_cases[i].msg,
			  r.err);
		cr_expect_str_eq(r.out, "");
		tu_run_free(&r);
	}
	{
		/* Daytona without a key: said before any request. */
		struct tu_run r;
		char *const env[] = { "PATH=/usr/bin:/bin", NULL };
		char *const argv[] = { (char *)tu_cordon(), "gc", "--backend", "daytona", NULL };

		tu_exec(&r, NULL, env, argv);
		cr_expect_eq(r.status, 125);
		cr_expect(strstr(r.err, "DAYTONA_API_KEY is not set"), "%s", r.err);
		tu_run_free(&r);
	}
}

Test(cli, doctor)
{
	struct tu_run r;
	const char *facilities[] = {
		"user namespace", "pid namespace", "mount namespace",  "network namespace",
		"ipc namespace",  "uts namespace", "cgroup namespace", "seccomp",
		"Landlock",	  "cgroup v1",	   "cgroup v2",	       "idmapped mounts",
		"verdict"
	};

	tu_cordon_run(&r, A("doctor"));
	cr_assert_eq(r.status, 0, "%s", r.err);
	for (size_t i = 0; i < sizeof(facilities) / sizeof(facilities[0]); i++)
		cr_expect(strstr(r.out, facilities[i]), "doctor does not report %s:\n%s",
			  facilities[i], r.out);
	/* This machine type has every facility (README): anything less is a regression. */
	cr_expect(strstr(r.out, "full isolation available"), "%s", r.out);
	tu_run_free(&r);
	{
		/* The Daytona line: cordon-remote found beside cordon, whether a key is set, and
		 * never the key itself. */
		char *const env[] = { "DAYTONA_API_KEY=dtn_doctor_secret", "PATH=/usr/bin:/bin",
				      NULL };
		char *const argv[] = { (char *)tu_cordon(), "doctor", NULL };

		tu_exec(&r, NULL, env, argv);
		cr_assert_eq(r.status, 0, "%s", r.err);
		cr_expect(strstr(r.out, "/cordon-remote; DAYTONA_API_KEY set; API "), "%s", r.out);
		cr_expect_null(strstr(r.out, "dtn_doctor_secret"), "%s", r.out);
		tu_run_free(&r);
	}
	if (geteuid() == 0) {
		/*
		 * A host process with root's runs' ids, 65534:65533, is named: the kernel would let
		 * it ptrace a run's command (docs/security.md). A sandbox's own are not counted.
		 */
		char path[64], text[2048] = "";
		pid_t k = fork();

		cr_assert_geq(k, 0);
		if (k == 0) {
			if (setgroups(0, NULL) == 0 && setresgid(65533, 65533, 65533) == 0 &&
			    setresuid(65534, 65534, 65534) == 0)
				pause();
			_exit(1);
		}
		(void)snprintf(path, sizeof(path), "/proc/%d/status", (int)k);
		for (int i = 0; i < 200 && !strstr(text, "\nUid:\t65534"); i++) {
			FILE *f = fopen(path, "re");
			size_t n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;

			text[n] = '\0';
			if (f)
				fclose(f);
			usleep(5000);
		}
		tu_cordon_run(&r, A("doctor"));
		(void)kill(k, SIGKILL);
		(void)waitpid(k, NULL, 0);
		cr_assert_eq(r.status, 0, "%s", r.err);
		cr_expect(strstr(r.out, "  run ids:            root's runs are 65534:65533; ") &&
				  strstr(r.out, " of this host run") &&
				  strstr(r.out, "can ptrace a run's command and write its workdir"),
			  "%s", r.out);
		tu_run_free(&r);
	}
	tu_cordon_run(&r, A("doctor", "--bogus"));
	cr_expect_eq(r.status, 125);
	cr_expect(strstr(r.err, "--bogus"), "%s", r.err);
	tu_run_free(&r);
	if (geteuid() == 0 && access("/usr/sbin/runuser", X_OK) == 0) {
		/* An ordinary caller: no kernel verdict it cannot make (it said "kernel Invalid
		 * argument" on this kernel, which has idmapped mounts). */
		tu_exec(&r, NULL, NULL,
			(char *[]){ "runuser", "-u", "nobody", "--", (char *)tu_cordon(), "doctor",
				    NULL });
		cr_assert_eq(r.status, 0, "%s", r.err);
		cr_expect(strstr(r.out, "idmapped mounts:    not probed (only root's runs use "
					"them); use: no"),
			  "%s", r.out);
		tu_run_free(&r);
	}
}

/*
 * The simple-command fast path (backends/local/shfast.c) changes nothing a user can see: each
 * simple command gives the same stdout, stderr and status as the same command followed by
 * ';', which is not simple and runs through sh. The setup trace shows which path ran.
 */
static void run_traced(struct tu_run *r, const char *profile, const char *wd, const char *cmd,
		       char *const env[])
{
	const char *argv[] = { tu_cordon(), "run", "--via", "direct", "-p", profile,
			       "-w",	    wd,	   "--",    cmd,      NULL };
	char *envv[8];
	size_t n = 0;

	envv[n++] = "CORDON_TRACE_SETUP=1";
	for (size_t i = 0; env && env[i] && n < 7; i++)
		envv[n++] = env[i];
	envv[n] = NULL;
	tu_exec(r, NULL, envv, (char *const *)argv);
}

static bool took_fast_path(const struct tu_run *r)
{
	return strstr(r->err, "a simple command: exec'd without sh") != NULL;
}

/* stderr without cordon's own trace lines */
static char *command_stderr(const struct tu_run *r)
{
	char *out = calloc(1, r->err_len + 1), *line, *save = NULL, *copy = strdup(r->err);

	cr_assert(out && copy);
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (strncmp(line, "cordon: setup", 13) != 0) {
			strcat(out, line);
			strcat(out, "\n");
		}
	free(copy);
	return out;
}

Test(cli, simple_command_without_sh_is_the_same, .timeout = 120)
{
	static const char *const cmds[] = {
		"/bin/true",	     "/bin/false",     "ls -a /",	  "env",
		"nosuchcommand --x", "/tmp",	       "./noshebang a b", "./kill.sh HUP",
		"./kill.sh INT",     "./kill.sh QUIT", "./kill.sh ABRT",  "./kill.sh KILL",
		"./kill.sh SEGV",    "./kill.sh PIPE", "./kill.sh TERM",  "./kill.sh USR1",
		"./kill.sh 34",	     "./kill.sh 40",   "./exit.sh 3",	  "cat missing-file",
	};
	/* Odd environments too: names dash drops, IFS, PWD right and wrong, a duplicate. */
	char *envs[][4] = { { NULL },
			    { "A-B=1", "IFS=x", "PWD=/nonexistent", NULL },
			    { "ZZ=1", "ZZ=2", "OLDPWD=/", NULL } };
	static const char *const profiles[] = { "default", "ag2-compat" };
	char *wd = tu_tmpdir();
	int fast = 0, runs = 0;

	tu_write_file(wd, "noshebang", "echo script \"$0\" \"$@\"\n");
	tu_write_file(wd, "kill.sh", "#!/bin/sh\necho before\nkill -$1 $$\n");
	tu_write_file(wd, "exit.sh", "#!/bin/sh\nexit $1\n");
	{
		char p[4096];

		for (int i = 0; i < 3; i++) {
			snprintf(p, sizeof(p), "%s/%s", wd,
				 i == 0	  ? "noshebang"
				 : i == 1 ? "kill.sh"
					  : "exit.sh");
			cr_assert_eq(chmod(p, 0755), 0);
		}
		/* the workdir is root's: the sandbox user needs to enter it */
		cr_assert_eq(chmod(wd, 0755), 0);
	}
	for (size_t p = 0; p < sizeof(profiles) / sizeof(profiles[0]); p++)
		for (size_t e = 0; e < sizeof(envs) / sizeof(envs[0]); e++)
			for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
				struct tu_run a, b;
				char *slow, *ea, *eb;

				/* The default profile does not pass the caller's environment. */
				if (p == 0 && e > 0)
					continue;
				cr_assert(asprintf(&slow, "%s;", cmds[i]) > 0);
				run_traced(&a, profiles[p], wd, cmds[i], envs[e]);
				run_traced(&b, profiles[p], wd, slow, envs[e]);
				cr_expect_not(took_fast_path(&b), "'%s' took the fast path", slow);
				fast += took_fast_path(&a);
				runs++;
				ea = command_stderr(&a);
				eb = command_stderr(&b);
				cr_expect_str_eq(a.out, b.out, "%s, env %zu: '%s'", profiles[p], e,
						 cmds[i]);
				cr_expect_str_eq(ea, eb, "%s, env %zu: '%s' stderr", profiles[p], e,
						 cmds[i]);
				cr_expect_eq(a.status, b.status, "%s, env %zu: '%s'", profiles[p],
					     e, cmds[i]);
				free(ea);
				free(eb);
				free(slow);
				tu_run_free(&a);
				tu_run_free(&b);
			}
	/* Every one of them is simple (the ones that fail to exec fall back to sh). */
	cr_expect_eq(fast, runs, "fast path taken %d times of %d", fast, runs);
	/* A builtin is dash's to run. */
	{
		struct tu_run a;

		run_traced(&a, "default", wd, "echo -e x", NULL);
		cr_expect_not(took_fast_path(&a));
		cr_expect_str_eq(a.out, "-e x\n");
		tu_run_free(&a);
	}
	tu_rmtree(wd);
	free(wd);
}

/* A command exec'd without sh is confined exactly like one run through it. */
Test(cli, simple_command_without_sh_is_confined)
{
	static const char *const fields[] = { "Uid:",	 "CapInh:", "CapPrm:",	   "CapEff:",
					      "CapBnd:", "CapAmb:", "NoNewPrivs:", "Seccomp:" };
	char *wd = tu_tmpdir();
	struct tu_run a, b;

	cr_assert_eq(chmod(wd, 0755), 0);
	run_traced(&a, "default", wd, "cat /proc/self/status", NULL);
	run_traced(&b, "default", wd, "cat /proc/self/status;", NULL);
	cr_assert(took_fast_path(&a), "%s", a.err);
	cr_assert_not(took_fast_path(&b));
	cr_expect_eq(a.status, 0, "%s", a.err);
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		const char *la = strstr(a.out, fields[i]), *lb = strstr(b.out, fields[i]);

		cr_assert(la && lb, "%s missing", fields[i]);
		cr_expect_eq(strcspn(la, "\n"), strcspn(lb, "\n"));
		cr_expect_eq(strncmp(la, lb, strcspn(la, "\n")), 0, "%.*s vs %.*s",
			     (int)strcspn(la, "\n"), la, (int)strcspn(lb, "\n"), lb);
	}
	cr_expect(strstr(a.out, "NoNewPrivs:\t1\n"), "%s", a.out);
	cr_expect(strstr(a.out, "Seccomp:\t2\n"), "%s", a.out);
	cr_expect(strstr(a.out, "CapEff:\t0000000000000000\n"), "%s", a.out);
	cr_expect(strstr(a.out, "Uid:\t65534\t"), "%s", a.out);
	/* Its parent is the sandbox's init, not a shell. */
	cr_expect(strstr(a.out, "PPid:\t1\n"), "%s", a.out);
	tu_run_free(&a);
	tu_run_free(&b);
	tu_rmtree(wd);
	free(wd);
}

/* Where the sandbox's `sh` cannot be known from outside (a PATH entry the sandbox builds
 * itself comes first), the command runs through sh. */
Test(cli, simple_command_through_sh_when_sh_is_unknown)
{
	const char *argv[] = { tu_cordon(), "run",	 "--via",
			       "direct",    "-e",	 "PATH=/tmp:/usr/bin:/bin",
			       "--",	    "/bin/true", NULL };
	struct tu_run r;

	tu_exec(&r, NULL, (char *[]){ "CORDON_TRACE_SETUP=1", NULL }, (char *const *)argv);
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_not(took_fast_path(&r), "%s", r.err);
	tu_run_free(&r);
}

/*
 * A SIGKILLed `cordon run --keep` (a temp workdir on the host, still marked: the run never
 * got to keep it) cannot remove it; the next run that makes one in the same TMPDIR does, once
 * it is a minute old and nobody holds it. A kept workdir (--keep, ended), and a marked one
 * that is recent, are left alone. (A temp workdir nobody keeps is only inside the sandbox:
 * nothing of it is on the host to sweep, cli/temp_workdir_is_bounded.)
 */
static int count_entries(const char *dir, const char *prefix, char *first, size_t n)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int k = 0;

	cr_assert(d, "opendir %s", dir);
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, prefix, strlen(prefix))) {
			if (first && k == 0)
				snprintf(first, n, "%s/%s", dir, de->d_name);
			k++;
		}
	closedir(d);
	return k;
}

static void age(const char *path)
{
	struct timespec ts[2] = { { .tv_sec = time(NULL) - 3600 },
				  { .tv_sec = time(NULL) - 3600 } };

	cr_assert_eq(utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW), 0, "age %s", path);
}

/* cordon with argv and envp, its stdout and stderr on /dev/null, not waited for. */
static pid_t start_quiet(char *const argv[], char *const envp[])
{
	pid_t pid = fork();

	cr_assert(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 1);
		dup2(null, 2);
		execve(tu_cordon(), argv, envp);
		_exit(127);
	}
	return pid;
}

Test(cli, killed_runs_temp_workdir_is_swept, .timeout = 60)
{
	char *tmp = tu_tmpdir(), env[300], killed[400] = "", kept[400] = "", fresh[400];
	char *envv[] = { env, "PATH=/usr/bin:/bin", NULL };
	struct tu_run r;
	pid_t pid;
	int st;

	snprintf(env, sizeof(env), "TMPDIR=%s", tmp);
	pid = start_quiet(
		(char *[]){ "cordon", "run", "--via", "direct", "--keep", "--", "sleep 60", NULL },
		envv);
	for (int i = 0; i < 250 && count_entries(tmp, "cordon-", killed, sizeof(killed)) == 0; i++)
		usleep(20000);
	cr_assert(killed[0], "the run made no temp workdir in %s", tmp);
	usleep(200000);
	kill(pid, SIGKILL);
	cr_assert_eq(waitid(P_PID, pid, NULL, WEXITED | WNOWAIT), 0);
	cordon_reap_after(pid); /* its cgroups (the suite checks none is left) */
	waitpid(pid, &st, 0);
	cr_expect(access(killed, F_OK) == 0, "the killed run's workdir is already gone");
	age(killed);

	tu_exec(&r, NULL, envv,
		(char *[]){ (char *)tu_cordon(), "run", "--via", "direct", "--keep", "--", "true",
			    NULL });
	cr_assert_eq(r.status, 0, "%s", r.err);
	tu_run_free(&r);
	for (DIR *d = opendir(tmp); d; d = (closedir(d), NULL)) {
		struct dirent *de;

		while ((de = readdir(d)))
			if (!strncmp(de->d_name, "cordon-", 7) &&
			    strcmp(killed + strlen(tmp) + 1, de->d_name))
				snprintf(kept, sizeof(kept), "%s/%s", tmp, de->d_name);
	}
	cr_assert(kept[0], "no kept workdir");
	age(kept);
	snprintf(fresh, sizeof(fresh), "%s/cordon-fresh0", tmp);
	cr_assert_eq(mkdir(fresh, 01700), 0);
	cr_assert_eq(chmod(fresh, 01700), 0);

	/* The killed run's sandbox dies with it; the next run that makes one sweeps. */
	for (int i = 0; i < 50 && access(killed, F_OK) == 0; i++) {
		tu_exec(&r, NULL, envv,
			(char *[]){ (char *)tu_cordon(), "run", "--via", "direct", "--keep", "--",
				    "true", NULL });
		cr_assert_eq(r.status, 0, "%s", r.err);
		tu_run_free(&r);
		if (access(killed, F_OK) == 0)
			usleep(100000);
	}
	cr_expect(access(killed, F_OK) != 0, "%s was not swept", killed);
	cr_expect(access(kept, F_OK) == 0, "the kept workdir %s was swept", kept);
	cr_expect(access(fresh, F_OK) == 0, "a recent marked workdir was swept");
	tu_rmtree(tmp);
	free(tmp);
}

/*
 * The sweep before a run takes only the caller's own leftovers: a marked, old, unheld
 * cordon-* directory of another user in a shared $TMPDIR is not root's to remove (a user
 * could otherwise make every run of root's walk and delete a tree of the user's choosing).
 */
Test(cli, sweep_takes_only_own_temp_workdirs, .timeout = 60)
{
	char *tmp = tu_tmpdir(), env[300], other[400], inner[450];
	char *envv[] = { env, "PATH=/usr/bin:/bin", NULL };
	struct tu_run r;
	int fd;

	if (geteuid() != 0)
		cr_skip_test("needs root (a directory of another user's)");
	snprintf(env, sizeof(env), "TMPDIR=%s", tmp);
	snprintf(other, sizeof(other), "%s/cordon-other0", tmp);
	snprintf(inner, sizeof(inner), "%s/file", other);
	cr_assert_eq(mkdir(other, 0700), 0);
	fd = open(inner, O_WRONLY | O_CREAT | O_EXCL, 0600);
	cr_assert(fd >= 0);
	close(fd);
	/* an ordinary user's (not nobody, whose directories a root run's are) */
	cr_assert_eq(lchown(inner, 54321, 54321), 0);
	cr_assert_eq(chown(other, 54321, 54321), 0);
	cr_assert_eq(chmod(other, 01700), 0);
	age(other);

	/* --keep: a run that makes a temp workdir on the host, and so sweeps first. */
	tu_exec(&r, NULL, envv,
		(char *[]){ (char *)tu_cordon(), "run", "--via", "direct", "--keep", "--", "true",
			    NULL });
	cr_assert_eq(r.status, 0, "%s", r.err);
	tu_run_free(&r);
	cr_expect(access(inner, F_OK) == 0, "root's run swept another user's %s", other);
	tu_rmtree(tmp);
	free(tmp);
}

/* A tree far deeper than any fixed recursion bound: the result is kept, the workdir removed. */
Test(cli, deep_tree_in_temp_workdir, .timeout = 60)
{
	char *tmp = tu_tmpdir(), env[300];
	char *envv[] = { env, "PATH=/usr/bin:/bin", NULL };
	struct tu_run r;

	snprintf(env, sizeof(env), "TMPDIR=%s", tmp);
	tu_exec(&r, NULL, envv,
		(char *[]){ (char *)tu_cordon(), "run", "--via", "direct", "--",
			    "i=0; while [ $i -lt 1500 ]; do mkdir d && cd d || exit 9; "
			    "i=$((i+1)); done; chmod 0 .; echo deep",
			    NULL });
	cr_expect_eq(r.status, 0, "status %d: %s%s", r.status, r.out, r.err);
	cr_expect_str_eq(r.out, "deep\n");
	cr_expect_eq(count_entries(tmp, "cordon-", NULL, 0), 0, "the temp workdir is left");
	tu_run_free(&r);
	tu_rmtree(tmp);
	free(tmp);
}

/*
 * Supplementary groups (docs/security.md, "Identity"): a root run has the run's gid only; an
 * ordinary user's direct run keeps the user's supplementary groups, which an unprivileged user
 * namespace cannot drop (setgroups is denied there), so they still open group-readable files
 * the sandbox shows. This pins down what the documentation says holds.
 */
Test(cli, supplementary_groups, .timeout = 60)
{
	char *wd = tu_tmpdir(), file[300], cmd[400];
	struct tu_run r;
	int out[2], st;
	pid_t pid;

	if (geteuid() != 0)
		cr_skip_test("needs root to become another user");
	tu_exec(&r, NULL, NULL,
		(char *[]){ (char *)tu_cordon(), "run", "--via", "direct", "--", "id -G", NULL });
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_str_eq(r.out, "65533\n", "a root run's groups: %s", r.out);
	tu_run_free(&r);

	/* uid 54320 (no passwd entry needed) with supplementary group 54321. */
	cr_assert_eq(chown(wd, 54320, 54320), 0);
	tu_write_file(wd, "grp.txt", "GROUPREAD\n");
	snprintf(file, sizeof(file), "%s/grp.txt", wd);
	cr_assert_eq(chown(file, 0, 54321), 0);
	cr_assert_eq(chmod(file, 0640), 0);
	snprintf(cmd, sizeof(cmd), "cat grp.txt; id -u");
	cr_assert_eq(pipe(out), 0);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		gid_t groups[] = { 54321 };

		dup2(out[1], 1);
		dup2(out[1], 2);
		if (setgroups(1, groups) < 0 || setgid(54320) < 0 || setuid(54320) < 0)
			_exit(90);
		execl(tu_cordon(), "cordon", "run", "--via", "direct", "-w", wd, "--", cmd, NULL);
		_exit(91);
	}
	close(out[1]);
	char buf[512] = "";
	ssize_t n, len = 0;
	while ((n = read(out[0], buf + len, sizeof(buf) - 1 - (size_t)len)) > 0)
		len += n;
	buf[len] = '\0';
	close(out[0]);
	waitpid(pid, &st, 0);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x: %s", st, buf);
	cr_expect(strstr(buf, "GROUPREAD") != NULL,
		  "the user's supplementary group no longer opens the file: %s", buf);
	cr_expect(strstr(buf, "54320") != NULL, "%s", buf);
	tu_rmtree(wd);
	free(wd);
}

/*
 * A temp workdir nobody keeps is a tmpfs of tmp_size inside the sandbox: a disk fill stops at
 * the limit (ENOSPC) and nothing reaches the host's disk; nothing of it exists on the host, not
 * even during the run. With --keep the files are on the host, as the user asked.
 */
Test(cli, temp_workdir_is_bounded, .timeout = 60)
{
	char *tmp = tu_tmpdir(), env[300], kept[400] = "", f[500];
	char *envv[] = { env, "PATH=/usr/bin:/bin", NULL };
	struct tu_run r;

	snprintf(env, sizeof(env), "TMPDIR=%s", tmp);
	tu_exec(&r, NULL, envv,
		(char *[]){ (char *)tu_cordon(), "run", "--via", "direct", "-p",
			    CORDON_SRCDIR "/profiles/default.conf", "--",
			    "stat -f -c %T .; head -c 300000000 /dev/zero > big; echo rc=$?; "
			    "wc -c < big; rm big; echo x > small && cat small",
			    NULL });
	cr_expect_eq(r.status, 0, "status %d: %s%s", r.status, r.out, r.err);
	cr_expect(strstr(r.out, "tmpfs\n") == r.out, "the workdir is not a tmpfs: %s", r.out);
	cr_expect(strstr(r.out, "No space left on device") || strstr(r.out, "rc=1"),
		  "300 MB were written in a 256M workdir: %s", r.out);
	cr_expect(strstr(r.out, "\n268435456\n") || strstr(r.out, "\n2684"),
		  "the file is not cut at the limit: %s", r.out);
	cr_expect_eq(count_entries(tmp, "cordon-", NULL, 0), 0, "the temp workdir is left");
	tu_run_free(&r);

	/* Not on the host during the run either: it is named in the sandbox's own /tmp. */
	{
		int out[2], st;
		char buf[256] = "";
		ssize_t n;
		pid_t pid;

		cr_assert_eq(pipe(out), 0);
		pid = fork();
		cr_assert(pid >= 0);
		if (pid == 0) {
			dup2(out[1], 1);
			execle(tu_cordon(), "cordon", "run", "--via", "direct", "--",
			       "pwd; sleep 0.5; echo x > f; pwd", NULL, envv);
			_exit(127);
		}
		close(out[1]);
		n = read(out[0], buf, sizeof(buf) - 1);
		cr_expect(n > 0 && strncmp(buf, "/tmp/cordon-", 12) == 0, "pwd: %s", buf);
		cr_expect_eq(count_entries(tmp, "cordon-", NULL, 0), 0,
			     "the temp workdir is on the host during the run");
		while (read(out[0], buf, sizeof(buf)) > 0)
			;
		close(out[0]);
		waitpid(pid, &st, 0);
		cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
		cr_expect_eq(count_entries(tmp, "cordon-", NULL, 0), 0, "the temp workdir is left");
	}

	tu_exec(&r, NULL, envv,
		(char *[]){ (char *)tu_cordon(), "run", "--via", "direct", "--keep", "--",
			    "echo kept > k.txt", NULL });
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_assert_eq(count_entries(tmp, "cordon-", kept, sizeof(kept)), 1);
	snprintf(f, sizeof(f), "%s/k.txt", kept);
	cr_expect(access(f, F_OK) == 0, "--keep: %s is not on the host", f);
	tu_run_free(&r);
	tu_rmtree(tmp);
	free(tmp);
}

/*
 * A root-owned workdir on a file system that cannot be idmapped (overlayfs, as /tmp is in many
 * containers): doctor says so for that directory, and a run there works (bound as it is, the
 * command has the access other users have) instead of failing with exit 125.
 */
Test(cli, workdir_without_idmapped_mounts, .timeout = 60)
{
	char *top = tu_tmpdir(), lower[300], upper[300], work[300], merged[300], opts[1024];
	struct tu_run r;

	if (geteuid() != 0)
		cr_skip_test("needs root to mount overlayfs");
	snprintf(lower, sizeof(lower), "%s/l", top);
	snprintf(upper, sizeof(upper), "%s/u", top);
	snprintf(work, sizeof(work), "%s/w", top);
	snprintf(merged, sizeof(merged), "%s/m", top);
	cr_assert(mkdir(lower, 0755) == 0 && mkdir(upper, 0755) == 0 && mkdir(work, 0755) == 0 &&
		  mkdir(merged, 0755) == 0);
	snprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=%s,workdir=%s", lower, upper, work);
	cr_assert_eq(mount("overlay", merged, "overlay", 0, opts), 0, "mount overlay: %s",
		     strerror(errno));
	cr_assert_eq(chmod(merged, 0755), 0);
	tu_write_file(merged, "notes.txt", "hello from overlayfs\n");

	tu_exec(&r, NULL, NULL,
		(char *[]){ (char *)tu_cordon(), "doctor", "--workdir", merged, NULL });
	cr_expect_eq(r.status, 0);
	cr_expect(strstr(r.out, "workdir file system: overlayfs") &&
			  strstr(r.out, "no idmapped mount"),
		  "doctor does not test the workdir's file system:\n%s", r.out);
	tu_run_free(&r);

	tu_exec(&r, NULL, NULL,
		(char *[]){ (char *)tu_cordon(), "run", "--via", "direct", "-w", merged, "--",
			    "cat notes.txt; id -u", NULL });
	cr_expect_eq(r.status, 0, "status %d: %s%s", r.status, r.out, r.err);
	cr_expect_str_eq(r.out, "hello from overlayfs\n65534\n");
	tu_run_free(&r);
	cr_expect_eq(umount(merged), 0);
	tu_rmtree(top);
	free(top);
}

/*
 * A root caller's run in its root-owned (idmapped) workdir, whose root setuid program the
 * command would own: with an ignore glob, one walk of the workdir both finds the names to hide
 * and the privileged files (hide.c, HIDE_SETID), one step in the setup trace; with the default
 * profile's literal masks there is no hide walk, and the setuid scan is a step of its own.
 * Either way the program, two levels down, cannot be opened for writing (EROFS).
 */
Test(cli, one_walk_hides_and_finds_setuid_programs, .timeout = 60)
{
	char *wd = tu_tmpdir(), p[4200], data[64];
	int fd;

	if (geteuid() != 0)
		cr_skip_test("needs root (a root-owned workdir is idmapped for root's runs only)");
	cr_assert_eq(chmod(wd, 0755), 0);
	snprintf(p, sizeof(p), "%s/sub", wd);
	cr_assert_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/sub/deep", wd);
	cr_assert_eq(mkdir(p, 0755), 0);
	tu_write_file(wd, "sub/deep/prog", "#!/bin/sh\n");
	tu_write_file(wd, "x.o", "");
	snprintf(p, sizeof(p), "%s/sub/deep/prog", wd);
	cr_assert_eq(chmod(p, 04755), 0);
	for (int globs = 1; globs >= 0; globs--) {
		const char *argv[] = {
			tu_cordon(), "run",	 "--via", "direct", "-w",
			wd,	     "--ignore", "*.o",	  "--",	    "echo pwned > sub/deep/prog",
			NULL
		};
		const char *what = globs ? "--ignore '*.o'" : "the default profile";
		struct tu_run r;
		ssize_t n;

		if (!globs)
			memmove(&argv[6], &argv[8], 3 * sizeof(argv[0]));
		tu_exec(&r, NULL, (char *[]){ "CORDON_TRACE_SETUP=1", NULL }, (char *const *)argv);
		cr_expect(r.status != 0 && strstr(r.out, "Read-only file system"),
			  "%s: status %d:\n%s", what, r.status, r.out);
		if (globs) {
			/* Hidden: x.o, and the default profile's absent masks (placeholders). */
			cr_expect(strstr(r.err, "prepare: hide and setuid scan (") &&
					  strstr(r.err, " hidden, 1 protected, "),
				  "no single walk:\n%s", r.err);
			cr_expect(!strstr(r.err, "prepare: hide scan") &&
					  !strstr(r.err, "prepare: setuid scan"),
				  "two walks:\n%s", r.err);
		} else {
			cr_expect(strstr(r.err, "prepare: hide scan (") &&
					  strstr(r.err, "prepare: setuid scan\n"),
				  "the literal masks' scan and the setuid scan:\n%s", r.err);
			cr_expect(!strstr(r.err, "hide and setuid scan"), "%s", r.err);
		}
		fd = open(p, O_RDONLY | O_CLOEXEC);
		cr_assert_geq(fd, 0);
		n = read(fd, data, sizeof(data) - 1);
		close(fd);
		data[n > 0 ? n : 0] = '\0';
		cr_expect_str_eq(data, "#!/bin/sh\n", "%s: the program was written", what);
		tu_run_free(&r);
	}
	tu_rmtree(wd);
	free(wd);
}

static bool find_cmdline(pid_t pid, const char *cmdline, void *arg)
{
	struct {
		const char *want;
		pid_t found;
	} *m = arg;

	/* cmdline's NULs are spaces, the last one included */
	if (strncmp(cmdline, m->want, strlen(m->want)) != 0)
		return true;
	m->found = pid;
	return false;
}

/*
 * The pid of the process whose command line starts with want, once cordon (pid cordon) runs
 * it; within 5 s, else cordon is killed and the test fails.
 */
static pid_t await_command(pid_t cordon, const char *want)
{
	struct {
		const char *want;
		pid_t found;
	} m = { want, 0 };

	for (int i = 0; i < 500 && !m.found; i++) {
		tu_each_proc(find_cmdline, &m);
		if (!m.found)
			usleep(10000);
	}
	if (!m.found)
		kill(cordon, SIGKILL);
	cr_assert(m.found, "the command never ran");
	return m.found;
}

/*
 * The run's processes are in its cgroup in every hierarchy it has: on v1 the sandbox joins
 * them itself at its second gate (writing "0" to each `tasks` file, the parent's fds), not
 * moved by pid; a hierarchy it skipped would leave a limit unenforced. Looked at from the
 * host, in /proc/<pid>/cgroup of the command.
 */
Test(cli, command_is_in_every_hierarchy_of_its_cgroup, .timeout = 60)
{
	struct {
		const char *want;
		pid_t found;
	} m = { "sleep 9.137", 0 };
	char path[64], line[512], mark[64];
	int st, inside = 0, dirs;
	pid_t pid;
	FILE *f;

	pid = start_quiet(
		(char *[]){ "cordon", "run", "--via", "direct", "--", (char *)m.want, NULL },
		environ);
	m.found = await_command(pid, m.want);
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)m.found);
	snprintf(mark, sizeof(mark), "/cordon-%d-", (int)pid);
	f = fopen(path, "re");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		char *ctrl = strchr(line, ':');

		/* v1 lines "N:memory:/path"; the v2 line "0::/path" only when the run is v2. */
		if (ctrl && strstr(line, mark))
			inside++;
	}
	fclose(f);
	dirs = tu_run_cgroups(pid, NULL, 0);
	cr_assert_gt(dirs, 0, "the run has no cgroup");
	cr_assert_eq(inside, dirs, "the command is in %d of its run's %d cgroup directories",
		     inside, dirs);
	kill(pid, SIGTERM);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert_eq(tu_run_cgroups(pid, NULL, 0), 0, "the run's cgroups were left behind");
}

/*
 * cordon run itself gets signal n (SIGTERM from a service manager, ^C): it kills the run and
 * the result says the run was terminated by n, as the exit status does: AG2's -n in the text
 * and in JSON (exit_code -n, signal n), status 128+n, the output so far kept (found in review:
 * the text said -9, the SIGKILL cordon used, while cordon exited 143). docs/compat.md,
 * "Signals to cordon".
 */
static void interrupted_run(int sig, bool json, const char *sleep_arg, char **ret_out,
			    int *ret_status)
{
	char cmd[64], *out = NULL;
	size_t len = 0;
	int pfd[2], st;
	pid_t pid;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "echo started; %s", sleep_arg);
	cr_assert(pipe(pfd) == 0);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(pfd[1], 1);
		dup2(null, 2);
		close(pfd[0]);
		execl(tu_cordon(), "cordon", "run", "--via", "direct", "--format",
		      json ? "json" : "text", "--", cmd, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	(void)await_command(pid, sleep_arg);
	usleep(100000); /* "started" is read by now */
	kill(pid, sig);
	f = fdopen(pfd[0], "r");
	cr_assert_not_null(f);
	cr_assert(getdelim(&out, &len, '\0', f) >= 0 || feof(f));
	fclose(f);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st), "cordon died of signal %d", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	*ret_status = WEXITSTATUS(st);
	*ret_out = out ? out : strdup("");
}

Test(cli, signal_to_cordon_is_the_runs_end, .timeout = 60)
{
	static const struct {
		int sig;
		const char *sleep_arg, *text;
	} rows[] = {
		{ SIGTERM, "sleep 31.41", "started\n[exit code: -15]\n" },
		{ SIGINT, "sleep 31.42", "started\n[exit code: -2]\n" },
		{ SIGHUP, "sleep 31.43", "started\n[exit code: -1]\n" },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char *out;
		int status;

		interrupted_run(rows[i].sig, false, rows[i].sleep_arg, &out, &status);
		cr_expect_str_eq(out, rows[i].text, "signal %d", rows[i].sig);
		cr_expect_eq(status, 128 + rows[i].sig, "signal %d", rows[i].sig);
		free(out);
	}
	{
		json_error_t je;
		char *out;
		int status;
		json_t *j;

		interrupted_run(SIGTERM, true, "sleep 31.44", &out, &status);
		cr_expect_eq(status, 143);
		j = json_loads(out, 0, &je);
		cr_assert(j, "not JSON: %s", out);
		cr_expect_str_eq(json_string_value(json_object_get(j, "output")),
				 "started\n[exit code: -15]");
		cr_expect_eq(json_integer_value(json_object_get(j, "exit_code")), -15);
		cr_expect_eq(json_integer_value(json_object_get(j, "signal")), 15);
		cr_expect(json_is_false(json_object_get(j, "timed_out")));
		cr_expect_str_eq(json_string_value(json_object_get(j, "stdout")), "started\n");
		json_decref(j);
		free(out);
	}
}

/*
 * A socket at CORDON_SOCKET that neither root nor the caller listens on gets nothing: not the
 * command, its workdir or its -e values (CORDON_SOCKET kept by sudo or a service could name a
 * socket another user made). Found in review; sent the request before.
 */
Test(cli, daemon_socket_of_another_user_is_refused)
{
	char *tmp = tu_tmpdir(), sock[400], env[500], got[256] = "";
	char *envv[] = { env, "PATH=/usr/bin:/bin", NULL };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int pfd[2], lfd, st;
	struct tu_run r;
	pid_t pid;
	ssize_t n;

	if (geteuid() != 0)
		cr_skip("needs root (a listener of another uid)");
	chmod(tmp, 0777);
	snprintf(sock, sizeof(sock), "%s/s", tmp);
	snprintf(env, sizeof(env), "CORDON_SOCKET=%s", sock);
	strcpy(sa.sun_path, sock);
	cr_assert_eq(pipe(pfd), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* nobody's listener: reports on the pipe what a client sent it */
		int c;
		char buf[256] = "";

		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(1);
		lfd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
		    listen(lfd, 4) < 0)
			_exit(2);
		if (write(pfd[1], "L", 1) != 1)
			_exit(3);
		c = accept(lfd, NULL, NULL);
		n = c >= 0 ? read(c, buf, sizeof(buf) - 1) : -1;
		if (n > 0 && write(pfd[1], buf, (size_t)n) != n)
			_exit(4);
		_exit(0);
	}
	close(pfd[1]);
	cr_assert_eq(read(pfd[0], got, 1), 1, "the listener did not start");
	tu_exec(&r, NULL, envv,
		(char *[]){ (char *)tu_cordon(), "run", "--via", "daemon", "-e", "TOKEN=hunter2",
			    "--", "echo hi", NULL });
	cr_expect_eq(r.status, 125, "status %d: %s%s", r.status, r.out, r.err);
	cr_expect(strstr(r.err, "neither root nor you"), "%s", r.err);
	tu_run_free(&r);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	n = read(pfd[0], got, sizeof(got) - 1);
	got[n > 0 ? n : 0] = '\0';
	cr_expect(!strstr(got, "hunter2") && !strstr(got, "echo hi"),
		  "the listener was sent the request: %s", got);
	close(pfd[0]);
	tu_rmtree(tmp);
	free(tmp);
}

/*
 * A remote backend's paths are judged lexically against /workspace, as AG2 does (docs/
 * compat.md), not resolved on the host: found in review, `cat /workspace/ok.txt` was refused
 * and refusals named a host path.
 */
Test(cli, remote_backends_judge_paths_lexically_in_workspace)
{
	static const char *const backends[] = { "docker", "daytona" };
	char *envv[] = { "PATH=/usr/bin:/bin", NULL };
	struct tu_run r;

	for (size_t i = 0; i < 2; i++) {
		tu_exec(&r, NULL, envv,
			(char *[]){ (char *)tu_cordon(), "check", "-b", (char *)backends[i],
				    "--ignore", ".env", "--", "cat /workspace/ok.txt", NULL });
		cr_expect_eq(r.status, 0, "%s: %d %s%s", backends[i], r.status, r.out, r.err);
		tu_run_free(&r);
		tu_exec(&r, NULL, envv,
			(char *[]){ (char *)tu_cordon(), "check", "-b", (char *)backends[i],
				    "--ignore", ".env", "--", "cat .env", NULL });
		cr_expect_eq(r.status, 126);
		cr_expect_str_eq(r.out, "Access denied: /workspace/.env\n", "%s: %s", backends[i],
				 r.out);
		tu_run_free(&r);
	}
}

/* Strict mode's "Command not found" quotes the name as Python's OSError does (repr). */
Test(cli, command_not_found_quotes_the_name_as_python)
{
	char *envv[] = { "PATH=/usr/bin:/bin", NULL };
	struct tu_run r;

	tu_exec(&r, NULL, envv,
		(char *[]){ (char *)tu_cordon(), "run", "--policy-mode", "strict", "--",
			    "\"it's-not-here\"", NULL });
	cr_expect_eq(r.status, 127, "%d %s%s", r.status, r.out, r.err);
	cr_expect_str_eq(
		r.out,
		"Command not found: [Errno 2] No such file or directory: \"it's-not-here\"\n"
		"[exit code: 127]\n",
		"%s", r.out);
	tu_run_free(&r);
}

/*
 * Strict mode looks argv[0] up on the absolute entries of PATH only: with "." (or "" or "bin")
 * in the caller's PATH, an allowed `ls` ran the `./ls` an earlier command left in the workdir
 * (red team). Compat mode keeps sh's lookup, relative entries included, as AG2's sh does.
 */
Test(cli, strict_mode_skips_relative_path_entries, .timeout = 60)
{
	static const char *const paths[] = { "PATH=.:/usr/bin:/bin", "PATH=:/usr/bin:/bin",
					     "PATH=bin:/usr/bin:/bin" };
	char *wd = tu_tmpdir(), file[300], bin[300], path[40];
	char *envv[] = { path, NULL };
	struct tu_run r;

	snprintf(bin, sizeof(bin), "%s/bin", wd);
	cr_assert_eq(mkdir(bin, 0755), 0);
	cr_assert_eq(chmod(wd, 0755), 0);
	for (int i = 0; i < 2; i++) {
		snprintf(file, sizeof(file), i ? "%s/ls" : "%s/bin/ls", wd);
		FILE *f = fopen(file, "w");
		cr_assert(f);
		fputs("#!/bin/sh\necho planted\n", f);
		cr_assert_eq(fclose(f), 0);
		cr_assert_eq(chmod(file, 0755), 0);
	}
	for (size_t i = 0; i < sizeof(paths) / sizeof(*paths); i++) {
		snprintf(path, sizeof(path), "%s", paths[i]);
		tu_exec(&r, NULL, envv,
			(char *[]){ (char *)tu_cordon(), "run", "--via", "direct", "--policy-mode",
				    "strict", "--allow", "ls", "-w", wd, "--", "ls", NULL });
		cr_expect_eq(r.status, 0, "%s: %d %s%s", paths[i], r.status, r.out, r.err);
		cr_expect_str_eq(r.out, "bin\nls\n", "%s: %s", paths[i], r.out);
		tu_run_free(&r);
		/* compat: sh's own lookup, the relative entry first */
		tu_exec(&r, NULL, envv,
			(char *[]){ (char *)tu_cordon(), "run", "--via", "direct", "-w", wd, "--",
				    "ls", NULL });
		cr_expect_eq(r.status, 0, "%s: %d %s%s", paths[i], r.status, r.out, r.err);
		cr_expect_str_eq(r.out, "planted\n", "compat %s: %s", paths[i], r.out);
		tu_run_free(&r);
	}
	/* Only relative entries: nothing to find, as with no such command. */
	snprintf(path, sizeof(path), "PATH=.:bin");
	tu_exec(&r, NULL, envv,
		(char *[]){ (char *)tu_cordon(), "run", "--via", "direct", "--policy-mode",
			    "strict", "--allow", "ls", "-w", wd, "--", "ls", NULL });
	cr_expect_eq(r.status, 127, "%d %s%s", r.status, r.out, r.err);
	cr_expect_str_eq(r.out,
			 "Command not found: [Errno 2] No such file or directory: 'ls'\n"
			 "[exit code: 127]\n",
			 "%s", r.out);
	tu_run_free(&r);
	tu_rmtree(wd);
	free(wd);
}

/* The last --format wins, as every option's last value does (found in review: json stuck). */
Test(cli, last_format_wins)
{
	char *envv[] = { "PATH=/usr/bin:/bin", NULL };
	struct tu_run r;

	tu_exec(&r, NULL, envv,
		(char *[]){ (char *)tu_cordon(), "run", "--format", "json", "--format", "text",
			    "--", "echo a", NULL });
	cr_expect_eq(r.status, 0);
	cr_expect_str_eq(r.out, "a\n", "%s", r.out);
	tu_run_free(&r);
}

/*
 * A result that cannot be written is cordon's failure, 125 with a line, not a 0 with the
 * result lost (found in review), for a run, a run through cordond's client and the stdio
 * subcommands.
 */
Test(cli, unwritable_output_is_125)
{
	char *envv[] = { "PATH=/usr/bin:/bin", NULL };
	char cmd[1200];
	static const char *const what[] = { "run -- 'echo hi'", "run --format json -- 'echo hi'",
					    "profile show default", "version" };
	struct tu_run r;

	for (size_t i = 0; i < sizeof(what) / sizeof(what[0]); i++) {
		snprintf(cmd, sizeof(cmd), "exec '%s' %s >/dev/full", tu_cordon(), what[i]);
		tu_exec(&r, NULL, envv, (char *[]){ "/bin/sh", "-c", cmd, NULL });
		cr_expect_eq(r.status, 125, "%s: %d %s", what[i], r.status, r.err);
		cr_expect(strstr(r.err, "No space left on device"), "%s: %s", what[i], r.err);
		tu_run_free(&r);
	}
}

/*
 * A cordond that accepts the connection and never answers does not hold `cordon run` for
 * ever: the run's timeout and a grace of 30 s, then 125 and a line (found in review: `-t 1`
 * hung until killed).
 */
Test(cli, hung_daemon_is_given_up_on, .timeout = 90)
{
	char *tmp = tu_tmpdir(), sock[400], env[500];
	char *envv[] = { env, "PATH=/usr/bin:/bin", NULL };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct tu_run r;
	struct timespec t0, t1;

	snprintf(sock, sizeof(sock), "%s/s", tmp);
	snprintf(env, sizeof(env), "CORDON_SOCKET=%s", sock);
	strcpy(sa.sun_path, sock);
	cr_assert(lfd >= 0 && bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
		  listen(lfd, 4) == 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	tu_exec(&r, NULL, envv,
		(char *[]){ (char *)tu_cordon(), "run", "--via", "daemon", "-t", "0.1", "--",
			    "echo x", NULL });
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_expect_eq(r.status, 125, "%d %s", r.status, r.err);
	cr_expect(strstr(r.err, "no answer within"), "%s", r.err);
	cr_expect_lt(t1.tv_sec - t0.tv_sec, 60, "took %ld s", (long)(t1.tv_sec - t0.tv_sec));
	tu_run_free(&r);
	close(lfd);
	tu_rmtree(tmp);
	free(tmp);
}

/*
 * argv[0] is looked up as AG2's subprocess.run looks it up (CPython's _posixsubprocess): every
 * PATH entry is tried whatever the error, and the error reported is the first that is neither
 * ENOENT nor ENOTDIR, else the last one's. The lookup stopped at the first other error (a
 * `sh` that is not a program, ENOEXEC) and reported ENOENT for ENOTDIR, as glibc's execvp.
 */
Test(cli, argv0_lookup_is_pythons, .timeout = 60)
{
	char *wd = tu_tmpdir(), *sub = NULL, *path = NULL, *pathvar = NULL;
	static const char *const envv_fmt = "PATH=%s:/usr/bin:/bin";
	struct tu_run r;

	cr_assert(asprintf(&sub, "%s/d", wd) > 0);
	cr_assert(mkdir(sub, 0755) == 0);
	tu_write_file(sub, "sh",
		      "\x7f"
		      "ELF not really\n");
	cr_assert(asprintf(&path, "%s/sh", sub) > 0);
	cr_assert(chmod(path, 0755) == 0);
	cr_assert(asprintf(&pathvar, envv_fmt, sub) > 0);

	/* A `sh` that cannot be exec'd first on PATH: Python goes on to the next one. */
	tu_cordon_run(&r, A("run", "-w", wd, "-e", pathvar, "--", "echo hi"));
	cr_expect_str_eq(r.out, "hi\n", "%s%s", r.out, r.err);
	cr_expect_eq(r.status, 0);
	tu_run_free(&r);
	/* Only such a one: its error, not ENOENT. */
	free(pathvar);
	cr_assert(asprintf(&pathvar, "PATH=%s", sub) > 0);
	tu_cordon_run(&r, A("run", "-w", wd, "-e", pathvar, "--", "echo hi"));
	cr_expect_str_eq(r.out,
			 "Command not found: [Errno 8] Exec format error: 'sh'\n[exit code: 127]\n",
			 "%s%s", r.out, r.err);
	tu_run_free(&r);
	/* ENOTDIR last: Python reports it (NotADirectoryError). */
	tu_cordon_run(&r, A("run", "-e", "PATH=/etc/passwd", "--", "echo hi"));
	cr_expect_str_eq(r.out,
			 "Command not found: [Errno 20] Not a directory: 'sh'\n[exit code: 127]\n",
			 "%s%s", r.out, r.err);
	tu_run_free(&r);
	/* ENOENT last, from an entry that cannot exist in the sandbox (not even tried there). */
	tu_cordon_run(&r,
		      A("run", "-e", "PATH=/etc/passwd:/home/cordon-no-such-dir", "--", "echo hi"));
	cr_expect_str_eq(
		r.out,
		"Command not found: [Errno 2] No such file or directory: 'sh'\n[exit code: 127]\n",
		"%s%s", r.out, r.err);
	tu_run_free(&r);
	tu_rmtree(wd);
	free(sub);
	free(path);
	free(pathvar);
}

/*
 * A workdir the local sandbox builds itself (/dev/shm/x here) is refused before anything is
 * made for it: it was made (mkdir -p, as root), then refused by the sandbox, and left behind.
 */
Test(cli, workdir_the_sandbox_builds_is_not_made)
{
	struct tu_run run;

	rmdir("/dev/shm/cordon-test-notmade/x");
	rmdir("/dev/shm/cordon-test-notmade");
	tu_cordon_run(&run, A("run", "--via", "direct", "-w", "/dev/shm/cordon-test-notmade/x",
			      "--", "true"));
	cr_expect_eq(run.status, 125, "%d %s", run.status, run.err);
	cr_expect(strstr(run.err, "cannot be /, /tmp, or in /proc or /dev"), "%s", run.err);
	cr_expect(access("/dev/shm/cordon-test-notmade", F_OK) != 0, "the directory was made");
	tu_run_free(&run);
}

/*
 * `require = cgroup` where the caller gets no cgroup (nobody, on a root-owned hierarchy): one
 * line, exit 125, that says "cgroup" once (it said "sandbox: cgroup: cgroup: required ...").
 */
Test(cli, required_cgroup_missing_is_one_clear_line)
{
	char *tmp = tu_tmpdir(), conf[400];
	struct tu_run r;

	if (geteuid() != 0)
		cr_skip("needs root (to run cordon as nobody)");
	if (access("/usr/sbin/runuser", X_OK) != 0 && access("/sbin/runuser", X_OK) != 0)
		cr_skip("no runuser");
	chmod(tmp, 0755);
	tu_write_file(tmp, "req.conf", "[sandbox]\nrequire = cgroup\n");
	snprintf(conf, sizeof(conf), "%s/req.conf", tmp);
	chmod(conf, 0644);
	tu_exec(&r, NULL, NULL,
		(char *[]){ "runuser", "-u", "nobody", "--", (char *)tu_cordon(), "run", "--via",
			    "direct", "-p", conf, "--", "echo hi", NULL });
	if (r.status == 0) {
		tu_run_free(&r);
		tu_rmtree(tmp);
		free(tmp);
		cr_skip("nobody gets a cgroup of its own on this host");
	}
	cr_expect_eq(r.status, 125, "status %d: %s%s", r.status, r.out, r.err);
	cr_expect_str_eq(r.out, "");
	cr_expect(!strncmp(r.err, "cordon: sandbox: cgroup: required by the profile but ",
			   strlen("cordon: sandbox: cgroup: required by the profile but ")),
		  "%s", r.err);
	cr_expect(strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "not one line: %s", r.err);
	tu_run_free(&r);
	tu_rmtree(tmp);
	free(tmp);
}

/*
 * The host's own processes of nobody's (65534:65534, nogroup's gid) cannot reach a root run's
 * command (backends/backend.h, BACKEND_RUN_GID): ptrace is refused, and so are its
 * /proc/<pid>/root and fd, through which such a process wrote root's workdir before (the
 * command shared its uid and gid; docs/security.md). Tried for real while the run sleeps.
 */
Test(cli, host_nobody_cannot_reach_a_root_run, .timeout = 60)
{
	char *wd = tu_tmpdir(), dur[32], planted[512];
	pid_t cli, target, k;
	int st;

	if (geteuid() != 0)
		cr_skip_test("needs root: a root run, and a process of nobody's");
	cr_assert_eq(chown(wd, 0, 0), 0);
	cr_assert_eq(chmod(wd, 0755), 0);
	(void)snprintf(dur, sizeof(dur), "29.%05d", (int)getpid() % 100000);
	cli = fork();
	cr_assert_geq(cli, 0);
	if (cli == 0) {
		char cmd[64];
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		(void)snprintf(cmd, sizeof(cmd), "exec sleep %s", dur);
		(void)dup2(null, 1);
		(void)dup2(null, 2);
		execl(tu_cordon(), "cordon", "run", "--via", "direct", "-t", "40", "-w", wd, "--",
		      cmd, (char *)NULL);
		_exit(127);
	}
	{
		char want[64];

		/* The whole command line (its NULs are spaces, the last one too). */
		(void)snprintf(want, sizeof(want), "sleep %s ", dur);
		target = await_command(cli, want);
	}
	(void)snprintf(planted, sizeof(planted), "/proc/%d/root%s/planted", (int)target, wd);
	k = fork();
	cr_assert_geq(k, 0);
	if (k == 0) {
		char fds[64];
		int reached = 0, fd;

		if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
		    setresuid(65534, 65534, 65534) < 0)
			_exit(100);
		if (ptrace(PTRACE_ATTACH, target, 0, 0) == 0) {
			reached |= 1;
			(void)waitpid(target, NULL, __WALL);
			(void)ptrace(PTRACE_DETACH, target, 0, 0);
		}
		fd = open(planted, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd >= 0) {
			reached |= 2;
			close(fd);
		}
		/* Listing the fd numbers is the same uid's; following one is ptrace's. */
		(void)snprintf(fds, sizeof(fds), "/proc/%d/fd/1", (int)target);
		fd = open(fds, O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			reached |= 4;
			close(fd);
		}
		_exit(reached);
	}
	cr_assert_eq(waitpid(k, &st, 0), k);
	(void)kill(cli, SIGTERM);
	(void)waitpid(cli, NULL, 0);
	(void)snprintf(planted, sizeof(planted), "%s/planted", wd);
	cr_expect_neq(access(planted, F_OK), 0, "a process of nobody's wrote root's workdir");
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "a process of nobody's reached the run (1 ptrace, 2 its root, 4 its stdout): %d",
		  WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	tu_rmtree(wd);
	free(wd);
}
