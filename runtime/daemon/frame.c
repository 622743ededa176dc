/* SPDX-License-Identifier: MIT */
/*
 * Frames between cordond and its runners (runner.c), on a private SOCK_STREAM socketpair: a
 * 4-byte length (host order: both ends are the same machine), then that many bytes, which are
 * a one-line JSON header, a newline, and an optional payload (a request body, a result). The
 * first frame of a request may carry one fd (SCM_RIGHTS): the workdir, opened as the caller.
 */
#define _GNU_SOURCE
#include "runtime/daemon/daemon.h"
#include "runtime/fsutil.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int send_all(int fd, const char *buf, size_t n, int pass_fd)
{
	bool first = true;

	while (n > 0) {
		struct iovec iov = { .iov_base = (void *)buf, .iov_len = n };
		union {
			char buf[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} u;
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		ssize_t k;

		if (first && pass_fd >= 0)
			fsutil_attach_fds(&mh, u.buf, sizeof(u.buf), &pass_fd, 1);
		k = sendmsg(fd, &mh, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		first = false;
		buf += k;
		n -= (size_t)k;
	}
	return 0;
}

int frame_send(int fd, const char *header, const char *payload, size_t n, int pass_fd)
{
	size_t hn = strlen(header), total = hn + 1 + n;
	uint32_t len = (uint32_t)total;
	char *buf;
	int r;

	if (total > FRAME_MAX || memchr(header, '\n', hn))
		return errno = EINVAL, -1;
	buf = malloc(total + 4);
	if (!buf)
		return -1;
	memcpy(buf, &len, 4);
	memcpy(buf + 4, header, hn);
	buf[4 + hn] = '\n';
	if (n)
		memcpy(buf + 4 + hn + 1, payload, n);
	r = send_all(fd, buf, total + 4, pass_fd);
	free(buf);
	return r;
}

/* Exactly n bytes; an fd that comes with them goes to *ret_fd (if wanted, else it is closed). */
static int recv_all(int fd, char *buf, size_t n, int *ret_fd)
{
	while (n > 0) {
		struct iovec iov = { .iov_base = buf, .iov_len = n };
		union {
			char buf[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} u;
		struct msghdr mh = { .msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = u.buf,
				     .msg_controllen = sizeof(u.buf) };
		ssize_t k = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k == 0 ? 0 : -1;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
			int got;

			if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
			    c->cmsg_len != CMSG_LEN(sizeof(int)))
				continue;
			memcpy(&got, CMSG_DATA(c), sizeof(int));
			if (ret_fd && *ret_fd < 0)
				*ret_fd = got;
			else
				(void)close(got);
		}
		buf += k;
		n -= (size_t)k;
	}
	return 1;
}

int frame_recv(int fd, char **ret_header, char **ret_payload, size_t *ret_n, int *ret_fd)
{
	uint32_t len;
	char *buf, *nl;
	int r = recv_all(fd, (char *)&len, 4, ret_fd);

	if (r <= 0)
		return r;
	if (len > FRAME_MAX || len == 0)
		return errno = EPROTO, -1;
	buf = malloc((size_t)len + 1);
	if (!buf)
		return -1;
	if (recv_all(fd, buf, len, NULL) <= 0) {
		free(buf);
		return errno = EPROTO, -1;
	}
	buf[len] = '\0';
	nl = memchr(buf, '\n', len);
	if (!nl) {
		free(buf);
		return errno = EPROTO, -1;
	}
	*nl = '\0';
	*ret_header = buf; /* the payload lives in the same allocation: free the header only */
	*ret_payload = nl + 1;
	*ret_n = len - (size_t)(nl + 1 - buf);
	return 1;
}
