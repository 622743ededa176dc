/* SPDX-License-Identifier: MIT */
/*
 * rawclient: the floor of `cordon run` through cordond (make bench, bench/run.sh). It sends the
 * request the CLI sends (POST /v1/run, Connection: close) and reads the answer to its last
 * byte, as runtime/cli/client.c does, but it is a program without libc: no start-up code, no
 * profile, no JSON library. What cordond and its pre-built sandbox take, plus a process's exec
 * and exit, is all it measures; the CLI's row minus this one is the CLI's own cost.
 *   rawclient SOCKET BODY      exit 0 on "HTTP/1.1 200", 1 otherwise, 2 on bad use
 * Built with -nostdlib -static -ffreestanding; x86-64 only (the bench skips the row elsewhere).
 */
#include <stddef.h>

__asm__(".text\n"
	".global _start\n"
	"_start:\n"
	"\tmov %rsp, %rdi\n"
	"\tcall rawclient_main\n"
	"\tmov %eax, %edi\n"
	"\tmov $60, %eax\n"
	"\tsyscall\n");

static long sys3(long n, long a, long b, long c)
{
	long r;

	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "a"(n), "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
	return r;
}

enum { SYS_read = 0, SYS_write = 1, SYS_close = 3, SYS_socket = 41, SYS_connect = 42 };

static size_t slen(const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	return n;
}

static char *put(char *p, const char *end, const char *s)
{
	while (*s && p < end)
		*p++ = *s++;
	return p;
}

static char *put_num(char *p, const char *end, size_t v)
{
	char d[24];
	int i = 0;

	do
		d[i++] = (char)('0' + v % 10);
	while ((v /= 10) && i < 24);
	while (i && p < end)
		*p++ = d[--i];
	return p;
}

/* The body's length from the head, once the head is complete; -1 before. */
static long body_len(const char *b, size_t n, size_t *head)
{
	static const char key[] = "\r\nContent-Length: ";
	long v = -1;

	for (size_t i = 0; i + 4 <= n; i++)
		if (b[i] == '\r' && b[i + 1] == '\n' && b[i + 2] == '\r' && b[i + 3] == '\n') {
			*head = i + 4;
			for (size_t j = 0; j < i; j++) {
				size_t k = 0;

				while (key[k] && b[j + k] == key[k])
					k++;
				if (key[k])
					continue;
				v = 0;
				for (j += k; b[j] >= '0' && b[j] <= '9'; j++)
					v = v * 10 + (b[j] - '0');
				return v;
			}
			return -1;
		}
	return -1;
}

int rawclient_main(long *sp);

int rawclient_main(long *sp)
{
	static char req[65536], ans[1 << 20];
	struct {
		unsigned short family;
		char path[108];
	} sa = { 1, { 0 } };
	char **argv = (char **)(sp + 1);
	const char *end = req + sizeof(req);
	size_t blen, got = 0, head = 0;
	long fd, n, want = -1;
	char *p;

	if (sp[0] != 3 || slen(argv[1]) >= sizeof(sa.path))
		return 2;
	for (size_t i = 0; argv[1][i]; i++)
		sa.path[i] = argv[1][i];
	blen = slen(argv[2]);
	p = put(req, end,
		"POST /v1/run HTTP/1.1\r\nHost: cordond\r\nContent-Type: "
		"application/json\r\nContent-Length: ");
	p = put_num(p, end, blen);
	p = put(p, end, "\r\nConnection: close\r\n\r\n");
	p = put(p, end, argv[2]);
	if (p == end)
		return 2;
	fd = sys3(SYS_socket, 1 /* AF_UNIX */, 1 /* SOCK_STREAM */ | 02000000 /* CLOEXEC */, 0);
	if (fd < 0 || sys3(SYS_connect, fd, (long)&sa, sizeof(sa)) < 0)
		return 1;
	for (char *q = req; q < p; q += n)
		if ((n = sys3(SYS_write, fd, (long)q, p - q)) <= 0)
			return 1;
	while (got < sizeof(ans)) {
		n = sys3(SYS_read, fd, (long)(ans + got), (long)(sizeof(ans) - got));
		if (n <= 0)
			break;
		got += (size_t)n;
		if (want < 0)
			want = body_len(ans, got, &head);
		if (want >= 0 && got >= head + (size_t)want)
			break;
	}
	sys3(SYS_close, fd, 0, 0);
	p = "HTTP/1.1 200 ";
	for (size_t i = 0; p[i]; i++)
		if (i >= got || ans[i] != p[i])
			return 1;
	return want >= 0 && got >= head + (size_t)want ? 0 : 1;
}
