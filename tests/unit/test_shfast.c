/* SPDX-License-Identifier: MIT */
/*
 * The simple-command fast path (backends/local/shfast.c) against the real dash of this
 * machine: which scripts qualify, the builtin list, and the environment dash exports.
 */
#define _GNU_SOURCE
#include "backends/local/shfast.h"
#include "tests/lib/testutil.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

struct words_case {
	const char *script;
	const char *want; /* the words joined by '|', or NULL: not a simple command */
};

static const struct words_case words_cases[] = {
	{ "/bin/true", "/bin/true" },
	{ "ls -la /", "ls|-la|/" },
	{ "  \tls\t  -l  ", "ls|-l" },
	{ "python3 x.py --n=3 a,b c:d e@f 50% ^x +y", "python3|x.py|--n=3|a,b|c:d|e@f|50%|^x|+y" },
	{ "./a.out", "./a.out" },
	{ "/usr/bin/echo hi",
	  "/usr/bin/echo|hi" }, /* a path: dash runs the file, not its builtin */
	{ "", NULL },
	{ "   ", NULL },
	{ "echo hi", NULL },	/* builtin */
	{ "test -e x", NULL },	/* builtin */
	{ "[ -e x ]", NULL },	/* not plain ('[', ']') */
	{ "cd /", NULL },	/* builtin */
	{ "exec ls", NULL },	/* builtin */
	{ "if", NULL },		/* reserved word */
	{ "FOO=1 env", NULL },	/* assignment */
	{ "a=b", NULL },	/* assignment */
	{ "ls *", NULL },	/* glob */
	{ "ls ?", NULL },	/* glob */
	{ "ls ~", NULL },	/* tilde */
	{ "ls $HOME", NULL },	/* expansion */
	{ "ls 'a b'", NULL },	/* quote */
	{ "ls \"a\"", NULL },	/* quote */
	{ "ls a\\ b", NULL },	/* backslash */
	{ "ls; ls", NULL },	/* list */
	{ "ls | wc", NULL },	/* pipe */
	{ "ls && ls", NULL },	/* and */
	{ "ls > x", NULL },	/* redirection */
	{ "ls #c", NULL },	/* comment */
	{ "ls\nls", NULL },	/* newline */
	{ "ls\r", NULL },	/* CR is a word character for dash, not a blank: not modelled */
	{ "ls `id`", NULL },	/* command substitution */
	{ "(ls)", NULL },	/* subshell */
	{ "{ ls; }", NULL },	/* group */
	{ "! ls", NULL },	/* negation */
	{ "ls &", NULL },	/* background */
	{ "ls\xc3\xa9", NULL }, /* non-ASCII */
};

Test(shfast, words)
{
	for (size_t i = 0; i < sizeof(words_cases) / sizeof(words_cases[0]); i++) {
		const struct words_case *c = &words_cases[i];
		char **v = NULL, joined[512] = "";
		int r = shfast_words(c->script, &v);

		cr_assert_geq(r, 0);
		if (!c->want) {
			cr_expect_eq(r, 0, "'%s' taken as a simple command", c->script);
			cr_expect_null(v);
			continue;
		}
		cr_expect_eq(r, 1, "'%s' not taken as a simple command", c->script);
		for (size_t k = 0; v && v[k]; k++) {
			if (k)
				strcat(joined, "|");
			strcat(joined, v[k]);
		}
		cr_expect_str_eq(joined, c->want, "'%s'", c->script);
		shfast_strv_free(v, true);
	}
}

