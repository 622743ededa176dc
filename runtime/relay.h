/* SPDX-License-Identifier: MIT */
/*
 * Reading a command's output pipe faster than read(2) does: through a bounce pipe of our own.
 *
 * A pipe has one lock, which read(2) holds while it copies the pages out to us; the writer,
 * copying its next pages in, waits for it (on this VM it spins), so the two copies of every
 * byte take turns instead of overlapping. splice(2) from the command's pipe to a private pipe
 * moves page references under that lock, no copy; we then copy out of the private pipe, whose
 * lock nobody else wants, while the writer fills its pipe again. Measured on the reference VM
 * (bench/RESULTS.md), 1 GB from `dd bs=64KiB` moves 1.1-1.5x faster than with read(2), and
 * `dd bs=1M` goes from 3.1 to 4.5 GB/s.
 *
 * Memory stays bounded: the bounce pipe holds at most one splice, RELAY_BOUNCE_SIZE, and is
 * emptied before the next. Where splice cannot be used (the source is not a pipe, or the
 * bounce pipe cannot be made) reads fall back to read(2) on the source.
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The command's output pipes (fs.pipe-max-size's default: fewer wake-ups per MB), local and
 * Docker alike; the bounce pipe is as big, so that one splice can take all one holds. */
#define RELAY_PIPE_SIZE (1 << 20)
#define RELAY_BOUNCE_SIZE RELAY_PIPE_SIZE

/*
 * The buffers a relay reads into: RELAY_BUF_SIZE bytes, page-aligned (mapped, not malloc'd).
 * The kernel copies a pipe's pages out with `rep movsb`; into a buffer 16 bytes past a page
 * boundary, where glibc puts a large malloc'd block, each store lands 16 bytes ahead of the
 * load at the same page offset, and the CPU takes the two for dependent (4K aliasing): on an
 * AMD EPYC VM 1 GB from `dd` took 0.62-0.80 s to read that way and 0.31-0.35 s page-aligned
 * (bench/pipebench.c --bounce with its buffer put either way, 2026-11-26; cordon's own relay
 * went from 0.58 of a bare pipe to above it). Its pages are touched only as data
 * comes, and none of it stays in the heap after the run.
 */
#define RELAY_BUF_SIZE (256 * 1024)
char *relay_buf_new(void);
void relay_buf_free(char *buf);
static inline void relay_buf_freep(char **buf)
{
	relay_buf_free(*buf);
}
/*
 * Once a run is over (the command's end final, or killed), how long its output pipes may take
 * to reach EOF: dockerd's own rule for exec streams (2 s). What the run's processes wrote is in
 * the pipes by then; a write end still open after that lives outside the run (a background job,
 * or an end passed to another run) and is not waited for. Both backends drain this long.
 */
#define RELAY_DRAIN_MS 2000

struct relay_src {
	int fd;	       /* the command's pipe, ours to read; not owned */
	int bounce[2]; /* the private pipe, -1 when reads go straight to fd */
	size_t held;   /* bytes in the bounce pipe, not read out yet */
	bool lazy;     /* no bounce pipe until a read fills the caller's buffer */
};

/* A relay_src that holds nothing: relay_src_free may be called on it. */
#define RELAY_SRC_NONE ((struct relay_src){ .fd = -1, .bounce = { -1, -1 } })

/* Set up reads of fd; never fails (without a bounce pipe, reads are plain reads of fd). */
void relay_src_init(struct relay_src *s, int fd);
/*
 * The same, for a stream that is mostly small (a command's stderr, most commands' stdout):
 * plain reads, and the bounce pipe only once a read fills the caller's buffer, so that a
 * command that writes a few lines costs no pipe and no extra system call.
 */
void relay_src_init_lazy(struct relay_src *s, int fd);
/*
 * Like read(2) on the source: > 0 bytes, 0 at EOF, -1 with errno (EAGAIN when the source is
 * non-blocking and empty). Blocks when the source is blocking and empty.
 */
ssize_t relay_src_read(struct relay_src *s, void *buf, size_t n);
/* Close the bounce pipe (what it still held is dropped); the source is the caller's. */
void relay_src_free(struct relay_src *s);

/*
 * A flood's own reader: a thread that reads fd (made blocking) into cap until EOF, through a
 * bounce pipe. A reader that sleeps in read() or splice() is woken by the writer directly (and
 * usually on its CPU), one system call a chunk; one that sleeps in poll() takes a wake-up and
 * two calls a chunk: on the reference VM a pipe read the poll way moves 1 GB 10-25% slower.
 * Until it is joined, only the thread touches cap.
 */
struct capture;
struct relay_thread {
	pthread_t thread;
	bool running;
	struct relay_src src;
	struct capture *cap;
	char *buf;
};

/*
 * When a stream is a flood: past this many bytes it gets a reader thread of its own, and leaves
 * the caller's poll loop. A command that writes less never has the thread (nor its start,
 * ~0.05 ms).
 */
#define RELAY_THREAD_AFTER (4u << 20)
/* Once cap holds RELAY_THREAD_AFTER bytes, relay_thread_start; true when src was handed over. */
bool relay_flood_to_thread(struct relay_thread *t, struct relay_src *src, struct capture *cap);
/*
 * Hand src over to a reader thread (src is then RELAY_SRC_NONE; what its bounce pipe holds is
 * read first); false, and src as it was, when one cannot be started.
 */
bool relay_thread_start(struct relay_thread *t, struct relay_src *src, struct capture *cap);
/* Wait for the reader to reach EOF (every writer gone) and end. */
void relay_thread_join(struct relay_thread *t);
/*
 * Wait at most wait_ms for the reader's EOF, then end it: one whose EOF may never come (a
 * writer outlives the command) is cancelled in the read or splice it sleeps in (never inside
 * capture_feed, which has no cancellation point) and joined. What it had not fed is dropped.
 * A cleanup attribute may call it on a relay_thread that never ran.
 */
void relay_thread_finish(struct relay_thread *t, int wait_ms);
void relay_thread_stop(struct relay_thread *t);
