/* SPDX-License-Identifier: MIT */
/*
 * Class 3, path and mount races, symlink and hard-link confusion (CVE-2025-31133, firejail
 * CVE-2017-5180/5940, Codex's protected-path symlink test, srt's hard link to /etc/passwd),
 * ignored paths that string filters cannot protect, and writes outside the workdir and /tmp.
 *
 * Ignored paths: the workdir holds `.env` = SECRET_<tag>, the run has `--ignore .env`, and
 * the command reads it by every route a string filter misses. Nothing of the secret may ever
 * be printed.
 */
#define _GNU_SOURCE
#include "tests/escape/escape.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *const IGNORE_ENV[] = { "--ignore", ".env", NULL };

static void put_env(struct esc *e)
{
	char *p = esc_wpath(e, ".env"), *content;

	cr_assert(asprintf(&content, "API_KEY=%s\n", e->secret) > 0);
	esc_write(p, content, 0644, e->uid, e->gid);
	free(content);
	free(p);
}

/* Run CMD with --ignore .env; the secret must not appear, .env must be intact on the host. */
static void masked_read(struct esc *e, const char *cmd)
{
	struct esc_opts o = { .args = IGNORE_ENV };
	struct tu_run r;
	char *p = esc_wpath(e, ".env"), *after;

	put_env(e);
	esc_run(&r, &o, "%s; echo ESC-END", cmd);
	esc_expect_absent(&r, e->secret, cmd);
	/* it ran, or the policy refused it: never a vacuous pass */
	cr_expect(strstr(r.out, "ESC-END") || r.status == 126, "'%s' did not run: %d %s %s", cmd,
		  r.status, r.out, r.err);
	after = esc_read(p, NULL);
	cr_expect(after && strstr(after, e->secret), "the run changed or removed the host's .env");
	free(after);
	free(p);
	tu_run_free(&r);
}

ESC_CASE(escape_mask, by_glob)
{
	masked_read(e, "cat .en?");
}

ESC_CASE(escape_mask, by_variable)
{
	masked_read(e, "f=.e; cat ${f}nv");
}

ESC_CASE(escape_mask, by_command_substitution)
{
	masked_read(e, "cat $(echo .e)nv");
}

ESC_CASE(escape_mask, by_grep_recursive)
{
	masked_read(e, "grep -r SECRET .");
}

ESC_CASE(escape_mask, by_redirect)
{
	masked_read(e, "cat<.env");
}

ESC_CASE(escape_mask, by_find_exec)
{
	masked_read(e, "find . -name '.e*' -exec cat {} +");
}

/* Unmasking: unmount the mask, by the command line and by the syscalls. */
ESC_CASE(escape_mask, by_unmount)
{
	esc_put_helper(e);
	masked_read(e, "umount .e?v; umount -l .e?v; ./h mount . .e?v; ./h mount . ./.e?v .; "
		       "cat .e?v");
}

/*
 * Moving the secret from under the mask: rename, hard link, copy, archive, /proc/self/fd,
 * /proc/self/cwd. From a script the agent wrote, so that no string filter sees the paths.
 */
ESC_CASE(escape_mask, by_move_link_copy)
{
	char *script = esc_wpath(e, "attack.sh");

	esc_write(script,
		  "mv .e?v moved; cat moved; ln .e?v linked; cat linked; cp .e?v copied\n"
		  "cat copied; tar cf - .e?v | strings\n"
		  "bash -c 'exec 5<.e?v; cat /proc/self/fd/5'\n"
		  "cat /proc/self/cwd/.e?v; dd if=$(ls -a | grep '^.en') 2>/dev/null\n"
		  "for f in /proc/self/fd/*; do cat $f/.e?v; done 2>/dev/null; true\n",
		  0644, e->uid, e->gid);
	masked_read(e, "sh attack.sh");
	free(script);
}

/* An ignored path that is a symlink to a readable file elsewhere in the sandbox's view. */
ESC_CASE(escape_paths, ignored_symlink)
{
	/* refusing to run over a hostile workdir (exit 125) is a safe answer too */
	struct esc_opts o = { .args = IGNORE_ENV, .allow_setup_error = true };
	char target[128], *lnk = esc_wpath(e, ".env"), *after;
	struct tu_run r;

	snprintf(target, sizeof(target), "/etc/cordon-esc-%s", e->tag);
	esc_write(target, e->secret, 0644, 0, 0);
	esc_on_teardown("rm -f '%s'", target);
	cr_assert(symlink(target, lnk) == 0);
	esc_run(&r, &o, "cat .en?; cat $(echo .e)nv; grep -r SECRET .; true");
	esc_expect_absent(&r, e->secret, "a symlinked ignored path");
	after = esc_read(target, NULL);
	cr_expect(after && !strcmp(after, e->secret), "the symlink's target changed on the host");
	free(after);
	free(lnk);
	tu_run_free(&r);
}

