/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the HTTP client's response parsing (backends/http.c: the status line,
 * headers, Content-Length, chunked and until-close bodies), which dockerd (or whatever listens
 * on the socket cordon is pointed at) controls.
 *
 * Input: byte 0 chooses how the answer is written (1 + byte 0 bytes per send, so the parser
 * sees it split anywhere), byte 1 the call (bit 0: http_stream_open, with an upgrade when bit 1
 * is set, else http_request); the rest is the server's answer, sent to a real connection from a
 * thread, then the connection is closed.
 *
 * The listening socket has no name on disk: it is bound in a private temp directory, held by
 * an O_PATH descriptor, and the directory removed at once; clients connect through
 * /proc/self/fd/N. Nothing is left behind, even when the fuzzer stops on a crash.
 * FUZZ_DEBUG=1 in the environment prints each call's outcome (for writing seeds).
 */
#define _GNU_SOURCE
#include "tests/fuzz/fuzz.h"
#include "backends/http.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static int listener = -1;
static char sock_path[64];

static void setup(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[] = "/tmp/fuzz-http-XXXXXX";
	int ref;

	CHECK(mkdtemp(dir));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/s", dir);
	listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	CHECK(listener >= 0);
	CHECK(bind(listener, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CHECK(listen(listener, 4) == 0);
	ref = open(sa.sun_path, O_PATH | O_CLOEXEC);
	CHECK(ref >= 0);
	CHECK(unlink(sa.sun_path) == 0);
	CHECK(rmdir(dir) == 0);
	snprintf(sock_path, sizeof(sock_path), "/proc/self/fd/%d", ref);
}

struct answer {
	const unsigned char *p;
	size_t n, step;
};

/* Serve one connection: read the request head, send the answer in steps, close. */
static void *serve(void *arg)
{
	const struct answer *a = arg;
	struct pollfd pfd = { .fd = listener, .events = POLLIN };
	char buf[4096];
	size_t got = 0;
	int c;

	if (poll(&pfd, 1, 5000) != 1)
		return NULL;
	c = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
	if (c < 0)
		return NULL;
	while (got < sizeof(buf) - 1) {
		ssize_t k = read(c, buf + got, sizeof(buf) - 1 - got);

		if (k <= 0)
			break;
		got += (size_t)k;
		buf[got] = '\0';
		/* The whole request, the POST's "{}" body too: closing before reading it would
		 * make the client's send fail, which is not what this target is about. */
		if (strstr(buf, "\r\n\r\n") && (strncmp(buf, "POST", 4) || strstr(buf, "{}")))
			break;
	}
	for (size_t at = 0; at < a->n;) {
		size_t len = a->n - at < a->step ? a->n - at : a->step;
		ssize_t w = send(c, a->p + at, len, MSG_NOSIGNAL);

		if (w <= 0)
			break; /* the client gave up (an error it found): fine */
		at += (size_t)w;
	}
	close(c);
	return NULL;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct http_response r = { 0 };
	struct answer a;
	pthread_t t;
	cordon_error e;
	int rc;

	if (size < 2)
		return 0;
	if (listener < 0)
		setup();
	a = (struct answer){ data + 2, size - 2, 1 + (size_t)data[0] };
	CHECK(pthread_create(&t, NULL, serve, &a) == 0);
	if (data[1] & 1) {
		char *pending = NULL;
		size_t pending_len = 0;
		int fd = -1;

		rc = http_stream_open(sock_path, "POST", "/exec/x/start", "application/json", "{}",
				      2, data[1] & 2 ? "tcp" : NULL, 2000, NULL, &r, &fd, &pending,
				      &pending_len, &e);
		if (rc == 0 && fd >= 0) {
			CHECK(pending && pending_len <= size);
			close(fd);
		}
		free(pending);
	} else {
		rc = http_request(sock_path, "GET", "/_ping", NULL, NULL, 0, 2000, NULL, &r, &e);
	}
	if (getenv("FUZZ_DEBUG"))
		fprintf(stderr, "rc %d status %d body %zu bytes: %s\n", rc, r.status, r.body_len,
			rc < 0	 ? e.msg
			: r.body ? r.body
				 : "(none)");
	if (rc == 0) {
		CHECK(r.status >= 100 && r.status <= 599);
		CHECK(!r.body || r.body[r.body_len] == '\0');
		CHECK(r.body_len <= HTTP_MAX_BODY);
	}
	http_response_free(&r);
	CHECK(pthread_join(t, NULL) == 0);
	return 0;
}
