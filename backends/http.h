/* SPDX-License-Identifier: MIT */
/*
 * A small HTTP/1.1 client over a Unix socket: one connection per request ("Connection: close"),
 * a bounded response body (Content-Length, chunked, or until close), and a streaming mode that
 * hands back the socket after the headers for bodies read until close (Docker's hijacked exec
 * streams). Nothing here knows about Docker.
 *
 * Not libcurl (SPEC §8 says libcurl): the CLI is linked static-pie and Debian ships no static
 * archives for most of libcurl's dependencies (nghttp2, psl, ldap, gssapi, zstd, rtmp), so a
 * libcurl backend could not be linked into build/cordon. docs/docker.md has the decision.
 */
#pragma once

#include <cordon/cordon.h>

#include <stddef.h>

/* Responses larger than this are an error (Docker's JSON answers are a few KB). */
#define HTTP_MAX_BODY (16u << 20)

struct http_response {
	int status;
	char *body; /* NUL-terminated, may be empty; free() it */
	size_t body_len;
	char *api_version; /* the "Api-Version" header, or NULL */
};

void http_response_free(struct http_response *r);

/*
 * One request to the server listening on sock_path. ctype and body may be NULL (no body).
 * timeout_ms bounds the whole exchange; cancel (may be NULL) ends it early, EINTR, once it is
 * non-zero (a SIGINT or SIGTERM to cordon sets the run's: a hung dockerd's call is cut short
 * instead of waited out). Errors (cannot connect, timeout, malformed answer)
 * name the cause: "cannot connect to <sock>: Permission denied".
 */
int http_request(const char *sock_path, const char *method, const char *path, const char *ctype,
		 const void *body, size_t body_len, int timeout_ms, volatile int *cancel,
		 struct http_response *ret, cordon_error *e);

/*
 * Send a request and read the response's status line and headers only. upgrade: NULL
 * ("Connection: close"), or a protocol to ask for with "Connection: Upgrade" (a 101 answer is
 * then a success too: the socket carries the new protocol). On success *ret_fd is
 * the connected socket (O_NONBLOCK, the caller closes it); the body bytes already read past the
 * headers are in *ret_pending (malloc'd, *ret_pending_len bytes, possibly 0). For a status
 * other than 2xx the body is read (bounded) into ret->body and the socket closed (*ret_fd -1).
 */
int http_stream_open(const char *sock_path, const char *method, const char *path, const char *ctype,
		     const void *body, size_t body_len, const char *upgrade, int timeout_ms,
		     volatile int *cancel, struct http_response *ret, int *ret_fd,
		     char **ret_pending, size_t *ret_pending_len, cordon_error *e);