/* An ignored path that is a hard link to a file outside the workdir. */
ESC_CASE(escape_paths, ignored_hardlink)
{
	struct esc_opts o = { .args = IGNORE_ENV };
	char *outside = esc_spath(e, "outside-secret"), *inside = esc_wpath(e, ".env");
	struct tu_run r;

	esc_write(outside, e->secret, 0644, 0, 0);
	cr_assert(link(outside, inside) == 0, "hard link: %m");
	esc_run(&r, &o, "cat .en?; f=.e; cat ${f}nv; grep -r SECRET .; true");
	esc_expect_absent(&r, e->secret, "a hard-linked ignored path");
	free(outside);
	free(inside);
	tu_run_free(&r);
}

/* srt's case: hard-link a host file into the workdir from inside, then write through it. */
ESC_CASE(escape_paths, hardlink_to_host_file)
{
	char target[128], *after;
	struct tu_run r;

	snprintf(target, sizeof(target), "/etc/cordon-esc-target-%s", e->tag);
	esc_write(target, "original\n", 0666, 0, 0);
	esc_on_teardown("rm -f '%s'", target);
	esc_run(&r, NULL,
		"ln %s pw && echo pwned >> pw; ln -f /etc/passwd passwd && echo ESCAPED-LINK; "
		"echo pwned >> %s; true",
		target, target);
	after = esc_read(target, NULL);
	cr_expect(after && !strcmp(after, "original\n"), "a host file was written: '%s'", after);
	esc_expect_absent(&r, "ESCAPED-LINK", "hard link to /etc/passwd");
	free(after);
	tu_run_free(&r);
}

/*
 * CVE-2025-31133-like race: while runs with --ignore .env start, a host process swaps
 * workdir/.env between a regular file and symlinks to /etc/shadow and to a secret outside the
 * workdir, as fast as it can. Setup must never follow the swapped-in link.
 */
static void racer(const struct esc *e, const char *outside)
{
	char tmp[4200], env[4200];
	unsigned i = 0;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	srand((unsigned)getpid());
	snprintf(tmp, sizeof(tmp), "%s/.env.swap", e->wd);
	snprintf(env, sizeof(env), "%s/.env", e->wd);
	for (;;) {
		unlink(tmp);
		switch (i++ % 3) {
		case 0:
			if (symlink("/etc/shadow", tmp) != 0)
				_exit(1);
			break;
		case 1:
			if (symlink(outside, tmp) != 0)
				_exit(1);
			break;
		default: {
			int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);

			if (fd < 0 || write(fd, "plain\n", 6) != 6)
				_exit(1);
			close(fd);
		}
		}
		if (lchown(tmp, e->uid, e->gid) != 0 || rename(tmp, env) != 0)
			_exit(1);
		/* bursts of swaps, then a still state of up to 20 ms: setup races and not */
		usleep(i % 16 < 8 ? 20 : (useconds_t)(rand() % 20000));
	}
}

ESC_CASE(escape_paths, symlink_swap_race)
{
	struct esc_opts o = { .args = IGNORE_ENV, .allow_setup_error = true };
	const char *shadow = esc_shadow_needle();
	char *outside = esc_spath(e, "outside-secret"), *shadow_before, *shadow_after;
	pid_t pid;
	int runs = e->control ? 5 : 25, ran = 0;

	esc_write(outside, e->secret, 0644, 0, 0);
	shadow_before = esc_read("/etc/shadow", NULL);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0)
		racer(e, outside);
	for (int i = 0; i < runs; i++) {
		struct tu_run r;

		esc_run(&r, &o,
			"cat .en? 2>&1; f=.e; cat ${f}nv 2>&1; cat $(echo .e)nv 2>&1; true");
		ran += r.status != 125;
		esc_expect_absent(&r, shadow, "/etc/shadow through a swapped symlink");
		esc_expect_absent(&r, e->secret, "an outside file through a swapped symlink");
		tu_run_free(&r);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	cr_expect(ran > 0, "cordon refused every run: the race was never exercised");
	shadow_after = esc_read("/etc/shadow", NULL);
	cr_expect(shadow_after && !strcmp(shadow_before, shadow_after), "/etc/shadow changed");
	free(shadow_before);
	free(shadow_after);
	free(outside);
}

