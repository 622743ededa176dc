/* SPDX-License-Identifier: MIT */
/*
 * Strict mode: AG2's restricted mode (reference §11; filter.py 640c13b3, adapter/shell.py
 * 51d5fe6d). Rows: allowed, blocked, ignore, readonly, command, expected refusal (NULL:
 * allowed); ignore resolves lexically against /workspace.
 */
#include "test_policy.h"

struct strict_row {
	const char *const *allowed, *const *blocked, *const *ignore;
	bool readonly;
	const char *command, *want;
};

static const struct strict_row strict_rows[] = {
	{ L("git log"), NULL, NULL, false, "git log -5", NULL },
	{ L("git log"), NULL, NULL, false, "git -c x log", "Command not allowed: 'git -c x log'" },
	{ L("git log"), NULL, NULL, false, "git", "Command not allowed: 'git'" },
	{ L("git  log"), NULL, NULL, false, "git log", NULL },
	{ L("git\tlog"), NULL, NULL, false, "git   log", NULL },
	{ L("ls"), NULL, NULL, false, "lsx", "Command not allowed: 'lsx'" },
	{ L("ls"), NULL, NULL, false, "'ls' -la", NULL },
	{ L("ls"), NULL, NULL, false, "  ls  ", NULL },
	{ L("ls"), NULL, NULL, false, "", "Command not allowed: ''" },
	{ L0, NULL, NULL, false, "ls", "Command not allowed: 'ls'" },
	{ L(""), NULL, NULL, false, "anything goes", "Command not allowed: 'anything goes'" },
	{ L("ls"), NULL, NULL, false, "/bin/ls", "Command not allowed: '/bin/ls'" },
	{ NULL, NULL, NULL, false, "echo 'a",
	  "Command not allowed (unbalanced quotes): \"echo 'a\"" },
	{ NULL, NULL, NULL, false, "echo \"a",
	  "Command not allowed (unbalanced quotes): 'echo \"a'" },
	{ NULL, NULL, NULL, false, "echo a\\",
	  "Command not allowed (unbalanced quotes): 'echo a\\\\'" },
	{ L("ls"), NULL, NULL, false, "echo 'a",
	  "Command not allowed (unbalanced quotes): \"echo 'a\"" },
	{ NULL, NULL, NULL, false, "ls -la", NULL },
	{ NULL, NULL, NULL, false, "ls | wc",
	  "Command not allowed (shell syntax is not available in restricted mode): 'ls | wc'" },
	{ NULL, NULL, NULL, false, "", NULL },
	{ NULL, NULL, NULL, false, "ls\n",
	  "Command not allowed (shell syntax is not available in restricted mode): 'ls\\n'" },
	{ L("echo"), NULL, NULL, false, "echo 'a > b'", NULL },
	{ L("echo"), NULL, NULL, false, "echo a > b",
	  "Command not allowed (shell syntax is not available in restricted mode): 'echo a > b'" },
	{ L("echo"), NULL, NULL, false, "echo a & b",
	  "Command not allowed (shell syntax is not available in restricted mode): 'echo a & b'" },
	{ L("echo"), NULL, NULL, false, "echo a\nb",
	  "Command not allowed (shell syntax is not available in restricted mode): 'echo a\\nb'" },
	{ L("echo"), NULL, NULL, false, "echo a\rb",
	  "Command not allowed (shell syntax is not available in restricted mode): 'echo a\\rb'" },
	{ L("cat"), NULL, NULL, false, "cat < f",
	  "Command not allowed (shell syntax is not available in restricted mode): 'cat < f'" },
	{ L("echo"), NULL, NULL, false, "echo \\> x", NULL },
	{ L("echo"), NULL, NULL, false, "echo \"a;b\"", NULL },
	{ L("echo"), NULL, NULL, false, "echo a$(id)",
	  "Command not allowed (shell syntax is not available in restricted mode): 'echo a$(id)'" },
	{ L("echo"), NULL, NULL, false, "echo \"$(id)\"", NULL },
	{ L("echo"), NULL, NULL, false, "echo '`id`'", NULL },
	{ L("echo"), NULL, NULL, false, "echo \"a\\\"|b\"", NULL },
	{ L("echo"), NULL, NULL, false, "echo $ (x)", NULL },
	{ L("echo"), NULL, NULL, false, "echo a&&b",
	  "Command not allowed (shell syntax is not available in restricted mode): 'echo a&&b'" },
	{ L("echo"), NULL, NULL, false, "echo ${HOME}", NULL },
	{ L("echo"), NULL, NULL, false, "ls > f", "Command not allowed: 'ls > f'" },
	{ L("echo"), NULL, NULL, false, "echo it's'", NULL },
	{ L("echo"), NULL, NULL, false, "echo \"it's\" ; x",
	  "Command not allowed (shell syntax is not available in restricted mode): 'echo "
	  "\"it\\'s\" ; x'" },
	{ NULL, L("rm"), NULL, false, "/bin/rm -rf x", "Command not allowed: '/bin/rm -rf x'" },
	{ NULL, L("rm"), NULL, false, "rm", "Command not allowed: 'rm'" },
	{ NULL, L("rm"), NULL, false, "rmdir x", NULL },
	{ NULL, L("rm -rf"), NULL, false, "rm -fr x", NULL },
	{ NULL, L("rm -rf"), NULL, false, "rm -rf x", "Command not allowed: 'rm -rf x'" },
	{ NULL, L("rm"), NULL, false, "sh -c 'rm -rf x'", NULL },
	{ NULL, L("/bin/rm"), NULL, false, "/bin/rm x", NULL },
	{ NULL, L("rm  -rf"), NULL, false, "./rm -rf /", "Command not allowed: './rm -rf /'" },
	{ NULL, L("rm"), NULL, false, "rm/ x", "Command not allowed: 'rm/ x'" },
	{ NULL, L("rm"), NULL, false, "", NULL },
	{ NULL, L0, NULL, false, "rm -rf /", NULL },
	{ NULL, NULL, NULL, true, "find . -name x", "Command not allowed: 'find . -name x'" },
	{ NULL, NULL, NULL, true, "ls", NULL },
	{ NULL, NULL, NULL, true, "env", "Command not allowed: 'env'" },
	{ NULL, NULL, NULL, true, "git log", "Command not allowed: 'git log'" },
	{ NULL, NULL, NULL, true, "cat f", NULL },
	{ NULL, NULL, NULL, true, "ll", "Command not allowed: 'll'" },
	{ NULL, NULL, NULL, true, "cut -d: -f1 f", NULL },
	{ NULL, NULL, NULL, true, "sort f", "Command not allowed: 'sort f'" },
	{ L("sort"), NULL, NULL, true, "sort f", NULL },
	{ NULL, NULL, L(".env"), false, "cat *.txt",
	  "Access denied (wildcard arguments are not supported with ignore): '*.txt'" },
	{ NULL, NULL, L(".env"), false, "cat '*'",
	  "Access denied (wildcard arguments are not supported with ignore): '*'" },
	{ NULL, NULL, L(".env"), false, "echo {a,b}",
	  "Access denied (wildcard arguments are not supported with ignore): '{a,b}'" },
	{ NULL, NULL, L(".env"), false, "cat .env", "Access denied: /workspace/.env" },
	{ NULL, NULL, L(".env"), false, "cat \"x?\"",
	  "Access denied (wildcard arguments are not supported with ignore): 'x?'" },
	{ NULL, NULL, L(".env"), false, "ls [ab]",
	  "Access denied (wildcard arguments are not supported with ignore): '[ab]'" },
	{ NULL, NULL, L0, false, "cat /etc/passwd", "Access denied: /etc/passwd" },
	{ NULL, NULL, L(".env"), false, "cat it\\'s*",
	  "Access denied (wildcard arguments are not supported with ignore): \"it's*\"" },
	{ NULL, NULL, L(".env"), false, "cat ok.txt", NULL },
	{ NULL, NULL, L(".env"), false, "cat a .env *", "Access denied: /workspace/.env" },
	{ L("cat"), NULL, L(".env"), false, "cat sub/.env", "Access denied: /workspace/sub/.env" },
	{ NULL, L("cat"), L(".env"), false, "cat *", "Command not allowed: 'cat *'" },
};

