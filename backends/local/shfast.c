/* SPDX-License-Identifier: MIT */
/*
 * The simple-command fast path (see shfast.h). What dash does with `sh -c SCRIPT` when SCRIPT
 * is `WORD...` of plain characters, from its source (parser, exec.c, var.c, cd.c, jobs.c):
 *
 *   - the words are split on blanks only, nothing is expanded (no quote, $, `, \, glob,
 *     tilde, comment, operator or redirection character is in them);
 *   - a first word with a '/' is exec'd as is; otherwise builtins and reserved words come
 *     first, then PATH is searched in order, and the first entry that execs wins (a file
 *     that is not a binary (ENOEXEC) is run as a script by dash itself);
 *   - the command gets dash's exported variables: see shfast_env;
 *   - a command killed by a signal other than SIGINT and SIGPIPE makes dash print the
 *     signal's description (strsignal, "(core dumped)" added) on stderr, and dash exits with
 *     128 + the signal's number. init.c does both for a directly exec'd command.
 *
 * The sandbox tries the direct exec only for such scripts, only when the `sh` it would run is
 * dash, and falls back to `sh -c SCRIPT` when the exec fails for any reason, so that every
 * error (not found, permission denied, a script without #!) comes from dash itself, word for
 * word. tests/unit/test_shfast.c checks the builtin list and the environment against the
 * dash on the machine; tests/integration compares whole runs with and without the fast path.
 */
#define _GNU_SOURCE
#include "backends/local/shfast.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* dash 0.5's builtins and reserved words (reserved words made of other characters cannot
 * reach this check: those characters are not plain). */
static const char *const dash_builtins[] = {
	".",	    ":",     "[",     "alias", "bg",	 "break",  "cd",    "chdir",	"command",
	"continue", "echo",  "eval",  "exec",  "exit",	 "export", "false", "fg",	"getopts",
	"hash",	    "jobs",  "kill",  "local", "printf", "pwd",	   "read",  "readonly", "return",
	"set",	    "shift", "test",  "times", "trap",	 "true",   "type",  "ulimit",	"umask",
	"unalias",  "unset", "wait",  "if",    "then",	 "else",   "elif",  "fi",	"case",
	"esac",	    "for",   "while", "until", "do",	 "done",   "in",
};

bool shfast_is_builtin(const char *word)
{
	for (size_t i = 0; i < sizeof(dash_builtins) / sizeof(dash_builtins[0]); i++)
		if (strcmp(word, dash_builtins[i]) == 0)
			return true;
	return false;
}

/* Characters dash gives no meaning to inside a word ('=' is checked apart). */
static bool plain(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       strchr("/._-+,:@%^=", c) != NULL;
}

void shfast_strv_free(char **v, bool strings)
{
	if (!v)
		return;
	if (strings)
		for (char **p = v; *p; p++)
			free(*p);
	free(v);
}

int shfast_words(const char *script, char ***ret_argv)
{
	size_t n = 0, k = 0;
	const char *p;
	char **v;

	*ret_argv = NULL;
	for (p = script; *p; p++) {
		if (*p == ' ' || *p == '\t')
			continue;
		if (!plain((unsigned char)*p))
			return 0;
		if (p == script || p[-1] == ' ' || p[-1] == '\t')
			n++;
	}
	if (n == 0)
		return 0;
	v = calloc(n + 1, sizeof(*v));
	if (!v)
		return -1;
	for (p = script; *p;) {
		size_t len;

		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		len = strcspn(p, " \t");
		v[k] = strndup(p, len);
		if (!v[k]) {
			shfast_strv_free(v, true);
			return -1;
		}
		k++;
		p += len;
	}
	/* An assignment (NAME=...), or a word dash runs itself: not a plain exec. */
	if (strchr(v[0], '=') || (!strchr(v[0], '/') && shfast_is_builtin(v[0]))) {
		shfast_strv_free(v, true);
		return 0;
	}
	*ret_argv = v;
	return 1;
}

/* ---- dash's variable table (var.c): 39 buckets, hashed on the name ---- */

#define DASH_VTABSIZE 39

/* Variables dash creates before it reads its environment, in that order (each one is put at
 * the head of its bucket). They are exported only when the environment sets them. */
static const char *const dash_varinit[] = { "IFS", "MAIL",   "MAILPATH", "PATH", "PS1",	    "PS2",
					    "PS4", "OPTIND", "LINENO",	 "TERM", "HISTSIZE" };

static size_t name_len(const char *kv)
{
	const char *p = kv;

	if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || *p == '_'))
		return 0;
	for (p++; (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		  (*p >= '0' && *p <= '9') || *p == '_';
	     p++)
		;
	return *p == '=' ? (size_t)(p - kv) : 0;
}