/* `..` from the workdir: the host's /etc/shadow and a file in the host's / are out of reach. */
ESC_CASE(escape_paths, dotdot)
{
	struct tu_run r;

	esc_host_root_marker(e);
	esc_run(&r, NULL,
		"cat ../../../../../../../../etc/shadow; cat "
		"../../../../../../../../cordon-esc-root-*; "
		"cd ../../../../../../../.. && cat etc/shadow cordon-esc-root-* "
		"./root/.bash_history; "
		"true");
	esc_expect_absent(&r, esc_shadow_needle(), "/etc/shadow by ..");
	esc_expect_absent(&r, e->secret, "the host's / by ..");
	tu_run_free(&r);
}

/* Symlinks made inside pointing out: they resolve in the sandbox's view, not the host's. */
ESC_CASE(escape_paths, symlink_out)
{
	struct tu_run r;
	char *outside = esc_spath(e, "secret");

	esc_write(outside, e->secret, 0644, 0, 0);
	esc_host_root_marker(e);
	esc_run(&r, NULL,
		"ln -s / r; cat r/cordon-esc-root-*; ln -s /etc/shadow s; cat s; ln -s %s t; cat "
		"t; "
		"true",
		outside);
	esc_expect_absent(&r, esc_shadow_needle(), "/etc/shadow by symlink");
	esc_expect_absent(&r, e->secret, "the host by symlink");
	free(outside);
	tu_run_free(&r);
}

/*
 * A later run's workdir through a symlink an earlier run planted: a harness that gives runs
 * subdirectories of an earlier workdir (per-task directories in a shared workspace) must not
 * hand the command a directory elsewhere, where cordon as root would run it as that
 * directory's owner, or idmapped as root in a root-owned one (fails before, as root: the
 * command created a root-owned file in the outside directory, and cordon made a missing
 * directory there). As root the run is refused (a symlink on the way to a workdir); as a user
 * the command only has the user's own rights there anyway.
 */
ESC_CASE(escape_paths, workdir_through_planted_symlink)
{
	struct esc_opts o = { .allow_setup_error = true };
	char *outside = esc_spath(e, "outside"), *sens = esc_spath(e, "outside/sens");
	char *planted = esc_spath(e, "outside/sens/planted"), *made = esc_spath(e, "outside/new");
	char *via = NULL, *via_new = NULL;
	const char *args[3] = { "-w", NULL, NULL };
	struct tu_run r1, r2, r3;

	cr_assert_eq(mkdir(outside, 0755), 0);
	cr_assert_eq(mkdir(sens, 0755), 0);
	cr_assert(asprintf(&via, "%s/lnk/sens", e->wd) > 0);
	cr_assert(asprintf(&via_new, "%s/lnk/new", e->wd) > 0);
	esc_run(&r1, NULL, "ln -s %s lnk; echo ESC-END", outside);
	cr_expect(strstr(r1.out, "ESC-END"), "run 1 did not run: %s %s", r1.out, r1.err);
	/* Under control (no cordon, no -w) the command goes there itself. */
	args[1] = via;
	o.args = args;
	esc_run(&r2, &o, "[ -d lnk ] && cd lnk/sens; touch planted; echo ESC-END");
	cr_expect(!esc_exists(planted), "the command wrote through the planted symlink: %d %s %s",
		  r2.status, r2.out, r2.err);
	args[1] = via_new;
	esc_run(&r3, &o, "[ -d lnk ] && mkdir -p lnk/new; echo ESC-END");
	cr_expect(!esc_exists(made), "a workdir was made through the planted symlink");
	if (e->uid == 0 && !e->control)
		cr_expect(r2.status == 125 && strstr(r2.err, "symlink"),
			  "as root the run was not refused: %d %s", r2.status, r2.err);
	free(outside);
	free(sens);
	free(planted);
	free(made);
	free(via);
	free(via_new);
	tu_run_free(&r1);
	tu_run_free(&r2);
	tu_run_free(&r3);
}

/*
 * Masked names that do not exist yet cannot be created either: a command must not plant a
 * git hook (with .git present), editor tasks, agent settings or shell rc files for the host
 * user to run later. Everything else in the workdir stays writable, and nothing of cordon's is
 * left on the host after the run.
 */
