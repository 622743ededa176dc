/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "backends/http.h"
#include "runtime/cleanup.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define HEADER_MAX (64 * 1024)

void http_response_free(struct http_response *r)
{
	if (!r)
		return;
	free(r->body);
	free(r->api_version);
	r->body = NULL;
	r->api_version = NULL;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* One exchange: whom it is with, until when, and the caller's cancel flag. */
struct link {
	const char *sock;
	double deadline;
	volatile int *cancel;
};

static bool cancelled(const struct link *l)
{
	return l->cancel && *l->cancel;
}

/*
 * Wait until fd is ready for ev or the deadline passes (or the cancel flag is set: it is looked
 * at every CANCEL_POLL_MS, since a signal that sets it need not interrupt this thread's poll).
 */
#define CANCEL_POLL_MS 100
static int wait_fd(int fd, short ev, const struct link *l, cordon_error *e)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = ev };
		double left = l->deadline - now_ms();
		int n;

		if (cancelled(l))
			return cordon_err(e, EINTR, "interrupted while waiting for %s", l->sock);
		if (left <= 0)
			return cordon_err(e, ETIMEDOUT, "no answer from %s", l->sock);
		n = poll(&p, 1,
			 l->cancel && left > CANCEL_POLL_MS ? CANCEL_POLL_MS : (int)left + 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return cordon_err(e, errno, "poll %s", l->sock);
		if (n > 0)
			return 0;
	}
}

static int connect_unix(const struct link *l, cordon_error *e)
{
	const char *sock = l->sock;

	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;

	if (strlen(sock) >= sizeof(sa.sun_path))
		return cordon_err(e, ENAMETOOLONG, "cannot connect to %s", sock);
	strcpy(sa.sun_path, sock);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return cordon_err(e, errno, "socket");
	/* A Unix socket connects at once, or fails with EAGAIN while the listener's backlog is
	 * full: retry until the deadline then. */
	while (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return cordon_err(e, errno, "cannot connect to %s", sock);
		if (cancelled(l))
			return cordon_err(e, EINTR, "interrupted while connecting to %s", sock);
		if (now_ms() >= l->deadline)
			return cordon_err(e, ETIMEDOUT, "cannot connect to %s", sock);
		usleep(10 * 1000);
	}
	return TAKE_FD(fd);
}

