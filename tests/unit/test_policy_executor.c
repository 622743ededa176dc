/* SPDX-License-Identifier: MIT */
/*
 * The ShellExecutor dialect: ShellExecutor._validate_command of AG2 f27c3be6c (reference §8),
 * including the 20 default dangerous patterns, Python-vs-PCRE2 regex details (\s over
 * str.isspace(), \Z, \u escapes, IGNORECASE) and allowed_paths with _validate_path. Rows:
 * allowed_commands, denied_commands, allowed_paths, dangerous_patterns ("REGEX => MESSAGE"),
 * filtering disabled, home for "~", command, expected ValueError text (NULL: allowed). The
 * workspace /nonexistent-ws does not exist, so Python's resolve() there is lexical too.
 */
#include "test_policy.h"

struct exec_row {
	const char *const *allowed_commands, *const *denied_commands, *const *allowed_paths,
									      *const *dangerous;
	bool nofilter;
	const char *home, *command, *want;
};

static const struct exec_row exec_rows[] = {
	{ NULL, L0, NULL, NULL, false, NULL, "", "Empty command is not allowed" },
	{ NULL, L0, NULL, NULL, false, NULL, "   ", "Empty command is not allowed" },
	{ NULL, L0, NULL, NULL, false, NULL, "echo 'unclosed",
	  "Invalid command syntax: No closing quotation" },
	{ NULL, L0, NULL, NULL, false, NULL, "echo \\",
	  "Invalid command syntax: No escaped character" },
	{ NULL, L0, NULL, NULL, false, NULL, "echo \"a",
	  "Invalid command syntax: No closing quotation" },
	{ NULL, L0, NULL, NULL, false, NULL, "  ls  ", NULL },
	{ L("ls", "cat"), NULL, NULL, NULL, false, NULL, "rm x",
	  "Command 'rm' is not in the allowed commands list: ['ls', 'cat']" },
	{ L("ls", "cat"), NULL, NULL, NULL, false, NULL, "/bin/ls -la", NULL },
	{ L("ls", "cat"), NULL, NULL, NULL, false, NULL, "ls", NULL },
	{ L0, NULL, NULL, NULL, false, NULL, "ls",
	  "Command 'ls' is not in the allowed commands list: []" },
	{ L("it's"), NULL, NULL, NULL, false, NULL, "rm",
	  "Command 'rm' is not in the allowed commands list: [\"it's\"]" },
	{ L("ls"), NULL, NULL, NULL, false, NULL, "'/usr/bin/rm' x",
	  "Command 'rm' is not in the allowed commands list: ['ls']" },
	{ L("ls"), NULL, NULL, NULL, false, NULL, "ls/ x",
	  "Command '' is not in the allowed commands list: ['ls']" },
	{ NULL, L("rm"), NULL, NULL, false, NULL, "/usr/bin/rm x",
	  "Command 'rm' is in the denied commands list" },
	{ NULL, L("rm"), NULL, NULL, false, NULL, "rmdir x", NULL },
	{ NULL, L("rm"), NULL, NULL, false, NULL, "rm",
	  "Command 'rm' is in the denied commands list" },
	{ NULL, L0, NULL, NULL, false, NULL, "rm x", NULL },
	{ L("rm"), L("rm"), NULL, NULL, false, NULL, "rm x",
	  "Command 'rm' is in the denied commands list" },
	{ L("ls"), NULL, NULL, NULL, false, NULL, "rm -rf /",
	  "Command 'rm' is not in the allowed commands list: ['ls']" },
	{ NULL, L("rm"), NULL, NULL, false, NULL, "rm -rf /",
	  "Command 'rm' is in the denied commands list" },
	{ NULL, L0, NULL, NULL, false, NULL, "rm -rf /",
	  "Potentially dangerous command detected: Deletion of root filesystem (rm -rf /) is not "
	  "allowed." },
	{ NULL, L0, NULL, NULL, false, NULL, "rm -rf / --no-preserve-root",
	  "Potentially dangerous command detected: Deletion starting from root (rm -rf / ...) is "
	  "not allowed." },
	{ NULL, L0, NULL, NULL, false, NULL, "rm -rf ~",
	  "Potentially dangerous command detected: Deletion of entire home directory (rm -rf ~) is "
	  "not allowed." },
	{ NULL, L0, NULL, NULL, false, NULL, "rm -rf ~ x",
	  "Potentially dangerous command detected: Deletion starting from home (rm -rf ~ ...) is "
	  "not allowed." },
	{ NULL, L0, NULL, NULL, false, NULL, "rm -rf /etc",
	  "Potentially dangerous command detected: Deletion of critical system directories is not "
	  "allowed." },
	{ NULL, L0, NULL, NULL, false, NULL, "cat x > /dev/sda1",
	  "Potentially dangerous command detected: Direct disk block device overwrite is not "
	  "allowed." },
	{ NULL, L0, NULL, NULL, false, NULL, "echo > /dev/hda",
	  "Potentially dangerous command detected: Direct disk block device overwrite is not "
	  "allowed." },
	{ NULL, L0, NULL, NULL, false, NULL, "echo x >/dev/nvme0n1p1",
	  "Potentially dangerous command detected: Direct NVMe disk overwrite is not allowed." },
	{ NULL, L0, NULL, NULL, false, NULL, "dd if=/dev/zero of=/dev/sda",
	  "Potentially dangerous command detected: Writing to disk devices with dd is not "
	  "allowed." },
	{ NULL, L0, NULL, NULL, false, NULL,
	  ":(){ :|:& };:", "Potentially dangerous command detected: Fork bombs are not allowed." },
	{ NULL, L0, NULL, NULL, false, NULL, "mkfs.ext4 /dev/sdb1",
	  "Potentially dangerous command detected: Formatting filesystems is not allowed." },
	{ NULL, L0, NULL, NULL, false, NULL, "format C:",
	  "Potentially dangerous command detected: Formatting Windows drives is not allowed." },
	{ NULL, L0, NULL, NULL, false, NULL, "format c: /q",
	  "Potentially dangerous command detected: Formatting Windows drives is not allowed." },
	{ NULL, L0, NULL, NULL, false, NULL, "del /s C:\\Windows",
	  "Potentially dangerous command detected: Deletion of Windows system directory is not "
	  "allowed." },
	{ NULL, L0, NULL, NULL, false, NULL, "del /S C:\\Program Files",
	  "Potentially dangerous command detected: Deletion of Windows Program Files is not "
	  "allowed." },
	{ NULL, L0, NULL, NULL, false, NULL, "rmdir /s C:\\Windows",
	  "Potentially dangerous command detected: Deletion of Windows system directory is not "
	  "allowed." },
	{ NULL, L0, NULL, NULL, false, NULL, "rm -rf /*",
	  "Potentially dangerous command detected: Mass deletion of root directory contents is not "
	  "allowed." },
	{ NULL, L0, NULL, NULL, false, NULL, "rm -rf ~*",
	  "Potentially dangerous command detected: Mass deletion of home directory contents is not "
	  "allowed." },
	{ NULL, L0, NULL, NULL, false, NULL, "echo x > /etc/passwd",
	  "Potentially dangerous command detected: Overwriting critical system files is not "
	  "allowed." },
	{ NULL, L0, NULL, NULL, false, NULL, "echo x > /boot/grub",
	  "Potentially dangerous command detected: Overwriting boot files is not allowed." },
	{ NULL, L0, NULL, NULL, false, NULL, "RM -RF /",
	  "Potentially dangerous command detected: Deletion of root filesystem (rm -rf /) is not "
	  "allowed." },
	{ NULL, L0, NULL, NULL, false, NULL, "rm -fr /", NULL },
	{ NULL, L0, NULL, NULL, false, NULL, "rm -rf /tmp/x", NULL },
	{ NULL, L0, NULL, NULL, false, NULL, "rm -rf /etcetera", NULL },
	{ NULL, L0, NULL, NULL, false, NULL, "rm\034-rf /",
	  "Potentially dangerous command detected: Deletion of root filesystem (rm -rf /) is not "
	  "allowed." },
	{ NULL, L0, NULL, NULL, false, NULL, "rm\302\240-rf /",
	  "Potentially dangerous command detected: Deletion of root filesystem (rm -rf /) is not "
	  "allowed." },
	{ NULL, L0, NULL, NULL, false, NULL, "rm -rf /\n",
	  "Potentially dangerous command detected: Deletion of root filesystem (rm -rf /) is not "
	  "allowed." },
	{ NULL, L0, NULL, NULL, false, NULL, "rm -rf /\nls",
	  "Potentially dangerous command detected: Deletion starting from root (rm -rf / ...) is "
	  "not allowed." },
	{ NULL, L0, NULL, NULL, false, NULL, "xrm -rf /", NULL },
	{ NULL, L0, NULL, NULL, false, NULL, "echo > /dev/sda1x", NULL },
	{ NULL, L0, NULL, NULL, false, NULL, "mkfs.EXT4 /dev/sdb",
	  "Potentially dangerous command detected: Formatting filesystems is not allowed." },
	{ NULL, L0, NULL, NULL, false, NULL, "dd of=/dev/nvme0n1",
	  "Potentially dangerous command detected: Writing to disk devices with dd is not "
	  "allowed." },
	{ NULL, L0, NULL, NULL, false, NULL, "rm -rf /\341\240\216", NULL },
	{ NULL, L0, NULL, NULL, false, NULL, "echo '> /etc/hosts'",
	  "Potentially dangerous command detected: Overwriting critical system files is not "
	  "allowed." },
	{ NULL, L0, NULL, NULL, true, NULL, "rm -rf /", NULL },
	{ NULL, NULL, NULL, L("curl => No curl."), false, NULL, "curl x",
	  "Potentially dangerous command detected: No curl." },
	{ NULL, NULL, NULL, L("curl => No curl."), false, NULL, "rm -rf /", NULL },
	{ NULL, NULL, NULL, L("curl => No curl."), false, NULL, "CURL x",
	  "Potentially dangerous command detected: No curl." },
	{ NULL, NULL, NULL, L0, false, NULL, "rm -rf /",
	  "Potentially dangerous command detected: Deletion of root filesystem (rm -rf /) is not "
	  "allowed." },
	{ NULL, NULL, NULL, L("a\\s+b => space"), false, NULL, "a\035b",
	  "Potentially dangerous command detected: space" },
	{ NULL, NULL, NULL, L("x\\Z => end"), false, NULL, "x\n", NULL },
	{ NULL, NULL, NULL, L("^ls$ => ls => alone"), false, NULL, "ls",
	  "Potentially dangerous command detected: ls => alone" },
	{ NULL, NULL, NULL, L("\\u00e9t\\u00E9 => accent"), false, NULL, "\303\211T\303\211",
	  "Potentially dangerous command detected: accent" },
	/* re.IGNORECASE takes U+0130 and U+0131 for i, PCRE2 alone does not (red team). */
	{ NULL, L0, NULL, NULL, false, NULL, "rm -rf /b\304\261n",
	  "Potentially dangerous command detected: Deletion of critical system directories is not "
	  "allowed." },
	{ NULL, L0, NULL, NULL, false, NULL, "rm -rf /L\304\260B",
	  "Potentially dangerous command detected: Deletion of critical system directories is not "
	  "allowed." },
	{ NULL, L0, NULL, NULL, false, NULL, "echo > /dev/sd\304\261",
	  "Potentially dangerous command detected: Direct disk block device overwrite is not "
	  "allowed." },
	{ NULL, NULL, NULL, L("\\u0131x => dotless"), false, NULL, "IX",
	  "Potentially dangerous command detected: dotless" },
	{ NULL, NULL, NULL, L("\304\260x => dotted"), false, NULL, "\304\261x",
	  "Potentially dangerous command detected: dotted" },
	{ NULL, NULL, NULL, L("[^a-z]x => not a letter"), false, NULL, "\304\260x", NULL },
	/*
	 * A class holding U+0130 or U+0131, as a member or in a range, takes i too (sre adds it),
	 * and a range keeps its real ends: Python 3.11's answers (found in review).
	 */
	{ NULL, NULL, NULL, L("[\304\201-\305\276]x => r1"), false, NULL, "echo \304\261x",
	  "Potentially dangerous command detected: r1" },
	{ NULL, NULL, NULL, L("[\304\201-\305\276]x => r1"), false, NULL, "echo Ix",
	  "Potentially dangerous command detected: r1" },
	{ NULL, NULL, NULL, L("[\304\261-\305\276]x => r2"), false, NULL, "echo jx", NULL },
	{ NULL, NULL, NULL, L("[\304\261-\305\276]x => r2"), false, NULL, "echo ix",
	  "Potentially dangerous command detected: r2" },
	{ NULL, NULL, NULL, L("[^\304\201-\305\276]x => r3"), false, NULL, "echo \304\261x", NULL },
	{ NULL, NULL, NULL, L("[\\u0130]x => r4"), false, NULL, "echo Ix",
	  "Potentially dangerous command detected: r4" },
	{ NULL, NULL, NULL, L("[\\u0130]x => r4"), false, NULL, "echo jx", NULL },
	{ NULL, NULL, NULL, L("[a-h]x => r5"), false, NULL, "echo \304\261x", NULL },
	{ NULL, NULL, NULL, L("[\\x00-\\u0200]x => r6"), false, NULL, "echo \304\261x",
	  "Potentially dangerous command detected: r6" },
	{ NULL, NULL, NULL, L("[\304\255-\304\257]z => r7"), false, NULL, "echo \304\261z", NULL },
	{ NULL, NULL, NULL, L("\\bi\\b => word"), false, NULL, "\304\261",
	  "Potentially dangerous command detected: word" },
	{ NULL, NULL, NULL, L("^.{3}$ => three"), false, NULL, "a\304\260b",
	  "Potentially dangerous command detected: three" },
	{ NULL, NULL, NULL, L("[^\\s]{5} => long word"), false, NULL, "ab cd efghi",
	  "Potentially dangerous command detected: long word" },
	{ NULL, NULL, NULL, L("\\S+\\.sh => script"), false, NULL, "run a.sh",
	  "Potentially dangerous command detected: script" },
	{ NULL, NULL, L("*.txt"), NULL, false, NULL, "cat /nonexistent-ws/a.txt", NULL },
	{ NULL, NULL, L("*.txt"), NULL, false, NULL, "cat /nonexistent-ws/a.py",
	  "Access to path '/nonexistent-ws/a.py' is not allowed. Allowed paths: ['*.txt']" },
	{ NULL, NULL, L("*.txt"), NULL, false, NULL, "cat /etc/passwd",
	  "Access to path '/etc/passwd' is not allowed. Allowed paths: ['*.txt']" },
	{ NULL, NULL, L("*.txt"), NULL, false, NULL, "cat ../x.txt",
	  "Access to path '../x.txt' is not allowed. Allowed paths: ['*.txt']" },
	{ NULL, NULL, L("*.txt"), NULL, false, NULL, "cat a.txt", NULL },
	{ NULL, NULL, L("*.txt"), NULL, false, NULL, "cat /nonexistent-ws/../etc/x.txt", NULL },
	{ NULL, NULL, L("*.txt"), NULL, false, NULL, "cat ~/x.txt",
	  "Access to path '~/x.txt' is not allowed. Allowed paths: ['*.txt']" },
	{ NULL, NULL, L("*.txt"), NULL, false, "/nonexistent-ws", "cat ~/x.txt", NULL },
	{ NULL, NULL, L("*.txt"), NULL, false, "/nonexistent-ws/", "cat ~",
	  "Access to path '~' is not allowed. Allowed paths: ['*.txt']" },
	{ NULL, NULL, L("**"), NULL, false, NULL, "cat /etc/passwd", NULL },
	{ NULL, NULL, L("x", "**"), NULL, false, NULL, "cat /etc/passwd", NULL },
	{ NULL, NULL, L0, NULL, false, NULL, "cat /etc/passwd", NULL },
	{ NULL, NULL, L("src/*"), NULL, false, NULL, "cat /nonexistent-ws/src/a.c", NULL },
	{ NULL, NULL, L("src/*"), NULL, false, NULL, "cat /nonexistent-ws/lib/a.c",
	  "Access to path '/nonexistent-ws/lib/a.c' is not allowed. Allowed paths: ['src/*']" },
	{ NULL, NULL, L(""), NULL, false, NULL, "cat /nonexistent-ws/a", "empty pattern" },
	{ NULL, NULL, L("/nonexistent-ws/data"), NULL, false, NULL, "cat /nonexistent-ws/data",
	  NULL },
	{ NULL, NULL, L("/nonexistent-ws/data"), NULL, false, NULL, "cat /nonexistent-ws/data/x",
	  "Access to path '/nonexistent-ws/data/x' is not allowed. Allowed paths: "
	  "['/nonexistent-ws/data']" },
	{ NULL, NULL, L("*.txt"), NULL, false, NULL, "type C:foo",
	  "Access to path 'C:foo' is not allowed. Allowed paths: ['*.txt']" },
	{ NULL, NULL, L("*"), NULL, false, NULL, "type C:foo", NULL },
	{ NULL, NULL, L("*.txt"), NULL, false, NULL, "grep x /nonexistent-ws/a.txt /etc/y",
	  "Access to path '/etc/y' is not allowed. Allowed paths: ['*.txt']" },
	{ NULL, NULL, L("*.txt"), NULL, false, NULL, "cat x=/etc/passwd", NULL },
	{ NULL, NULL, L("*.txt"), NULL, false, NULL, "cat '/etc/passwd'", NULL },
	{ NULL, NULL, L("*.txt"), NULL, false, NULL, "/bin/cat a.txt",
	  "Access to path '/bin/cat' is not allowed. Allowed paths: ['*.txt']" },
	{ NULL, NULL, L("*"), NULL, false, NULL, "/bin/cat a.txt",
	  "Access to path '/bin/cat' is not allowed. Allowed paths: ['*']" },
	{ NULL, NULL, L("*.txt"), NULL, false, NULL, "cat\t/etc/x",
	  "Access to path '/etc/x' is not allowed. Allowed paths: ['*.txt']" },
	{ NULL, NULL, L("*.txt"), NULL, false, NULL, "cat\343\200\200/etc/x",
	  "Access to path '/etc/x' is not allowed. Allowed paths: ['*.txt']" },
	{ NULL, NULL, L("*.txt"), NULL, false, NULL, "cat ../nonexistent-ws/a.txt", NULL },
	{ NULL, NULL, L("*.txt", "*.md"), NULL, false, NULL, "cat /nonexistent-ws/r.md", NULL },
	{ NULL, NULL, L("d*/[ab].txt"), NULL, false, NULL, "cat /nonexistent-ws/data/a.txt", NULL },
	{ NULL, NULL, L("*.txt"), NULL, false, NULL, "cat /nonexistent-ws",
	  "Access to path '/nonexistent-ws' is not allowed. Allowed paths: ['*.txt']" },
	{ NULL, NULL, L("nonexistent-ws"), NULL, false, NULL, "cat /nonexistent-ws", NULL },
	{ NULL, NULL, L("*.txt"), NULL, false, NULL, "cat //nonexistent-ws/a.txt",
	  "Access to path '//nonexistent-ws/a.txt' is not allowed. Allowed paths: ['*.txt']" },
	{ L("cat"), NULL, L("*.txt"), NULL, false, NULL, "ls /etc",
	  "Command 'ls' is not in the allowed commands list: ['cat']" },
	{ NULL, NULL, L("*.txt"), NULL, false, NULL, "rm -rf /",
	  "Potentially dangerous command detected: Deletion of root filesystem (rm -rf /) is not "
	  "allowed." },
	{ NULL, NULL, L("it's"), NULL, false, NULL, "cat /x",
	  "Access to path '/x' is not allowed. Allowed paths: [\"it's\"]" },
};