ESC_CASE(escape_paths, absent_masked_names_cannot_be_created)
{
	static const char *const names[] = { ".bashrc",	      ".profile",   ".zshrc",
					     ".mcp.json",     ".vscode",    ".idea",
					     ".claude",	      ".git/hooks", ".git/config",
					     ".devcontainer", ".cursor",    ".gemini",
					     ".amazonq",      ".hg/hgrc" };
	char *git = esc_wpath(e, ".git"), *hg = esc_wpath(e, ".hg"), *ok;
	struct tu_run r;

	cr_assert_eq(mkdir(git, 0755), 0);
	esc_own(e, git);
	cr_assert_eq(mkdir(hg, 0755), 0);
	esc_own(e, hg);
	esc_run(&r, NULL,
		"for f in .bashrc .profile .zshrc .mcp.json .hg/hgrc; do echo pwned > $f; done; "
		"mkdir -p .vscode .idea .claude .git/hooks .devcontainer .cursor .gemini .amazonq; "
		"echo pwned > .devcontainer/devcontainer.json; echo pwned > .cursor/mcp.json; "
		"echo pwned > .gemini/settings.json; echo pwned > .amazonq/mcp.json; "
		"echo pwned > .vscode/tasks.json; echo pwned > .idea/workspace.xml; "
		"echo pwned > .claude/settings.json; echo pwned > .git/hooks/post-commit; "
		"chmod +x .git/hooks/post-commit; echo pwned > .git/config; "
		"mv .bashrc moved 2>/dev/null; rm -f .profile; "
		"echo fine > ok; true");
	ok = esc_wpath(e, "ok");
	cr_expect(esc_exists(ok), "the workdir is not writable any more: %s %s", r.out, r.err);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char *p = esc_wpath(e, names[i]);

		cr_expect(!esc_exists(p), "%s exists on the host after the run", names[i]);
		free(p);
	}
	{
		char *m = esc_wpath(e, "moved");

		cr_expect(!esc_exists(m), "a placeholder was moved out of its place");
		free(m);
	}
	free(ok);
	free(git);
	free(hg);
	tu_run_free(&r);
}

/*
 * The directory holding masked names cannot be swapped: moving `.git` aside (or removing it)
 * and making a new one would leave `.git/hooks/post-commit` and `.git/config` unmasked for
 * the host's next git command.
 */
ESC_CASE(escape_paths, masked_names_parent_cannot_be_swapped)
{
	char *git = esc_wpath(e, ".git"), *hooks = esc_wpath(e, ".git/hooks"),
	     *cfg = esc_wpath(e, ".git/config"), *aside = esc_wpath(e, "aside"),
	     *hook = esc_wpath(e, ".git/hooks/post-commit"), *ok = esc_wpath(e, "ok");
	struct tu_run r;
	FILE *f;

	cr_assert_eq(mkdir(git, 0755), 0);
	esc_own(e, git);
	f = fopen(cfg, "w");
	cr_assert(f);
	fputs("[core]\n", f);
	fclose(f);
	esc_own(e, cfg);
	esc_run(&r, NULL,
		"mv .git aside 2>/dev/null || mv -T .git aside 2>/dev/null; "
		"rm -rf .git 2>/dev/null; mkdir -p .git/hooks; "
		"printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/post-commit; "
		"chmod +x .git/hooks/post-commit; printf '[core]\\nhooksPath=/tmp\\n' > "
		".git/config; "
		"echo fine > ok; true");
	cr_expect(esc_exists(ok), "the workdir is not writable any more: %s %s", r.out, r.err);
	cr_expect(!esc_exists(aside), ".git was moved aside: %s %s", r.out, r.err);
	cr_expect(!esc_exists(hooks), ".git/hooks exists on the host after the run");
	cr_expect(!esc_exists(hook), ".git/hooks/post-commit exists on the host after the run");
	{
		char buf[64] = "";

		f = fopen(cfg, "r");
		cr_assert(f, ".git/config is gone");
		cr_expect(fgets(buf, sizeof(buf), f) && strcmp(buf, "[core]\n") == 0 &&
				  !fgets(buf, sizeof(buf), f),
			  ".git/config was replaced");
		fclose(f);
	}
	free(git);
	free(hooks);
	free(cfg);
	free(aside);
	free(hook);
	free(ok);
	tu_run_free(&r);
}

/*
 * Two runs in one workdir (a daemon session's concurrent execs, two `cordon run -w`): the
 * first makes the placeholders of the absent masked names, the second masks them as found.
 * When the first ends, it must not remove them under the second's masks (unlinking a mount
 * point on the host detaches it in every other namespace): the second could then create
 * `.bashrc` or `.vscode/tasks.json` for the host. The last run to end removes them.
 */
