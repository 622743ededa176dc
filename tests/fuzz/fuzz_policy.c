/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the policy engine (policy/): a hostile agent writes the command, the
 * profile's patterns come from its administrator, so both are taken from the input.
 *
 * Input: byte 0 is flags (bit 0 strict mode, bit 1 readonly, bit 2 command_filtering off,
 * bit 3 a home directory for "~", bit 4 workdir "/" instead of "/work/dir"), byte 1 chooses
 * which of a few dangerous patterns to add; then NUL-separated fields: the command, then
 * items whose first byte names the list (a allowed, b blocked, i ignore, C allowed_commands,
 * D denied_commands, P allowed_paths, R a dangerous pattern "REGEX => MESSAGE"); a field of
 * the selector byte alone sets the list empty.
 *
 * Checks beyond crashes: the decision is deterministic, repr() and the refusal quote give
 * valid UTF-8, shlex.split(shlex.join(argv)) gives argv back, the glob automaton (pyglobset)
 * agrees with fnmatch (pyfnmatch) for every ignore pattern and command word, and the ignore
 * check agrees with its rule applied one pattern at a time.
 */
#define _GNU_SOURCE
#include "tests/fuzz/fuzz.h"
#include "policy/internal.h"
#include "runtime/capture.h"
#include "runtime/daemon/daemon.h"
#include "runtime/profile.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static const char *const dangerous[] = {
	"\\brm\\s+-rf\\b => no rm -rf",
	"(?i)\\bsudo\\b => no sudo",
	"curl[^|]*\\|\\s*(ba)?sh => no pipe to a shell",
	"\\u00e9\\Z => accent at the end",
	"[^\\s\\S] => never",
	"\\S+\\s+\\S+ => two words",
	"^$ => empty",
	"(a|b)*c => abc",
};

static struct cordon_list *pick(struct cordon_profile *p, char sel)
{
	static const struct {
		char sel;
		size_t off;
	} lists[] = {
		{ 'a', offsetof(struct cordon_profile, allowed) },
		{ 'b', offsetof(struct cordon_profile, blocked) },
		{ 'i', offsetof(struct cordon_profile, ignore) },
		{ 'C', offsetof(struct cordon_profile, allowed_commands) },
		{ 'D', offsetof(struct cordon_profile, denied_commands) },
		{ 'P', offsetof(struct cordon_profile, allowed_paths) },
		{ 'R', offsetof(struct cordon_profile, dangerous_patterns) },
	};

	for (size_t k = 0; k < sizeof(lists) / sizeof(*lists); k++)
		if (lists[k].sel == sel)
			return (struct cordon_list *)((char *)p + lists[k].off);
	return NULL;
}

/* shlex.join then shlex.split is the identity on an argv (the daemon relies on it). */
static void check_split(const char *command)
{
	char **argv = NULL, **again = NULL;
	const char *err = NULL;
	char *joined;

	if (policy_split(command, &argv, &err, NULL) != 0)
		return;
	joined = body_shlex_join((const char *const *)argv);
	CHECK(joined);
	CHECK(policy_split(joined, &again, &err, NULL) == 0);
	for (size_t k = 0; argv[k] || again[k]; k++)
		CHECK(argv[k] && again[k] && strcmp(argv[k], again[k]) == 0);
	free(joined);
	policy_strv_free(argv);
	policy_strv_free(again);
}

/* The automaton and fnmatch agree on every pattern and word. */
static void check_globs(const struct cordon_list *pats, const char *command)
{
	char **words = NULL;

	if (!pats->n || pystr_split(command, &words, NULL) < 0)
		return;
	for (size_t k = 0; k < pats->n; k++) {
		struct pyglobset *s = NULL;

		CHECK(pyglobset_new(&s, NULL) == 0);
		CHECK(pyglobset_add(s, pats->v[k], NULL) == 0);
		CHECK(pyglobset_compile(s, NULL) == 0);
		for (size_t w = 0; words[w]; w++) {
			int a = pyglobset_match(s, words[w], NULL);
			int b = pyfnmatch(words[w], pats->v[k], NULL);

			if (a != b) {
				fprintf(stderr,
					"pyglobset %d, pyfnmatch %d: pattern '%s', word '%s'\n", a,
					b, pats->v[k], words[w]);
				abort();
			}
		}
		pyglobset_free(s);
	}
	policy_strv_free(words);
}

