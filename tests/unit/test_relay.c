/* SPDX-License-Identifier: MIT */
/*
 * The relay's reads (runtime/relay.c): through a bounce pipe, every byte arrives once and in
 * order however the writer's writes and our reads fall; a source splice cannot read falls back
 * to read(2); a non-blocking source stays non-blocking; a reader thread takes over what the
 * bounce pipe holds, and one whose EOF never comes can be ended without leaking its pipe.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/capture.h"
#include "runtime/relay.h"

static uint8_t pattern(size_t i)
{
	return (uint8_t)((i * 31 + 7) % 251);
}

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	cr_assert_not_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* A child writes `total` bytes of pattern() to the returned read end in writes of odd sizes. */
static int writer(size_t total, pid_t *ret_pid)
{
	static const size_t sizes[] = { 1, 7, 4096, 65536, 100000, 3 };
	int p[2];

	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	*ret_pid = fork();
	cr_assert_geq(*ret_pid, 0);
	if (*ret_pid == 0) {
		static uint8_t buf[100000];
		size_t at = 0;

		close(p[0]);
		for (unsigned k = 0; at < total; k++) {
			size_t n = sizes[k % 6];

			if (n > total - at)
				n = total - at;
			for (size_t i = 0; i < n; i++)
				buf[i] = pattern(at + i);
			for (size_t done = 0; done < n;) {
				ssize_t w = write(p[1], buf + done, n - done);

				if (w <= 0)
					_exit(1);
				done += (size_t)w;
			}
			at += n;
		}
		_exit(0);
	}
	close(p[1]);
	return p[0];
}