ESC_CASE(escape_paths, concurrent_run_keeps_absent_names_masked)
{
	static const char *const names[] = { ".bashrc", ".mcp.json", ".vscode", ".claude" };
	char *as = esc_wpath(e, "astarted"), *ad = esc_wpath(e, "adone"), *ok = esc_wpath(e, "ok");
	struct esc_job a, b;
	struct tu_run ra, rb;

	esc_start(&a, NULL,
		  "echo > astarted; i=0; while [ ! -e bstarted ] && [ $i -lt 600 ]; do "
		  "sleep 0.05; i=$((i+1)); done; echo a");
	/* The second run starts once the first one's sandbox is set up (it runs its command). */
	for (int i = 0; i < 3000 && !esc_exists(as); i++)
		usleep(10000);
	cr_assert(esc_exists(as), "the first run never started");
	esc_start(&b, NULL,
		  "echo > bstarted; i=0; while [ ! -e adone ] && [ $i -lt 600 ]; do "
		  "sleep 0.05; i=$((i+1)); done; [ -e adone ] && echo synced; "
		  "echo pwned > .bashrc; echo pwned > .mcp.json; mkdir -p .vscode .claude; "
		  "echo pwned > .vscode/tasks.json; echo pwned > .claude/settings.json; "
		  "echo fine > ok; true");
	esc_finish(&a, &ra, NULL, NULL);
	esc_write(ad, "", 0644, e->uid, e->gid);
	esc_finish(&b, &rb, NULL, NULL);
	cr_expect(strstr(rb.out, "synced"), "the second run did not outlive the first: %s %s",
		  rb.out, rb.err);
	cr_expect(esc_exists(ok), "the workdir is not writable: %s %s", rb.out, rb.err);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char *p = esc_wpath(e, names[i]);

		cr_expect(!esc_exists(p), "%s exists on the host after the runs", names[i]);
		free(p);
	}
	free(as);
	free(ad);
	free(ok);
	tu_run_free(&ra);
	tu_run_free(&rb);
}

/* The pid of the process (not this one) whose cwd is dir, or -1. */
static pid_t pid_with_cwd(const char *dir)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	pid_t found = -1;

	cr_assert(d);
	while (found < 0 && (de = readdir(d))) {
		char path[64], cwd[PATH_MAX];
		pid_t pid = atoi(de->d_name);
		ssize_t k;

		if (pid <= 0 || pid == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%d/cwd", pid);
		k = readlink(path, cwd, sizeof(cwd) - 1);
		if (k <= 0)
			continue;
		cwd[k] = '\0';
		if (!strcmp(cwd, dir))
			found = pid;
	}
	closedir(d);
	return found;
}

/*
 * The placeholders of absent masked names are removed only once every process of the run is
 * gone, not while one killed at the command's end is still dying: a killed process finishes
 * the system call it is in (a lookup waiting for the disk, say) before it dies, and a mkdir of
 * `.bashrc` that looks the name up after its placeholder went would make it on the host. A
 * background process holding 640 MiB takes tens of milliseconds to die after its SIGKILL; the
 * host watches, with its pidfd and inotify, which comes first: its end or the removal of the
 * `.bashrc` placeholder. The CLI waits for the sandbox's init to exit before it removes them;
 * cordond, which answers before its teardown, is checked by
 * daemon/placeholders_outlive_the_runs_processes (which failed until 2026-11-26).
 */
ESC_CASE(escape_paths, placeholders_outlive_the_runs_processes)
{
	char *sub = esc_wpath(e, "sub"), *held = esc_wpath(e, "held.txt"), *go = esc_wpath(e, "go"),
	     *rc = esc_wpath(e, ".bashrc");
	double t_del, t_exit;
	struct esc_job j;
	struct tu_run r;
	int heavy, in, pidfd;
	pid_t hog = -1;

	esc_put_helper(e);
	cr_assert_eq(mkdir(sub, 0755), 0);
	esc_own(e, sub);
	heavy = esc_heavy_lock();
	esc_start(&j, NULL,
		  "(cd sub && exec ../h hold 640 > ../held.txt 2>&1 < /dev/null) & "
		  "i=0; while [ ! -e go ] && [ $i -lt 600 ]; do sleep 0.02; i=$((i+1)); done; "
		  "echo done");
	for (int i = 0; i < 2000; i++) {
		char *h = esc_read(held, NULL);
		bool ok = h && strstr(h, "held");

		free(h);
		if (ok && (hog = pid_with_cwd(sub)) > 0)
			break;
		usleep(10000);
	}
	cr_assert(hog > 0, "the holding process never started");
	cr_assert(esc_exists(rc), "no placeholder for the absent .bashrc during the run");
	pidfd = (int)syscall(SYS_pidfd_open, hog, 0);
	cr_assert(pidfd >= 0, "pidfd_open: %s", strerror(errno));
	in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	cr_assert(in >= 0);
	cr_assert(inotify_add_watch(in, e->wd, IN_DELETE) >= 0);
	esc_write(go, "", 0644, e->uid, e->gid);
	tu_exit_and_delete(pidfd, in, ".bashrc", 20000, &t_exit, &t_del);
	esc_finish(&j, &r, NULL, NULL);
	esc_heavy_unlock(heavy);
	cr_expect(strstr(r.out, "done"), "the run did not end normally: %s %s", r.out, r.err);
	cr_expect(t_exit > 0, "the holding process did not die with the run");
	cr_expect(t_del > 0, "the .bashrc placeholder was not removed after the run");
	cr_expect(t_exit <= t_del,
		  "the .bashrc placeholder went %.1f ms before the run's last process was gone",
		  t_exit - t_del);
	cr_expect(!esc_exists(rc), ".bashrc exists on the host after the run");
	close(in);
	close(pidfd);
	free(sub);
	free(held);
	free(go);
	free(rc);
	tu_run_free(&r);
}

