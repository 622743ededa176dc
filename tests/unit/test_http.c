/* SPDX-License-Identifier: MIT */
/*
 * backends/http.c against a canned server on a Unix socket: bodies by Content-Length, chunked
 * and until close, a streamed answer, an upgrade, and the errors (no server, garbage, a body
 * cut short).
 */
#define _GNU_SOURCE
#include "backends/http.h"
#include "tests/lib/testutil.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static char *dir;
static char sock[256];

/* Serve one connection: read the request head, write `answer` (len bytes), close. */
static pid_t serve_n(const char *answer, size_t len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int l = socket(AF_UNIX, SOCK_STREAM, 0);
	pid_t pid;

	snprintf(sock, sizeof(sock), "%s/s", dir);
	unlink(sock);
	strcpy(sa.sun_path, sock);
	cr_assert(bind(l, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	cr_assert(listen(l, 1) == 0);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		int c = accept(l, NULL, NULL);
		char buf[4096];
		size_t n = 0;

		while (n < sizeof(buf) - 1) {
			ssize_t k = read(c, buf + n, sizeof(buf) - 1 - n);

			if (k <= 0)
				break;
			n += (size_t)k;
			buf[n] = '\0';
			if (strstr(buf, "\r\n\r\n"))
				break;
		}
		(void)!write(c, answer, len);
		close(c);
		_exit(0);
	}
	close(l);
	return pid;
}

static pid_t serve(const char *answer)
{
	return serve_n(answer, strlen(answer));
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void setup(void)
{
	dir = tu_tmpdir();
}

static void teardown(void)
{
	tu_rmtree(dir);
	free(dir);
}

TestSuite(http, .init = setup, .fini = teardown, .timeout = 30);

Test(http, content_length_body_and_api_version)
{
	struct http_response r;
	cordon_error e;
	pid_t pid = serve(
		"HTTP/1.1 200 OK\r\nApi-Version: 1.41\r\nContent-Length: 5\r\n\r\nhelloEXTRA");

	cr_assert_eq(http_request(sock, "GET", "/_ping", NULL, NULL, 0, 5000, NULL, &r, &e), 0,
		     "%s", e.msg);
	cr_assert_eq(r.status, 200);
	cr_assert_str_eq(r.body, "hello");
	cr_assert_eq(r.body_len, 5);
	cr_assert_str_eq(r.api_version, "1.41");
	http_response_free(&r);
	reap(pid);
}

Test(http, chunked_body)
{
	struct http_response r;
	cordon_error e;
	pid_t pid = serve("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
			  "3\r\nabc\r\n5\r\ndefgh\r\n0\r\n\r\n");

	cr_assert_eq(http_request(sock, "GET", "/x", NULL, NULL, 0, 5000, NULL, &r, &e), 0, "%s",
		     e.msg);
	cr_assert_str_eq(r.body, "abcdefgh");
	cr_assert_null(r.api_version);
	http_response_free(&r);
	reap(pid);
}

/*
 * A big chunked body arrives over many reads, chunk headers and data cut anywhere: every byte
 * once, in order (the decoder takes up each read where the last complete chunk ended).
 */
Test(http, chunked_body_over_many_reads)
{
	const char *head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
	size_t cap = 4u << 20, n = strlen(head), want = 0;
	char *answer = malloc(cap), *expect = malloc(cap);
	struct http_response r;
	cordon_error e;
	uint64_t x = 3;
	pid_t pid;

	cr_assert(answer && expect);
	memcpy(answer, head, n);
	while (want < (2u << 20)) {
		size_t len;

		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		len = 1 + (size_t)((x >> 33) % 5000);
		n += (size_t)sprintf(answer + n, "%zx\r\n", len);
		for (size_t i = 0; i < len; i++)
			answer[n + i] = expect[want + i] = (char)('a' + (want + i) % 23);
		n += len;
		want += len;
		memcpy(answer + n, "\r\n", 2);
		n += 2;
	}
	memcpy(answer + n, "0\r\n\r\n", 5);
	n += 5;
	pid = serve_n(answer, n);
	cr_assert_eq(http_request(sock, "GET", "/x", NULL, NULL, 0, 20000, NULL, &r, &e), 0, "%s",
		     e.msg);
	cr_assert_eq(r.body_len, want);
	cr_assert(memcmp(r.body, expect, want) == 0, "the decoded body differs");
	http_response_free(&r);
	reap(pid);
	free(answer);
	free(expect);
}

/* One exchange whose answer must be refused: its error names `why`. */
static void refused(const char *answer, const char *why)
{
	struct http_response r;
	cordon_error e;
	pid_t pid = serve(answer);

	cr_assert_eq(http_request(sock, "GET", "/x", NULL, NULL, 0, 5000, NULL, &r, &e), -1,
		     "taken: %s", answer);
	cr_assert(strstr(e.msg, why), "%s (for %s)", e.msg, answer);
	reap(pid);
}

/*
 * A chunk size is hex digits and nothing else before its extension or CRLF: strtoul took
 * blanks, a sign (-1 became SIZE_MAX) and 0x; a chunk's data must end with CRLF where its size
 * says. An extension is allowed and ignored.
 */
Test(http, chunk_sizes_are_hex_digits_only)
{
	const char *head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
	const char *bad[] = { " 3\r\nabc\r\n0\r\n\r\n",
			      "+3\r\nabc\r\n0\r\n\r\n",
			      "-1\r\nabc\r\n0\r\n\r\n",
			      "0x3\r\nabc\r\n0\r\n\r\n",
			      "3x\r\nabc\r\n0\r\n\r\n",
			      "\r\nabc\r\n0\r\n\r\n",
			      "1000000000000003\r\nabc\r\n0\r\n\r\n" };
	struct http_response r;
	cordon_error e;
	char answer[256];
	pid_t pid;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(answer, sizeof(answer), "%s%s", head, bad[i]);
		refused(answer, "malformed chunked HTTP body (a chunk size)");
	}
	snprintf(answer, sizeof(answer), "%s%s", head, "2\r\nabc\r\n0\r\n\r\n");
	refused(answer, "malformed chunked HTTP body (a chunk longer than its size)");

	snprintf(answer, sizeof(answer), "%s%s", head,
		 "3;name=v\r\nabc\r\nA \r\n0123456789\r\n0\r\n\r\n");
	pid = serve(answer);
	cr_assert_eq(http_request(sock, "GET", "/x", NULL, NULL, 0, 5000, NULL, &r, &e), 0, "%s",
		     e.msg);
	cr_assert_str_eq(r.body, "abc0123456789");
	http_response_free(&r);
	reap(pid);
}

/* Serve a body of n bytes, chunked in two or until the connection closes. */
static pid_t serve_body(size_t n, bool chunked)
{
	const char *head = chunked ? "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
				   : "HTTP/1.1 200 OK\r\n\r\n";
	size_t hl = strlen(head), half = n / 2, len;
	char *a = malloc(hl + n + 64);
	pid_t pid;

	cr_assert_not_null(a);
	memcpy(a, head, hl);
	len = hl;
	if (chunked) {
		len += (size_t)sprintf(a + len, "%zx\r\n", half);
		memset(a + len, 'x', half);
		len += half;
		len += (size_t)sprintf(a + len, "\r\n%zx\r\n", n - half);
		memset(a + len, 'y', n - half);
		len += n - half;
		len += (size_t)sprintf(a + len, "\r\n0\r\n\r\n");
	} else {
		memset(a + len, 'x', n);
		len += n;
	}
	pid = serve_n(a, len);
	free(a);
	return pid;
}

/* The body limit is HTTP_MAX_BODY exactly, chunked or not: one byte more is refused. */
Test(http, the_body_limit_is_exact)
{
	for (int chunked = 0; chunked < 2; chunked++) {
		struct http_response r;
		cordon_error e;
		pid_t pid = serve_body(HTTP_MAX_BODY, chunked);

		cr_assert_eq(http_request(sock, "GET", "/x", NULL, NULL, 0, 20000, NULL, &r, &e), 0,
			     "chunked %d: %s", chunked, e.msg);
		cr_assert_eq(r.body_len, HTTP_MAX_BODY);
		http_response_free(&r);
		reap(pid);

		pid = serve_body(HTTP_MAX_BODY + 1, chunked);
		cr_assert_eq(http_request(sock, "GET", "/x", NULL, NULL, 0, 20000, NULL, &r, &e),
			     -1, "chunked %d: one byte past the limit was taken", chunked);
		cr_assert_eq(e.code, EFBIG, "chunked %d: %s", chunked, e.msg);
		cr_assert(strstr(e.msg, "too large"), "%s", e.msg);
		reap(pid);
	}
}

Test(http, body_until_close_and_error_status)
{
	struct http_response r;
	cordon_error e;
	pid_t pid = serve("HTTP/1.1 404 Not Found\r\n\r\n{\"message\":\"No such image: x\"}");

	cr_assert_eq(
		http_request(sock, "POST", "/c", "application/json", "{}", 2, 5000, NULL, &r, &e),
		0, "%s", e.msg);
	cr_assert_eq(r.status, 404);
	cr_assert_str_eq(r.body, "{\"message\":\"No such image: x\"}");
	http_response_free(&r);
	reap(pid);
}

Test(http, stream_hands_back_the_socket_after_the_headers)
{
	struct http_response r;
	cordon_error e;
	char *pending = NULL, buf[64];
	size_t n = 0;
	int fd = -1;
	static const char answer[] =
		"HTTP/1.1 101 UPGRADED\r\nUpgrade: tcp\r\n\r\n\x01\x00\x00\x00\x00\x00\x00\x02hi";
	pid_t pid = serve_n(answer, sizeof(answer) - 1);

	cr_assert_eq(http_stream_open(sock, "POST", "/exec/x/start", "application/json", "{}", 2,
				      "tcp", 5000, NULL, &r, &fd, &pending, &n, &e),
		     0, "%s", e.msg);
	cr_assert_eq(r.status, 101);
	cr_assert_geq(fd, 0);
	/* What came with the headers is handed over, the rest is on the socket. */
	cr_assert_leq(n, 10);
	memcpy(buf, pending, n);
	while (n < 10) {
		ssize_t k = read(fd, buf + n, sizeof(buf) - n);

		if (k < 0 && errno == EAGAIN) { /* the socket is non-blocking */
			usleep(1000);
			continue;
		}
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	cr_assert_eq(n, 10);
	cr_assert_eq(memcmp(buf, "\x01\x00\x00\x00\x00\x00\x00\x02hi", 10), 0);
	free(pending);
	close(fd);
	http_response_free(&r);
	reap(pid);
}

Test(http, errors_name_the_cause)
{
	struct http_response r;
	cordon_error e;
	pid_t pid;

	snprintf(sock, sizeof(sock), "%s/none", dir);
	cr_assert_eq(http_request(sock, "GET", "/", NULL, NULL, 0, 5000, NULL, &r, &e), -1);
	cr_assert_eq(e.code, ENOENT);
	cr_assert(strstr(e.msg, "cannot connect to "), "%s", e.msg);

	pid = serve("SSH-2.0-OpenSSH\r\n\r\n");
	cr_assert_eq(http_request(sock, "GET", "/", NULL, NULL, 0, 5000, NULL, &r, &e), -1);
	cr_assert(strstr(e.msg, "malformed HTTP status line"), "%s", e.msg);
	reap(pid);

	pid = serve("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort");
	cr_assert_eq(http_request(sock, "GET", "/", NULL, NULL, 0, 5000, NULL, &r, &e), -1);
	cr_assert(strstr(e.msg, "closed the connection mid-answer"), "%s", e.msg);
	reap(pid);
}

static volatile int cancel_flag;

static void *cancel_soon(void *arg)
{
	(void)arg;
	usleep(100 * 1000);
	cancel_flag = 1;
	return NULL;
}

/*
 * A server that takes the connection and never answers: the caller's cancel flag, set by
 * another thread with no signal to interrupt the wait, ends the exchange (EINTR) long before
 * its timeout (ETIMEDOUT); NULL waits the timeout out.
 */
Test(http, cancel_flag_ends_a_wait_for_a_hung_server)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int l = socket(AF_UNIX, SOCK_STREAM, 0);
	struct http_response r;
	cordon_error e;
	pthread_t t;

	snprintf(sock, sizeof(sock), "%s/hung", dir);
	strcpy(sa.sun_path, sock);
	cr_assert(bind(l, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	cr_assert(listen(l, 4) == 0);
	cancel_flag = 0;
	cr_assert_eq(pthread_create(&t, NULL, cancel_soon, NULL), 0);
	cr_assert_eq(
		http_request(sock, "GET", "/_ping", NULL, NULL, 0, 20000, &cancel_flag, &r, &e),
		-1);
	pthread_join(t, NULL);
	cr_assert_eq(e.code, EINTR, "%s", e.msg);
	cr_assert(strstr(e.msg, "interrupted while waiting for "), "%s", e.msg);

	cr_assert_eq(http_request(sock, "GET", "/_ping", NULL, NULL, 0, 300, NULL, &r, &e), -1);
	cr_assert_eq(e.code, ETIMEDOUT, "%s", e.msg);
	close(l);
}