Test(policy_executor, table)
{
	for (size_t k = 0; k < ARRAY_SIZE(exec_rows); k++) {
		const struct exec_row *r = &exec_rows[k];
		struct cordon_profile p = { .mode = CORDON_MODE_COMPAT };

		tp_list(&p.allowed_commands, r->allowed_commands);
		tp_list(&p.denied_commands, r->denied_commands);
		tp_list(&p.allowed_paths, r->allowed_paths);
		tp_list(&p.dangerous_patterns, r->dangerous);
		p.command_filtering = !r->nofilter;
		cr_assert(policy_is_executor_dialect(&p));
		cr_assert(policy_uses_argv(&p));
		tp_expect(&p, r->command, "/nonexistent-ws", policy_resolve_lexical, r->home,
			  r->want, (int)k);
		tp_profile_free(&p);
	}
}

Test(policy_executor, bad_pattern_items)
{
	cordon_error e = { 0 };

	cr_assert_eq(policy_validate_dangerous_pattern("rm\\s+-rf => No rm.", &e), 0);
	cr_assert_eq(policy_validate_dangerous_pattern("no separator", &e), -1);
	cr_assert_str_eq(e.msg, "dangerous_patterns: 'no separator' is not 'REGEX => MESSAGE'");
	cr_assert_eq(policy_validate_dangerous_pattern("(unclosed => msg", &e), -1);
	cr_assert_str_eq(e.msg,
			 "invalid regex '(unclosed': missing closing parenthesis at offset 9");
	/* Checked as searched: a \u escape is translated, and a broken one names its PCRE2 form. */
	cr_assert_eq(policy_validate_dangerous_pattern("\\u0072m => No rm.", &e), 0);
	cr_assert_eq(policy_validate_dangerous_pattern("(\\u0072m => msg", &e), -1);
	cr_assert(strstr(e.msg, "of its PCRE2 form '(\\x{0072}m'"), "%s", e.msg);
}