static const char *const IGNORE_PEM[] = { "--ignore", "*.pem", NULL };

/* The workdir's config/ (or NAME/) holding server.pem = the secret, owned by the runner. */
static void put_pem(struct esc *e, const char *dir)
{
	char *d = esc_wpath(e, dir), *p = NULL, *content = NULL;

	cr_assert_eq(mkdir(d, 0755), 0, "mkdir %s", d);
	cr_assert_eq(chown(d, e->uid, e->gid), 0);
	cr_assert(asprintf(&p, "%s/server.pem", d) > 0);
	cr_assert(asprintf(&content, "KEY %s\n", e->secret) > 0);
	esc_write(p, content, 0644, e->uid, e->gid);
	free(content);
	free(p);
	free(d);
}

/*
 * A hidden name moved where the next run's scan would not find it: its directory renamed, or
 * sunk below the walk's depth bound, or the file itself renamed. Every directory on the way to
 * a hidden name is pinned in the sandbox (EBUSY), and a workdir past the walk's bounds is
 * refused: the next run, with the same --ignore, must still not read the secret anywhere.
 * (Fails before: run 2 read the secret at the deep path.)
 */
ESC_CASE(escape_paths, hidden_name_cannot_be_moved_away)
{
	struct esc_opts o = { .args = IGNORE_PEM, .allow_setup_error = true };
	char *script = esc_wpath(e, "move.sh"), *deep = NULL;
	struct tu_run r1, r2;

	put_pem(e, "config");
	deep = strdup("a");
	for (int i = 0; i < 70; i++) {
		char *n = NULL;

		cr_assert(asprintf(&n, "%s/d", deep) > 0);
		free(deep);
		deep = n;
	}
	esc_write(script,
		  "mkdir -p a/1/2/3/4/5/6/7/8 && mv config a/1/2/3/4/5/6/7/8/\n"
		  "mv config/server.pem config/plain.txt; mv config cfg2\n",
		  0644, e->uid, e->gid);
	o.allow_setup_error = false;
	esc_run(&r1, &o, "mkdir -p %s && mv config %s/; sh move.sh 2>/dev/null; echo ESC-END", deep,
		deep);
	esc_expect_absent(&r1, e->secret, "run 1");
	cr_expect(strstr(r1.out, "ESC-END"), "run 1 did not run: %d %s %s", r1.status, r1.out,
		  r1.err);
	/* Wherever it went: every file of the workdir, by name and by content. */
	o.allow_setup_error = true;
	esc_run(&r2, &o,
		"find . -type f -exec cat {} + 2>/dev/null; grep -r KEY . 2>/dev/null; "
		"echo ESC-END");
	esc_expect_absent(&r2, e->secret, "run 2");
	cr_expect(strstr(r2.out, "ESC-END") || r2.status == 125, "run 2 did not run: %d %s %s",
		  r2.status, r2.out, r2.err);
	free(deep);
	free(script);
	tu_run_free(&r1);
	tu_run_free(&r2);
}