/*
 * ignore.c's rule, one pattern at a time, as its comment states it: a glob p denies when
 * fnmatch(rel, p), or p starts with "**" "/" and fnmatch(name, p[3:]), or fnmatch(name, p); a
 * plain p when it is the name, or rel, or a directory prefix of rel. ignore.c answers with
 * sorted arrays and automata; the two must agree on every token.
 */
static int ref_rule(const struct cordon_list *patterns, const char *rel, const char *name,
		    cordon_error *e)
{
	for (size_t k = 0; k < patterns->n; k++) {
		const char *p = patterns->v[k];
		size_t n = strlen(p);

		if (strpbrk(p, "*?[")) {
			if (pyfnmatch(rel, p, e) == 1 || pyfnmatch(name, p, e) == 1 ||
			    (!strncmp(p, "**/", 3) && pyfnmatch(name, p + 3, e) == 1))
				return 1;
		} else if (!strcmp(name, p) || !strcmp(rel, p) ||
			   (!strncmp(rel, p, n) && rel[n] == '/')) {
			return 1;
		}
	}
	return 0;
}

static void check_ignore(const struct cordon_list *pats, const char *command, const char *workdir)
{
	struct ignore_stats st = { .ref = ref_rule };
	char *deny = NULL;

	if (!pats->set)
		return;
	CHECK(ignore_check_stats(command, workdir, pats, policy_resolve_lexical, false, &deny, &st,
				 NULL) == 0);
	CHECK(st.differed == 0);
	free(deny);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct cordon_profile *p = NULL;
	char *buf, *command, *deny = NULL, *deny2 = NULL, *q = NULL;
	const char *workdir, *home;
	cordon_error e;
	int r, r2;

	if (size < 2)
		return 0;
	buf = malloc(size - 2 + 2);
	CHECK(buf);
	memcpy(buf, data + 2, size - 2);
	buf[size - 2] = buf[size - 1] = '\0'; /* every field ends with a NUL, the last one too */
	CHECK(cordon_profile_new(&p, NULL) == 0);
	p->mode = data[0] & 1 ? CORDON_MODE_STRICT : CORDON_MODE_COMPAT;
	p->readonly = data[0] & 2;
	p->command_filtering = !(data[0] & 4);
	home = data[0] & 8 ? "/home/agent" : NULL;
	workdir = data[0] & 16 ? "/" : "/work/dir";
	for (size_t k = 0; k < sizeof(dangerous) / sizeof(*dangerous); k++)
		if (data[1] & 1u << k)
			CHECK(cordon_list_add(&p->dangerous_patterns, dangerous[k], NULL) == 0);

	command = buf;
	for (char *f = buf + strlen(buf) + 1; f < buf + size - 2; f += strlen(f) + 1) {
		struct cordon_list *l = pick(p, f[0]);

		if (!l)
			continue;
		if (!f[1]) {
			cordon_list_clear(l);
			l->set = true;
			continue;
		}
		/* The profile loader refuses a pattern that does not compile; so do we. */
		if (l == &p->dangerous_patterns && policy_validate_dangerous_pattern(f + 1, &e) < 0)
			continue;
		CHECK(cordon_list_add(l, f + 1, NULL) == 0);
	}

	r = policy_check_ex(p, command, workdir, NULL, home, &deny, &e);
	r2 = policy_check_ex(p, command, workdir, NULL, home, &deny2, &e);
	CHECK(r == r2);
	CHECK((deny == NULL) == (deny2 == NULL));
	CHECK(!deny || strcmp(deny, deny2) == 0);
	(void)policy_uses_argv(p);
	(void)policy_workdir_readonly(p);

	CHECK(pyrepr(command, &q, NULL) == 0);
	CHECK(fuzz_valid_utf8(q, strlen(q)));
	(void)strict_has_operator(command);
	(void)match_has_operator(command);
	check_split(command);
	check_globs(&p->ignore, command);
	check_ignore(&p->ignore, command, workdir);

	free(q);
	free(deny);
	free(deny2);
	cordon_profile_free(p);
	free(buf);
	return 0;
}
