/* SPDX-License-Identifier: MIT */
/*
 * Class 1, terminal injection (CVE-2017-5226, CVE-2019-10063, CVE-2019-7303, TIOCLINUX).
 *
 * cordon is started the way an agent's caller in a terminal starts it: in a session whose
 * controlling terminal is a pty (here one the test owns, in raw mode), with the pty as stdin.
 * The command pushes characters into "the caller's terminal" with TIOCSTI, plainly and with
 * junk in the upper 32 bits of the request, through /dev/tty, through fds 0-2 and, with
 * --stdin, through the stdin cordon passes on. Anything that reaches the pty's input queue
 * would be read (and run) by the caller's shell after cordon exits.
 */
#define _GNU_SOURCE
#include "tests/escape/escape.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

struct pty {
	int master, slave;
};

static void pty_open(struct pty *p)
{
	struct termios t;
	char *name;

	p->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	cr_assert(p->master >= 0 && grantpt(p->master) == 0 && unlockpt(p->master) == 0);
	name = ptsname(p->master);
	cr_assert(name);
	p->slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	cr_assert(p->slave >= 0);
	/* Raw: every injected byte is readable at once, no line discipline in between. */
	cr_assert(tcgetattr(p->slave, &t) == 0);
	cfmakeraw(&t);
	cr_assert(tcsetattr(p->slave, TCSANOW, &t) == 0);
}

/* Bytes waiting in the terminal's input queue: what the caller's shell would read next. */
static void pty_expect_clean(struct pty *p)
{
	char buf[256];
	int n = 0;
	ssize_t k;

	cr_assert(ioctl(p->slave, FIONREAD, &n) == 0);
	fcntl(p->slave, F_SETFL, O_NONBLOCK);
	k = read(p->slave, buf, sizeof(buf) - 1);
	buf[k > 0 ? k : 0] = '\0';
	cr_expect(n == 0 && k <= 0, "%d byte(s) were injected into the caller's terminal: '%s'", n,
		  buf);
	close(p->master);
	close(p->slave);
}

/* The seccomp rule itself: on fds 0-2 (pipes or /dev/null inside) the ioctl must be EPERM. */
static void expect_eperm_on_fds(const struct tu_run *r, const char *ioctl_name, bool high)
{
	for (int fd = 0; fd < 3; fd++) {
		char line[96];

		snprintf(line, sizeof(line), "fd%d %s%s: blocked EPERM", fd, ioctl_name,
			 high ? "|high" : "");
		cr_expect(strstr(r->out, line), "no '%s': the filter does not refuse %s%s:\n%s",
			  line, ioctl_name, high ? " with high bits set" : "", r->out);
	}
}

static void sti(struct esc *e, const char *variant, bool with_stdin)
{
	struct pty p;
	struct tu_run r;
	const char *args[] = { with_stdin ? "--stdin" : NULL, NULL };
	struct esc_opts o = { .args = args, .ctty = true };

	pty_open(&p);
	o.pty_slave = p.slave;
	esc_put_helper(e);
	esc_run(&r, &o, "./h tty sti %s 'id>/tmp/pwned\n'", variant);
	esc_expect_no_escape(&r, "TIOCSTI");
	if (!with_stdin)
		expect_eperm_on_fds(&r, "TIOCSTI", !strcmp(variant, "high"));
	pty_expect_clean(&p);
	tu_run_free(&r);
}

ESC_CASE(escape_tty, tiocsti)
{
	sti(e, "plain", false);
}

/* CVE-2019-10063: the kernel truncates the request to 32 bits, a filter must mask it too. */
ESC_CASE(escape_tty, tiocsti_high_bits)
{
	sti(e, "high", false);
}

/* With --stdin, whatever cordon hands the command as stdin must not be the caller's tty. */
ESC_CASE(escape_tty, tiocsti_stdin)
{
	sti(e, "plain", true);
	sti(e, "high", true);
}

/*
 * --stdin from a terminal: the command gets a pipe that cordon feeds from the terminal, never
 * the terminal itself. On it the command could change the caller's terminal for good
 * (tcsetattr: echo off, no ^C; TIOCEXCL; O_NONBLOCK), which TIOCSTI's rule does not stop
 * (found in review: after such a run the caller's shell had no echo).
 */
ESC_CASE(escape_tty, stdin_terminal_cannot_be_reconfigured)
{
	struct pty p;
	struct tu_run r;
	struct termios before, after;
	const char *args[] = { "--stdin", NULL };
	struct esc_opts o = { .args = args, .ctty = true };

	pty_open(&p);
	o.pty_slave = p.slave;
	cr_assert(tcgetattr(p.slave, &before) == 0);
	esc_run(&r, &o,
		"stty sane 2>/dev/null; stty echo icanon isig 2>/dev/null; "
		"[ -t 0 ] && echo 'stdin: ESCAPED it is the terminal'; true");
	esc_expect_no_escape(&r, "the caller's terminal as stdin");
	cr_assert(tcgetattr(p.slave, &after) == 0);
	cr_expect(before.c_lflag == after.c_lflag && before.c_iflag == after.c_iflag &&
			  before.c_oflag == after.c_oflag,
		  "the command changed the caller's terminal (lflag %#x -> %#x)",
		  (unsigned)before.c_lflag, (unsigned)after.c_lflag);
	pty_expect_clean(&p);
	tu_run_free(&r);
}

static void linux_ioctl(struct esc *e, const char *variant)
{
	struct pty p;
	struct tu_run r;
	struct esc_opts o = { .ctty = true };

	pty_open(&p);
	o.pty_slave = p.slave;
	esc_put_helper(e);
	esc_run(&r, &o, "./h tty linux %s x", variant);
	esc_expect_no_escape(&r, "TIOCLINUX");
	expect_eperm_on_fds(&r, "TIOCLINUX", !strcmp(variant, "high"));
	pty_expect_clean(&p);
	tu_run_free(&r);
}

/* TIOCLINUX on a virtual console (selection paste): no console, and the ioctl refused. */
ESC_CASE(escape_tty, tioclinux)
{
	linux_ioctl(e, "plain");
}

ESC_CASE(escape_tty, tioclinux_high_bits)
{
	linux_ioctl(e, "high");
}

/* Started from a terminal, the command still has no controlling terminal. */
ESC_CASE(escape_tty, no_controlling_tty)
{
	struct pty p;
	struct tu_run r;
	struct esc_opts o = { .ctty = true };

	pty_open(&p);
	o.pty_slave = p.slave;
	esc_put_helper(e);
	esc_run(&r, &o, "./h notty; tty; echo 'injected' >/dev/tty && echo WROTE-TTY");
	esc_expect_no_escape(&r, "controlling terminal");
	esc_expect_absent(&r, "WROTE-TTY", "write to /dev/tty");
	cr_expect(strstr(r.out, "stat tty_nr: 0"), "the command has a tty:\n%s", r.out);
	pty_expect_clean(&p);
	tu_run_free(&r);
}