/* A broken regex in a profile is cordon's failure (exit 125), not a refusal or a pass. */
Test(policy_executor, bad_regex_fails_the_check)
{
	struct cordon_profile p = { .command_filtering = true };
	cordon_error e = { 0 };
	char *deny = NULL;

	tp_list(&p.dangerous_patterns, L("[a- => msg"));
	cr_assert_eq(policy_check(&p, "ls", "/w", NULL, &deny, &e), -1);
	cr_assert_null(deny);
	tp_profile_free(&p);
}

/* The dialect adds to the profile's mode: compat's lists still apply afterwards. */
Test(policy_executor, combined_with_compat_lists)
{
	struct cordon_profile p = { .command_filtering = true };

	tp_list(&p.denied_commands, L("rm"));
	tp_list(&p.blocked, L("git push"));
	tp_expect(&p, "rm x", "/w", NULL, NULL, "Command 'rm' is in the denied commands list", 0);
	tp_expect(&p, "git push", "/w", NULL, NULL, "Command not allowed: 'git push'", 1);
	tp_expect(&p, "git pull", "/w", NULL, NULL, NULL, 2);
	tp_profile_free(&p);
}

static char *executor_deny(const char *dangerous, const char *command)
{
	struct cordon_profile p = { .mode = CORDON_MODE_COMPAT, .command_filtering = true };
	cordon_error e = { 0 };
	char *deny = NULL;

	tp_list(&p.denied_commands, L0);
	if (dangerous)
		tp_list(&p.dangerous_patterns, L(dangerous));
	cr_assert_eq(policy_check(&p, command, "/nonexistent-ws", NULL, &deny, &e), 0, "%s: %s",
		     command, e.msg);
	tp_profile_free(&p);
	return deny;
}