static unsigned dash_hash(const char *name, size_t len)
{
	unsigned h = (unsigned)(unsigned char)name[0] << 4;

	for (size_t i = 0; i < len; i++)
		h += (unsigned char)name[i];
	return h % DASH_VTABSIZE;
}

struct dvar {
	const char *name;
	size_t len;
	const char *entry; /* the exported "NAME=value", NULL while unexported */
	size_t next;	   /* index of the next variable in the bucket, or SIZE_MAX */
};

struct dtab {
	struct dvar *v;
	size_t n;
	size_t head[DASH_VTABSIZE];
};

static struct dvar *dtab_find(struct dtab *t, const char *name, size_t len)
{
	for (size_t i = t->head[dash_hash(name, len)]; i != SIZE_MAX; i = t->v[i].next)
		if (t->v[i].len == len && memcmp(t->v[i].name, name, len) == 0)
			return &t->v[i];
	return NULL;
}

/* Add a variable: at the head of its bucket (initvar) or at its tail (setvareq). */
static struct dvar *dtab_add(struct dtab *t, const char *name, size_t len, bool at_head)
{
	size_t b = dash_hash(name, len), i = t->n++;

	t->v[i] = (struct dvar){ .name = name, .len = len, .next = SIZE_MAX };
	if (at_head || t->head[b] == SIZE_MAX) {
		t->v[i].next = t->head[b];
		t->head[b] = i;
	} else {
		size_t j = t->head[b];

		while (t->v[j].next != SIZE_MAX)
			j = t->v[j].next;
		t->v[j].next = i;
	}
	return &t->v[i];
}

int shfast_env(char *const envp[], char ***ret_env, size_t *ret_pwd, const char **ret_pwd_env)
{
	static const char *const unmodelled[] = { "OPTIND", "LINENO", "PPID", "HISTSIZE" };
	size_t nenv = 0, k = 0;
	struct dtab t;
	struct dvar *pwd;
	bool have_path = false;
	char **out;

	*ret_env = NULL;
	*ret_pwd = 0;
	*ret_pwd_env = NULL;
	while (envp[nenv])
		nenv++;
	t.v = calloc(nenv + sizeof(dash_varinit) / sizeof(dash_varinit[0]) + 1, sizeof(*t.v));
	if (!t.v)
		return -1;
	t.n = 0;
	for (size_t b = 0; b < DASH_VTABSIZE; b++)
		t.head[b] = SIZE_MAX;
	for (size_t i = 0; i < sizeof(dash_varinit) / sizeof(dash_varinit[0]); i++)
		dtab_add(&t, dash_varinit[i], strlen(dash_varinit[i]), true);

	for (size_t i = 0; i < nenv; i++) {
		size_t len = name_len(envp[i]);
		struct dvar *d;

		if (len == 0)
			continue; /* dash ignores an entry whose name is not a valid one */
		for (size_t u = 0; u < sizeof(unmodelled) / sizeof(unmodelled[0]); u++)
			if (len == strlen(unmodelled[u]) && !memcmp(envp[i], unmodelled[u], len)) {
				free(t.v);
				return 0;
			}
		if (len == 4 && !memcmp(envp[i], "PATH", 4))
			have_path = true;
		d = dtab_find(&t, envp[i], len);
		if (!d)
			d = dtab_add(&t, envp[i], len, false);
		d->entry = envp[i]; /* the last one wins, in its first one's place */
	}
	if (!have_path) {
		free(t.v);
		return 0;
	}
	/* IFS from the environment stays exported, with dash's default value. */
	pwd = dtab_find(&t, "IFS", 3);
	if (pwd->entry)
		pwd->entry = "IFS= \t\n";
	/* PWD: exported always; its value is settled in the child. */
	pwd = dtab_find(&t, "PWD", 3);
	if (!pwd)
		pwd = dtab_add(&t, "PWD", 3, false);
	*ret_pwd_env = pwd->entry;
	pwd->entry = "PWD="; /* placeholder: marks it exported */

	out = calloc(t.n + 1, sizeof(*out));
	if (!out) {
		free(t.v);
		return -1;
	}
	for (size_t b = 0; b < DASH_VTABSIZE; b++)
		for (size_t i = t.head[b]; i != SIZE_MAX; i = t.v[i].next) {
			if (!t.v[i].entry)
				continue;
			if (&t.v[i] == pwd)
				*ret_pwd = k;
			out[k++] = (char *)t.v[i].entry;
		}
	free(t.v);
	*ret_env = out;
	return 1;
}
