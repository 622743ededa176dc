/* SPDX-License-Identifier: MIT */
/*
 * Compat mode: AG2's ShellAdapter._filter (reference §4), every documented example and
 * weakness included. Rows: allowed, blocked, ignore, readonly, workdir (NULL: /workspace,
 * lexical resolution as for a remote backend), command, expected refusal (NULL: allowed).
 */
#include "test_policy.h"

struct compat_row {
	const char *const *allowed, *const *blocked, *const *ignore;
	bool readonly;
	const char *workdir, *command, *want;
};

static const struct compat_row compat_rows[] = {
	{ L("git"), NULL, NULL, false, NULL, "git", NULL },
	{ L("git"), NULL, NULL, false, NULL, "git status", NULL },
	{ L("git"), NULL, NULL, false, NULL, "gitk", "Command not allowed: 'gitk'" },
	{ L("git"), NULL, NULL, false, NULL, "gitconfig --list",
	  "Command not allowed: 'gitconfig --list'" },
	{ L("uv run"), NULL, NULL, false, NULL, "uv run pytest", NULL },
	{ L("uv run"), NULL, NULL, false, NULL, "uv add requests",
	  "Command not allowed: 'uv add requests'" },
	{ L("git"), NULL, NULL, false, NULL, "   git status   ", NULL },
	{ L("git"), NULL, NULL, false, NULL, "\tgit status\n", NULL },
	{ L("git"), NULL, NULL, false, NULL, "git\tstatus", "Command not allowed: 'git\\tstatus'" },
	{ L("ls"), NULL, NULL, false, NULL, "\302\240ls\343\200\200", NULL },
	{ L("ls"), NULL, NULL, false, NULL, "\342\200\213ls", "Command not allowed: '\\u200bls'" },
	{ L("ls"), NULL, NULL, false, NULL, "\034ls -l\037", NULL },
	{ L("ls"), NULL, NULL, false, NULL, "ls\302\240-la", "Command not allowed: 'ls\\xa0-la'" },
	{ L("ls"), NULL, NULL, false, NULL, "\342\200\203ls -la\342\200\251", NULL },
	{ L("ls"), NULL, NULL, false, NULL, "\302\205ls", NULL },
	{ L("ls"), NULL, NULL, false, NULL, "LS", "Command not allowed: 'LS'" },
	{ L("ls -l"), NULL, NULL, false, NULL, "ls -la", "Command not allowed: 'ls -la'" },
	{ L("ls -l"), NULL, NULL, false, NULL, "ls -l /tmp", NULL },
	{ L("ls", "cat"), NULL, NULL, false, NULL, "cat f", NULL },
	{ L(""), NULL, NULL, false, NULL, "ls", "Command not allowed: 'ls'" },
	{ L(""), NULL, NULL, false, NULL, "   ", NULL },
	{ NULL, L("rm "), NULL, false, NULL, "rm -rf x", NULL },
	{ NULL, L("rm "), NULL, false, NULL, "rm  -rf x", "Command not allowed: 'rm  -rf x'" },
	{ NULL, L("rm -rf"), NULL, false, NULL, "rm -rf /", "Command not allowed: 'rm -rf /'" },
	{ NULL, L("rm -rf"), NULL, false, NULL, "rm -fr /", NULL },
	{ NULL, L("rm -rf"), NULL, false, NULL, "command rm -rf /", NULL },
	{ NULL, L("rm -rf"), NULL, false, NULL, "/bin/rm -rf /", NULL },
	{ NULL, L("rm -rf"), NULL, false, NULL, "echo x; rm -rf /", NULL },
	{ NULL, L("rm"), NULL, false, NULL, "rm x", "Command not allowed: 'rm x'" },
	{ NULL, L("rm"), NULL, false, NULL, "rmdir x", NULL },
	{ NULL, L("rm"), NULL, false, NULL, "echo x; rm -rf ~", NULL },
	{ NULL, L("rm"), NULL, false, NULL, "  rm", "Command not allowed: '  rm'" },
	{ NULL, L("rm"), NULL, false, NULL, "echo a > f", NULL },
	{ NULL, L0, NULL, false, NULL, "rm -rf /", NULL },
	{ L0, NULL, NULL, false, NULL, "ls", "Command not allowed: 'ls'" },
	{ L0, NULL, NULL, false, NULL, "", "Command not allowed: ''" },
	{ NULL, NULL, NULL, true, NULL, "ls -la", NULL },
	{ NULL, NULL, NULL, true, NULL, "rm x", "Command not allowed: 'rm x'" },
	{ NULL, NULL, NULL, true, NULL, "ll", NULL },
	{ NULL, NULL, NULL, true, NULL, "la -a", NULL },
	{ NULL, NULL, NULL, true, NULL, "env touch x", NULL },
	{ NULL, NULL, NULL, true, NULL, "find . -delete", NULL },
	{ NULL, NULL, NULL, true, NULL, "find . -exec rm {} +", NULL },
	{ NULL, NULL, NULL, true, NULL, "sort -o f g", NULL },
	{ NULL, NULL, NULL, true, NULL, "uniq in out", NULL },
	{ NULL, NULL, NULL, true, NULL, "file -C", NULL },
	{ NULL, NULL, NULL, true, NULL, "git diff --output=x", NULL },
	{ NULL, NULL, NULL, true, NULL, "git branch evil", NULL },
	{ NULL, NULL, NULL, true, NULL, "git push", "Command not allowed: 'git push'" },
	{ NULL, NULL, NULL, true, NULL, "git", "Command not allowed: 'git'" },
	{ NULL, NULL, NULL, true, NULL, "echo hi > f",
	  "Command not allowed (shell operators are not permitted in restricted mode): 'echo hi > "
	  "f'" },
	{ NULL, NULL, NULL, true, NULL, "cp a b", "Command not allowed: 'cp a b'" },
	{ NULL, NULL, NULL, true, NULL, "printenv HOME", NULL },
	{ NULL, NULL, NULL, true, NULL, "git status", NULL },
	{ L("rm"), NULL, NULL, true, NULL, "rm x", NULL },
	{ L("rm"), NULL, NULL, true, NULL, "ls", "Command not allowed: 'ls'" },
	{ L0, NULL, NULL, true, NULL, "ls", "Command not allowed: 'ls'" },
	{ L("echo"), NULL, NULL, false, NULL, "echo hi > f",
	  "Command not allowed (shell operators are not permitted in restricted mode): 'echo hi > "
	  "f'" },
	{ L("echo"), NULL, NULL, false, NULL, "echo a >> f",
	  "Command not allowed (shell operators are not permitted in restricted mode): 'echo a >> "
	  "f'" },
	{ L("echo"), NULL, NULL, false, NULL, "echo a | cat",
	  "Command not allowed (shell operators are not permitted in restricted mode): 'echo a | "
	  "cat'" },
	{ L("echo"), NULL, NULL, false, NULL, "echo a; ls",
	  "Command not allowed (shell operators are not permitted in restricted mode): 'echo a; "
	  "ls'" },
	{ L("echo"), NULL, NULL, false, NULL, "echo a && ls",
	  "Command not allowed (shell operators are not permitted in restricted mode): 'echo a && "
	  "ls'" },
	{ L("echo"), NULL, NULL, false, NULL, "echo a || ls",
	  "Command not allowed (shell operators are not permitted in restricted mode): 'echo a || "
	  "ls'" },
	{ L("echo"), NULL, NULL, false, NULL, "echo `id`",
	  "Command not allowed (shell operators are not permitted in restricted mode): 'echo "
	  "`id`'" },
	{ L("echo"), NULL, NULL, false, NULL, "echo $(id)",
	  "Command not allowed (shell operators are not permitted in restricted mode): 'echo "
	  "$(id)'" },
	{ L("echo"), NULL, NULL, false, NULL, "echo a & touch pwned", NULL },
	{ L("echo"), NULL, NULL, false, NULL, "echo a\ntouch pwned", NULL },
	{ L("echo"), NULL, NULL, false, NULL, "echo a\rtouch pwned", NULL },
	{ L("echo"), NULL, NULL, false, NULL, "echo ${HOME}", NULL },
	{ L("cat"), NULL, NULL, false, NULL, "cat < f", NULL },
	{ L("cat"), NULL, NULL, false, NULL, "cat << EOF", NULL },
	{ L("echo"), NULL, NULL, false, NULL, "echo 'a > b'",
	  "Command not allowed (shell operators are not permitted in restricted mode): \"echo 'a > "
	  "b'\"" },
	{ L("echo"), NULL, NULL, false, NULL, "echo \"a;b\"",
	  "Command not allowed (shell operators are not permitted in restricted mode): 'echo "
	  "\"a;b\"'" },
	{ L("ls"), NULL, NULL, false, NULL, "ls 2>&1",
	  "Command not allowed (shell operators are not permitted in restricted mode): 'ls 2>&1'" },
	{ L("echo"), NULL, NULL, false, NULL, "rm x; ls", "Command not allowed: 'rm x; ls'" },
	{ L("echo"), NULL, NULL, false, NULL, "echo $HOME", NULL },
	{ NULL, NULL, L0, false, NULL, "echo a > f", NULL },
	{ L0, NULL, NULL, false, NULL, "echo it's", "Command not allowed: \"echo it's\"" },
	{ L0, NULL, NULL, false, NULL, "echo \"it's\"", "Command not allowed: 'echo \"it\\'s\"'" },
	{ L0, NULL, NULL, false, NULL, "echo \"hi\"", "Command not allowed: 'echo \"hi\"'" },
	{ L0, NULL, NULL, false, NULL, "echo a\\b", "Command not allowed: 'echo a\\\\b'" },
	{ L0, NULL, NULL, false, NULL, "a\tb\nc\rd", "Command not allowed: 'a\\tb\\nc\\rd'" },
	{ L0, NULL, NULL, false, NULL, "x\177y\001", "Command not allowed: 'x\\x7fy\\x01'" },
	{ L0, NULL, NULL, false, NULL, "x\302\205y\302\240z",
	  "Command not allowed: 'x\\x85y\\xa0z'" },
	{ L0, NULL, NULL, false, NULL, "zw\342\200\213sp", "Command not allowed: 'zw\\u200bsp'" },
	{ L0, NULL, NULL, false, NULL, "emoji \360\237\230\200",
	  "Command not allowed: 'emoji \360\237\230\200'" },
	{ L0, NULL, NULL, false, NULL, "pua \356\200\200", "Command not allowed: 'pua \\ue000'" },
	{ L0, NULL, NULL, false, NULL, "caf\303\251 \344\270\255",
	  "Command not allowed: 'caf\303\251 \344\270\255'" },
	{ L0, NULL, NULL, false, NULL, "  ls  ", "Command not allowed: '  ls  '" },
	{ L0, NULL, NULL, false, NULL, "lone\rcr", "Command not allowed: 'lone\\rcr'" },
	{ L0, NULL, NULL, false, NULL, "\342\200\250\342\200\251",
	  "Command not allowed: '\\u2028\\u2029'" },
	{ L0, NULL, NULL, false, NULL, "\363\240\200\201 tag",
	  "Command not allowed: '\\U000e0001 tag'" },
	{ L0, NULL, NULL, false, NULL, "bad \377 byte", "Command not allowed: 'bad \\udcff byte'" },
	{ L0, NULL, NULL, false, NULL, "'\"'", "Command not allowed: '\\'\"\\''" },
	{ L0, NULL, NULL, false, NULL, "\033[31m", "Command not allowed: '\\x1b[31m'" },
	{ NULL, NULL, L(".env"), false, NULL, "cat .env", "Access denied: /workspace/.env" },
	{ NULL, NULL, L(".env"), false, NULL, "cat sub/dir/.env",
	  "Access denied: /workspace/sub/dir/.env" },
	{ NULL, NULL, L(".env"), false, NULL, "cat .en?", NULL },
	{ NULL, NULL, L(".env"), false, NULL, "f=.e; cat ${f}nv", NULL },
	{ NULL, NULL, L(".env"), false, NULL, "grep -r SECRET .", NULL },
	{ NULL, NULL, L(".env"), false, NULL, "cat<.env", NULL },
	{ NULL, NULL, L(".env"), false, NULL, "ls -d ~", NULL },
	{ NULL, NULL, L(".env"), false, NULL, "cd ..; pwd", NULL },
	{ NULL, NULL, L(".env"), false, NULL, "cd .. ; pwd", "Access denied: /" },
	{ NULL, NULL, L0, false, NULL, "cat /etc/hostname", "Access denied: /etc/hostname" },
	{ NULL, NULL, L0, false, NULL, "ls /", "Access denied: /" },
	{ NULL, NULL, L0, false, NULL, "cat /dev/zero", "Access denied: /dev/zero" },
	{ NULL, NULL, L0, false, NULL, "cat ../x", "Access denied: /x" },
	{ NULL, NULL, L0, false, NULL, "cat /workspace/a /etc/b", "Access denied: /etc/b" },
	{ NULL, NULL, L0, false, NULL, "ls", NULL },
	{ NULL, NULL, L(".env"), false, NULL, "cat 'my .env'", NULL },
	{ NULL, NULL, L(".env"), false, NULL, "cat 'sub/.env'",
	  "Access denied: /workspace/sub/.env" },
	{ NULL, NULL, L("secrets"), false, NULL, "cat secrets/key",
	  "Access denied: /workspace/secrets/key" },
	{ NULL, NULL, L("secrets"), false, NULL, "cat a/secrets",
	  "Access denied: /workspace/a/secrets" },
	{ NULL, NULL, L("secrets"), false, NULL, "cat secretsx", NULL },
	{ NULL, NULL, L("/secrets"), false, NULL, "cat secrets", NULL },
	{ NULL, NULL, L("/secrets"), false, NULL, "cat /secrets", "Access denied: /secrets" },
	{ NULL, NULL, L("secrets/"), false, NULL, "cat secrets/x", NULL },
	{ NULL, NULL, L("secrets/"), false, NULL, "cat secrets", NULL },
	{ NULL, NULL, L("!keep"), false, NULL, "cat !keep", "Access denied: /workspace/!keep" },
	{ NULL, NULL, L("workspace"), false, NULL, "ls .", "Access denied: /workspace" },
	{ NULL, NULL, L("workspace"), false, NULL, "ls", NULL },
	{ NULL, NULL, L("workspace"), false, NULL, "ls sub/..", "Access denied: /workspace" },
	{ NULL, NULL, L("*.pem"), false, NULL, "cat a/b/key.pem",
	  "Access denied: /workspace/a/b/key.pem" },
	{ NULL, NULL, L("*.pem"), false, NULL, "cat key.pem.bak", NULL },
	{ NULL, NULL, L("**/*.key"), false, NULL, "cat x.key", "Access denied: /workspace/x.key" },
	{ NULL, NULL, L("**/*.key"), false, NULL, "cat d/x.key",
	  "Access denied: /workspace/d/x.key" },
	{ NULL, NULL, L("secret*"), false, NULL, "cat dir/secret.txt",
	  "Access denied: /workspace/dir/secret.txt" },
	{ NULL, NULL, L("[ab].txt"), false, NULL, "cat a.txt", "Access denied: /workspace/a.txt" },
	{ NULL, NULL, L("[ab].txt"), false, NULL, "cat c.txt", NULL },
	{ NULL, NULL, L("[!ab].txt"), false, NULL, "cat c.txt", "Access denied: /workspace/c.txt" },
	{ NULL, NULL, L("[^a].txt"), false, NULL, "cat ^.txt", "Access denied: /workspace/^.txt" },
	{ NULL, NULL, L("[^a].txt"), false, NULL, "cat b.txt", NULL },
	{ NULL, NULL, L("data/*.csv"), false, NULL, "cat data/x/y.csv",
	  "Access denied: /workspace/data/x/y.csv" },
	{ NULL, NULL, L("?"), false, NULL, "cat a", "Access denied: /workspace/a" },
	{ NULL, NULL, L(".env"), false, NULL, "cat .env 'unclosed",
	  "Access denied: /workspace/.env" },
	{ NULL, NULL, L(".env"), false, NULL, "cat '.env", NULL },
	{ NULL, NULL, L(".env"), false, NULL, "cat .env \\", "Access denied: /workspace/.env" },
	{ NULL, NULL, L("-rf"), false, NULL, "rm -rf x", "Access denied: /workspace/-rf" },
	{ NULL, NULL, L("x"), false, NULL, "cat 'x\\.env'", "Access denied: /workspace/x\\.env" },
	{ NULL, NULL, L(".env"), false, NULL, "cat \"\"", NULL },
	{ NULL, NULL, L("a/b"), false, NULL, "cat a/b/c", "Access denied: /workspace/a/b/c" },
	{ NULL, NULL, L("a/b"), false, NULL, "cat x/a/b", NULL },
	{ NULL, NULL, L(".git"), false, NULL, "cat .git/config",
	  "Access denied: /workspace/.git/config" },
	{ NULL, NULL, L(".env"), false, NULL, "cat ./x/../.env", "Access denied: /workspace/.env" },
	{ NULL, NULL, L(".env"), false, NULL, "cat /workspace/.env",
	  "Access denied: /workspace/.env" },
	{ NULL, NULL, L(".env"), false, NULL, "cat //workspace/x", "Access denied: //workspace/x" },
	{ NULL, NULL, L(".env"), false, NULL, "cat ~/.env", "Access denied: /workspace/~/.env" },
	{ NULL, NULL, L("*"), false, NULL, "true", "Access denied: /workspace/true" },
	{ L("cat"), NULL, L(".env"), false, NULL, "cat .env", "Access denied: /workspace/.env" },
	{ L("cat"), NULL, L(".env"), false, NULL, "ls .env", "Command not allowed: 'ls .env'" },
	{ NULL, L("cat"), L(".env"), false, NULL, "cat .env", "Command not allowed: 'cat .env'" },
	{ NULL, L("rm"), L(".env"), false, NULL, "cat .env", "Access denied: /workspace/.env" },
	{ NULL, NULL, L(".env"), false, "/workspace/", "cat .env",
	  "Access denied: /workspace/.env" },
};