/* cordon started with 64 fds (a caller's `ulimit -n 64`): its walk holds one a level. */
static void few_fds(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = 64;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/*
 * A hidden name deep in a tree the command made, with cordon's fds running out on the way:
 * the walk holds a directory fd a level, 60 levels here, and past the caller's RLIMIT_NOFILE
 * (64, with cordon's own) the open failed with EMFILE and the directory was passed by as if
 * the command could not read it either: server.pem went unhidden and the command read it
 * (found in review, as a user at `ulimit -n 64`, and as root under --readonly; a root-owned
 * workdir that is not read-only failed, its setuid checks being in the same walk). A
 * directory the walk cannot open for any reason but EACCES (the command cannot read it
 * either) fails the run now, as one it cannot read through does.
 */
ESC_CASE(escape_paths, hidden_name_past_the_fd_limit)
{
	static const char *const args[] = { "--ignore", "*.pem", "--readonly", NULL };
	struct esc_opts o = { .args = args, .allow_setup_error = true, .pre_exec = few_fds };
	char *deep = strdup("d"), *dir;
	struct tu_run r;

	for (int i = 1; i < 60; i++) {
		char *n = NULL;

		cr_assert(asprintf(&n, "%s/d", deep) > 0);
		free(deep);
		deep = n;
	}
	dir = strdup(deep);
	/* Every level but the last, which put_pem makes with the secret in it. */
	for (char *s = strchr(dir, '/'); s; s = strchr(s + 1, '/')) {
		char *p;

		*s = '\0';
		p = esc_wpath(e, dir);
		cr_assert(mkdir(p, 0755) == 0, "mkdir %s: %s", p, strerror(errno));
		esc_own(e, p);
		free(p);
		*s = '/';
	}
	put_pem(e, deep);
	/* No shell operator: --readonly makes the policy restricted. */
	esc_run(&r, &o, "grep -r KEY .");
	esc_expect_absent(&r, e->secret, "the deep server.pem");
	cr_expect(r.status <= 1 || r.status == 125, "did not run: %d %s %s", r.status, r.out,
		  r.err);
	free(dir);
	free(deep);
	tu_run_free(&r);
}

/*
 * Two runs in one workdir with the same --ignore: the first renames the hidden name's
 * directory to and fro while the second ones start, so that a name a second run's scan found
 * is elsewhere by the time its sandbox covers it. None may read the secret. (Fails before:
 * about half of the second runs printed it, as root and as a user.)
 */
ESC_CASE(escape_paths, concurrent_rename_of_hidden_parent)
{
	struct esc_opts o = { .args = IGNORE_PEM, .allow_setup_error = true };
	char *stop = esc_wpath(e, "stop"), *started = esc_wpath(e, "started");
	char *spin = esc_wpath(e, "spin.sh"), *rd = esc_wpath(e, "read.sh");
	struct esc_job a;
	struct tu_run ra;
	int ran = 0;

	put_pem(e, "c1");
	esc_write(spin,
		  "echo > started; i=0\n"
		  "while [ ! -e stop ] && [ $i -lt 100000 ]; do mv c1 c2; mv c2 c1; i=$((i+1)); "
		  "done 2>/dev/null; echo spun\n",
		  0644, e->uid, e->gid);
	esc_write(rd, "cat c1/server.pem c2/server.pem 2>/dev/null; true\n", 0644, e->uid, e->gid);
	esc_start(&a, &o, "sh spin.sh");
	for (int i = 0; i < 3000 && !esc_exists(started); i++)
		usleep(10000);
	cr_assert(esc_exists(started), "the renaming run never started");
	for (int i = 0; i < 40; i++) {
		struct tu_run r;

		esc_run(&r, &o, "sh read.sh; echo ESC-END");
		esc_expect_absent(&r, e->secret, "a run started during the renames");
		ran += strstr(r.out, "ESC-END") != NULL;
		tu_run_free(&r);
	}
	esc_write(stop, "", 0644, e->uid, e->gid);
	esc_finish(&a, &ra, NULL, NULL);
	esc_expect_absent(&ra, e->secret, "the renaming run");
	cr_expect_gt(ran, 20, "only %d of 40 runs ran", ran);
	free(stop);
	free(started);
	free(spin);
	free(rd);
	tu_run_free(&ra);
}

/* --readonly: writers the read-only allow-list lets through still cannot write. */
ESC_CASE(escape_paths, readonly_workdir)
{
	static const char *const ro[] = { "--readonly", NULL };
	struct esc_opts o = { .args = ro };
	static const char *const cmds[] = { "find . -maxdepth 0 -fprint pwned1",
					    "sort -o pwned2 /dev/null", "cat /dev/null > pwned3",
					    "grep -r x . > pwned4", "ls > pwned5" };

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		struct tu_run r;
		char name[16], *p;

		esc_run(&r, &o, "%s", cmds[i]);
		snprintf(name, sizeof(name), "pwned%zu", i + 1);
		p = esc_wpath(e, name);
		cr_expect(!esc_exists(p), "--readonly: '%s' wrote the workdir", cmds[i]);
		free(p);
		tu_run_free(&r);
	}
}

/*
 * --readonly with an explicit allow-list: AG2 lets the explicit list win (its own
 * test_readonly_overridden_by_explicit_allowed creates a file), so the workdir is writable
 * then, in both policy modes; with the read-only list in force it is not (above).
 */