Test(relay, every_byte_once_and_in_order)
{
	const size_t total = 3000001;
	static uint8_t buf[5000];
	struct relay_src s;
	size_t at = 0;
	int st, fd;
	pid_t pid;

	fd = writer(total, &pid);
	relay_src_init(&s, fd);
	cr_assert_geq(s.bounce[0], 0, "no bounce pipe: the splice path is not tested");
	for (;;) {
		/* Reads smaller than a splice: the bounce pipe is read out over several calls. */
		ssize_t n = relay_src_read(&s, buf, sizeof(buf));

		cr_assert_geq(n, 0, "read: %s", strerror(errno));
		if (n == 0)
			break;
		for (ssize_t i = 0; i < n; i++)
			cr_assert_eq(buf[i], pattern(at + (size_t)i), "byte %zu differs",
				     at + (size_t)i);
		at += (size_t)n;
	}
	cr_assert_eq(at, total);
	cr_assert_eq(s.held, 0);
	relay_src_free(&s);
	close(fd);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* splice(2) cannot read an eventfd (EINVAL): the read is read(2)'s, and later ones too. */
Test(relay, not_a_pipe_falls_back_to_read)
{
	int fd = eventfd(5, EFD_CLOEXEC);
	struct relay_src s;
	uint64_t v = 0;

	cr_assert_geq(fd, 0);
	relay_src_init(&s, fd);
	cr_assert_eq(relay_src_read(&s, &v, sizeof(v)), (ssize_t)sizeof(v));
	cr_assert_eq(v, 5);
	cr_assert_eq(s.bounce[0], -1, "the bounce pipe was kept for a source splice cannot read");
	cr_assert_eq(eventfd_write(fd, 9), 0);
	cr_assert_eq(relay_src_read(&s, &v, sizeof(v)), (ssize_t)sizeof(v));
	cr_assert_eq(v, 9);
	relay_src_free(&s);
	close(fd);
}

Test(relay, non_blocking_source_stays_non_blocking)
{
	struct relay_src s;
	char buf[16] = { 0 };
	int p[2];

	cr_assert_eq(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	relay_src_init(&s, p[0]);
	errno = 0;
	cr_assert_eq(relay_src_read(&s, buf, sizeof(buf)), -1, "an empty pipe did not say EAGAIN");
	cr_assert_eq(errno, EAGAIN);
	cr_assert_eq(write(p[1], "abc", 3), 3);
	cr_assert_eq(relay_src_read(&s, buf, sizeof(buf)), 3);
	cr_assert_str_eq(buf, "abc");
	close(p[1]);
	cr_assert_eq(relay_src_read(&s, buf, sizeof(buf)), 0, "no EOF once the writer is gone");
	relay_src_free(&s);
	close(p[0]);
}

/* Lazy: plain reads while they are small; the bounce pipe once one fills the buffer. */
Test(relay, lazy_bounce_only_for_a_flood)
{
	static uint8_t data[8192], buf[4096];
	struct relay_src s;
	size_t at = 0;
	int p[2];

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = pattern(i);
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	relay_src_init_lazy(&s, p[0]);
	cr_assert_eq(write(p[1], data, 100), 100);
	cr_assert_eq(relay_src_read(&s, buf, sizeof(buf)), 100);
	cr_assert_eq(memcmp(buf, data, 100), 0);
	cr_assert_eq(s.bounce[0], -1, "a bounce pipe for 100 bytes");
	at = 100;
	cr_assert_eq(write(p[1], data + at, sizeof(data) - at), (ssize_t)(sizeof(data) - at));
	close(p[1]);
	for (;;) {
		ssize_t n = relay_src_read(&s, buf, sizeof(buf));

		cr_assert_geq(n, 0);
		if (n == 0)
			break;
		cr_assert_eq(memcmp(buf, data + at, (size_t)n), 0, "bytes from %zu differ", at);
		at += (size_t)n;
		if (at == 100 + sizeof(buf))
			cr_assert_geq(s.bounce[0], 0, "no bounce pipe after a full read");
	}
	cr_assert_eq(at, sizeof(data));
	relay_src_free(&s);
	close(p[0]);
}

/* What the bounce pipe holds when a thread takes the source over is fed first, not lost. */
Test(relay, thread_takes_over_what_the_bounce_pipe_holds)
{
	const size_t total = 500000;
	struct relay_thread t = { .running = false };
	static uint8_t data[500000];
	struct capture *cap;
	cordon_error e;
	struct relay_src s;
	char first[10];
	int p[2];

	/* All of it in the pipe before the first read, so that one splice takes it all. */
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	cr_assert_eq(fcntl(p[0], F_SETPIPE_SZ, 1 << 20), 1 << 20);
	for (size_t i = 0; i < total; i++)
		data[i] = pattern(i);
	cr_assert_eq(write(p[1], data, total), (ssize_t)total);
	cr_assert_eq(capture_new(100, &cap, &e), 0);
	relay_src_init(&s, p[0]);
	cr_assert_eq(relay_src_read(&s, first, sizeof(first)), (ssize_t)sizeof(first));
	cr_assert_eq(s.held, total - sizeof(first), "the splice did not take the whole pipe");
	cr_assert(relay_thread_start(&t, &s, cap));
	cr_assert_eq(s.bounce[0], -1, "the bounce pipe stayed with the caller too");
	/* Page-aligned, as every relay buffer (relay.h: a malloc'd one halved the speed). */
	cr_assert_eq((uintptr_t)t.buf % 4096, 0, "the reader's buffer is at %p", (void *)t.buf);
	close(p[1]);
	relay_thread_join(&t);
	capture_end(cap);
	cr_assert_eq(capture_bytes(cap), total - sizeof(first));
	capture_free(cap);
	close(p[0]);
}

/*
 * A writer that never closes (a process left behind holding the pipe): the reader is ended
 * after the wait, its bounce pipe closed. Without the cancellation this test hangs.
 */
/*
 * The buffers the kernel copies pipe pages into are page-aligned: 16 bytes past a boundary,
 * where glibc puts a large malloc'd block, the copy ran at half speed (4K aliasing; relay.h).
 */
Test(relay, buffers_are_page_aligned)
{
	char *b = relay_buf_new();

	cr_assert_not_null(b);
	cr_assert_eq((uintptr_t)b % 4096, 0, "relay_buf_new gave %p", (void *)b);
	b[0] = b[RELAY_BUF_SIZE - 1] = 1; /* all of it is ours */
	relay_buf_free(b);
	relay_buf_free(NULL);
}

TestSuite(relay_stop, .timeout = 20);
Test(relay_stop, reader_without_eof_is_ended)
{
	struct relay_thread t = { .running = false };
	struct capture *cap;
	struct relay_src s;
	cordon_error e;
	int p[2], before;

	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	before = open_fds();
	cr_assert_eq(capture_new(100, &cap, &e), 0);
	cr_assert_eq(write(p[1], "0123456789", 10), 10);
	relay_src_init(&s, p[0]);
	cr_assert(relay_thread_start(&t, &s, cap));
	relay_thread_finish(&t, 50);
	cr_assert_not(t.running);
	cr_assert_eq(open_fds(), before, "the reader's bounce pipe leaked");
	/* A stop after the end, as a cleanup attribute does, is harmless. */
	relay_thread_stop(&t);
	capture_end(cap);
	cr_assert_leq(capture_bytes(cap), 10);
	capture_free(cap);
	close(p[0]);
	close(p[1]);
}