static int send_all(int fd, const char *buf, size_t n, const struct link *l, cordon_error *e)
{
	while (n) {
		ssize_t w = send(fd, buf, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			if (wait_fd(fd, POLLOUT, l, e) < 0)
				return -1;
			continue;
		}
		if (w < 0)
			return cordon_err(e, errno, "send to %s", l->sock);
		buf += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Read some bytes (at least one, or 0 at EOF). */
static ssize_t recv_some(int fd, char *buf, size_t n, const struct link *l, cordon_error *e)
{
	for (;;) {
		ssize_t r = recv(fd, buf, n, 0);

		if (r >= 0)
			return r;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return cordon_err(e, errno, "read from %s", l->sock);
		if (wait_fd(fd, POLLIN, l, e) < 0)
			return -1;
	}
}

/* A growable byte buffer, bounded by HTTP_MAX_BODY. */
struct buf {
	char *p;
	size_t n, cap;
};

static int buf_add(struct buf *b, const char *s, size_t n, cordon_error *e)
{
	const size_t limit = (size_t)HTTP_MAX_BODY + HEADER_MAX;

	/* Exactly the limit, not the next power of two past it. */
	if (n > limit - b->n)
		return cordon_err(e, EFBIG, "HTTP response too large");
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *p;

		while (cap < b->n + n + 1)
			cap *= 2;
		if (cap > limit + 1)
			cap = limit + 1;
		p = realloc(b->p, cap);
		if (!p)
			return cordon_err(e, ENOMEM, "out of memory");
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
	return 0;
}

static int send_request(int fd, const struct link *l, const char *method, const char *path,
			const char *ctype, const void *body, size_t body_len, const char *upgrade,
			cordon_error *e)
{
	_cleanup_free_ char *conn = NULL;
	_cleanup_free_ char *head = NULL;
	int n;

	if (asprintf(&conn, upgrade ? "Upgrade\r\nUpgrade: %s" : "close", upgrade) < 0) {
		conn = NULL;
		return cordon_err(e, ENOMEM, "out of memory");
	}
	if (ctype)
		n = asprintf(&head,
			     "%s %s HTTP/1.1\r\nHost: localhost\r\nUser-Agent: cordon\r\n"
			     "Connection: %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n\r\n",
			     method, path, conn, ctype, body_len);
	else
		n = asprintf(&head,
			     "%s %s HTTP/1.1\r\nHost: localhost\r\nUser-Agent: cordon\r\n"
			     "Connection: %s\r\nContent-Length: 0\r\n\r\n",
			     method, path, conn);
	if (n < 0) {
		head = NULL;
		return cordon_err(e, ENOMEM, "out of memory");
	}
	if (send_all(fd, head, (size_t)n, l, e) < 0)
		return -1;
	if (ctype && body_len && send_all(fd, body, body_len, l, e) < 0)
		return -1;
	return 0;
}

/* The value of header `name` in the header block, or NULL (malloc'd). */
static char *header_value(const char *hdr, const char *name)
{
	size_t nl = strlen(name);

	for (const char *l = strstr(hdr, "\r\n"); l && l[2]; l = strstr(l + 2, "\r\n")) {
		const char *s = l + 2, *end;

		if (strncasecmp(s, name, nl) || s[nl] != ':')
			continue;
		s += nl + 1;
		while (*s == ' ' || *s == '\t')
			s++;
		end = strstr(s, "\r\n");
		if (!end)
			end = s + strlen(s);
		while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
			end--;
		return strndup(s, (size_t)(end - s));
	}
	return NULL;
}

/*
 * Read the status line and headers. *b holds everything read; *hdr_len is where the body
 * starts. Fills status and api_version.
 */
static int read_head(int fd, const struct link *l, struct buf *b, size_t *hdr_len,
		     struct http_response *ret, cordon_error *e)
{
	const char *sock = l->sock;
	char chunk[8192];
	char *end;

	for (;;) {
		ssize_t r;

		end = b->p ? strstr(b->p, "\r\n\r\n") : NULL;
		if (end)
			break;
		if (b->n > HEADER_MAX)
			return cordon_err(e, EPROTO, "HTTP headers from %s too long", sock);
		r = recv_some(fd, chunk, sizeof(chunk), l, e);
		if (r < 0)
			return -1;
		if (r == 0)
			return cordon_err(e, EPROTO, "%s closed the connection before answering",
					  sock);
		if (buf_add(b, chunk, (size_t)r, e) < 0)
			return -1;
	}
	*hdr_len = (size_t)(end - b->p) + 4;
	if (sscanf(b->p, "HTTP/1.%*d %d", &ret->status) != 1 || ret->status < 100 ||
	    ret->status > 599)
		return cordon_err(e, EPROTO, "malformed HTTP status line from %s", sock);
	end[2] = '\0'; /* the header block, for header_value; restored below */
	ret->api_version = header_value(b->p, "Api-Version");
	end[2] = '\r';
	return 0;
}

/*
 * The size on a chunk's first line, which ends at crlf: 1 to 15 hex digits (RFC 9112's
 * chunk-size; no blanks before, no sign, no 0x: strtoul took all three), then nothing, or
 * blanks and an extension after ';', which is ignored.
 */
static int chunk_size(const char *p, const char *crlf, size_t *ret)
{
	const char *start = p;
	size_t v = 0;

	for (; p < crlf && isxdigit((unsigned char)*p); p++) {
		if (p - start == 15)
			return -1;
		v = v * 16 + (size_t)(isdigit((unsigned char)*p)
					      ? *p - '0'
					      : (tolower((unsigned char)*p) - 'a' + 10));
	}
	if (p == start)
		return -1;
	while (p < crlf && (*p == ' ' || *p == '\t'))
		p++;
	if (p < crlf && *p != ';')
		return -1;
	*ret = v;
	return 0;
}

/*
 * Decode the complete chunks of a chunked body into dst: src holds n bytes of it, *pos is where
 * the first chunk not decoded yet begins (advanced past each one decoded), so that each byte is
 * decoded once however the body arrives (decoding it all again after every read was quadratic:
 * seconds at the 16 MiB limit). Each chunk's data must end with CRLF, and the decoded body
 * stays within HTTP_MAX_BODY.
 */
static int dechunk(const char *src, size_t n, size_t *pos, struct buf *dst, bool *done,
		   cordon_error *e)
{
	size_t i = *pos;

	*done = false;
	while (i < n) {
		size_t len;
		const char *crlf = memmem(src + i, n - i, "\r\n", 2);

		if (!crlf)
			return 0;
		if (chunk_size(src + i, crlf, &len) < 0)
			return cordon_err(e, EPROTO, "malformed chunked HTTP body (a chunk size)");
		if (len > HTTP_MAX_BODY - dst->n)
			return cordon_err(e, EFBIG, "HTTP response too large");
		i = (size_t)(crlf - src) + 2;
		if (len == 0) {
			*done = true;
			return 0;
		}
		if (len + 2 > n - i)
			return 0;
		if (src[i + len] != '\r' || src[i + len + 1] != '\n')
			return cordon_err(
				e, EPROTO,
				"malformed chunked HTTP body (a chunk longer than its size)");
		if (buf_add(dst, src + i, len, e) < 0)
			return -1;
		i += len + 2;
		*pos = i;
	}
	return 0;
}

/* Read the rest of the body after the headers: b holds head + body bytes so far. */
static int read_body(int fd, const struct link *l, struct buf *b, size_t hdr_len,
		     struct http_response *ret, cordon_error *e)
{
	const char *sock = l->sock;
	_cleanup_free_ char *cl = NULL, *te = NULL;
	struct buf body = { 0 };
	char chunk[16384];
	bool chunked, done = false;
	long long want = -1;
	size_t pos = 0;

	b->p[hdr_len - 2] = '\0';
	cl = header_value(b->p, "Content-Length");
	te = header_value(b->p, "Transfer-Encoding");
	b->p[hdr_len - 2] = '\r';
	chunked = te && strcasestr(te, "chunked");
	if (cl && !chunked) {
		char *endp;

		want = strtoll(cl, &endp, 10);
		if (*endp || want < 0)
			return cordon_err(e, EPROTO, "malformed Content-Length from %s", sock);
		if (want > HTTP_MAX_BODY)
			return cordon_err(e, EFBIG, "HTTP response from %s too large", sock);
	}
	if (ret->status == 204 || ret->status == 304)
		want = 0;
	for (;;) {
		size_t have = b->n - hdr_len;
		ssize_t r;

		if (want >= 0 && have >= (size_t)want)
			break;
		if (want < 0 && !chunked && have > HTTP_MAX_BODY) {
			free(body.p);
			return cordon_err(e, EFBIG, "HTTP response from %s too large", sock);
		}
		if (chunked) {
			if (dechunk(b->p + hdr_len, have, &pos, &body, &done, e) < 0) {
				free(body.p);
				return -1;
			}
			if (done)
				break;
		}
		r = recv_some(fd, chunk, sizeof(chunk), l, e);
		if (r < 0) {
			free(body.p);
			return -1;
		}
		if (r == 0) {
			if (want >= 0 || chunked) {
				free(body.p);
				return cordon_err(e, EPROTO, "%s closed the connection mid-answer",
						  sock);
			}
			break;
		}
		if (buf_add(b, chunk, (size_t)r, e) < 0) {
			free(body.p);
			return -1;
		}
	}
	if (chunked) {
		ret->body = body.p ? body.p : strdup("");
		ret->body_len = body.n;
	} else {
		size_t n = want >= 0 ? (size_t)want : b->n - hdr_len;

		ret->body = malloc(n + 1);
		if (ret->body) {
			memcpy(ret->body, b->p + hdr_len, n);
			ret->body[n] = '\0';
		}
		ret->body_len = n;
	}
	if (!ret->body)
		return cordon_err(e, ENOMEM, "out of memory");
	return 0;
}

int http_stream_open(const char *sock_path, const char *method, const char *path, const char *ctype,
		     const void *body, size_t body_len, const char *upgrade, int timeout_ms,
		     volatile int *cancel, struct http_response *ret, int *ret_fd,
		     char **ret_pending, size_t *ret_pending_len, cordon_error *e)
{
	const struct link l = { sock_path, now_ms() + timeout_ms, cancel };
	_cleanup_close_ int fd = -1;
	struct buf b = { 0 };
	size_t hdr_len = 0;
	int rc = -1;

	*ret = (struct http_response){ 0 };
	*ret_fd = -1;
	fd = connect_unix(&l, e);
	if (fd < 0)
		return -1;
	if (send_request(fd, &l, method, path, ctype, body, body_len, upgrade, e) < 0)
		goto out;
	if (read_head(fd, &l, &b, &hdr_len, ret, e) < 0)
		goto out;
	if ((ret->status / 100 != 2 && !(upgrade && ret->status == 101)) || !ret_pending) {
		rc = read_body(fd, &l, &b, hdr_len, ret, e);
		goto out;
	}
	*ret_pending_len = b.n - hdr_len;
	*ret_pending = malloc(*ret_pending_len + 1);
	if (!*ret_pending) {
		cordon_err(e, ENOMEM, "out of memory");
		goto out;
	}
	memcpy(*ret_pending, b.p + hdr_len, *ret_pending_len);
	*ret_fd = TAKE_FD(fd);
	rc = 0;
out:
	free(b.p);
	if (rc < 0)
		http_response_free(ret);
	return rc;
}

int http_request(const char *sock_path, const char *method, const char *path, const char *ctype,
		 const void *body, size_t body_len, int timeout_ms, volatile int *cancel,
		 struct http_response *ret, cordon_error *e)
{
	int fd;

	return http_stream_open(sock_path, method, path, ctype, body, body_len, NULL, timeout_ms,
				cancel, ret, &fd, NULL, NULL, e);
}
