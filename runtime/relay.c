/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "runtime/relay.h"

#include "runtime/capture.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>

static void make_bounce(struct relay_src *s)
{
	s->lazy = false;
	/*
	 * Both ends blocking on purpose: splice(2) turns non-blocking when either pipe is, and the
	 * source's own mode must decide whether a read waits. Writes into the bounce pipe never
	 * wait: it is empty before each splice, and a splice into a pipe that fills up returns
	 * what it moved.
	 */
	if (pipe2(s->bounce, O_CLOEXEC) < 0) {
		s->bounce[0] = s->bounce[1] = -1;
		return;
	}
	/* At least the source's size, so that one splice can take all it holds (best effort). */
	(void)fcntl(s->bounce[0], F_SETPIPE_SZ, RELAY_BOUNCE_SIZE);
}

char *relay_buf_new(void)
{
	void *p = mmap(NULL, RELAY_BUF_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

void relay_buf_free(char *buf)
{
	if (buf)
		(void)munmap(buf, RELAY_BUF_SIZE);
}

void relay_src_init(struct relay_src *s, int fd)
{
	*s = RELAY_SRC_NONE;
	s->fd = fd;
	make_bounce(s);
}

void relay_src_init_lazy(struct relay_src *s, int fd)
{
	*s = RELAY_SRC_NONE;
	s->fd = fd;
	s->lazy = true;
}

static void drop_bounce(struct relay_src *s)
{
	if (s->bounce[0] >= 0)
		(void)close(s->bounce[0]);
	if (s->bounce[1] >= 0)
		(void)close(s->bounce[1]);
	s->bounce[0] = s->bounce[1] = -1;
	s->held = 0;
	s->lazy = false;
}

ssize_t relay_src_read(struct relay_src *s, void *buf, size_t n)
{
	ssize_t k;

	if (s->bounce[0] < 0) {
		k = read(s->fd, buf, n);
		/* A read that fills the buffer: more is likely coming, through a bounce pipe. */
		if (s->lazy && k == (ssize_t)n)
			make_bounce(s);
		return k;
	}
	if (s->held == 0) {
		k = splice(s->fd, NULL, s->bounce[1], NULL, RELAY_BOUNCE_SIZE, SPLICE_F_MOVE);
		if (k <= 0) {
			/* Not a pipe after all (EINVAL): plain reads from now on. */
			if (k < 0 && errno == EINVAL) {
				drop_bounce(s);
				return read(s->fd, buf, n);
			}
			return k;
		}
		s->held = (size_t)k;
	}
	if (n > s->held)
		n = s->held;
	/* What the splice moved is there: this read never waits. */
	do
		k = read(s->bounce[0], buf, n);
	while (k < 0 && errno == EINTR);
	if (k > 0)
		s->held -= (size_t)k;
	return k;
}

void relay_src_free(struct relay_src *s)
{
	drop_bounce(s);
}

static void relay_main_cleanup(void *arg)
{
	relay_src_free(arg);
}

static void *relay_main(void *arg)
{
	struct relay_thread *t = arg;

	/* Cancelled (relay_thread_finish) in a read or splice: the bounce pipe is closed too. */
	pthread_cleanup_push(relay_main_cleanup, &t->src);
	for (;;) {
		ssize_t n = relay_src_read(&t->src, t->buf, RELAY_BUF_SIZE);

		if (n > 0)
			capture_feed(t->cap, t->buf, (size_t)n);
		else if (n == 0 || errno != EINTR)
			break;
	}
	pthread_cleanup_pop(1);
	return NULL;
}

bool relay_thread_start(struct relay_thread *t, struct relay_src *src, struct capture *cap)
{
	pthread_attr_t attr;
	sigset_t all, old;
	int flags = fcntl(src->fd, F_GETFL);
	bool ok = false;

	t->buf = relay_buf_new();
	if (!t->buf || flags < 0 || fcntl(src->fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
		goto out;
	t->src = *src;
	t->cap = cap;
	if (pthread_attr_init(&attr) != 0)
		goto out;
	(void)pthread_attr_setstacksize(&attr, 64 * 1024);
	/* Signals stay with the thread that handles them (the CLI's SIGINT, cordond's). */
	sigfillset(&all);
	(void)pthread_sigmask(SIG_SETMASK, &all, &old);
	ok = pthread_create(&t->thread, &attr, relay_main, t) == 0;
	(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
	(void)pthread_attr_destroy(&attr);
out:
	if (!ok) {
		if (flags >= 0)
			(void)fcntl(src->fd, F_SETFL, flags);
		relay_buf_free(t->buf);
		t->buf = NULL;
	} else {
		*src = RELAY_SRC_NONE;
	}
	t->running = ok;
	return ok;
}

bool relay_flood_to_thread(struct relay_thread *t, struct relay_src *src, struct capture *cap)
{
	return capture_bytes(cap) >= RELAY_THREAD_AFTER && relay_thread_start(t, src, cap);
}

void relay_thread_join(struct relay_thread *t)
{
	if (!t->running)
		return;
	(void)pthread_join(t->thread, NULL);
	t->running = false;
	relay_buf_free(t->buf);
	t->buf = NULL;
}

void relay_thread_finish(struct relay_thread *t, int wait_ms)
{
	struct timespec until;

	if (!t->running)
		return;
	if (wait_ms > 0) {
		/* pthread_timedjoin_np's deadline is on CLOCK_REALTIME. */
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += wait_ms / 1000;
		until.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		if (pthread_timedjoin_np(t->thread, NULL, &until) == 0) {
			t->running = false;
			relay_buf_free(t->buf);
			t->buf = NULL;
			return;
		}
	}
	(void)pthread_cancel(t->thread);
	relay_thread_join(t);
}

void relay_thread_stop(struct relay_thread *t)
{
	relay_thread_finish(t, 0);
}