/* Run argv, capture stdout (up to n-1 bytes); returns the exit status. */
static int capture(char *const argv[], const char *cwd, char *buf, size_t n, size_t *len)
{
	int p[2], st;
	size_t got = 0;
	pid_t pid;

	cr_assert_eq(pipe(p), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		if (cwd && chdir(cwd) < 0)
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	for (;;) {
		ssize_t k = read(p[0], buf + got, n - 1 - got);

		if (k <= 0)
			break;
		got += (size_t)k;
		cr_assert_lt(got, n - 1, "output too large");
	}
	close(p[0]);
	buf[got] = '\0';
	waitpid(pid, &st, 0);
	if (len)
		*len = got;
	return st;
}

/* Ask dash `type` about names[0..n) and check each answer against shfast_is_builtin. */
static void check_types(char **names, size_t n, size_t *builtins)
{
	char script[65536] = "type", *out = malloc(1 << 20);
	char *argv[] = { "/bin/dash", "-c", script, NULL };
	size_t checked = 0;

	cr_assert_not_null(out);
	for (size_t i = 0; i < n; i++) {
		strcat(script, " ");
		strcat(script, names[i]);
	}
	capture(argv, NULL, out, 1 << 20, NULL);
	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		char name[256];
		bool dash_runs_it;

		if (sscanf(line, "%255s", name) != 1)
			continue;
		dash_runs_it = strstr(line, " is a shell builtin") ||
			       strstr(line, " is a special shell builtin") ||
			       strstr(line, " is a shell keyword");
		if (strstr(line, ": not found")) {
			name[strcspn(name, ":")] = '\0';
			dash_runs_it = false;
		}
		cr_expect_eq(shfast_is_builtin(name), dash_runs_it, "dash says '%s'", line);
		*builtins += dash_runs_it;
		checked++;
	}
	cr_assert_eq(checked, n, "dash answered %zu of %zu names", checked, n);
	free(out);
}

static bool plain_name(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-+,:@%"
			    "^",
			    *s))
			return false;
	return true;
}

/*
 * Every program in the system's PATH, and every builtin or keyword name of the common
 * shells: dash's own answer (`type`) must match the list. A builtin missing from the list
 * would have its PATH namesake run instead (/usr/bin/echo is not dash's echo).
 */
Test(shfast, builtin_list_is_dash_s, .timeout = 120)
{
	static const char *const extra[] = {
		".",	  ":",	       "[",	   "alias",   "bg",	  "break",    "cd",
		"chdir",  "command",   "continue", "echo",    "eval",	  "exec",     "exit",
		"export", "false",     "fc",	   "fg",      "getopts",  "hash",     "jobs",
		"kill",	  "local",     "printf",   "pwd",     "read",	  "readonly", "return",
		"set",	  "shift",     "test",	   "times",   "trap",	  "true",     "type",
		"ulimit", "umask",     "unalias",  "unset",   "wait",	  "if",	      "then",
		"else",	  "elif",      "fi",	   "case",    "esac",	  "for",      "while",
		"until",  "do",	       "done",	   "in",      "function", "select",   "time",
		"let",	  "source",    "declare",  "typeset", "history",  "help",     "enable",
		"logout", "builtin",   "caller",   "disown",  "suspend",  "shopt",    "mapfile",
		"coproc", "nlsprintf",
	};
	static const char *const dirs[] = { "/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin",
					    "/sbin" };
	char **names = calloc(20000, sizeof(char *));
	size_t n = 0, builtins = 0, batch = 0;

	cr_assert_not_null(names);
	for (size_t i = 0; i < sizeof(extra) / sizeof(extra[0]); i++)
		names[n++] = strdup(extra[i]);
	for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]); d++) {
		DIR *dir = opendir(dirs[d]);
		struct dirent *de;

		if (!dir)
			continue;
		while ((de = readdir(dir)) && n < 20000)
			if (de->d_name[0] != '.' && plain_name(de->d_name))
				names[n++] = strdup(de->d_name);
		closedir(dir);
	}
	cr_assert_gt(n, 300, "only %zu names", n);
	/* In batches that keep dash's command line short. */
	for (size_t i = 0; i < n; i += batch) {
		size_t len = 0;

		for (batch = 0; i + batch < n && len < 60000 - 300; batch++)
			len += strlen(names[i + batch]) + 1;
		check_types(names + i, batch, &builtins);
	}
	cr_expect_geq(builtins, 40, "dash named only %zu builtins and keywords", builtins);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* dash's PWD rule, as init.c applies it inside the sandbox. */