/*
 * The dd rule is spelled for a linear search (policy/executor.c): it must refuse exactly what
 * AG2's own spelling refuses. Random commands of dd words, of= targets and line breaks (no
 * other default rule can match them), each checked with the defaults and with AG2's regex as
 * the only rule.
 */
Test(policy_executor, dd_rule_refuses_what_ag2s_spelling_refuses)
{
	static const char *const parts[] = { "dd",
					     "DD",
					     "add",
					     "dd_",
					     "of=/dev/sd",
					     "OF=/dev/hd",
					     "of=/dev/nvme0",
					     "of=/dev/x",
					     "xof=/dev/sd",
					     " ",
					     " ",
					     "\n",
					     "a",
					     "-",
					     "/" };
	uint64_t x = 7;
	size_t refused = 0;

	for (int k = 0; k < 3000; k++) {
		char cmd[512] = "";
		int n;

		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		n = 1 + (int)((x >> 33) % 14);
		for (int i = 0; i < n; i++) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			strcat(cmd, parts[(x >> 33) % ARRAY_SIZE(parts)]);
		}
		{
			_cleanup_free_ char *ours = executor_deny(NULL, cmd);
			_cleanup_free_ char *ag2 =
				executor_deny("\\bdd\\b.*\\bof=/dev/(?:sd|hd|nvme) => Writing to "
					      "disk devices with "
					      "dd is not allowed.",
					      cmd);

			cr_assert((ours == NULL) == (ag2 == NULL), "'%s': ours %s, AG2's %s", cmd,
				  ours ? ours : "allowed", ag2 ? ag2 : "allowed");
			if (ours)
				cr_assert_str_eq(ours, ag2);
			refused += ours != NULL;
		}
	}
	cr_assert(refused > 100 && refused < 2900, "%zu of 3000 refused", refused);
}

/*
 * "dd " 350,000 times, then an of= that is not a disk: allowed. Searched the way AG2's regex
 * reads, this one check would run for most of an hour (quadratic); it is one pass now.
 */
Test(policy_executor, many_dd_words_are_one_pass)
{
	size_t n = 350000;
	_cleanup_free_ char *cmd = malloc(3 * n + 16);
	_cleanup_free_ char *deny = NULL;

	cr_assert(cmd);
	for (size_t i = 0; i < n; i++)
		memcpy(cmd + 3 * i, "dd ", 3);
	strcpy(cmd + 3 * n, "of=/dev/zz");
	deny = executor_deny(NULL, cmd);
	cr_assert_null(deny, "%s", deny);
	cmd[3 * n + 8] = 's';
	cmd[3 * n + 9] = 'd';
	free(deny);
	deny = executor_deny(NULL, cmd);
	cr_assert_str_eq(deny, "Potentially dangerous command detected: Writing to disk devices "
			       "with dd is not allowed.");
}