Test(policy_compat, table)
{
	for (size_t k = 0; k < ARRAY_SIZE(compat_rows); k++) {
		const struct compat_row *r = &compat_rows[k];
		struct cordon_profile p = { .mode = CORDON_MODE_COMPAT, .command_filtering = true };

		tp_list(&p.allowed, r->allowed);
		tp_list(&p.blocked, r->blocked);
		tp_list(&p.ignore, r->ignore);
		p.readonly = r->readonly;
		tp_expect(&p, r->command, r->workdir ? r->workdir : "/workspace",
			  policy_resolve_lexical, NULL, r->want, (int)k);
		tp_profile_free(&p);
	}
}

/* The plain policy_check() front door defaults to lexical resolution when given no resolver. */
Test(policy_compat, null_resolver_is_lexical)
{
	struct cordon_profile p = { 0 };
	cordon_error e;
	char *deny = NULL;

	tp_list(&p.ignore, L0);
	cr_assert_eq(policy_check(&p, "cat ../x", "/workspace", NULL, &deny, &e), 0);
	cr_assert_str_eq(deny, "Access denied: /x");
	free(deny);
	tp_profile_free(&p);
}

Test(policy_compat, no_lists_allows_anything)
{
	struct cordon_profile p = { 0 };
	cordon_error e;
	char *deny = (char *)"unset";

	cr_assert_eq(policy_check(&p, "rm -rf / ; echo a > b", "/w", NULL, &deny, &e), 0);
	cr_assert_null(deny);
	cr_assert_not(policy_uses_argv(&p));
}

Test(policy_compat, readonly_lists)
{
	const char *const *c = policy_readonly_commands(CORDON_MODE_COMPAT);
	const char *const *s = policy_readonly_commands(CORDON_MODE_STRICT);

	cr_assert_eq(pystr_strv_len((char *const *)c), 29);
	cr_assert_eq(pystr_strv_len((char *const *)s), 17);
	cr_assert_str_eq(c[0], "cat");
	cr_assert_str_eq(c[28], "git branch");
	cr_assert_str_eq(s[16], "cut");
}

Test(policy_compat, bad_input)
{
	struct cordon_profile p = { 0 };
	cordon_error e = { 0 };
	char *deny = NULL;

	cr_assert_eq(policy_check(&p, NULL, "/w", NULL, &deny, &e), -1);
	cr_assert_str_eq(e.msg, "policy: no command");
	tp_list(&p.ignore, L(".env"));
	cr_assert_eq(policy_check(&p, "cat .env", NULL, NULL, &deny, &e), -1);
	cr_assert_str_eq(e.msg, "policy: ignore and allowed_paths need a workdir");
	cr_assert_null(deny);
	tp_profile_free(&p);
}