ESC_CASE(escape_paths, readonly_with_explicit_allowed_writes)
{
	static const char *const compat[] = { "--readonly", "--allow", "touch", NULL };
	static const char *const strict[] = { "--readonly",    "--allow", "touch",
					      "--policy-mode", "strict",  NULL };
	const char *const *modes[] = { compat, strict };

	for (size_t i = 0; i < 2; i++) {
		struct esc_opts o = { .args = modes[i] };
		struct tu_run r;
		char name[16], *p;

		snprintf(name, sizeof(name), "made%zu", i);
		esc_run(&r, &o, "touch %s", name);
		p = esc_wpath(e, name);
		cr_expect(esc_exists(p), "--readonly --allow touch (%s): no file; output: %s",
			  i ? "strict" : "compat", r.out);
		free(p);
		tu_run_free(&r);
	}
}

/* A world-writable host file in a read-only bind (/etc, /usr) stays unchanged. */
static void write_ro_bind(struct esc *e, const char *dir)
{
	char file[128], fresh[128], *after;
	struct tu_run r;

	snprintf(file, sizeof(file), "%s/cordon-esc-w-%s", dir, e->tag);
	snprintf(fresh, sizeof(fresh), "%s/cordon-esc-new-%s", dir, e->tag);
	esc_write(file, "original\n", 0666, 0, 0);
	esc_on_teardown("rm -rf '%s' '%s' '%s.d'", file, fresh, fresh);
	esc_run(&r, NULL, "echo pwned >> %s; touch %s; mkdir %s.d; true", file, fresh, fresh);
	after = esc_read(file, NULL);
	cr_expect(after && !strcmp(after, "original\n"), "%s was written: '%s'", file, after);
	cr_expect(!esc_exists(fresh), "%s was created on the host", fresh);
	free(after);
	tu_run_free(&r);
}

ESC_CASE(escape_write, etc)
{
	write_ro_bind(e, "/etc");
}

ESC_CASE(escape_write, usr)
{
	write_ro_bind(e, "/usr");
}

/* New files in host directories that are not in the view or are world-writable on the host. */
static void write_host_dirs(struct esc *e, const char *const *dirs)
{
	struct tu_run r;
	char cmd[4096] = "";

	for (size_t i = 0; dirs[i]; i++) {
		size_t n = strlen(cmd);

		snprintf(cmd + n, sizeof(cmd) - n, "touch %s/cordon-esc-%s; ", dirs[i], e->tag);
		esc_on_teardown("rm -f '%s/cordon-esc-%s'", dirs[i], e->tag);
	}
	esc_run(&r, NULL, "%s true", cmd);
	for (size_t i = 0; dirs[i]; i++) {
		char p[256];

		snprintf(p, sizeof(p), "%s/cordon-esc-%s", dirs[i], e->tag);
		cr_expect(!esc_exists(p), "%s was created on the host", p);
	}
	tu_run_free(&r);
}

ESC_CASE(escape_write, root_dir)
{
	const char *const dirs[] = { "", "/opt", "/srv", "/var", NULL };

	write_host_dirs(e, dirs);
}

ESC_CASE(escape_write, var_tmp_and_locks)
{
	const char *const dirs[] = { "/var/tmp", "/run/lock", "/var/lock", NULL };

	write_host_dirs(e, dirs);
}

ESC_CASE(escape_write, dev_shm)
{
	const char *const dirs[] = { "/dev/shm", "/dev/mqueue", NULL };

	write_host_dirs(e, dirs);
}

/* Persistence: the caller's home, its shell rc file, root's home. */
ESC_CASE(escape_write, home)
{
	const char *const dirs[] = { e->home, "/root", "/home/" ESC_USER_NAME, NULL };
	char rc[160], *before, *after, *saved;
	struct tu_run r;

	write_host_dirs(e, dirs);
	snprintf(rc, sizeof(rc), "%s/.bashrc", e->home);
	before = esc_read(rc, NULL);
	saved = esc_spath(e, "bashrc.saved");
	if (before) {
		esc_copy(rc, saved, 0644);
		/* keep the host's rc file whatever happens */
		esc_on_teardown("cmp -s '%s' '%s' || cat '%s' > '%s'", saved, rc, saved, rc);
	}
	esc_run(&r, NULL,
		"echo 'echo pwned-%s' >> %s; echo 'echo pwned' >> \"$HOME/.bashrc\"; true", e->tag,
		rc);
	after = esc_read(rc, NULL);
	cr_expect((!before && !after) || (before && after && !strcmp(before, after)),
		  "%s was changed", rc);
	free(before);
	free(after);
	free(saved);
	tu_run_free(&r);
}