static const char *settle_pwd(const char *inherited, const char *cwd_entry)
{
	struct stat a, b;

	if (!inherited || inherited[4] != '/' || stat(inherited + 4, &a) < 0 || stat(".", &b) < 0 ||
	    a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		return cwd_entry;
	return inherited;
}

/*
 * Random environments (names dash treats specially, ordinary ones, invalid ones, duplicates,
 * PWD right, wrong and odd): what `/usr/bin/env -0` prints under dash is what shfast_env
 * gives, entry for entry and in the same order.
 */
Test(shfast, environment_is_dash_s, .timeout = 120)
{
	static const char *const names[] = {
		"IFS",	    "MAIL",   "MAILPATH", "PATH",   "PS1",    "PS2",   "PS4", "TERM",
		"PWD",	    "OLDPWD", "HOME",	  "LANG",   "LC_ALL", "USER",  "A",   "B",
		"_",	    "x1",     "SHELL",	  "TMPDIR", "Z9",     "ab",    "ba",  "PYTHONPATH",
		"bad-name", "9x",     "ENV",	  "CDPATH", "PS3",    "SHLVL", "a_b", "HOSTNAME",
	};
	/* Values; 5 to 7 are the run's directory itself, with a slash, and through "..". */
	static const char *const values[] = { "1",  "x y", "/tmp",	  "", "a=b", NULL,
					      NULL, NULL,  "/nonexistent" };
	char *dir = tu_tmpdir(), *base = strrchr(dir, '/') + 1, old[4096];
	char *out = malloc(1 << 16), cwd_entry[4200];
	unsigned seed = 12345;
	int compared = 0;

	cr_assert_not_null(out);
	cr_assert_not_null(getcwd(old, sizeof(old)));
	cr_assert_eq(chdir(dir), 0);
	snprintf(cwd_entry, sizeof(cwd_entry), "PWD=%s", dir);
	for (int t = 0; t < 250; t++) {
		char *env[24], *argv[40], **want = NULL;
		const char *pwd_env = NULL;
		size_t ne = 0, na = 0, pwd = 0, len = 0;
		bool has_path = false;
		int r;

		for (int i = (int)(rand_r(&seed) % 14); i > 0; i--) {
			const char *nm = names[rand_r(&seed) % (sizeof(names) / sizeof(names[0]))];
			char val[4200];

			size_t vi = rand_r(&seed) % (sizeof(values) / sizeof(values[0]));

			if (vi == 5)
				snprintf(val, sizeof(val), "%s", dir);
			else if (vi == 6)
				snprintf(val, sizeof(val), "%s/", dir);
			else if (vi == 7)
				snprintf(val, sizeof(val), "%s/../%s", dir, base);
			else
				snprintf(val, sizeof(val), "%s", values[vi]);
			if (asprintf(&env[ne], "%s=%s", nm, val) < 0)
				cr_assert_fail("asprintf");
			has_path |= strncmp(env[ne], "PATH=", 5) == 0;
			ne++;
		}
		if (!has_path || rand_r(&seed) % 4 == 0)
			env[ne++] = strdup("PATH=/usr/bin:/bin");
		env[ne] = NULL;
		r = shfast_env(env, &want, &pwd, &pwd_env);
		cr_assert_eq(r, 1, "shfast_env refused an environment it models");
		want[pwd] = (char *)settle_pwd(pwd_env, cwd_entry);

		argv[na++] = "/usr/bin/env";
		argv[na++] = "-i";
		for (size_t i = 0; i < ne; i++)
			argv[na++] = env[i];
		argv[na++] = "/bin/dash";
		argv[na++] = "-c";
		argv[na++] = "/usr/bin/env -0";
		argv[na] = NULL;
		capture(argv, dir, out, 1 << 16, &len);

		{
			size_t k = 0, off = 0;

			for (; off < len && want[k]; k++) {
				cr_expect_str_eq(out + off, want[k], "case %d, entry %zu", t, k);
				off += strlen(out + off) + 1;
			}
			cr_expect(off == len && !want[k], "case %d: %s entries", t,
				  want[k] ? "missing" : "extra");
		}
		compared++;
		shfast_strv_free(want, false);
		for (size_t i = 0; i < ne; i++)
			free(env[i]);
	}
	cr_assert_eq(compared, 250);
	cr_assert_eq(chdir(old), 0);
	tu_rmtree(dir);
	free(dir);
	free(out);
}

/* What dash validates or rewrites itself is not modelled: the fast path is not taken. */
Test(shfast, environment_not_modelled)
{
	static const char *const refused[][3] = {
		{ "PATH=/bin", "OPTIND=2", NULL }, { "PATH=/bin", "LINENO=3", NULL },
		{ "PATH=/bin", "PPID=1", NULL },   { "PATH=/bin", "HISTSIZE=9", NULL },
		{ "HOME=/", NULL, NULL }, /* no PATH: dash's default path, not modelled */
	};

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		char **v = (char **)1;
		size_t pwd;
		const char *pe;

		cr_expect_eq(shfast_env((char *const *)refused[i], &v, &pwd, &pe), 0, "case %zu",
			     i);
		cr_expect_null(v);
	}
}