Test(policy_strict, table)
{
	for (size_t k = 0; k < ARRAY_SIZE(strict_rows); k++) {
		const struct strict_row *r = &strict_rows[k];
		struct cordon_profile p = { .mode = CORDON_MODE_STRICT, .command_filtering = true };

		tp_list(&p.allowed, r->allowed);
		tp_list(&p.blocked, r->blocked);
		tp_list(&p.ignore, r->ignore);
		p.readonly = r->readonly;
		tp_expect(&p, r->command, "/workspace", policy_resolve_lexical, NULL, r->want,
			  (int)k);
		tp_profile_free(&p);
	}
}

Test(policy_strict, runs_argv_without_shell)
{
	struct cordon_profile p = { .mode = CORDON_MODE_STRICT };

	cr_assert(policy_uses_argv(&p));
	cr_assert_not(policy_is_executor_dialect(&p));
}

/* filter._unquoted(): what strict mode looks at for operators. */
static const struct {
	const char *command;
	bool op;
} strict_op_rows[] = {
	{ "ls", false },       { "ls -la 'a|b'", false }, { "a \\| b", false },
	{ "a \\\\| b", true }, { "\"a\\\"|\"", false },	  { "'a\\'|'", true },
	{ "x $(y)", true },    { "x $'('", false },	  { "x $\\(", false },
	{ "a\rb", true },      { "a'\n'b", false },	  { "\"unclosed |", false },
};

Test(policy_strict, unquoted_operators)
{
	for (size_t k = 0; k < ARRAY_SIZE(strict_op_rows); k++)
		cr_expect_eq(strict_has_operator(strict_op_rows[k].command), strict_op_rows[k].op,
			     "row %zu: %s", k, strict_op_rows[k].command);
}
