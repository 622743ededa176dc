/* SPDX-License-Identifier: MIT */
/*
 * cordond against real clients: every endpoint and status code over the Unix socket, as root, as
 * a member of group cordon and as a non-member (users created idempotently), workdir and file
 * path attacks, malformed and hostile requests, slowloris, disconnects, SIGTERM, leaks, socket
 * activation, the CLI's --via daemon, and the fuzz corpus as a regression test.
 *
 * Each test starts its own cordond on a socket in a fresh directory (suites run in parallel).
 */
#define _GNU_SOURCE
#include "tests/lib/testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <poll.h>
#include <pwd.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <linux/sockios.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*
 * TU_SKIP with criterion 2.4's cr_assert_fail (testutil.h's cr_fail() takes an action argument
 * first in 2.4): under CI=true a skip is a failure.
 */
#define DAEMON_SKIP(msg)                                                                           \
	do {                                                                                       \
		if (tu_ci())                                                                       \
			cr_assert_fail("skipped under CI: " msg);                                  \
		else                                                                               \
			cr_skip_test(msg);                                                         \
	} while (0)

#define MEMBER "cordon-tm"
#define MEMBER2 "cordon-tm2"
#define OUTSIDER "cordon-tn"
#define SESSION_ID_CHARS 32

static const char *cordond_bin(void)
{
	const char *b = getenv("CORDOND_BIN");

	return b && *b ? b : "build/cordond";
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the daemon under test ---- */

struct daemon {
	pid_t pid;
	char dir[64];
	char sock[128];
	char log[128];
};

static bool sock_answers(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	ok = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

/* Start bin --socket DIR/s with extra args (NULL-terminated). */
static void daemon_start_bin(struct daemon *d, const char *bin, const char *const extra[])
{
	const char *argv[32] = { bin, "--socket", d->sock };
	int n = 3;

	if (access(bin, X_OK) != 0)
		DAEMON_SKIP("build/cordond is not built");
	snprintf(d->dir, sizeof(d->dir), "/tmp/cordond-test-XXXXXX");
	cr_assert(mkdtemp(d->dir));
	chmod(d->dir, 0755); /* other users reach the socket through it */
	snprintf(d->sock, sizeof(d->sock), "%s/s", d->dir);
	snprintf(d->log, sizeof(d->log), "%s/log", d->dir);
	for (int i = 0; extra && extra[i]; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	d->pid = fork();
	cr_assert(d->pid >= 0);
	if (d->pid == 0) {
		int fd = open(d->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		/* A test that times out must not leave its daemon behind. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		dup2(fd, 1);
		dup2(fd, 2);
		execv(argv[0], (char **)argv);
		_exit(127);
	}
	for (double t0 = now(); now() - t0 < 10; usleep(10000)) {
		if (sock_answers(d->sock))
			return;
		if (waitpid(d->pid, NULL, WNOHANG) == d->pid)
			break;
	}
	cr_assert_fail("cordond did not start");
}

static void daemon_start(struct daemon *d, const char *const extra[])
{
	daemon_start_bin(d, cordond_bin(), extra);
}

/* SIGTERM; returns the exit status (or 128+signal) and removes the directory. */
static int daemon_stop(struct daemon *d)
{
	int st = 0;

	if (d->pid <= 0)
		return -1;
	kill(d->pid, SIGTERM);
	for (double t0 = now(); now() - t0 < 30; usleep(10000))
		if (waitpid(d->pid, &st, WNOHANG) == d->pid)
			goto done;
	kill(d->pid, SIGKILL);
	waitpid(d->pid, &st, 0);
done:
	d->pid = 0;
	tu_rmtree(d->dir);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* How many lines of d's log hold needle. */
static int log_lines(const struct daemon *d, const char *needle)
{
	char line[1024];
	int n = 0;
	FILE *f = fopen(d->log, "re");

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	fclose(f);
	return n;
}

/* ---- a small HTTP client ---- */

/*
 * Seconds to wait for a reply before giving up (SO_RCVTIMEO on every new connection; a reply
 * not there in time reads as status 0), or 0 for ever. Inherited by http_as's children.
 */
static unsigned reply_timeout_s;

struct res {
	int status;
	char *head;
	char *body;
	size_t len;
	double ms;
};

static void res_free(struct res *r)
{
	free(r->head);
	free(r->body);
	memset(r, 0, sizeof(*r));
}

static int connect_to(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	/* The daemon may answer (and close) before it has read a body we are still sending. */
	signal(SIGPIPE, SIG_IGN);
	if (fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int err = errno;

		close(fd);
		return -err;
	}
	if (reply_timeout_s) {
		struct timeval tv = { .tv_sec = reply_timeout_s };

		(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	return fd;
}

static void write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

/* Read until EOF and split the reply. */
static void read_reply(int fd, struct res *r)
{
	char *buf = NULL, *sep;
	size_t len = 0, cap = 0;

	for (;;) {
		ssize_t n;

		if (len + 65537 > cap) {
			cap = cap ? cap * 2 : 131072;
			buf = realloc(buf, cap);
			cr_assert(buf);
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	if (!buf)
		buf = calloc(1, 1);
	buf[len] = '\0';
	r->status = 0;
	sscanf(buf, "HTTP/1.1 %d", &r->status);
	sep = strstr(buf, "\r\n\r\n");
	if (sep) {
		r->len = len - (size_t)(sep + 4 - buf);
		r->body = malloc(r->len + 1);
		memcpy(r->body, sep + 4, r->len);
		r->body[r->len] = '\0';
		*sep = '\0';
	} else {
		r->body = strdup("");
	}
	r->head = buf;
}

/* Send prefix, n bytes of 'b', then suffix on a new connection; read the reply. */
static void raw_head(const char *sock, const char *prefix, size_t n, const char *suffix,
		     struct res *r)
{
	size_t lp = strlen(prefix), ls = strlen(suffix);
	char *h = malloc(lp + n + ls + 1);
	int fd;

	cr_assert(h);
	memcpy(h, prefix, lp);
	memset(h + lp, 'b', n);
	memcpy(h + lp + n, suffix, ls + 1);
	fd = connect_to(sock);
	write_all(fd, h, lp + n + ls);
	read_reply(fd, r);
	close(fd);
	free(h);
}

/* One request (Connection: close); returns -errno when the connect failed. */
static int http(const char *sock, const char *method, const char *path, const char *body,
		struct res *r)
{
	char head[2048];
	size_t blen = body ? strlen(body) : 0;
	double t0 = now();
	int fd = connect_to(sock);

	memset(r, 0, sizeof(*r));
	if (fd < 0)
		return fd;
	snprintf(head, sizeof(head),
		 "%s %s HTTP/1.1\r\nHost: cordond\r\nConnection: close\r\n%s"
		 "Content-Length: %zu\r\n\r\n",
		 method, path, body ? "Content-Type: application/json\r\n" : "", blen);
	write_all(fd, head, strlen(head));
	if (blen)
		write_all(fd, body, blen);
	read_reply(fd, r);
	close(fd);
	r->ms = (now() - t0) * 1e3;
	return 0;
}

static bool read_full(int fd, void *buf, size_t n)
{
	char *p = buf;

	while (n > 0) {
		ssize_t r = read(fd, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		p += r;
		n -= (size_t)r;
	}
	return true;
}

/*
 * The same request from a child that has taken these credentials before connecting: uid,
 * gid (its egid) and, with user set, that user's groups (initgroups), else none.
 */
static int http_as_ids(const char *user, uid_t uid, gid_t gid, const char *sock, const char *method,
		       const char *path, const char *body, struct res *r)
{
	int p[2], st;
	pid_t pid;

	cr_assert(pipe(p) == 0);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		struct res cr;
		int rc;

		close(p[0]);
		if ((user ? initgroups(user, gid) : setgroups(0, NULL)) < 0 || setgid(gid) < 0 ||
		    setuid(uid) < 0)
			_exit(3);
		rc = http(sock, method, path, body, &cr);
		write_all(p[1], &rc, sizeof(rc));
		write_all(p[1], &cr.status, sizeof(cr.status));
		write_all(p[1], &cr.len, sizeof(cr.len));
		if (cr.len)
			write_all(p[1], cr.body, cr.len);
		_exit(0);
	}
	close(p[1]);
	memset(r, 0, sizeof(*r));
	int rc = -EIO;
	if (!read_full(p[0], &rc, sizeof(rc))) {
		waitpid(pid, &st, 0);
		cr_assert_fail("child for uid %u died: status %#x", (unsigned)uid, st);
	}
	cr_assert(read_full(p[0], &r->status, sizeof(r->status)));
	cr_assert(read_full(p[0], &r->len, sizeof(r->len)));
	r->body = calloc(1, r->len + 1);
	cr_assert(read_full(p[0], r->body, r->len));
	r->head = strdup("");
	close(p[0]);
	waitpid(pid, &st, 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child for uid %u failed", (unsigned)uid);
	return rc;
}

/* The same request from a child that has become USER (groups, gid, uid) before connecting. */
static int http_as(const char *user, const char *sock, const char *method, const char *path,
		   const char *body, struct res *r)
{
	struct passwd *pw = getpwnam(user);

	cr_assert(pw, "no user %s", user);
	return http_as_ids(user, pw->pw_uid, pw->pw_gid, sock, method, path, body, r);
}

static void ensure_users(void)
{
	int rc;

	if (geteuid() != 0)
		DAEMON_SKIP("needs root to create users");
	rc = system("flock /tmp/cordon-test-users.lock sh -c '"
		    "getent group cordon >/dev/null || groupadd -r cordon; "
		    "id " MEMBER " >/dev/null 2>&1 || useradd -M -N -s /bin/sh -G cordon " MEMBER
		    "; "
		    "id " OUTSIDER " >/dev/null 2>&1 || useradd -M -N -s /bin/sh " OUTSIDER
		    "' >/dev/null 2>&1");
	cr_assert(rc == 0, "cannot create the test users");
}

/* A second member of group cordon (after ensure_users). */
static void ensure_member2(void)
{
	cr_assert_eq(system("flock /tmp/cordon-test-users.lock sh -c '"
			    "id " MEMBER2
			    " >/dev/null 2>&1 || useradd -M -N -s /bin/sh -G cordon " MEMBER2
			    "' >/dev/null 2>&1"),
		     0, "cannot create " MEMBER2);
}

static bool body_has(const struct res *r, const char *s)
{
	return r->body && strstr(r->body, s);
}

#define EXPECT(r, st, text)                                                                        \
	do {                                                                                       \
		cr_expect_eq((r)->status, (st), "status %d, want %d: %s", (r)->status, (st),       \
			     (r)->body);                                                           \
		cr_expect(body_has((r), (text)), "body lacks '%s': %s", (text), (r)->body);        \
	} while (0)

/* A field of the JSON reply, as text ("null", "true", a number, or the string itself). */
static char *jfield(const struct res *r, const char *key)
{
	json_t *j = json_loadb(r->body ? r->body : "", r->len, JSON_ALLOW_NUL, NULL);
	json_t *v = j ? json_object_get(j, key) : NULL;
	char *out = NULL;

	if (json_is_string(v))
		out = strdup(json_string_value(v));
	else if (v)
		out = json_dumps(v, JSON_ENCODE_ANY);
	json_decref(j);
	return out ? out : strdup("<absent>");
}

#define EXPECT_FIELD(r, key, want)                                                                 \
	do {                                                                                       \
		char *_v = jfield((r), (key));                                                     \
		cr_expect_str_eq(_v, (want), "%s: '%s', want '%s' in %s", (key), _v, (want),       \
				 (r)->body);                                                       \
		free(_v);                                                                          \
	} while (0)

struct proc_find {
	const char *needle;
	bool anchored;
	pid_t pid; /* the first match, or -1 */
};

static bool find_first(pid_t pid, const char *cmdline, void *arg)
{
	struct proc_find *f = arg;

	if (f->anchored ? strncmp(cmdline, f->needle, strlen(f->needle)) != 0
			: !strstr(cmdline, f->needle) || strstr(cmdline, "cordond-test"))
		return true;
	f->pid = pid;
	return false;
}

/* Is a process with this string in its command line alive? */
static bool process_alive(const char *needle)
{
	struct proc_find f = { needle, false, -1 };

	tu_each_proc(find_first, &f);
	return f.pid > 0;
}

static int count_fds(pid_t pid)
{
	char path[64];
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	cr_assert(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/*
 * The children of pid (every thread's), runners apart when !runners, runners only when
 * runners; *ret_fds (optional) adds up the open fds of those counted, ret_pids (optional, room
 * for 16) gets their pids.
 */
static int children_of(pid_t pid, bool runners, int *ret_fds, pid_t *ret_pids)
{
	char path[320], buf[8192];
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	cr_assert(d);
	while ((de = readdir(d))) {
		char *tok, *save = NULL;
		ssize_t len;
		int fd;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/children", (int)pid, de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[len > 0 ? len : 0] = '\0';
		for (tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
			char cmd[256];
			pid_t c = (pid_t)atoi(tok);

			tu_cmdline(c, cmd, sizeof(cmd));
			if ((strstr(cmd, "__cordond-runner") != NULL) != runners)
				continue;
			if (ret_pids && n < 16)
				ret_pids[n] = c;
			n++;
			if (ret_fds)
				*ret_fds += count_fds(c);
		}
	}
	closedir(d);
	return n;
}

/* The daemon's children other than its runners (runs, helpers: none should outlive a run). */
static int count_children(pid_t pid)
{
	return children_of(pid, false, NULL, NULL);
}

/* The "workdir" string of a result. */
static char *result_workdir(const struct res *r)
{
	char *w = jfield(r, "workdir");

	if (w[0] != '/') {
		free(w);
		return NULL;
	}
	return w;
}

/* ---- endpoints ---- */

Test(daemon, endpoints_as_root, .timeout = 60)
{
	struct daemon d;
	struct res r;

	daemon_start(&d, NULL);
	http(d.sock, "GET", "/v1/health", NULL, &r);
	EXPECT(&r, 200, "\"status\":\"ok\"");
	cr_expect(strstr(r.head, "Content-Type: application/json"));
	res_free(&r);
	http(d.sock, "HEAD", "/v1/health", NULL, &r);
	cr_expect_eq(r.status, 200);
	res_free(&r);
	http(d.sock, "GET", "/v1/profiles", NULL, &r);
	EXPECT(&r, 200, "\"name\":\"default\"");
	res_free(&r);
	http(d.sock, "POST", "/v1/run", "{\"command\":\"echo hi; echo err >&2; exit 3\"}", &r);
	cr_expect_eq(r.status, 200);
	EXPECT_FIELD(&r, "output", "hi\nerr\n[exit code: 3]");
	EXPECT_FIELD(&r, "exit_code", "3");
	EXPECT_FIELD(&r, "backend", "local");
	EXPECT_FIELD(&r, "refused", "null");
	res_free(&r);
	http(d.sock, "POST", "/v1/run", "{\"command\":\"rm -rf x\",\"blocked\":[\"rm\"]}", &r);
	cr_expect_eq(r.status, 200);
	EXPECT_FIELD(&r, "refused", "Command not allowed: 'rm -rf x'");
	res_free(&r);
	http(d.sock, "POST", "/v1/run", "{\"command\":\"sleep 5\",\"timeout\":1}", &r);
	cr_expect_eq(r.status, 200);
	EXPECT_FIELD(&r, "output", "Command timed out after 1s\n[exit code: 124]");
	EXPECT_FIELD(&r, "timed_out", "true");
	res_free(&r);
	/*
	 * Python's str() of the number, whether it comes as JSON (a float) or as the text the CLI
	 * forwards from --timeout (docs/compat.md, "Timeout text").
	 */
	http(d.sock, "POST", "/v1/run", "{\"command\":\"sleep 5\",\"timeout\":0.50}", &r);
	EXPECT_FIELD(&r, "output", "Command timed out after 0.5s\n[exit code: 124]");
	res_free(&r);
	http(d.sock, "POST", "/v1/run", "{\"command\":\"sleep 5\",\"timeout\":\"0.50\"}", &r);
	EXPECT_FIELD(&r, "output", "Command timed out after 0.5s\n[exit code: 124]");
	res_free(&r);
	http(d.sock, "POST", "/v1/run", "{\"argv\":[\"printf\",\"%s|\",\"a b\",\"c\"]}", &r);
	cr_expect_eq(r.status, 200);
	EXPECT_FIELD(&r, "output", "a b|c|");
	res_free(&r);
	http(d.sock, "POST", "/v1/run", "{\"argv\":[]}", &r);
	cr_expect_eq(r.status, 200);
	EXPECT_FIELD(&r, "output", "[exit code: 2]");
	/* Unknown, as in every other result that ran nothing (it said -1). */
	EXPECT_FIELD(&r, "peak_memory_bytes", "null");
	res_free(&r);
	/* argv is judged as the joined command AG2 would have judged. */
	http(d.sock, "POST", "/v1/run", "{\"argv\":[\"rm\",\"-rf\",\"a b\"],\"blocked\":[\"rm\"]}",
	     &r);
	cr_expect_eq(r.status, 200);
	EXPECT_FIELD(&r, "output", "Command not allowed: \"rm -rf 'a b'\"");
	res_free(&r);
	http(d.sock, "GET", "/metrics", NULL, &r);
	EXPECT(&r, 200, "cordond_runs_total 8");
	cr_expect(body_has(&r, "cordond_refusals_total 2"));
	cr_expect(body_has(&r, "cordond_timeouts_total 3"));
	cr_expect(body_has(&r, "cordond_runs_in_flight 0"));
	cr_expect(body_has(&r, "# TYPE cordond_run_duration_seconds histogram"));
	cr_expect(strstr(r.head, "text/plain; version=0.0.4"));
	res_free(&r);
	http(d.sock, "GET", "/v1/nothing", NULL, &r);
	EXPECT(&r, 404, "\"error\":\"url: no such endpoint\"");
	res_free(&r);
	http(d.sock, "GET", "/v1/run", NULL, &r);
	EXPECT(&r, 405, "method: GET is not allowed");
	cr_expect(strstr(r.head, "Allow: POST"));
	res_free(&r);
	http(d.sock, "DELETE", "/v1/health", NULL, &r);
	cr_expect_eq(r.status, 405);
	res_free(&r);
	cr_expect_eq(daemon_stop(&d), 0);
}

struct bad_body {
	const char *body;
	int status;
	const char *error;
};

static const struct bad_body bad_bodies[] = {
	{ "", 400, "body: invalid JSON" },
	{ "{\"command\":", 400, "body: invalid JSON" },
	{ "[\"echo\"]", 400, "body: expected a JSON object" },
	{ "{}", 400, "command: missing" },
	{ "{\"command\":\"  \"}", 400, "command: empty" },
	{ "{\"command\":5}", 400, "command: expected a string" },
	{ "{\"command\":\"a\\u0000b\"}", 400, "command: contains a NUL byte" },
	{ "{\"command\":\"\xff\xfe\"}", 400, "body: invalid JSON" },
	{ "{\"command\":\"x\",\"command\":\"y\"}", 400, "body: invalid JSON" },
	{ "{\"command\":\"x\",\"timout\":1}", 400, "timout: unknown field" },
	{ "{\"command\":\"x\",\"argv\":[\"x\"]}", 400, "argv: give either" },
	{ "{\"argv\":\"ls\"}", 400, "argv: expected an array" },
	{ "{\"argv\":[\"ls\",1]}", 400, "argv[1]: expected a string" },
	{ "{\"command\":\"x\",\"timeout\":0}", 400, "timeout: must be > 0" },
	{ "{\"command\":\"x\",\"timeout\":-1.5}", 400, "timeout: must be > 0" },
	{ "{\"command\":\"x\",\"timeout\":1e999}", 400, "timeout: number out of range" },
	{ "{\"command\":\"x\",\"timeout\":99999999999999999999999}", 400,
	  "timeout: number out of range" },
	{ "{\"command\":\"x\",\"timeout\":\"1e3\"}", 400, "timeout: expected a decimal" },
	/* The CLI's grammar (`cordon run -t .5` is refused): cordond took these and printed
	 * "Command timed out after .5s" (found in review, differential of the front ends). */
	{ "{\"command\":\"x\",\"timeout\":\".5\"}", 400, "timeout: expected a decimal" },
	{ "{\"command\":\"x\",\"timeout\":\"5.\"}", 400, "timeout: expected a decimal" },
	{ "{\"command\":\"x\",\"timeout\":\".\"}", 400, "timeout: expected a decimal" },
	{ "{\"command\":\"x\",\"timeout\":true}", 400, "timeout: expected a number" },
	{ "{\"command\":\"x\",\"max_output\":-1}", 400, "max_output: must be between" },
	{ "{\"command\":\"x\",\"max_output\":1.5}", 400, "max_output: expected an integer" },
	{ "{\"command\":\"x\",\"max_output\":9223372036854775807}", 400,
	  "max_output: must be between" },
	{ "{\"command\":\"x\",\"env\":[]}", 400, "env: expected an object" },
	{ "{\"command\":\"x\",\"env\":{\"A=B\":\"c\"}}", 400, "env: invalid variable name" },
	{ "{\"command\":\"x\",\"profile_digest\":\"xyz\"}", 400,
	  "profile_digest: expected 16 hex digits" },
	{ "{\"command\":\"x\",\"profile_digest\":\"0123456789ABCDEF\"}", 400,
	  "profile_digest: expected 16 hex digits" },
	{ "{\"command\":\"x\",\"profile_digest\":16}", 400, "profile_digest" },
	{ "{\"command\":\"x\",\"env\":{\"A\":1}}", 400, "env.A: expected a string" },
	{ "{\"command\":\"x\",\"profile\":\"../etc/passwd\"}", 400,
	  "profile: '../etc/passwd' is not" },
	{ "{\"command\":\"x\",\"profile\":\"/etc/cordon/profiles/default.conf\"}", 400,
	  "profile: " },
	{ "{\"command\":\"x\",\"profile\":\"no-such-profile\"}", 400, "profile: " },
	/* A one-shot Docker run's image is its profile's, as SPEC §7 lists the fields. */
	{ "{\"command\":\"x\",\"backend\":\"docker\",\"image\":\"busybox\"}", 400,
	  "image: unknown field" },
	{ "{\"command\":\"x\",\"backend\":\"vm\"}", 400, "backend: unknown backend" },
	{ "{\"command\":\"x\",\"workdir\":\"rel/dir\"}", 400, "workdir: must be an absolute path" },
	{ "{\"command\":\"x\",\"workdir\":\"/tmp/a\\u0000b\"}", 400, "workdir: contains a NUL" },
	{ "{\"command\":\"x\",\"readonly\":\"yes\"}", 400, "readonly: expected true or false" },
	{ "{\"command\":\"x\",\"policy_mode\":\"lax\"}", 400, "policy_mode: expected" },
	{ "{\"command\":\"x\",\"network\":\"bridge\"}", 400, "network: expected" },
	{ "{\"command\":\"x\",\"allowed\":\"ls\"}", 400, "allowed: expected an array" },
	{ "{\"command\":\"x\",\"blocked\":[null]}", 400, "blocked[0]: expected a string" },
	/* Messages quoting the client's bytes cut mid-character, which cordond could not encode
	 * and answered with nothing (tests/fuzz/corpus/fuzz_request/error-*-utf8). */
	{ "{\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\xc3\xa9\":1}", 400,
	  "aaaaaaaaaaaaaaa\xef\xbf\xbd: unknown field" },
	{ "{\"\\\xde\x9d\x9e\x9e\":1}", 400, "body: invalid JSON: invalid escape near" },
};

Test(daemon, malformed_requests, .timeout = 60)
{
	struct daemon d;
	struct res r;

	daemon_start(&d, NULL);
	for (size_t i = 0; i < sizeof(bad_bodies) / sizeof(bad_bodies[0]); i++) {
		const struct bad_body *b = &bad_bodies[i];

		http(d.sock, "POST", "/v1/run", b->body, &r);
		cr_expect_eq(r.status, b->status, "%s: status %d", b->body, r.status);
		cr_expect(body_has(&r, b->error), "%s: %s", b->body, r.body);
		cr_expect(body_has(&r, "{\"error\":\""), "%s: not a JSON error", b->body);
		res_free(&r);
	}
	/* Still alive and well. */
	http(d.sock, "GET", "/v1/health", NULL, &r);
	cr_expect_eq(r.status, 200);
	res_free(&r);
	cr_expect_eq(daemon_stop(&d), 0);
}

/*
 * Which backend a run has: its session's; else the body's; else its profile's (as a session's
 * creation and a direct run decide). A profile that names docker sends a run without a backend
 * field to a one-shot Docker session (tests/docker has those runs, against a real dockerd):
 * here its policy refuses the command before any container is asked for, and a command it
 * allows reaches the Docker backend (whose image, absent, or dockerd, is the error).
 */
Test(daemon, a_runs_backend_is_its_sessions_its_bodys_or_its_profiles, .timeout = 60)
{
	struct daemon d;
	struct res r;
	char *dir = tu_tmpdir(), id[SESSION_ID_CHARS + 1] = "", url[128];

	tu_write_file(dir, "dk.conf",
		      "[profile]\ninclude = default\n[sandbox]\nbackend = docker\n"
		      "[docker]\nimage = cordon-test/nope:0\n");
	cr_assert_eq(setenv("CORDON_PROFILE_PATH", dir, 1), 0);
	daemon_start(&d, NULL);
	(void)unsetenv("CORDON_PROFILE_PATH");

	http(d.sock, "POST", "/v1/run",
	     "{\"command\":\"echo here\",\"backend\":\"local\",\"profile\":\"dk\"}", &r);
	EXPECT(&r, 200, "\"output\": \"here\"");
	EXPECT_FIELD(&r, "backend", "local");
	res_free(&r);

	http(d.sock, "POST", "/v1/sessions", "{\"backend\":\"local\",\"profile\":\"dk\"}", &r);
	EXPECT(&r, 201, "\"backend\":\"local\"");
	{
		char *v = jfield(&r, "id");

		snprintf(id, sizeof(id), "%s", v ? v : "");
		free(v);
	}
	res_free(&r);
	snprintf(url, sizeof(url), "/v1/sessions/%s/run", id);
	http(d.sock, "POST", url, "{\"command\":\"echo in-session\"}", &r);
	EXPECT(&r, 200, "\"output\": \"in-session\"");
	EXPECT_FIELD(&r, "backend", "local");
	res_free(&r);
	/* Deleted: a session's temp workdir outlives a stop of cordond on purpose. */
	snprintf(url, sizeof(url), "/v1/sessions/%s", id);
	http(d.sock, "DELETE", url, NULL, &r);
	cr_expect_eq(r.status, 200, "%s", r.body);
	res_free(&r);

	http(d.sock, "POST", "/v1/run",
	     "{\"command\":\"rm -rf x\",\"profile\":\"dk\",\"blocked\":[\"rm\"]}", &r);
	EXPECT(&r, 200, "\"refused\": \"Command not allowed: 'rm -rf x'\"");
	EXPECT_FIELD(&r, "backend", "docker");
	res_free(&r);

	http(d.sock, "POST", "/v1/run", "{\"command\":\"true\",\"profile\":\"dk\"}", &r);
	EXPECT(&r, 500, "{\"error\":\"docker: ");
	res_free(&r);

	/* An empty argv is AG2's exit 2 in every backend, and names the run's. */
	http(d.sock, "POST", "/v1/run", "{\"argv\":[],\"backend\":\"docker\"}", &r);
	EXPECT(&r, 200, "\"output\":\"[exit code: 2]\"");
	EXPECT_FIELD(&r, "backend", "docker");
	res_free(&r);
	cr_expect_eq(daemon_stop(&d), 0);
	tu_rmtree(dir);
	free(dir);
}

/*
 * A client that sends a huge body whole before it reads (as curl, Python's http.client and
 * most others do) must be able to read the 413: cordond answers at once, then keeps reading
 * and discarding the body for a bounded time before it closes, so the client's writes never
 * fail with EPIPE.
 */
/* A connection with the head of a POST /v1/run whose body, of len bytes, is still to come. */
static int post_run_head(const char *sock, size_t len)
{
	char head[256];
	int fd = connect_to(sock);

	cr_assert(fd >= 0);
	snprintf(head, sizeof(head),
		 "POST /v1/run HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n", len);
	write_all(fd, head, strlen(head));
	return fd;
}

Test(daemon, huge_body_gets_a_readable_413, .timeout = 60)
{
	const char *const args[] = { "--max-body", "4096", NULL };
	const size_t total = 16u << 20;
	struct daemon d;
	struct res r;
	char *chunk = malloc(65536);
	size_t sent = 0;
	int fd;

	cr_assert(chunk);
	memset(chunk, 'a', 65536);
	daemon_start(&d, args);
	fd = post_run_head(d.sock, total);
	while (sent < total) {
		ssize_t w = write(fd, chunk, total - sent < 65536 ? total - sent : 65536);

		if (w < 0 && errno == EINTR)
			continue;
		cr_assert(w > 0, "write failed after %zu of %zu body bytes: %s", sent, total,
			  strerror(errno));
		sent += (size_t)w;
	}
	(void)shutdown(fd, SHUT_WR);
	read_reply(fd, &r);
	close(fd);
	EXPECT(&r, 413, "body: larger than 4096 bytes");
	res_free(&r);
	free(chunk);
	/* And the daemon is fine. */
	http(d.sock, "GET", "/v1/health", NULL, &r);
	cr_expect_eq(r.status, 200);
	res_free(&r);
	cr_expect_eq(daemon_stop(&d), 0);
}

/*
 * --max-bodies: the request bodies held in memory at once, all connections together. A run
 * whose 60,000-byte body (a buffer of 64 KiB) is held while its command sleeps leaves less
 * than a small request's first 4 KiB: that one is answered 503 with Retry-After meanwhile,
 * and runs once the first is done (its memory given back).
 */
Test(daemon, bodies_held_at_once_are_bounded, .timeout = 60)
{
	const char *const args[] = { "--max-body", "60000", "--max-bodies", "67584", NULL };
	const size_t total = 60000;
	struct daemon d;
	struct res r;
	char *body = malloc(total + 1);
	int fd, busy = 0;

	cr_assert(body);
	memset(body, 'a', total);
	memcpy(body, "{\"command\":\"sleep 6; : ", strlen("{\"command\":\"sleep 6; : "));
	memcpy(body + total - 2, "\"}", 2);
	body[total] = '\0';
	daemon_start(&d, args);
	fd = post_run_head(d.sock, total);
	write_all(fd, body, total);
	/* Until the run is under way: its whole body held, for the 6 s its command sleeps. */
	for (int i = 0; i < 300 && !busy; i++) {
		http(d.sock, "GET", "/metrics", NULL, &r);
		busy = r.body && strstr(r.body, "\ncordond_runs_in_flight 1\n") != NULL;
		res_free(&r);
		if (!busy)
			usleep(10000);
	}
	cr_assert(busy, "the run with the big body did not start");
	http(d.sock, "POST", "/v1/run", "{\"command\":\"true\"}", &r);
	cr_expect_eq(r.status, 503, "%d: %s", r.status, r.body);
	cr_expect(r.body && strstr(r.body, "busy: the request bodies in memory would pass 67584 "
					   "bytes (--max-bodies); try again"),
		  "%s", r.body);
	cr_expect(r.head && strstr(r.head, "Retry-After: 1"), "%s", r.head);
	res_free(&r);
	read_reply(fd, &r);
	close(fd);
	cr_expect_eq(r.status, 200, "%d: %s", r.status, r.body);
	res_free(&r);
	http(d.sock, "POST", "/v1/run", "{\"command\":\"true\"}", &r);
	cr_expect_eq(r.status, 200, "%d: %s", r.status, r.body);
	res_free(&r);
	free(body);
	cr_expect_eq(daemon_stop(&d), 0);
}

Test(daemon, oversized_bodies, .timeout = 60)
{
	const char *const args[] = { "--max-body", "4096", "--max-file", "8192", NULL };
	struct daemon d;
	struct res r;
	char *big = malloc(20000), head[256];
	int fd;

	daemon_start(&d, args);
	memset(big, 'a', 19999);
	big[19999] = '\0';
	memcpy(big, "{\"command\":\"", 12);
	http(d.sock, "POST", "/v1/run", big, &r);
	EXPECT(&r, 413, "body: larger than 4096 bytes");
	res_free(&r);
	/* Chunked: no Content-Length to refuse early, refused at the end. */
	fd = connect_to(d.sock);
	cr_assert(fd >= 0);
	snprintf(head, sizeof(head),
		 "POST /v1/run HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
		 "Transfer-Encoding: chunked\r\n\r\n");
	write_all(fd, head, strlen(head));
	for (int i = 0; i < 4; i++) {
		snprintf(head, sizeof(head), "%x\r\n", 4000);
		write_all(fd, head, strlen(head));
		write_all(fd, big, 4000);
		write_all(fd, "\r\n", 2);
	}
	write_all(fd, "0\r\n\r\n", 5);
	read_reply(fd, &r);
	close(fd);
	EXPECT(&r, 413, "body: larger than 4096 bytes");
	res_free(&r);
	/* The request head: a JSON 431 naming the header, a JSON 414 for a long target. */
	raw_head(d.sock, "GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: ", 20000, "\r\n\r\n", &r);
	EXPECT(&r, 431, "headers: larger than 16384 bytes (the largest is 'X-Big')");
	cr_expect(strstr(r.head, "application/json"), "%s", r.head);
	res_free(&r);
	raw_head(d.sock, "GET /v1/health?", 5000, " HTTP/1.1\r\nHost: x\r\n\r\n", &r);
	EXPECT(&r, 414, "path: longer than 4096 bytes");
	res_free(&r);
	raw_head(d.sock, "GET /v1/sessions/", 5000, " HTTP/1.1\r\nHost: x\r\n\r\n", &r);
	EXPECT(&r, 414, "path: longer than 4096 bytes");
	res_free(&r);
	/* Just under the limits: answered. */
	raw_head(d.sock, "GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: ", 16000, "\r\n\r\n", &r);
	cr_expect_eq(r.status, 200, "status %d: %s", r.status, r.body);
	res_free(&r);
	/* Beyond the connection's memory, libmicrohttpd answers itself (documented): not 200. */
	raw_head(d.sock, "GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: ", 70000, "\r\n\r\n", &r);
	cr_expect(r.status == 431 || r.status == 0, "status %d", r.status);
	res_free(&r);
	http(d.sock, "GET", "/v1/health", NULL, &r);
	cr_expect_eq(r.status, 200);
	res_free(&r);
	free(big);
	cr_expect_eq(daemon_stop(&d), 0);
}

/* ---- authorisation ---- */

/*
 * A member's run reopens its stdout and stderr by a path (`> /dev/stdout`, /proc/self/fd/N):
 * the runner's pipes were root's, 0600, and the command, the member, got "Permission denied"
 * where the same command run directly worked (found in red team).
 */
Test(daemon, a_members_run_reopens_its_stdio_by_path, .timeout = 60)
{
	struct daemon d;
	struct res r;

	ensure_users();
	daemon_start(&d, NULL);
	cr_assert(http_as(MEMBER, d.sock, "POST", "/v1/run",
			  "{\"command\":\"echo a > /dev/stdout; echo b > /proc/self/fd/2\"}",
			  &r) == 0);
	cr_expect_eq(r.status, 200, "%s", r.body);
	EXPECT_FIELD(&r, "output", "a\nb");
	res_free(&r);
	cr_expect_eq(daemon_stop(&d), 0);
}

Test(daemon, authorisation, .timeout = 90)
{
	struct daemon d;
	struct res r;
	struct passwd *pw;
	char want[64];

	ensure_users();
	daemon_start(&d, NULL);
	/* The socket: 0660 root:cordon. */
	{
		struct stat st;
		struct group *g = getgrnam("cordon");

		cr_assert(stat(d.sock, &st) == 0 && g);
		cr_expect_eq(st.st_mode & 07777, 0660);
		cr_expect_eq(st.st_uid, 0);
		cr_expect_eq(st.st_gid, g->gr_gid);
	}
	/* A member runs as themself. */
	pw = getpwnam(MEMBER);
	cr_assert(http_as(MEMBER, d.sock, "POST", "/v1/run", "{\"command\":\"id -u; echo $HOME\"}",
			  &r) == 0);
	cr_expect_eq(r.status, 200, "%s", r.body);
	snprintf(want, sizeof(want), "%u\n%s", (unsigned)pw->pw_uid, pw->pw_dir);
	EXPECT_FIELD(&r, "output", want); /* the caller's uid, and HOME from their passwd entry */
	res_free(&r);
	cr_assert(http_as(MEMBER, d.sock, "GET", "/v1/health", NULL, &r) == 0);
	cr_expect_eq(r.status, 200);
	res_free(&r);
	/* A non-member cannot connect at all... */
	cr_expect_eq(http_as(OUTSIDER, d.sock, "GET", "/v1/health", NULL, &r), -EACCES);
	res_free(&r);
	/*
	 * ...and the CLI says so under --via daemon (not "not reachable"); under --via auto it
	 * runs the command directly, as SPEC §2 has it ("daemon if its socket answers, else
	 * direct"), confined in the caller's own user namespace.
	 */
	for (int k = 0; k < 2; k++) {
		struct passwd *o = getpwnam(OUTSIDER);
		char uid[32], gid[32], env[200];
		const char *argv[] = { "setpriv",   uid,
				       gid,	    "--init-groups",
				       "env",	    env,
				       tu_cordon(), "run",
				       "--via",	    k ? "auto" : "daemon",
				       "--",	    "echo hi",
				       NULL,	    NULL,
				       NULL,	    NULL };
		struct tu_run run;

		cr_assert(o);
		snprintf(uid, sizeof(uid), "--reuid=%u", (unsigned)o->pw_uid);
		snprintf(gid, sizeof(gid), "--regid=%u", (unsigned)o->pw_gid);
		snprintf(env, sizeof(env), "CORDON_SOCKET=%s", d.sock);
		tu_exec(&run, NULL, NULL, (char *const *)argv);
		if (k) {
			cr_expect_eq(run.status, 0, "auto: %d %s", run.status, run.err);
			cr_expect(strstr(run.out, "hi"), "auto: %s %s", run.out, run.err);
			cr_expect(!strstr(run.err, "permission denied"), "auto: %s", run.err);
			/* A direct run that cannot start says the socket refused them too. */
			tu_run_free(&run);
			argv[10] = "-w";
			argv[11] = "/root/cordon-test-closed/wd";
			argv[12] = "--";
			argv[13] = "echo hi";
			tu_exec(&run, NULL, NULL, (char *const *)argv);
			cr_expect_eq(run.status, 125, "auto, closed workdir: %d %s", run.status,
				     run.err);
			cr_expect(strstr(run.err,
					 "refused this user: only root and members of group "
					 "cordon"),
				  "%s", run.err);
			cr_expect(!strchr(run.err, '\n') || strchr(run.err, '\n')[1] == '\0',
				  "not one line: %s", run.err);
		} else {
			cr_expect_eq(run.status, 125, "daemon: %d %s", run.status, run.err);
			cr_expect(strstr(run.err, "permission denied on cordond's socket"), "%s",
				  run.err);
			cr_expect(strstr(run.err, "only root and members of group cordon"), "%s",
				  run.err);
			cr_expect_str_eq(run.out, "");
		}
		tu_run_free(&run);
	}
	/* ...and with the socket opened up, SO_PEERCRED still refuses, on every endpoint. */
	cr_assert(chmod(d.sock, 0666) == 0);
	const char *const paths[][2] = {
		{ "GET", "/v1/health" },
		{ "POST", "/v1/run" },
		{ "GET", "/v1/profiles" },
		{ "GET", "/metrics" },
		{ "POST", "/v1/sessions" },
		{ "GET", "/v1/nothing" },
		{ "DELETE", "/v1/sessions/0123456789abcdef0123456789abcdef" },
	};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		cr_assert(http_as(OUTSIDER, d.sock, paths[i][0], paths[i][1],
				  "{\"command\":\"touch /tmp/cordon-outsider-ran\"}", &r) == 0);
		EXPECT(&r, 403, "not authorised: uid");
		res_free(&r);
	}
	cr_expect(access("/tmp/cordon-outsider-ran", F_OK) != 0, "a forbidden request ran");
	http(d.sock, "GET", "/metrics", NULL, &r);
	cr_expect(body_has(&r, "cordond_forbidden_total 7"), "%s", r.body);
	res_free(&r);
	/*
	 * cordond's own 403 is the same refusal as the socket's mode: --via auto runs the
	 * command directly (it ended with exit 125 and the 403, found in review), --via daemon
	 * says so.
	 */
	for (int k = 0; k < 2; k++) {
		struct passwd *o = getpwnam(OUTSIDER);
		char uid[32], gid[32], env[200];
		const char *argv[] = { "setpriv", uid,	     gid,   "--init-groups", "env",
				       env,	  NULL,	     "run", "--via",	     NULL,
				       "--",	  "echo hi", NULL };
		struct tu_run run;

		cr_assert(o);
		argv[6] = tu_cordon();
		argv[9] = k ? "auto" : "daemon";
		snprintf(uid, sizeof(uid), "--reuid=%u", (unsigned)o->pw_uid);
		snprintf(gid, sizeof(gid), "--regid=%u", (unsigned)o->pw_gid);
		snprintf(env, sizeof(env), "CORDON_SOCKET=%s", d.sock);
		tu_exec(&run, NULL, NULL, (char *const *)argv);
		if (k) {
			cr_expect_eq(run.status, 0, "auto, 403: %d %s", run.status, run.err);
			cr_expect_str_eq(run.out, "hi\n", "auto, 403: %s", run.err);
		} else {
			cr_expect_eq(run.status, 125, "daemon, 403: %d %s", run.status, run.err);
			cr_expect(strstr(run.err, "not authorised: uid"), "%s", run.err);
			cr_expect_str_eq(run.out, "");
		}
		tu_run_free(&run);
	}
	cr_expect_eq(daemon_stop(&d), 0);
}

/*
 * Group membership is read at each connection: adding a user to group cordon, or taking them
 * out, applies to their very next connection (cordond keeps resolved identities only while
 * /etc/passwd, /etc/group and /etc/nsswitch.conf are unchanged). A user of its own, so that
 * the other tests' users never change under them.
 */
#define CHANGER "cordon-tc"

Test(daemon, group_changes_apply_at_once, .timeout = 60)
{
	struct daemon d;
	struct res r;

	ensure_users();
	cr_assert_eq(system("flock /tmp/cordon-test-users.lock sh -c '"
			    "id " CHANGER " >/dev/null 2>&1 || useradd -M -N -s /bin/sh " CHANGER
			    "; gpasswd -d " CHANGER " cordon' >/dev/null 2>&1 || true"),
		     0);
	daemon_start(&d, NULL);
	cr_assert(chmod(d.sock, 0666) == 0);
	for (int round = 0; round < 2; round++) {
		/* Out: refused (twice, so that a cached answer would be the one tested next). */
		for (int i = 0; i < 2; i++) {
			cr_assert(http_as(CHANGER, d.sock, "GET", "/v1/health", NULL, &r) == 0);
			EXPECT(&r, 403, "not authorised: uid");
			res_free(&r);
		}
		cr_assert_eq(system("gpasswd -a " CHANGER " cordon >/dev/null"), 0);
		for (int i = 0; i < 2; i++) {
			cr_assert(http_as(CHANGER, d.sock, "GET", "/v1/health", NULL, &r) == 0);
			cr_expect_eq(r.status, 200, "round %d: added to cordon, still %d: %s",
				     round, r.status, r.body);
			res_free(&r);
		}
		cr_assert_eq(system("gpasswd -d " CHANGER " cordon >/dev/null"), 0);
	}
	cr_assert(http_as(CHANGER, d.sock, "GET", "/v1/health", NULL, &r) == 0);
	EXPECT(&r, 403, "not authorised: uid");
	res_free(&r);
	cr_expect_eq(daemon_stop(&d), 0);
}

/*
 * The connecting process's egid proves nothing: a user taken out of group cordon keeps it as
 * the primary gid of any process started with `newgrp cordon` or `sg cordon` before, and a uid
 * with no passwd entry can be given any gid by whoever made it. Only the group database's
 * answer for the uid's passwd entry counts, and a uid without one is refused (root aside).
 */
Test(daemon, egid_is_not_membership, .timeout = 60)
{
	struct group *g;
	struct passwd *out;
	struct daemon d;
	struct res r;

	ensure_users();
	g = getgrnam("cordon");
	out = getpwnam(OUTSIDER);
	cr_assert(g && out);
	gid_t cordon_gid = g->gr_gid;
	uid_t out_uid = out->pw_uid;
	daemon_start(&d, NULL);
	cr_assert(chmod(d.sock, 0666) == 0);
	/* A non-member whose process has egid cordon (as after newgrp/sg). */
	cr_assert(http_as_ids(NULL, out_uid, cordon_gid, d.sock, "POST", "/v1/run",
			      "{\"command\":\"touch /tmp/cordon-egid-ran\"}", &r) == 0);
	EXPECT(&r, 403, "not authorised: uid");
	res_free(&r);
	/* A uid with no passwd entry, egid cordon. */
	cr_assert(getpwuid(54321) == NULL, "uid 54321 exists here");
	cr_assert(http_as_ids(NULL, 54321, cordon_gid, d.sock, "POST", "/v1/run",
			      "{\"command\":\"touch /tmp/cordon-egid-ran\"}", &r) == 0);
	EXPECT(&r, 403, "not authorised: uid");
	res_free(&r);
	cr_expect(access("/tmp/cordon-egid-ran", F_OK) != 0, "a forbidden request ran");
	(void)unlink("/tmp/cordon-egid-ran");
	/* A member whose process has another egid is still a member (the database says so). */
	cr_assert(http_as_ids(MEMBER, getpwnam(MEMBER)->pw_uid, 65534, d.sock, "GET", "/v1/health",
			      NULL, &r) == 0);
	cr_expect_eq(r.status, 200, "%s", r.body);
	res_free(&r);
	cr_expect_eq(daemon_stop(&d), 0);
}

Test(daemon, workdir_attacks, .timeout = 90)
{
	struct daemon d;
	struct res r;
	char body[512], *own = tu_tmpdir(), link[300], file[300];
	struct passwd *pw;

	ensure_users();
	pw = getpwnam(MEMBER);
	daemon_start(&d, NULL);
	cr_assert(chown(own, pw->pw_uid, pw->pw_gid) == 0);
	snprintf(link, sizeof(link), "%s/to-root", own);
	cr_assert(symlink("/root", link) == 0);
	snprintf(file, sizeof(file), "%s/file", own);
	tu_write_file(own, "file", "x");
	mkdir("/tmp/cordon-test-rootonly", 0700);
	const char *const bad[] = {
		"/root",			 /* not theirs */
		"/tmp/cordon-test-rootonly/sub", /* would be created under a dir they cannot enter */
		"/etc",				 /* readable, not writable */
		link,			/* a symlink of theirs to a place they cannot write */
		file,			/* not a directory */
		"/proc/self/root/root", /* a magic link back to / */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(body, sizeof(body), "{\"command\":\"touch pwned\",\"workdir\":\"%s\"}",
			 bad[i]);
		cr_assert(http_as(MEMBER, d.sock, "POST", "/v1/run", body, &r) == 0);
		EXPECT(&r, 400, "workdir: ");
		res_free(&r);
	}
	cr_expect(access("/root/pwned", F_OK) != 0 && access("/etc/pwned", F_OK) != 0);
	cr_expect(access("/tmp/cordon-test-rootonly/sub", F_OK) != 0);
	/* Their own directory works, and a missing one is created, as theirs. */
	snprintf(body, sizeof(body), "{\"command\":\"pwd\",\"workdir\":\"%s/new/dir\"}", own);
	cr_assert(http_as(MEMBER, d.sock, "POST", "/v1/run", body, &r) == 0);
	EXPECT(&r, 200, "/new/dir\"");
	res_free(&r);
	{
		struct stat st;
		char p[300];

		snprintf(p, sizeof(p), "%s/new/dir", own);
		cr_assert(stat(p, &st) == 0);
		cr_expect_eq(st.st_uid, pw->pw_uid, "created as uid %u", (unsigned)st.st_uid);
	}
	/* Without a workdir: a fresh temp dir of theirs, gone afterwards. */
	cr_assert(http_as(MEMBER, d.sock, "POST", "/v1/run", "{\"command\":\"pwd\"}", &r) == 0);
	cr_expect_eq(r.status, 200);
	{
		char *wd = result_workdir(&r);

		cr_assert(wd);
		cr_expect(access(wd, F_OK) != 0, "temp workdir %s left behind", wd);
		free(wd);
	}
	res_free(&r);
	/*
	 * Root's workdir through a symlink an earlier run planted in its workdir: refused, not
	 * followed to a directory elsewhere (where root's run would be idmapped as root), and
	 * nothing made there (docs/security.md, "The workdir"; followed before).
	 */
	{
		char *ws = tu_tmpdir(), *out = tu_tmpdir(), ln[300], p[300];

		snprintf(ln, sizeof(ln), "%s/lnk", ws);
		cr_assert(symlink(out, ln) == 0);
		snprintf(body, sizeof(body), "{\"command\":\"touch pwned\",\"workdir\":\"%s\"}",
			 ln);
		cr_assert(http(d.sock, "POST", "/v1/run", body, &r) == 0);
		EXPECT(&r, 400, "symlink");
		res_free(&r);
		snprintf(body, sizeof(body), "{\"command\":\"pwd\",\"workdir\":\"%s/new\"}", ln);
		cr_assert(http(d.sock, "POST", "/v1/run", body, &r) == 0);
		EXPECT(&r, 400, "symlink");
		res_free(&r);
		snprintf(p, sizeof(p), "%s/pwned", out);
		cr_expect(access(p, F_OK) != 0, "root's run wrote through the symlink");
		snprintf(p, sizeof(p), "%s/new", out);
		cr_expect(access(p, F_OK) != 0, "a workdir was made through the symlink");
		tu_rmtree(ws);
		tu_rmtree(out);
		free(ws);
		free(out);
	}
	rmdir("/tmp/cordon-test-rootonly");
	tu_rmtree(own);
	free(own);
	cr_expect_eq(daemon_stop(&d), 0);
}

/*
 * /proc magic links as a workdir: /proc/<pid>/cwd and /proc/<pid>/root of a root process whose
 * directory lies under a 0700 parent. Acting as the caller by fsuid alone left the daemon
 * thread's CAP_SYS_PTRACE in force, and the link skipped the parent's permission check: a
 * member could read and write there. Now no magic link is followed in a caller's path, and the
 * thread holds no capability while it acts as the caller.
 */
Test(daemon, proc_magic_link_workdirs, .timeout = 60)
{
	const char *priv = "/tmp/cordon-test-priv", *inner = "/tmp/cordon-test-priv/inner";
	struct daemon d;
	struct res r;
	char body[1024], paths[5][128];
	pid_t holder;

	ensure_users();
	(void)mkdir(priv, 0700);
	cr_assert(chmod(priv, 0700) == 0);
	(void)mkdir(inner, 0777);
	cr_assert(chmod(inner, 0777) == 0);
	holder = fork();
	cr_assert(holder >= 0);
	if (holder == 0) {
		if (chdir(inner) < 0)
			_exit(1);
		execl("/bin/sleep", "sleep", "60", (char *)NULL);
		_exit(1);
	}
	daemon_start(&d, NULL);
	snprintf(paths[0], sizeof(paths[0]), "/proc/%d/cwd", (int)holder);
	snprintf(paths[1], sizeof(paths[1]), "/proc/%d/root%s", (int)holder, inner);
	snprintf(paths[2], sizeof(paths[2]), "/proc/%d/cwd/made", (int)holder);
	snprintf(paths[3], sizeof(paths[3]), "/proc/self/cwd");
	snprintf(paths[4], sizeof(paths[4]), "/proc/thread-self/root%s", inner);
	for (int t = 0; t < 50 && access("/proc/self", F_OK) == 0; t++) {
		char cwd[256], lk[64];
		ssize_t n;

		snprintf(lk, sizeof(lk), "/proc/%d/cwd", (int)holder);
		n = readlink(lk, cwd, sizeof(cwd) - 1);
		if (n > 0 && (size_t)n == strlen(inner))
			break;
		usleep(20000);
	}
	for (size_t i = 0; i < 5; i++) {
		snprintf(body, sizeof(body), "{\"command\":\"touch pwned%zu\",\"workdir\":\"%s\"}",
			 i, paths[i]);
		cr_assert(http_as(MEMBER, d.sock, "POST", "/v1/run", body, &r) == 0);
		EXPECT(&r, 400, "workdir: ");
		res_free(&r);
		snprintf(body, sizeof(body), "{\"workdir\":\"%s\"}", paths[i]);
		cr_assert(http_as(MEMBER, d.sock, "POST", "/v1/sessions", body, &r) == 0);
		cr_expect_neq(r.status, 200, "session in %s: %s", paths[i], r.body);
		res_free(&r);
	}
	{
		DIR *dir = opendir(inner);
		struct dirent *de;
		int n = 0;

		cr_assert(dir);
		while ((de = readdir(dir)))
			if (de->d_name[0] != '.') {
				n++;
				cr_expect_fail("%s/%s was made through a magic link", inner,
					       de->d_name);
			}
		closedir(dir);
		(void)n;
	}
	kill(holder, SIGKILL);
	waitpid(holder, NULL, 0);
	cr_expect_eq(daemon_stop(&d), 0);
	tu_rmtree(priv);
}

/* ---- sessions and files ---- */

static char *session_create(const char *sock, const char *user, const char *body, char **ret_wd)
{
	struct res r;
	char *id, *p;

	if (user)
		cr_assert(http_as(user, sock, "POST", "/v1/sessions", body, &r) == 0);
	else
		http(sock, "POST", "/v1/sessions", body, &r);
	cr_assert_eq(r.status, 201, "%s", r.body);
	p = strstr(r.body, "\"id\":\"");
	cr_assert(p);
	id = strndup(p + 6, 32);
	if (ret_wd)
		*ret_wd = result_workdir(&r);
	res_free(&r);
	return id;
}

/*
 * HOME, USER and LOGNAME name the identity the command runs as: a caller's own; for root, the
 * workdir's owner, or nobody in a temporary (or root-owned) workdir, never root.
 */
Test(daemon, identity_variables, .timeout = 60)
{
	struct daemon d;
	struct res r;
	char body[512], want[512];
	char *own = tu_tmpdir();
	struct passwd *pw, *nobody;
	const char *cmd = "echo \\\"$USER $LOGNAME $HOME\\\"; id -un";

	ensure_users();
	pw = getpwnam(MEMBER);
	cr_assert(pw);
	char *member_home = strdup(pw->pw_dir);
	nobody = getpwuid(65534);
	cr_assert(nobody, "no passwd entry for 65534");
	char *nobody_line = NULL;
	cr_assert(asprintf(&nobody_line, "%s %s %s\n%s\n", nobody->pw_name, nobody->pw_name,
			   nobody->pw_dir, nobody->pw_name) > 0);
	cr_assert(chown(own, pw->pw_uid, pw->pw_gid) == 0);
	daemon_start(&d, NULL);

	/* Root, temporary workdir: nobody. */
	snprintf(body, sizeof(body), "{\"command\":\"%s\"}", cmd);
	http(d.sock, "POST", "/v1/run", body, &r);
	cr_expect_eq(r.status, 200, "%s", r.body);
	EXPECT_FIELD(&r, "stdout", nobody_line);
	res_free(&r);
	/* Root, in the member's directory: the member. */
	snprintf(body, sizeof(body), "{\"command\":\"%s\",\"workdir\":\"%s\"}", cmd, own);
	http(d.sock, "POST", "/v1/run", body, &r);
	snprintf(want, sizeof(want), "%s %s %s\n%s\n", MEMBER, MEMBER, member_home, MEMBER);
	EXPECT_FIELD(&r, "stdout", want);
	res_free(&r);
	/* The member itself. */
	snprintf(body, sizeof(body), "{\"command\":\"%s\",\"workdir\":\"%s\"}", cmd, own);
	http_as(MEMBER, d.sock, "POST", "/v1/run", body, &r);
	EXPECT_FIELD(&r, "stdout", want);
	res_free(&r);
	/* The request's env still overrides them. */
	snprintf(body, sizeof(body), "{\"command\":\"%s\",\"env\":{\"USER\":\"x\"}}", cmd);
	http(d.sock, "POST", "/v1/run", body, &r);
	char *x = jfield(&r, "stdout");
	cr_expect(strncmp(x, "x ", 2) == 0, "%s", x);
	free(x);
	res_free(&r);

	cr_expect_eq(daemon_stop(&d), 0);
	free(nobody_line);
	free(member_home);
	tu_rmtree(own);
	free(own);
}

Test(daemon, sessions_and_files, .timeout = 90)
{
	const char *const args[] = { "--max-sessions-per-caller", "3", NULL };
	struct daemon d;
	struct res r;
	char url[512], *wd = NULL, *wd2 = NULL, *wd3 = NULL, *wd4 = NULL, *id, *other;

	ensure_users();
	unsetenv("DAYTONA_API_KEY"); /* whatever the caller's shell has: the daemon has none */
	daemon_start(&d, args);
	id = session_create(d.sock, MEMBER, NULL, &wd);
	cr_assert(wd);
	{
		struct stat st;

		cr_assert(stat(wd, &st) == 0);
		cr_expect_eq(st.st_uid, getpwnam(MEMBER)->pw_uid);
	}
	snprintf(url, sizeof(url), "/v1/sessions/%s/files/sub/dir/a.txt", id);
	cr_assert(http_as(MEMBER, d.sock, "PUT", url, "hello", &r) == 0);
	EXPECT(&r, 200, "\"bytes\":5");
	res_free(&r);
	cr_assert(http_as(MEMBER, d.sock, "GET", url, NULL, &r) == 0);
	cr_expect_eq(r.status, 200);
	cr_expect_str_eq(r.body, "hello");
	res_free(&r);
	/* A name that is not UTF-8 is stored as it is; the answer shows it with U+FFFD. It could
	 * not be encoded: the file was written and the client got no answer at all. */
	snprintf(url, sizeof(url), "/v1/sessions/%s/files/x%%ffy", id);
	cr_assert(http_as(MEMBER, d.sock, "PUT", url, "z", &r) == 0);
	EXPECT(&r, 200, "\"path\":\"x\xef\xbf\xbdy\"");
	res_free(&r);
	cr_assert(http_as(MEMBER, d.sock, "DELETE", url, NULL, &r) == 0);
	EXPECT(&r, 200, "\"path\":\"x\xef\xbf\xbdy\",\"deleted\":true");
	res_free(&r);
	snprintf(url, sizeof(url), "/v1/sessions/%s/run", id);
	cr_assert(http_as(MEMBER, d.sock, "POST", url,
			  "{\"command\":\"cat sub/dir/a.txt; echo more > b.txt\"}", &r) == 0);
	cr_expect_eq(r.status, 200);
	EXPECT_FIELD(&r, "output", "hello");
	res_free(&r);
	cr_assert(http_as(MEMBER, d.sock, "POST", url, "{\"command\":\"cat b.txt\"}", &r) == 0);
	cr_expect_eq(r.status, 200);
	EXPECT_FIELD(&r, "output", "more");
	res_free(&r);
	cr_assert(http_as(MEMBER, d.sock, "POST", url, "{\"command\":\"ls\",\"workdir\":\"/\"}",
			  &r) == 0);
	EXPECT(&r, 400, "workdir: fixed when the session was created");
	res_free(&r);

	/* Path attacks: 400 and nothing touched. */
	{
		char out[300];

		snprintf(out, sizeof(out), "%s/out-link", wd);
		cr_assert(symlink("/etc", out) == 0);
		snprintf(out, sizeof(out), "%s/passwd-link", wd);
		cr_assert(symlink("/etc/passwd", out) == 0);
		snprintf(out, sizeof(out), "%s/rel-link", wd);
		cr_assert(symlink("../../etc", out) == 0);
	}
	const char *const attacks[][3] = {
		{ "PUT", "../escape", "'..' is not allowed" },
		{ "PUT", "a/../../escape", "'..' is not allowed" },
		{ "GET", "%2e%2e/%2e%2e/etc/passwd", "'..' is not allowed" },
		{ "GET", "/etc/passwd", "absolute paths are not allowed" },
		{ "PUT", "a%00b", "NUL byte" },
		{ "GET", "a%0ab", "control characters" },
		{ "PUT", "out-link/evil", "leads outside the session workdir" },
		{ "GET", "passwd-link", "leads outside the session workdir" },
		{ "GET", "rel-link/passwd", "leads outside the session workdir" },
		{ "DELETE", "out-link/passwd", "leads outside the session workdir" },
		{ "GET", "sub", "not a regular file" },
		{ "DELETE", "sub", "is a directory" },
		{ "GET", "", "path: empty" },
		{ "GET", "a//b", "empty component" },
	};
	for (size_t i = 0; i < sizeof(attacks) / sizeof(attacks[0]); i++) {
		snprintf(url, sizeof(url), "/v1/sessions/%s/files/%s", id, attacks[i][1]);
		cr_assert(http_as(MEMBER, d.sock, attacks[i][0], url, "x", &r) == 0);
		EXPECT(&r, 400, attacks[i][2]);
		res_free(&r);
	}
	cr_expect(access("/etc/evil", F_OK) != 0);
	cr_expect(access("/etc/passwd", F_OK) == 0);
	snprintf(url, sizeof(url), "/v1/sessions/%s/files/missing", id);
	cr_assert(http_as(MEMBER, d.sock, "GET", url, NULL, &r) == 0);
	EXPECT(&r, 404, "does not exist");
	res_free(&r);
	cr_assert(http_as(MEMBER, d.sock, "DELETE", url, NULL, &r) == 0);
	EXPECT(&r, 404, "does not exist");
	res_free(&r);
	snprintf(url, sizeof(url), "/v1/sessions/%s/files/sub/dir/a.txt", id);
	cr_assert(http_as(MEMBER, d.sock, "DELETE", url, NULL, &r) == 0);
	EXPECT(&r, 200, "\"deleted\":true");
	res_free(&r);

	/* Someone else's session does not exist for root either. */
	snprintf(url, sizeof(url), "/v1/sessions/%s", id);
	http(d.sock, "GET", url, NULL, &r);
	EXPECT(&r, 404, "no such session");
	res_free(&r);
	http(d.sock, "GET", "/v1/sessions/nothex", NULL, &r);
	EXPECT(&r, 404, "no such session");
	res_free(&r);
	cr_assert(http_as(MEMBER, d.sock, "GET", url, NULL, &r) == 0);
	EXPECT(&r, 200, "\"runs\":0");
	res_free(&r);

	/* Sessions per caller. */
	other = session_create(d.sock, MEMBER, "{\"profile\":\"strict\"}", &wd2);
	free(session_create(d.sock, MEMBER, "{}", &wd3));
	cr_assert(http_as(MEMBER, d.sock, "POST", "/v1/sessions", NULL, &r) == 0);
	EXPECT(&r, 429, "sessions: limit of 3 per caller");
	cr_expect(r.status != 429 || 1);
	res_free(&r);
	free(session_create(d.sock, NULL, NULL, &wd4)); /* root has its own count */
	cr_assert(http_as(MEMBER, d.sock, "POST", "/v1/sessions", "{\"profile\":\"../x\"}", &r) ==
		  0);
	EXPECT(&r, 400, "profile: ");
	res_free(&r);
	cr_assert(http_as(MEMBER, d.sock, "POST", "/v1/sessions", "{\"command\":\"x\"}", &r) == 0);
	EXPECT(&r, 400, "command: unknown field");
	res_free(&r);
	/* The image field: docker sessions only, a plain image reference (tests/docker has the
	 * sessions themselves, against a real dockerd). */
	cr_assert(http_as(MEMBER, d.sock, "POST", "/v1/sessions", "{\"image\":\"busybox\"}", &r) ==
		  0);
	EXPECT(&r, 400, "image: only with \\\"backend\\\": \\\"docker\\\" or \\\"daytona\\\"");
	res_free(&r);
	cr_assert(http_as(MEMBER, d.sock, "POST", "/v1/sessions",
			  "{\"backend\":\"docker\",\"image\":\"a b\"}", &r) == 0);
	EXPECT(&r, 400, "image: 'a b' is not an image reference");
	res_free(&r);

	/* Delete: the temp workdir goes; a second delete is a 404. */
	cr_assert(http_as(MEMBER, d.sock, "DELETE", url, NULL, &r) == 0);
	EXPECT(&r, 200, "\"deleted\":true");
	res_free(&r);
	cr_expect(access(wd, F_OK) != 0, "session workdir %s left behind", wd);
	cr_assert(http_as(MEMBER, d.sock, "DELETE", url, NULL, &r) == 0);
	EXPECT(&r, 404, "no such session");
	res_free(&r);
	/* Daytona sessions need a key given to cordond (tests/daytona has them working): without
	 * one, one line, and no session. */
	cr_assert(http_as(MEMBER, d.sock, "POST", "/v1/sessions", "{\"backend\":\"daytona\"}",
			  &r) == 0);
	EXPECT(&r, 400, "daytona: DAYTONA_API_KEY is not set");
	res_free(&r);
	free(id);
	free(other);
	free(wd);
	cr_expect_eq(daemon_stop(&d), 0);
	/* A stopping daemon leaves session workdirs to their owners (docs/daemon.md). */
	cr_expect(wd2 && access(wd2, F_OK) == 0, "a stop removed a session workdir");
	tu_rmtree(wd2);
	tu_rmtree(wd3);
	tu_rmtree(wd4);
	free(wd2);
	free(wd3);
	free(wd4);
}

/*
 * A member's "image" is one the administrator allowed: --docker-image (--daytona-image), or the
 * profile's own [docker] ([daytona]) image, after Docker's normalisation of a name and nothing
 * more (an ID, another tag, a digest are other images). Red team: a member named any image on
 * the host and read its files, root-only layers included. Anything else is a 403 naming the
 * image and the option, before anything is made (the workdir it names is not created); root
 * may name any. tests/docker/run.sh has the containers themselves, against a real dockerd.
 */
Test(daemon, a_members_image_is_one_the_administrator_allowed, .timeout = 60)
{
	const char *const args[] = { "--docker-image", "cordon-test/nope:0", "--daytona-image",
				     "cordon-test/dtok:2", NULL };
	static const char *const refused[] = {
		"busybox",
		"cordon-test/nope",		  /* :latest, not :0 */
		"cordon-test/nope:1",		  /* another tag */
		"cordon-test/nope:0@sha256:abcd", /* pinned: another image */
		"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"ghcr.io/cordon-test/nope:0", /* another registry */
		"cordon-test/prof:2",
	};
	static const char *const allowed[] = {
		"cordon-test/nope:0", "docker.io/cordon-test/nope:0",
		"index.docker.io/cordon-test/nope:0",
		"cordon-test/prof", /* the profile's, its :latest implied */
	};
	char *dir = tu_tmpdir(), body[512], want[512], wd[300];
	struct daemon d;
	struct res r;

	ensure_users();
	unsetenv("DAYTONA_API_KEY");
	tu_write_file(dir, "dimg.conf",
		      "[profile]\ninclude = default\n[docker]\nimage = cordon-test/prof:latest\n");
	tu_write_file(dir, "dt.conf",
		      "[profile]\ninclude = default\n[daytona]\nimage = debian:12\n");
	cr_assert_eq(chmod(dir, 0755), 0);
	cr_assert_eq(setenv("CORDON_PROFILE_PATH", dir, 1), 0);
	daemon_start(&d, args);
	(void)unsetenv("CORDON_PROFILE_PATH");
	/* Where the member could make the workdir it names, had the request gone on. */
	snprintf(wd, sizeof(wd), "%s/open", dir);
	cr_assert_eq(mkdir(wd, 0777), 0);
	cr_assert_eq(chmod(wd, 0777), 0);
	strcat(wd, "/wd");

	for (size_t i = 0; i < sizeof(refused) / sizeof(*refused); i++) {
		snprintf(body, sizeof(body),
			 "{\"backend\":\"docker\",\"profile\":\"dimg\",\"image\":\"%s\","
			 "\"workdir\":\"%s\"}",
			 refused[i], wd);
		cr_assert(http_as(MEMBER, d.sock, "POST", "/v1/sessions", body, &r) == 0);
		snprintf(want, sizeof(want),
			 "\"error\":\"image: '%s' is not one members may use (the profile's "
			 "[docker] "
			 "image, or one cordond allows with --docker-image)\"",
			 refused[i]);
		EXPECT(&r, 403, want);
		res_free(&r);
		cr_expect(access(wd, F_OK) != 0, "%s: its workdir was made", refused[i]);
	}
	/* Allowed: past the check, to dockerd (absent, or without the image): not a 403. */
	for (size_t i = 0; i < sizeof(allowed) / sizeof(*allowed); i++) {
		snprintf(body, sizeof(body),
			 "{\"backend\":\"docker\",\"profile\":\"dimg\",\"image\":\"%s\"}",
			 allowed[i]);
		cr_assert(http_as(MEMBER, d.sock, "POST", "/v1/sessions", body, &r) == 0);
		cr_expect(r.status == 500 && body_has(&r, "docker: ") &&
				  !body_has(&r, "members may use"),
			  "%s: %d %s", allowed[i], r.status, r.body);
		res_free(&r);
	}
	/* Root: any image. */
	http(d.sock, "POST", "/v1/sessions", "{\"backend\":\"docker\",\"image\":\"busybox:nope\"}",
	     &r);
	cr_expect(r.status == 500 && body_has(&r, "docker: "), "root: %d %s", r.status, r.body);
	res_free(&r);
	/* Daytona: the same rule with its own option; allowed, the missing key is the error. */
	cr_assert(http_as(MEMBER, d.sock, "POST", "/v1/sessions",
			  "{\"backend\":\"daytona\",\"image\":\"cordon-test/nope:0\"}", &r) == 0);
	EXPECT(&r, 403,
	       "\"error\":\"image: 'cordon-test/nope:0' is not one members may use (the profile's "
	       "[daytona] image, or one cordond allows with --daytona-image)\"");
	res_free(&r);
	cr_assert(http_as(MEMBER, d.sock, "POST", "/v1/sessions",
			  "{\"backend\":\"daytona\",\"image\":\"cordon-test/dtok:2\"}", &r) == 0);
	EXPECT(&r, 400, "daytona: DAYTONA_API_KEY is not set");
	res_free(&r);
	cr_assert(http_as(MEMBER, d.sock, "POST", "/v1/sessions",
			  "{\"backend\":\"daytona\",\"profile\":\"dt\",\"image\":\"debian:12\"}",
			  &r) == 0);
	EXPECT(&r, 400, "daytona: DAYTONA_API_KEY is not set");
	res_free(&r);
	http(d.sock, "POST", "/v1/sessions", "{\"backend\":\"daytona\",\"image\":\"any:1\"}", &r);
	EXPECT(&r, 400, "daytona: DAYTONA_API_KEY is not set");
	res_free(&r);
	cr_expect_eq(daemon_stop(&d), 0);
	tu_rmtree(dir);
	free(dir);
}

/*
 * A session whose workdir was removed under it: AG2's LocalSandbox (cec8d4d1b) runs with
 * cwd=<its Path>, so subprocess raises FileNotFoundError naming the Path and the result is
 * "Command not found: " + str(exc) with exit 127 (ag2-behaviour.md §1, §3.5). cordond
 * answered 500 ("bind workdir '... (deleted)'"), which the Python client raises. A refusal by
 * the policy still comes first, as AG2 filters before it runs anything.
 */
Test(daemon, session_workdir_removed_is_ag2s_127, .timeout = 60)
{
	struct daemon d;
	struct res r;
	char url[256], body[512], *want = NULL;
	char *wd = tu_tmpdir();
	char *id;

	daemon_start(&d, NULL);
	snprintf(body, sizeof(body), "{\"workdir\":\"%s\"}", wd);
	id = session_create(d.sock, NULL, body, NULL);
	snprintf(url, sizeof(url), "/v1/sessions/%s/run", id);
	http(d.sock, "POST", url, "{\"command\":\"echo hi\"}", &r);
	EXPECT_FIELD(&r, "output", "hi");
	res_free(&r);

	tu_rmtree(wd);
	http(d.sock, "POST", url, "{\"command\":\"echo hi\"}", &r);
	cr_expect_eq(r.status, 200, "%s", r.body);
	cr_assert(asprintf(&want,
			   "Command not found: [Errno 2] No such file or directory: "
			   "PosixPath('%s')\n[exit code: 127]",
			   wd) > 0);
	EXPECT_FIELD(&r, "output", want);
	EXPECT_FIELD(&r, "exit_code", "127");
	EXPECT_FIELD(&r, "workdir", wd);
	EXPECT_FIELD(&r, "stdout", "");
	res_free(&r);
	/* The policy first: refused as it would be with the directory there. */
	http(d.sock, "POST", url, "{\"command\":\"rm x\",\"blocked\":[\"rm\"]}", &r);
	EXPECT_FIELD(&r, "output", "Command not allowed: 'rm x'");
	res_free(&r);
	cr_expect(access(wd, F_OK) != 0, "the run made the removed workdir again");

	snprintf(url, sizeof(url), "/v1/sessions/%s", id);
	http(d.sock, "DELETE", url, NULL, &r);
	EXPECT(&r, 200, "\"deleted\":true");
	res_free(&r);
	cr_expect_eq(daemon_stop(&d), 0);
	free(want);
	free(id);
	free(wd);
}

/*
 * A session outlives the groups its owner had when it was made: taken out of a group, the
 * owner's uploads and downloads lose what that group gave at once, as their own processes and
 * their runs do. The files API acted with the groups copied at the session's creation, so a
 * member removed from a group kept reading and writing its files through any session made
 * before (for as long as it was used: an hour idle, renewed by every use).
 */
#define REVOKED "cordon-tr"
#define REVOKED_GROUP "cordon-trg"

Test(daemon, session_files_follow_group_changes, .timeout = 60)
{
	struct daemon d;
	struct res r;
	struct passwd *pw;
	struct group *gr;
	char url[256], path[600], *wd = tu_tmpdir(), *id;

	ensure_users();
	cr_assert_eq(system("flock /tmp/cordon-test-users.lock sh -c '"
			    "getent group " REVOKED_GROUP " >/dev/null || groupadd " REVOKED_GROUP
			    "; id " REVOKED
			    " >/dev/null 2>&1 || useradd -M -N -s /bin/sh -G cordon " REVOKED
			    "; gpasswd -a " REVOKED " " REVOKED_GROUP "' >/dev/null 2>&1"),
		     0, "cannot make " REVOKED);
	pw = getpwnam(REVOKED);
	gr = getgrnam(REVOKED_GROUP);
	cr_assert(pw && gr);
	cr_assert(chown(wd, pw->pw_uid, pw->pw_gid) == 0);
	/* The group's directory in the owner's workdir: root's, for the group only. */
	snprintf(path, sizeof(path), "%s/g", wd);
	cr_assert(mkdir(path, 0770) == 0 && chown(path, 0, gr->gr_gid) == 0 &&
		  chmod(path, 0770) == 0);
	tu_write_file(path, "f", "group only");
	snprintf(path, sizeof(path), "%s/g/f", wd);
	cr_assert(chown(path, 0, gr->gr_gid) == 0 && chmod(path, 0660) == 0);
	daemon_start(&d, NULL);
	{
		char body[600];

		snprintf(body, sizeof(body), "{\"workdir\":\"%s\"}", wd);
		id = session_create(d.sock, REVOKED, body, NULL);
	}
	snprintf(url, sizeof(url), "/v1/sessions/%s/files/g/f", id);
	cr_assert(http_as(REVOKED, d.sock, "GET", url, NULL, &r) == 0);
	EXPECT(&r, 200, "group only");
	res_free(&r);

	cr_assert_eq(system("flock /tmp/cordon-test-users.lock gpasswd -d " REVOKED
			    " " REVOKED_GROUP " >/dev/null"),
		     0);
	cr_assert(http_as(REVOKED, d.sock, "GET", url, NULL, &r) == 0);
	EXPECT(&r, 403, "path: 'g/f'");
	res_free(&r);
	cr_assert(http_as(REVOKED, d.sock, "PUT", url, "overwritten", &r) == 0);
	EXPECT(&r, 403, "path: 'g/f'");
	res_free(&r);
	snprintf(url, sizeof(url), "/v1/sessions/%s/files/g/new", id);
	cr_assert(http_as(REVOKED, d.sock, "PUT", url, "new", &r) == 0);
	EXPECT(&r, 403, "path: 'g/new'");
	res_free(&r);
	cr_assert(http_as(REVOKED, d.sock, "DELETE", url, NULL, &r) == 0);
	cr_expect(r.status == 403 || r.status == 404, "%d %s", r.status, r.body);
	res_free(&r);
	{
		char buf[64] = "";
		FILE *f = fopen(path, "re");

		cr_assert(f);
		cr_expect(fgets(buf, sizeof(buf), f) && !strcmp(buf, "group only"),
			  "the group's file was written: '%s'", buf);
		fclose(f);
		snprintf(path, sizeof(path), "%s/g/new", wd);
		cr_expect(access(path, F_OK) != 0, "a file was made in the group's directory");
	}
	/* Back in the group: back in its files. */
	cr_assert_eq(system("flock /tmp/cordon-test-users.lock gpasswd -a " REVOKED
			    " " REVOKED_GROUP " >/dev/null"),
		     0);
	snprintf(url, sizeof(url), "/v1/sessions/%s/files/g/f", id);
	cr_assert(http_as(REVOKED, d.sock, "GET", url, NULL, &r) == 0);
	EXPECT(&r, 200, "group only");
	res_free(&r);
	cr_expect_eq(daemon_stop(&d), 0);
	tu_rmtree(wd);
	free(wd);
	free(id);
}

/*
 * An upload is refused when its path is anything but a regular file, as a download of it is,
 * and at once. Opened for writing without O_NONBLOCK, a FIFO without a reader blocked the
 * connection's thread in open() for ever, and with it SIGTERM, which waits for every
 * connection (the reviewer's repro); one with a reader got the upload written into it; a
 * socket's file was a 500.
 */
static int fifo_put(const char *sock, const char *id, const char *name, const char *body,
		    struct res *r)
{
	char url[256];

	snprintf(url, sizeof(url), "/v1/sessions/%s/files/%s", id, name);
	return http_as(MEMBER, sock, "PUT", url, body, r);
}

Test(daemon, upload_over_a_fifo_is_refused, .timeout = 120)
{
	const char *const args[] = { "--grace", "1", NULL };
	struct daemon d;
	struct res r;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char url[256], path[600], *wd = NULL, *id;
	int reader, sk, st = 0;
	bool stopped = false;
	double t0;

	ensure_users();
	daemon_start(&d, args);
	id = session_create(d.sock, MEMBER, NULL, &wd);
	cr_assert(wd);
	/* The FIFOs made by a command of the session, as the reviewer did. */
	snprintf(url, sizeof(url), "/v1/sessions/%s/run", id);
	cr_assert(
		http_as(MEMBER, d.sock, "POST", url,
			"{\"command\":\"mkfifo ff ff2 && mkdir sub && mkfifo sub/ff && ls -l ff\"}",
			&r) == 0);
	cr_assert_eq(r.status, 200, "%s", r.body);
	{
		char *o = jfield(&r, "output");

		cr_assert(!strncmp(o, "prw", 3), "no FIFO made: %s", o);
		free(o);
	}
	res_free(&r);
	/* Anything past 10 s is a hang: the reply reads as status 0. */
	reply_timeout_s = 10;

	/* No reader: the open must not wait for one. */
	cr_assert(fifo_put(d.sock, id, "ff", "data", &r) == 0);
	EXPECT(&r, 400, "{\"error\":\"path: 'ff' is not a regular file\"}");
	res_free(&r);
	cr_assert(fifo_put(d.sock, id, "sub/ff", "data", &r) == 0);
	EXPECT(&r, 400, "{\"error\":\"path: 'sub/ff' is not a regular file\"}");
	res_free(&r);
	/* A reader (this test): the open would succeed; nothing may reach it. */
	snprintf(path, sizeof(path), "%s/ff", wd);
	reader = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	cr_assert(reader >= 0, "%s: %s", path, strerror(errno));
	cr_assert(fifo_put(d.sock, id, "ff", "data", &r) == 0);
	EXPECT(&r, 400, "{\"error\":\"path: 'ff' is not a regular file\"}");
	res_free(&r);
	{
		char buf[64];
		ssize_t n = read(reader, buf, sizeof(buf));

		cr_expect(n <= 0, "an upload wrote %zd bytes into the FIFO", n);
	}
	close(reader);
	/* A socket's file: not a regular file either (its open fails with ENXIO). */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/sk", wd);
	sk = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert(sk >= 0 && bind(sk, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	cr_assert(chmod(sa.sun_path, 0666) == 0);
	cr_assert(fifo_put(d.sock, id, "sk", "data", &r) == 0);
	EXPECT(&r, 400, "{\"error\":\"path: 'sk' is not a regular file\"}");
	res_free(&r);
	close(sk);
	/* A regular file is still created, and replaced by a shorter upload (truncated). */
	cr_assert(fifo_put(d.sock, id, "reg", "a longer first version", &r) == 0);
	EXPECT(&r, 200, "\"bytes\":22");
	res_free(&r);
	cr_assert(fifo_put(d.sock, id, "reg", "short", &r) == 0);
	EXPECT(&r, 200, "\"bytes\":5");
	res_free(&r);
	snprintf(url, sizeof(url), "/v1/sessions/%s/files/reg", id);
	cr_assert(http_as(MEMBER, d.sock, "GET", url, NULL, &r) == 0);
	cr_expect_eq(r.status, 200);
	cr_expect_str_eq(r.body, "short");
	res_free(&r);
	{
		struct stat sb;

		snprintf(path, sizeof(path), "%s/reg", wd);
		cr_assert(stat(path, &sb) == 0);
		cr_expect_eq(sb.st_uid, getpwnam(MEMBER)->pw_uid);
		cr_expect_eq(sb.st_mode & 07777, 0644, "mode %o", sb.st_mode & 07777);
	}

	/* Last, ff2 without a reader, and SIGTERM: stopped within its grace, not held up. */
	cr_assert(fifo_put(d.sock, id, "ff2", "data", &r) == 0);
	EXPECT(&r, 400, "{\"error\":\"path: 'ff2' is not a regular file\"}");
	res_free(&r);
	reply_timeout_s = 0;
	t0 = now();
	kill(d.pid, SIGTERM);
	while (!(stopped = waitpid(d.pid, &st, WNOHANG) == d.pid) && now() - t0 < 10)
		usleep(20000);
	cr_expect(stopped, "cordond (--grace 1) still running %.0fs after SIGTERM", now() - t0);
	if (stopped) {
		cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status %#x", st);
		d.pid = 0;
		tu_rmtree(d.dir);
	} else {
		/* Let the threads stuck in open() go: give each FIFO a reader for a moment. */
		const char *const fifos[] = { "ff", "ff2", "sub/ff" };

		for (size_t i = 0; i < 3; i++) {
			snprintf(path, sizeof(path), "%s/%s", wd, fifos[i]);
			reader = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
			usleep(100000);
			if (reader >= 0)
				close(reader);
		}
		daemon_stop(&d);
	}
	tu_rmtree(wd);
	free(wd);
	free(id);
}

/*
 * A connection to sock made by a child that has become user (its groups, gid and uid), handed
 * back to this process: SO_PEERCRED is taken at connect time, so cordond sees user on it.
 */
static int connect_as(const char *user, const char *sock)
{
	struct passwd *pw = getpwnam(user);
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	char c = 0;
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;
	int sp[2], fd = -1, st;
	pid_t pid;

	cr_assert(pw, "no user %s", user);
	cr_assert(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == 0);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		int cfd;

		close(sp[0]);
		if (initgroups(user, pw->pw_gid) < 0 || setgid(pw->pw_gid) < 0 ||
		    setuid(pw->pw_uid) < 0)
			_exit(3);
		cfd = connect_to(sock);
		if (cfd < 0)
			_exit(4);
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof(u.buf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &cfd, sizeof(int));
		_exit(sendmsg(sp[1], &mh, 0) == 1 ? 0 : 5);
	}
	close(sp[1]);
	mh.msg_control = u.buf;
	mh.msg_controllen = sizeof(u.buf);
	if (recvmsg(sp[0], &mh, MSG_CMSG_CLOEXEC) == 1 && (cm = CMSG_FIRSTHDR(&mh)) &&
	    cm->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	close(sp[0]);
	waitpid(pid, &st, 0);
	cr_assert(fd >= 0, "no connection as %s (child status %#x)", user, st);
	return fd;
}

/* The CPU time (user + system, seconds) cordond's process has used so far, its threads' too. */
static double process_cpu_s(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut = 0, st = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	cr_assert(f);
	cr_assert(fgets(buf, sizeof(buf), f));
	fclose(f);
	p = strrchr(buf, ')');
	cr_assert(p);
	/* After the comm: state, then fields 4 to 13, then utime (14) and stime (15). */
	cr_assert(sscanf(p + 2, "%*c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu %llu", &ut,
			 &st) == 2);
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/*
 * A download whose file shrinks while it is sent (the session's owner truncates it: it is
 * their file). Handed to libmicrohttpd as an fd of the size fstat gave, a short file left the
 * connection's thread spinning on a CPU, the answer never finished and never ended, for as
 * long as the client kept the connection (found in review: one member, 128 connections, every
 * CPU). The download must end at once with the connection closed, short of its
 * Content-Length (how HTTP says a body was cut), and cost no CPU meanwhile.
 */
Test(daemon, download_of_a_shrinking_file_ends, .timeout = 90)
{
	struct daemon d;
	struct res r;
	char url[256], path[600], head[512], buf[65536], *wd = NULL, *id;
	struct passwd *pw;
	size_t got = 0;
	double t0, cpu0;
	bool eof = false;
	int fd, f;

	ensure_users();
	pw = getpwnam(MEMBER);
	cr_assert(pw);
	daemon_start(&d, NULL);
	id = session_create(d.sock, MEMBER, NULL, &wd);
	cr_assert(wd);
	snprintf(path, sizeof(path), "%s/big", wd);
	f = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert(f >= 0 && ftruncate(f, 512 << 20) == 0 && fchown(f, pw->pw_uid, pw->pw_gid) == 0);
	close(f);

	fd = connect_as(MEMBER, d.sock);
	{
		struct timeval tv = { .tv_sec = 5 };

		cr_assert(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0);
	}
	snprintf(head, sizeof(head), "GET /v1/sessions/%s/files/big HTTP/1.1\r\nHost: c\r\n\r\n",
		 id);
	write_all(fd, head, strlen(head));
	/* The answer has begun (its head at least); then the file shrinks to 1000 bytes. */
	cr_assert(read(fd, buf, 512) > 0);
	cr_assert(!strncmp(buf, "HTTP/1.1 200 ", 13), "%.200s", buf);
	cr_assert(truncate(path, 1000) == 0);
	cpu0 = process_cpu_s(d.pid);
	t0 = now();
	while (now() - t0 < 20) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n == 0) {
			eof = true;
			break;
		}
		if (n < 0 && errno != EINTR)
			break; /* SO_RCVTIMEO: 5 s without a byte or an end */
		if (n > 0)
			got += (size_t)n;
	}
	cr_expect(eof,
		  "no end of the download %.1f s after its file shrank (%zu bytes more, %.1f s of "
		  "cordond's CPU)",
		  now() - t0, got, process_cpu_s(d.pid) - cpu0);
	cr_expect(got < (512u << 20), "the whole Content-Length arrived from a 1000-byte file");
	cr_expect(process_cpu_s(d.pid) - cpu0 < 1.0,
		  "cordond used %.1f s of CPU meanwhile, for one stalled download",
		  process_cpu_s(d.pid) - cpu0);
	close(fd);

	/* The daemon goes on: the same file, whole now, downloads as it is. */
	snprintf(url, sizeof(url), "/v1/sessions/%s/files/big", id);
	cr_assert(http_as(MEMBER, d.sock, "GET", url, NULL, &r) == 0);
	cr_expect_eq(r.status, 200);
	cr_expect_eq(r.len, 1000);
	res_free(&r);
	cr_expect_eq(daemon_stop(&d), 0);
	tu_rmtree(wd);
	free(wd);
	free(id);
}

Test(daemon, session_idle_expiry, .timeout = 60)
{
	const char *const args[] = { "--session-idle", "1", NULL };
	struct daemon d;
	struct res r;
	char *wd = NULL, *id, url[128];

	daemon_start(&d, args);
	id = session_create(d.sock, NULL, NULL, &wd);
	usleep(2500 * 1000);
	snprintf(url, sizeof(url), "/v1/sessions/%s", id);
	http(d.sock, "GET", url, NULL, &r);
	EXPECT(&r, 404, "no such session");
	res_free(&r);
	cr_expect(access(wd, F_OK) != 0, "expired session's workdir %s left behind", wd);
	free(id);
	free(wd);
	cr_expect_eq(daemon_stop(&d), 0);
}

/* One request of a burst: its status and, for a 201, the session id. */
struct burst_res {
	int status;
	char id[SESSION_ID_CHARS + 1];
};

/*
 * n requests at once from n children as USER: each connects and sends all of its request but
 * the body's last byte; when all have, the last bytes go together, so that cordond handles the
 * n requests at the same time. out[i] gets the answers, in no particular order.
 */
static void burst_as(const char *user, const char *sock, const char *path, const char *body, int n,
		     struct burst_res *out)
{
	struct passwd *pw = getpwnam(user);
	size_t blen = strlen(body);
	int ready[2], go[2], back[2];
	pid_t *pids = calloc((size_t)n, sizeof(*pids));

	cr_assert(pw && pids && blen > 0);
	cr_assert(pipe(ready) == 0 && pipe(go) == 0 && pipe(back) == 0);
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		cr_assert(pids[i] >= 0);
		if (pids[i] == 0) {
			struct burst_res br = { .status = -1 };
			struct res r = { 0 };
			char head[512], c;
			const char *p;
			int fd = -1;

			close(ready[0]);
			close(go[1]);
			close(back[0]);
			if (initgroups(user, pw->pw_gid) == 0 && setgid(pw->pw_gid) == 0 &&
			    setuid(pw->pw_uid) == 0)
				fd = connect_to(sock);
			if (fd >= 0) {
				snprintf(head, sizeof(head),
					 "POST %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
					 "Content-Type: application/json\r\n"
					 "Content-Length: %zu\r\n\r\n",
					 path, blen);
				write_all(fd, head, strlen(head));
				write_all(fd, body, blen - 1);
			}
			write_all(ready[1], "r", 1);
			if (read(go[0], &c, 1) < 0)
				_exit(4);
			if (fd >= 0) {
				write_all(fd, body + blen - 1, 1);
				read_reply(fd, &r);
				br.status = r.status;
				p = r.body ? strstr(r.body, "\"id\":\"") : NULL;
				if (p)
					snprintf(br.id, sizeof(br.id), "%.*s", SESSION_ID_CHARS,
						 p + 6);
			}
			write_all(back[1], &br, sizeof(br));
			_exit(0);
		}
	}
	close(ready[1]);
	close(go[0]);
	close(back[1]);
	for (int i = 0; i < n; i++) {
		char c;

		cr_assert(read_full(ready[0], &c, 1), "a child of the burst died");
	}
	close(go[1]); /* EOF: all go */
	for (int i = 0; i < n; i++)
		cr_assert(read_full(back[0], &out[i], sizeof(out[i])), "a child of the burst died");
	for (int i = 0; i < n; i++)
		waitpid(pids[i], NULL, 0);
	close(ready[0]);
	close(back[0]);
	free(pids);
}

/*
 * The per-caller session limit holds exactly when the creates come at once: the slot is taken
 * when the request is counted, not when the session is ready (after the profile, the workdir
 * and, for Docker, the container). 120 parallel creates used to get 33 sessions with a limit
 * of 32. A create that fails gives its slot back.
 */
Test(daemon, session_limit_holds_under_concurrency, .timeout = 90)
{
	const char *const args[] = { "--max-sessions-per-caller", "3", NULL };
	enum { N = 48 };
	struct burst_res out[N];
	struct daemon d;
	struct res r;
	char url[128];
	int created = 0, refused = 0, other = 0;

	ensure_users();
	daemon_start(&d, args);
	/* A few rounds: each is a race that the old code lost only now and then. */
	for (int round = 0; round < 6; round++) {
		created = refused = other = 0;
		burst_as(MEMBER, d.sock, "/v1/sessions", "{}", N, out);
		for (int i = 0; i < N; i++) {
			if (out[i].status == 201)
				created++;
			else if (out[i].status == 429)
				refused++;
			else
				other++;
		}
		cr_expect_eq(created, 3, "round %d: %d sessions created at once, the limit is 3",
			     round, created);
		cr_expect_eq(refused, N - created, "round %d: %d refused", round, refused);
		cr_expect_eq(other, 0, "round %d: %d answers neither 201 nor 429", round, other);
		/* Deleted: their slots are free again, for the next round. */
		for (int i = 0; i < N; i++) {
			if (out[i].status != 201)
				continue;
			snprintf(url, sizeof(url), "/v1/sessions/%s", out[i].id);
			cr_assert(http_as(MEMBER, d.sock, "DELETE", url, NULL, &r) == 0);
			EXPECT(&r, 200, "\"deleted\":true");
			res_free(&r);
		}
	}
	/* Failed creates (a profile that does not exist) leave no slot taken. */
	for (int i = 0; i < 5; i++) {
		cr_assert(http_as(MEMBER, d.sock, "POST", "/v1/sessions",
				  "{\"profile\":\"no-such-profile\"}", &r) == 0);
		EXPECT(&r, 400, "profile: ");
		res_free(&r);
	}
	burst_as(MEMBER, d.sock, "/v1/sessions", "{}", 6, out);
	created = 0;
	for (int i = 0; i < 6; i++)
		created += out[i].status == 201;
	cr_expect_eq(created, 3, "after failed creates: %d of 3 created", created);
	for (int i = 0; i < 6; i++) {
		if (out[i].status != 201)
			continue;
		snprintf(url, sizeof(url), "/v1/sessions/%s", out[i].id);
		cr_assert(http_as(MEMBER, d.sock, "DELETE", url, NULL, &r) == 0);
		EXPECT(&r, 200, "\"deleted\":true");
		res_free(&r);
	}
	cr_expect_eq(daemon_stop(&d), 0);
}

/*
 * A DELETE of a session answers 409 while a run is in progress, else the session is gone: no
 * run of it may start after a DELETE answered 200. The run took the session (session_get)
 * before it counted itself as running (session_run_begin), and parsed its body in between, so
 * a DELETE in that gap answered 200 and the run went on in the deleted session, its command
 * run and its answer a 200 (found in red team). A body with many items makes the gap wide.
 */
struct race_run {
	const char *sock;
	const char *url;
	const char *body;
	struct res r;
};

static void *race_run_fn(void *arg)
{
	struct race_run *rr = arg;

	http(rr->sock, "POST", rr->url, rr->body, &rr->r);
	return NULL;
}

Test(daemon, no_run_starts_in_a_deleted_session, .timeout = 120)
{
	enum { ROUNDS = 60, ITEMS = 4000 };
	struct daemon d;
	char *body, *p, run_url[128], url[128];
	int after_delete = 0, deleted_first = 0, ran_first = 0;

	/* {"command":"echo ran","allowed":["x0",...],"blocked":[...],"ignore":[...],"env":{...}} */
	body = malloc(1 << 20);
	cr_assert(body);
	p = body + sprintf(body, "{\"command\":\"echo ran\"");
	for (int l = 0; l < 3; l++) {
		static const char *const lists[] = { "allowed", "blocked", "ignore" };

		p += sprintf(p, ",\"%s\":[", lists[l]);
		/* "echo" allowed: the run's command runs unless it cannot start at all. */
		p += sprintf(p, "\"%s\"", l == 0 ? "echo" : "zz");
		for (int i = 1; i < ITEMS; i++)
			p += sprintf(p, ",\"zz%d\"", i);
		*p++ = ']';
	}
	p += sprintf(p, ",\"env\":{");
	for (int i = 0; i < ITEMS; i++)
		p += sprintf(p, "%s\"V%d\":\"v\"", i ? "," : "", i);
	strcpy(p, "}}");
	daemon_start(&d, NULL);
	for (int round = 0; round < ROUNDS; round++) {
		struct race_run rr = { .sock = d.sock, .url = run_url, .body = body };
		struct res r;
		pthread_t t;
		char *id = session_create(d.sock, NULL, NULL, NULL);

		snprintf(run_url, sizeof(run_url), "/v1/sessions/%s/run", id);
		snprintf(url, sizeof(url), "/v1/sessions/%s", id);
		cr_assert(pthread_create(&t, NULL, race_run_fn, &rr) == 0);
		/* Spread over the run's parse: some rounds land before it, some in it, some after. */
		usleep((useconds_t)(round % 20) * 1000);
		http(d.sock, "DELETE", url, NULL, &r);
		pthread_join(t, NULL);
		if (r.status == 200 && rr.r.status == 200) {
			after_delete++;
			cr_expect(0, "round %d: DELETE answered 200 and the run %s", round,
				  rr.r.body);
		} else if (r.status == 200) {
			EXPECT(&rr.r, 404, "no such session");
			deleted_first++;
		} else {
			EXPECT(&r, 409, "runs in progress");
			EXPECT(&rr.r, 200, "ran");
			ran_first++;
			res_free(&r);
			http(d.sock, "DELETE", url, NULL, &r);
			EXPECT(&r, 200, "\"deleted\":true");
		}
		res_free(&r);
		res_free(&rr.r);
		free(id);
	}
	cr_log_info("%d rounds: %d deleted first, %d ran first, %d ran after the DELETE", ROUNDS,
		    deleted_first, ran_first, after_delete);
	cr_expect_eq(after_delete, 0, "%d runs in deleted sessions", after_delete);
	free(body);
	cr_expect_eq(daemon_stop(&d), 0);
}

/* ---- limits, timeouts, disconnects ---- */

/* Send a request and leave the connection open; returns the fd. */
static int send_open(const char *sock, const char *body)
{
	char head[512];
	int fd = connect_to(sock);

	cr_assert(fd >= 0);
	snprintf(head, sizeof(head),
		 "POST /v1/run HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n", strlen(body));
	write_all(fd, head, strlen(head));
	write_all(fd, body, strlen(body));
	return fd;
}

Test(daemon, concurrency_limits, .timeout = 60)
{
	const char *const args[] = { "--max-runs-per-caller", "1", NULL };
	struct daemon d;
	struct res r;
	int fd;

	daemon_start(&d, args);
	fd = send_open(d.sock, "{\"command\":\"sleep 2; echo cordon-test-limit-a\"}");
	usleep(300 * 1000);
	http(d.sock, "POST", "/v1/run", "{\"command\":\"echo second\"}", &r);
	EXPECT(&r, 429, "runs: 1 runs in flight, the limit per caller");
	cr_expect(strstr(r.head, "Retry-After: 1"), "%s", r.head);
	res_free(&r);
	/* Other endpoints still answer. */
	http(d.sock, "GET", "/v1/health", NULL, &r);
	cr_expect_eq(r.status, 200);
	res_free(&r);
	read_reply(fd, &r);
	close(fd);
	EXPECT(&r, 200, "cordon-test-limit-a");
	res_free(&r);
	http(d.sock, "POST", "/v1/run", "{\"command\":\"echo again\"}", &r);
	EXPECT(&r, 200, "again");
	res_free(&r);
	cr_expect_eq(daemon_stop(&d), 0);
}

Test(daemon, global_run_limit, .timeout = 60)
{
	const char *const args[] = { "--max-runs", "1", NULL };
	struct daemon d;
	struct res r;
	int fd;

	ensure_users();
	daemon_start(&d, args);
	fd = send_open(d.sock, "{\"command\":\"sleep 2\"}");
	usleep(300 * 1000);
	cr_assert(http_as(MEMBER, d.sock, "POST", "/v1/run", "{\"command\":\"true\"}", &r) == 0);
	EXPECT(&r, 429, "the daemon's limit");
	res_free(&r);
	read_reply(fd, &r);
	close(fd);
	cr_expect_eq(r.status, 200);
	res_free(&r);
	cr_expect_eq(daemon_stop(&d), 0);
}

/* ---- request bodies held in memory, per caller ---- */

/* What one held upload was answered in the end. */
struct upload_res {
	int status;
	char body[240];
};

struct uploads {
	pid_t pid;
	int to, back, n;
};

/*
 * A child as USER starts n uploads of len bytes each (PUT url_prefix and the upload's index), one
 * after the other, each sent but its last byte and read by cordond (SIOCOUTQ: nothing of it
 * left unread in the socket) before the next one begins, so that cordond holds their bodies
 * in that order. Returns when all are held; uploads_finish sends the last bytes and collects
 * the answers.
 */
static void uploads_start(struct uploads *u, const char *user, const char *sock,
			  const char *url_prefix, int n, size_t len)
{
	struct passwd *pw = getpwnam(user);
	int to[2], back[2];
	char c;

	cr_assert(pw && pipe(to) == 0 && pipe(back) == 0);
	u->n = n;
	u->pid = fork();
	cr_assert(u->pid >= 0);
	if (u->pid == 0) {
		int *fds = calloc((size_t)n, sizeof(*fds));
		char *buf = malloc(len), head[512], url[256];

		close(to[1]);
		close(back[0]);
		if (!fds || !buf || initgroups(user, pw->pw_gid) < 0 || setgid(pw->pw_gid) < 0 ||
		    setuid(pw->pw_uid) < 0)
			_exit(3);
		memset(buf, 'u', len);
		for (int i = 0; i < n; i++) {
			fds[i] = connect_to(sock);
			if (fds[i] < 0)
				_exit(4);
			snprintf(url, sizeof(url), "%s%d", url_prefix, i);
			snprintf(head, sizeof(head),
				 "PUT %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
				 "Content-Length: %zu\r\n\r\n",
				 url, len);
			write_all(fds[i], head, strlen(head));
			write_all(fds[i], buf, len - 1);
			for (double t0 = now(); now() - t0 < 10; usleep(2000)) {
				int q = -1;

				if (ioctl(fds[i], SIOCOUTQ, &q) == 0 && q == 0)
					break;
			}
			/* Read: what cordond does with it follows in the same thread, at once. */
			usleep(50000);
		}
		write_all(back[1], "r", 1);
		if (read(to[0], &c, 1) != 1)
			_exit(0);
		for (int i = 0; i < n; i++) {
			struct upload_res ur = { 0 };
			struct res r = { 0 };

			write_all(fds[i], buf, 1);
			read_reply(fds[i], &r);
			ur.status = r.status;
			snprintf(ur.body, sizeof(ur.body), "%s", r.body ? r.body : "");
			write_all(back[1], &ur, sizeof(ur));
			close(fds[i]);
		}
		_exit(0);
	}
	close(to[0]);
	close(back[1]);
	u->to = to[1];
	u->back = back[0];
	cr_assert(read_full(u->back, &c, 1), "the uploads' child died");
}

static void uploads_finish(struct uploads *u, struct upload_res *out)
{
	write_all(u->to, "g", 1);
	for (int i = 0; i < u->n; i++)
		cr_assert(read_full(u->back, &out[i], sizeof(out[i])), "the uploads' child died");
	close(u->to);
	close(u->back);
	waitpid(u->pid, NULL, 0);
}

/*
 * --max-bodies is not one member's to fill: all callers but root together hold at most
 * --max-bodies less an eighth, kept for root. Four uploads of one member, each held in a
 * 64 KiB buffer, used to take the whole 256 KiB, and everyone else, root included, got 503
 * for as long as the member liked (renewing its uploads within --request-timeout).
 */
Test(daemon, bodies_one_member_cannot_starve_root, .timeout = 90)
{
	const char *const args[] = {
		"--max-file", "65536", "--max-bodies", "262144", "--request-timeout", "60", NULL
	};
	struct upload_res out[4];
	struct uploads u;
	struct daemon d;
	struct res r;
	char fmt[128], *wd = NULL, *id;

	ensure_users();
	daemon_start(&d, args);
	id = session_create(d.sock, MEMBER, NULL, &wd);
	snprintf(fmt, sizeof(fmt), "/v1/sessions/%s/files/f", id);
	uploads_start(&u, MEMBER, d.sock, fmt, 4, 60000);
	http(d.sock, "POST", "/v1/run", "{\"command\":\"echo root-got-through\"}", &r);
	EXPECT(&r, 200, "root-got-through");
	res_free(&r);
	uploads_finish(&u, out);
	for (int i = 0; i < 3; i++)
		cr_expect(out[i].status == 200 && strstr(out[i].body, "\"bytes\":60000"),
			  "upload %d: %d %s", i, out[i].status, out[i].body);
	cr_expect_eq(out[3].status, 503, "upload 3: %d %s", out[3].status, out[3].body);
	cr_expect(strstr(out[3].body,
			 "{\"error\":\"busy: the request bodies in memory would pass 229376 bytes "
			 "(--max-bodies, less 32768 kept for root); try again\"}\n"),
		  "upload 3: %s", out[3].body);
	/* All given back. */
	cr_assert(http_as(MEMBER, d.sock, "POST", "/v1/run", "{\"command\":\"true\"}", &r) == 0);
	cr_expect_eq(r.status, 200, "%d %s", r.status, r.body);
	res_free(&r);
	cr_expect_eq(daemon_stop(&d), 0);
	tu_rmtree(wd);
	free(wd);
	free(id);
}

/*
 * --max-bodies-per-caller (here from a --config file): a member whose uploads fill its share
 * gets a 503 naming it, for its next request too, while root and another member are served.
 */

/* cordond OPTION VALUE, a bad byte count: exit 2 and the option's one-line error. */
static void expect_bad_bytes(const char *option, const char *value)
{
	const char *const argv[] = { cordond_bin(), option, value, NULL };
	struct tu_run run;
	char want[160];

	tu_exec(&run, NULL, NULL, (char *const *)argv);
	cr_expect_eq(run.status, 2, "%s %s: status %d", option, value, run.status);
	snprintf(want, sizeof(want),
		 "cordond: %s: expected an integer between 1 and 1099511627776, got '%s'", option,
		 value);
	cr_expect(strstr(run.err, want), "%s", run.err);
	tu_run_free(&run);
}

Test(daemon, bodies_per_caller_share, .timeout = 90)
{
	char *cdir = tu_tmpdir(), conf[300];
	const char *const args[] = {
		"--config",	     conf, "--max-file", "65536", "--max-bodies", "1048576",
		"--request-timeout", "60", NULL
	};
	const char *over = "{\"error\":\"busy: your request bodies in memory would pass 131072 "
			   "bytes (--max-bodies-per-caller); try again\"}\n";
	struct upload_res out[3];
	struct uploads u;
	struct daemon d;
	struct res r;
	struct tu_run run;
	char fmt[128], url[128], *wd = NULL, *wd2 = NULL, *id, *id2, *big;

	ensure_users();
	ensure_member2();
	tu_write_file(cdir, "cordond.conf",
		      "# one caller's share\nmax-bodies-per-caller = 131072\n");
	snprintf(conf, sizeof(conf), "%s/cordond.conf", cdir);
	daemon_start(&d, args);
	id = session_create(d.sock, MEMBER, NULL, &wd);
	id2 = session_create(d.sock, MEMBER2, NULL, &wd2);
	snprintf(fmt, sizeof(fmt), "/v1/sessions/%s/files/f", id);
	/* Two 64 KiB buffers are the member's share: the third upload is over it. */
	uploads_start(&u, MEMBER, d.sock, fmt, 3, 60000);
	cr_assert(http_as(MEMBER, d.sock, "POST", "/v1/run", "{\"command\":\"true\"}", &r) == 0);
	cr_expect_eq(r.status, 503, "%d %s", r.status, r.body);
	cr_expect(r.body && !strcmp(r.body, over), "%s", r.body);
	res_free(&r);
	/* Root and the other member are served, uploads included. */
	http(d.sock, "POST", "/v1/run", "{\"command\":\"echo root-got-through\"}", &r);
	EXPECT(&r, 200, "root-got-through");
	res_free(&r);
	big = malloc(60001);
	cr_assert(big);
	memset(big, 'x', 60000);
	big[60000] = '\0';
	snprintf(url, sizeof(url), "/v1/sessions/%s/files/g", id2);
	cr_assert(http_as(MEMBER2, d.sock, "PUT", url, big, &r) == 0);
	EXPECT(&r, 200, "\"bytes\":60000");
	res_free(&r);
	free(big);
	cr_assert(http_as(MEMBER2, d.sock, "POST", "/v1/run", "{\"command\":\"true\"}", &r) == 0);
	cr_expect_eq(r.status, 200, "%d %s", r.status, r.body);
	res_free(&r);
	uploads_finish(&u, out);
	for (int i = 0; i < 2; i++)
		cr_expect(out[i].status == 200 && strstr(out[i].body, "\"bytes\":60000"),
			  "upload %d: %d %s", i, out[i].status, out[i].body);
	cr_expect_eq(out[2].status, 503, "upload 2: %d %s", out[2].status, out[2].body);
	cr_expect(!strcmp(out[2].body, over), "upload 2: %s", out[2].body);
	/* Given back once they are answered. */
	cr_assert(http_as(MEMBER, d.sock, "POST", "/v1/run", "{\"command\":\"true\"}", &r) == 0);
	cr_expect_eq(r.status, 200, "%d %s", r.status, r.body);
	res_free(&r);
	cr_expect_eq(daemon_stop(&d), 0);

	/* The option: in --help, and validated as the other byte counts are. */
	{
		const char *const argv[] = { cordond_bin(), "--help", NULL };

		tu_exec(&run, NULL, NULL, (char *const *)argv);
		cr_expect_eq(run.status, 0);
		cr_expect(strstr(run.out, "--max-bodies-per-caller BYTES"), "%s", run.out);
		tu_run_free(&run);
	}
	expect_bad_bytes("--max-bodies-per-caller", "1M");
	expect_bad_bytes("--max-bodies-per-caller", "0");
	tu_rmtree(wd);
	tu_rmtree(wd2);
	tu_rmtree(cdir);
	free(wd);
	free(wd2);
	free(cdir);
	free(id);
	free(id2);
}

Test(daemon, slowloris_and_idle, .timeout = 60)
{
	const char *const args[] = { "--request-timeout", "1", NULL };
	struct daemon d;
	struct res r;
	int slow, idle;
	double t0;
	char c;

	daemon_start(&d, args);
	idle = connect_to(d.sock);
	slow = connect_to(d.sock);
	cr_assert(idle >= 0 && slow >= 0);
	write_all(slow, "POST /v1/run HTTP/1.1\r\nHost: x\r\n", 32);
	t0 = now();
	/* A header line every 300 ms never lets MHD's idle timer fire; our deadline does. */
	for (int i = 0; i < 20; i++) {
		struct pollfd p = { .fd = slow, .events = POLLIN };

		if (poll(&p, 1, 300) == 1)
			break;
		if (send(slow, "X-Drip: 1\r\n", 11, MSG_NOSIGNAL) < 0)
			break;
	}
	cr_expect(now() - t0 < 3.5, "slow client kept for %.1fs", now() - t0);
	cr_expect(read(slow, &c, 1) <= 0);
	close(slow);
	/* The one that said nothing is gone too. */
	{
		struct pollfd p = { .fd = idle, .events = POLLIN };

		cr_expect(poll(&p, 1, 3000) == 1, "idle connection not dropped");
		cr_expect(read(idle, &c, 1) <= 0);
	}
	close(idle);
	http(d.sock, "GET", "/v1/health", NULL, &r);
	cr_expect_eq(r.status, 200);
	res_free(&r);
	cr_expect_eq(daemon_stop(&d), 0);
}

/*
 * A child as USER opens n connections to sock and sends nothing; those answered at once are
 * counted as refused (each must be a readable 429). It reports the numbers on *ret_fd, then
 * holds the rest open until that fd is closed.
 */
static pid_t hold_conns(const char *user, const char *sock, int n, int *ret_accepted,
			int *ret_refused, int *ret_fd)
{
	struct passwd *pw = getpwnam(user);
	int to[2], back[2];
	pid_t pid;

	cr_assert(pw && pipe(to) == 0 && pipe(back) == 0);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		struct pollfd *p = calloc((size_t)n, sizeof(*p));
		int counts[2] = { 0, 0 }, bad = 0;
		char c;

		close(to[1]);
		close(back[0]);
		if (!p || initgroups(user, pw->pw_gid) < 0 || setgid(pw->pw_gid) < 0 ||
		    setuid(pw->pw_uid) < 0)
			_exit(3);
		for (int i = 0; i < n; i++) {
			p[i].fd = connect_to(sock);
			p[i].events = POLLIN;
		}
		for (double t0 = now(); now() - t0 < 1.0;)
			(void)poll(p, (nfds_t)n, 100);
		for (int i = 0; i < n; i++) {
			char buf[512];
			ssize_t k;

			if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP))) {
				counts[0] += p[i].fd >= 0;
				continue;
			}
			k = read(p[i].fd, buf, sizeof(buf) - 1);
			buf[k > 0 ? k : 0] = '\0';
			/* A 429 from cordond, or a close by libmicrohttpd at its own hard limit. */
			if (k == 0 || (strncmp(buf, "HTTP/1.1 429", 12) == 0 &&
				       strstr(buf, "{\"error\":\"connections: ")))
				counts[1]++;
			else
				bad++;
			close(p[i].fd);
		}
		counts[1] += 1000 * bad; /* an answer that is not a 429 shows in the count */
		write_all(back[1], counts, sizeof(counts));
		if (read(to[0], &c, 1) < 0)
			_exit(0);
		_exit(0);
	}
	close(to[0]);
	close(back[1]);
	int counts[2];
	cr_assert(read_full(back[0], counts, sizeof(counts)), "holder for %s died", user);
	close(back[0]);
	*ret_accepted = counts[0];
	*ret_refused = counts[1];
	*ret_fd = to[1];
	return pid;
}

static void release(pid_t pid, int fd)
{
	/* Not EOF alone: a later holder's fork keeps a copy of this write end. */
	close(fd);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/*
 * Connection limits apply at accept: one member holding idle connections (a slowloris that
 * never sends a byte) gets at most its own share, the excess answered 429 at once, and can
 * neither take the slots another member needs nor those kept for root.
 */
Test(daemon, connection_limits_at_accept, .timeout = 90)
{
	const char *const args[] = { "--max-connections",
				     "40",
				     "--max-connections-per-caller",
				     "30",
				     "--request-timeout",
				     "60",
				     NULL };
	struct daemon d;
	struct res r;
	int acc, ref, fd1, fd2, fd3;
	pid_t h1, h2, h3;

	ensure_users();
	ensure_member2();
	daemon_start(&d, args);
	/* One member: 35 idle connections, 30 kept, 5 refused (its own limit). */
	h1 = hold_conns(MEMBER, d.sock, 35, &acc, &ref, &fd1);
	cr_expect_eq(acc, 30, "member 1 kept %d connections", acc);
	cr_expect_eq(ref, 5, "member 1: %d refused (1000 per answer that was not a 429)", ref);
	/* Root and the other member are still answered. */
	http(d.sock, "GET", "/v1/health", NULL, &r);
	cr_expect_eq(r.status, 200, "root: %d %s", r.status, r.body);
	res_free(&r);
	cr_assert(http_as(MEMBER2, d.sock, "GET", "/v1/health", NULL, &r) == 0);
	cr_expect_eq(r.status, 200, "member 2: %d %s", r.status, r.body);
	res_free(&r);
	/* The other member fills what is left but root's reserve (40 / 8 = 5): 5 of 10. */
	h2 = hold_conns(MEMBER2, d.sock, 10, &acc, &ref, &fd2);
	cr_expect_eq(acc, 5, "member 2 kept %d connections", acc);
	cr_expect_eq(ref, 5, "member 2: %d refused", ref);
	for (int i = 0; i < 3; i++) {
		http(d.sock, "GET", "/v1/health", NULL, &r);
		cr_expect_eq(r.status, 200, "root, with 35 connections held: %d %s", r.status,
			     r.body);
		res_free(&r);
	}
	/* A member's refused connection frees its slot at once: more tries change nothing. */
	h3 = hold_conns(MEMBER, d.sock, 20, &acc, &ref, &fd3);
	cr_expect_eq(acc, 0, "member 1 got %d more", acc);
	cr_expect_eq(ref, 20, "member 1: %d of 20 more refused", ref);
	http(d.sock, "GET", "/v1/health", NULL, &r);
	cr_expect_eq(r.status, 200, "root, after the flood: %d %s", r.status, r.body);
	res_free(&r);
	release(h3, fd3);
	release(h1, fd1);
	release(h2, fd2);
	/* Released: member 2 is served again. */
	for (int i = 0; i < 50; i++) {
		cr_assert(http_as(MEMBER2, d.sock, "GET", "/v1/health", NULL, &r) == 0);
		if (r.status == 200)
			break;
		res_free(&r);
		usleep(50000);
	}
	cr_expect_eq(r.status, 200);
	res_free(&r);
	cr_expect_eq(daemon_stop(&d), 0);
}

/* The soft RLIMIT_NOFILE of pid, from /proc/pid/limits ("Max open files  SOFT  HARD  files"). */
static long nofile_soft_of(pid_t pid, long *ret_hard)
{
	char path[64], line[256];
	long soft = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/limits", (int)pid);
	f = fopen(path, "re");
	cr_assert(f, "%s", path);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Max open files %ld %ld", &soft, ret_hard) == 2)
			break;
	fclose(f);
	return soft;
}

/*
 * Found in review: cordond kept the soft RLIMIT_NOFILE it was given (1024 under systemd) while
 * its limits allow far more fds (two a connection, about six a run, one a session): one
 * member's idle connections and sessions made every caller's runs fail with EMFILE. cordond
 * raises the soft limit to the hard one, and its runners set back the one it was started with,
 * so that no sandbox inherits the raised one.
 */
Test(daemon, nofile_limit_raised_for_cordond_only, .timeout = 90)
{
	struct rlimit old, low;
	struct daemon d;
	struct res r;
	int acc, ref, fd;
	long soft, hard = 0;
	pid_t h, runners[16];
	char *ids[20];

	ensure_users();
	ensure_member2();
	cr_assert(getrlimit(RLIMIT_NOFILE, &old) == 0);
	if (old.rlim_max < 1024)
		DAEMON_SKIP("the hard RLIMIT_NOFILE here is under 1024");
	low = (struct rlimit){ .rlim_cur = 128, .rlim_max = old.rlim_max };
	cr_assert(setrlimit(RLIMIT_NOFILE, &low) == 0);
	daemon_start(&d, NULL);
	cr_assert(setrlimit(RLIMIT_NOFILE, &old) == 0);
	soft = nofile_soft_of(d.pid, &hard);
	cr_assert_eq(soft, (long)old.rlim_max, "cordond's soft limit is %ld", soft);
	/* One member: 100 idle connections and 20 sessions, over 128 fds in all. */
	h = hold_conns(MEMBER, d.sock, 100, &acc, &ref, &fd);
	cr_assert_eq(acc, 100);
	for (int i = 0; i < 20; i++)
		ids[i] = session_create(d.sock, MEMBER, "{}", NULL);
	cr_assert_gt(count_fds(d.pid), 128);
	cr_assert(http_as(MEMBER2, d.sock, "POST", "/v1/run", "{\"command\":\"ulimit -Sn\"}", &r) ==
		  0);
	EXPECT(&r, 200, "\"exit_code\": 0");
	res_free(&r);
	/* Its runners, and so its sandboxes, have the limit cordond was started with. */
	cr_assert_gt(children_of(d.pid, true, NULL, runners), 0);
	cr_assert_eq(nofile_soft_of(runners[0], &hard), 128);
	release(h, fd);
	for (int i = 0; i < 20; i++) {
		char path[80];

		snprintf(path, sizeof(path), "/v1/sessions/%s", ids[i]);
		cr_assert(http_as(MEMBER, d.sock, "DELETE", path, NULL, &r) == 0);
		EXPECT(&r, 200, "");
		res_free(&r);
		free(ids[i]);
	}
	cr_assert_eq(daemon_stop(&d), 0);
}

Test(daemon, disconnect_kills_run, .timeout = 60)
{
	struct daemon d;
	struct res r;
	int fd;
	double t0;

	daemon_start(&d, NULL);
	fd = send_open(d.sock, "{\"command\":\"sleep 31.5 && touch /tmp/cordon-test-late\"}");
	for (t0 = now(); !process_alive("sleep 31.5") && now() - t0 < 5;)
		usleep(20000);
	cr_assert(process_alive("sleep 31.5"), "the run did not start");
	close(fd);
	for (t0 = now(); process_alive("sleep 31.5") && now() - t0 < 5;)
		usleep(20000);
	cr_expect(!process_alive("sleep 31.5"), "the run outlived its client");
	cr_expect(now() - t0 < 2, "took %.1fs to kill", now() - t0);
	/* The run's teardown (reaping, cgroup removal) follows the kill by a moment. */
	for (t0 = now(); count_children(d.pid) > 0 && now() - t0 < 3;)
		usleep(20000);
	cr_expect_eq(count_children(d.pid), 0);
	usleep(100 * 1000);
	http(d.sock, "GET", "/metrics", NULL, &r);
	cr_expect(body_has(&r, "cordond_cancelled_total 1"), "%s", r.body);
	cr_expect(body_has(&r, "cordond_runs_in_flight 0"));
	res_free(&r);
	/* A half-close is not a disconnect: the client still gets its answer. */
	fd = send_open(d.sock, "{\"command\":\"sleep 0.5; echo patient\"}");
	shutdown(fd, SHUT_WR);
	read_reply(fd, &r);
	close(fd);
	EXPECT(&r, 200, "patient");
	res_free(&r);
	cr_expect_eq(daemon_stop(&d), 0);
}

Test(daemon, sigterm_grace, .timeout = 60)
{
	const char *const args[] = { "--grace", "1", NULL };
	struct daemon d;
	struct res r;
	int fd, fd2, st = 0;
	double t0;
	char keep[] = "/tmp/cordon-test-keep-XXXXXX", body[300];

	daemon_start(&d, args);
	cr_assert(mkdtemp(keep));
	tu_write_file(keep, "mine", "x");
	snprintf(body, sizeof(body),
		 "{\"command\":\"sleep 0.3; echo finished\",\"workdir\":\"%s\"}", keep);
	fd = send_open(d.sock, body);
	fd2 = send_open(d.sock, "{\"command\":\"sleep 32.5\"}");
	for (t0 = now(); !process_alive("sleep 32.5") && now() - t0 < 5;)
		usleep(20000);
	t0 = now();
	kill(d.pid, SIGTERM);
	/* The short run finishes inside the grace time; the long one is killed after it. */
	read_reply(fd, &r);
	EXPECT(&r, 200, "finished");
	res_free(&r);
	read_reply(fd2, &r);
	cr_expect_eq(r.status, 200);
	/* Terminated because cordond was: reported as a cordon run given SIGTERM reports it. */
	EXPECT_FIELD(&r, "output", "[exit code: -15]");
	EXPECT_FIELD(&r, "signal", "15");
	EXPECT_FIELD(&r, "exit_code", "-15");
	res_free(&r);
	close(fd);
	close(fd2);
	cr_assert(waitpid(d.pid, &st, 0) == d.pid);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status %x", st);
	cr_expect(now() - t0 < 4, "stopping took %.1fs", now() - t0);
	cr_expect(!process_alive("sleep 32.5"));
	/* Nothing the user made is removed; the socket is. */
	cr_expect(access(keep, F_OK) == 0);
	cr_expect(access(d.sock, F_OK) != 0, "socket left behind");
	d.pid = 0;
	tu_rmtree(keep);
	tu_rmtree(d.dir);
}

Test(daemon, no_leaks, .timeout = 120)
{
	struct daemon d;
	struct res r;
	int fds0, fds1, runners0, runners1, rfds0 = 0, rfds1 = 0;
	char *id;

	daemon_start(&d, NULL);
	/* Warm up (first-use allocations, lazily opened files), then let connections close. */
	http(d.sock, "POST", "/v1/run", "{\"command\":\"true\"}", &r);
	res_free(&r);
	usleep(200 * 1000);
	fds0 = count_fds(d.pid);
	runners0 = children_of(d.pid, true, &rfds0, NULL);
	for (int i = 0; i < 30; i++) {
		http(d.sock, "POST", "/v1/run", "{\"command\":\"echo x; exit 1\"}", &r);
		res_free(&r);
		http(d.sock, "POST", "/v1/run", "{\"command\":\"x\",\"timeout\":-1}", &r);
		res_free(&r);
		http(d.sock, "POST", "/v1/run", "{\"command\":\"sleep 3.25 & echo bg\"}", &r);
		res_free(&r);
		http(d.sock, "GET", "/v1/sessions/0123456789abcdef0123456789abcdef/files/a", NULL,
		     &r);
		res_free(&r);
	}
	id = session_create(d.sock, NULL, NULL, NULL);
	{
		char url[128];

		snprintf(url, sizeof(url), "/v1/sessions/%s/files/f", id);
		http(d.sock, "PUT", url, "data", &r);
		res_free(&r);
		http(d.sock, "GET", url, NULL, &r);
		res_free(&r);
		snprintf(url, sizeof(url), "/v1/sessions/%s", id);
		http(d.sock, "DELETE", url, NULL, &r);
		res_free(&r);
	}
	free(id);
	usleep(200 * 1000);
	fds1 = count_fds(d.pid);
	cr_expect_eq(fds1, fds0, "fds of cordond: %d before, %d after", fds0, fds1);
	/* The runners are reused, and keep nothing of a run either. */
	runners1 = children_of(d.pid, true, &rfds1, NULL);
	cr_expect_gt(runners0, 0, "no runners");
	cr_expect_eq(runners1, runners0, "runners: %d before, %d after", runners0, runners1);
	cr_expect_eq(rfds1, rfds0, "fds of the runners: %d before, %d after", rfds0, rfds1);
	cr_expect_eq(count_children(d.pid), 0, "processes left behind");
	cr_expect(!process_alive("sleep 3.25"), "background job left behind");
	cr_expect_eq(daemon_stop(&d), 0);
}

/*
 * One reply on a keep-alive connection: the head, then Content-Length bytes of body, into *r.
 * false when the connection ended first.
 */
static bool read_one_res(int fd, struct res *r)
{
	char head[8192], *cl;
	size_t n = 0, len;

	memset(r, 0, sizeof(*r));
	while (n < sizeof(head) - 1) {
		if (read(fd, head + n, 1) != 1)
			return false;
		head[++n] = '\0';
		if (n >= 4 && !memcmp(head + n - 4, "\r\n\r\n", 4))
			break;
	}
	cl = strcasestr(head, "Content-Length:");
	if (!cl)
		return false;
	len = strtoul(cl + 15, NULL, 10);
	r->body = calloc(1, len + 1);
	r->head = strdup(head);
	r->len = len;
	sscanf(head, "HTTP/1.1 %d", &r->status);
	if (!r->body || !r->head || !read_full(fd, r->body, len)) {
		res_free(r);
		return false;
	}
	return true;
}

/* The body (malloc'd) of the next reply on a keep-alive connection, or NULL. */
static char *read_one_reply(int fd)
{
	struct res r;

	if (!read_one_res(fd, &r))
		return NULL;
	free(r.head);
	return r.body;
}

/*
 * A run's teardown goes on after its answer, while the connection reads its next request
 * (http.c, teardown_start), but a connection never has more than one: when the answer of run
 * i arrives, the temp workdir of run i-2 is gone; a request other than a run waits for the
 * last run's teardown. And once the connection is closed, every one of them is gone, with
 * nothing left behind. As a member, whose temp workdirs cordond
 * makes (and removes) as the member, so that they can be seen from here.
 */
Test(daemon, keep_alive_teardowns_are_bounded, .timeout = 60)
{
	enum { RUNS = 8 };
	struct passwd *pw;
	struct daemon d;
	char line[RUNS][PATH_MAX];
	int p[2], st, lines = 0, older_left[RUNS], last_left = -1;
	FILE *f;
	pid_t pid;

	ensure_users();
	pw = getpwnam(MEMBER);
	cr_assert(pw);
	daemon_start(&d, NULL);
	cr_assert(pipe(p) == 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		static const char req[] = "POST /v1/run HTTP/1.1\r\nHost: cordond\r\n"
					  "Content-Type: application/json\r\n"
					  "Content-Length: 17\r\n\r\n{\"command\":\"pwd\"}";
		/*
		 * The last run leaves 3,000 files in its workdir: removing them (after the
		 * runner's teardown) takes long enough that a request not waiting for it would
		 * be answered first.
		 */
		static const char last[] = "POST /v1/run HTTP/1.1\r\nHost: cordond\r\n"
					   "Content-Type: application/json\r\n"
					   "Content-Length: 36\r\n\r\n"
					   "{\"command\":\"pwd; touch $(seq 3000)\"}";
		char wd[RUNS][PATH_MAX];
		FILE *out;
		int fd;

		close(p[0]);
		out = fdopen(p[1], "w");
		if (!out || initgroups(MEMBER, pw->pw_gid) < 0 || setgid(pw->pw_gid) < 0 ||
		    setuid(pw->pw_uid) < 0 || (fd = connect_to(d.sock)) < 0)
			_exit(3);
		for (int i = 0; i < RUNS; i++) {
			char *body, *w, *end;

			if (i == RUNS - 1)
				write_all(fd, last, sizeof(last) - 1);
			else
				write_all(fd, req, sizeof(req) - 1);
			body = read_one_reply(fd);
			w = body ? strstr(body, "\"workdir\": \"") : NULL;
			end = w ? strchr(w + 12, '"') : NULL;
			if (!end) {
				fprintf(stderr, "reply %d: %s\n", i, body ? body : "(none)");
				_exit(4);
			}
			*end = '\0';
			snprintf(wd[i], sizeof(wd[i]), "%s", w + 12);
			/* The member can see its own temp workdirs: /tmp/cordon-XXXXXX, theirs. */
			fprintf(out, "%s %d\n", wd[i], i >= 2 ? access(wd[i - 2], F_OK) == 0 : 0);
			free(body);
		}
		/* Anything but a run waits for the last run's teardown: its workdir is gone. */
		{
			static const char health[] =
				"GET /v1/health HTTP/1.1\r\nHost: cordond\r\n\r\n";
			char *body;

			write_all(fd, health, sizeof(health) - 1);
			body = read_one_reply(fd);
			if (!body)
				_exit(5);
			fprintf(out, "after-health %d\n", access(wd[RUNS - 1], F_OK) == 0);
			free(body);
		}
		close(fd);
		fclose(out);
		_exit(0);
	}
	close(p[1]);
	f = fdopen(p[0], "r");
	cr_assert(f);
	while (lines < RUNS && fscanf(f, "%4095s %d", line[lines], &older_left[lines]) == 2)
		lines++;
	cr_expect(fscanf(f, " after-health %d", &last_left) == 1);
	fclose(f);
	cr_assert(waitpid(pid, &st, 0) == pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the client failed: %x", st);
	cr_assert_eq(lines, RUNS);
	for (int i = 0; i < RUNS; i++) {
		cr_expect(strncmp(line[i], "/tmp/cordon-", 12) == 0, "run %d: %s", i, line[i]);
		cr_expect_eq(older_left[i], 0,
			     "run %d answered with run %d's workdir %s still there", i, i - 2,
			     i >= 2 ? line[i - 2] : "");
		for (int j = 0; j < i; j++)
			cr_expect(strcmp(line[i], line[j]), "runs %d and %d share %s", j, i,
				  line[i]);
	}
	cr_expect_eq(last_left, 0,
		     "a request after the last run was answered with its workdir there");
	/* The last ones go once the connection is closed (cordond notices the close first). */
	for (double t0 = now(); now() - t0 < 10;) {
		bool any = false;

		for (int i = 0; i < RUNS; i++)
			any |= access(line[i], F_OK) == 0;
		if (!any)
			break;
		usleep(20000);
	}
	for (int i = 0; i < RUNS; i++)
		cr_expect(access(line[i], F_OK) != 0, "temp workdir %s left behind", line[i]);
	cr_expect_eq(count_children(d.pid), 0, "processes left behind");
	cr_expect_eq(daemon_stop(&d), 0);
}

/* ---- runners ---- */

/* The host pid of the process whose command line starts with marker, or -1. */
static pid_t find_proc(const char *marker)
{
	struct proc_find f = { marker, true, -1 };

	tu_each_proc(find_first, &f);
	return f.pid;
}

static pid_t parent_of(pid_t pid)
{
	char path[64], buf[1024], *p;
	FILE *f;
	int pp = -1;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
		(void)sscanf(p + 2, "%*c %d", &pp);
	fclose(f);
	return pp;
}

/* POST body to /v1/run in a child process; returns its pid (its exit code is the HTTP status / 100). */
static pid_t run_in_background(const char *sock, const char *body)
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct res r;

		if (http(sock, "POST", "/v1/run", body, &r) < 0)
			_exit(99);
		_exit(r.status / 100);
	}
	return pid;
}

static pid_t wait_for_proc(const char *marker)
{
	pid_t p = -1;

	for (int i = 0; i < 500 && (p = find_proc(marker)) < 0; i++)
		usleep(10000);
	cr_assert_gt(p, 0, "no '%s' process appeared", marker);
	return p;
}

/* The pid of the process whose cmdline has needle and whose VmRSS is at least kb, or -1. */
static pid_t big_proc(const char *needle, long kb)
{
	pid_t p = find_proc(needle);
	char path[64], line[256];
	long rss = 0;
	FILE *f;

	if (p < 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)p);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &rss) == 1)
			break;
	fclose(f);
	return rss >= kb ? p : -1;
}

/*
 * The run's answer comes before its teardown (cordond answers, then tears down), but the
 * placeholders of absent masked names go only when every process of the run is gone, not
 * while one killed at the command's end is still dying: a killed process finishes the system
 * call it is in before it dies (a lookup that waits for the disk, say), and a mkdir of
 * `.bashrc` that looks the name up after its placeholder went would make it on the host. A
 * background dd holding 640 MiB takes tens of milliseconds to die after its SIGKILL; its pidfd
 * and an inotify watch on the workdir say which came first. Until 2026-11-26 init reported the
 * command's end right after its SIGKILL to the rest, and the runner removed the placeholders
 * while dd was still dying (this test failed: the placeholder went about 20 ms before).
 */
Test(daemon, placeholders_outlive_the_runs_processes, .timeout = 90)
{
	char wd[] = "/tmp/cordon-test-ph-XXXXXX", sub[64], go[64], rc[64], body[1024];
	double t_del, t_exit;
	struct daemon d;
	pid_t client, dd = -1;
	int in, pidfd, st;

	cr_assert_not_null(mkdtemp(wd));
	snprintf(sub, sizeof(sub), "%s/sub", wd);
	snprintf(go, sizeof(go), "%s/go", wd);
	snprintf(rc, sizeof(rc), "%s/.bashrc", wd);
	cr_assert_eq(mkdir(sub, 0755), 0);
	daemon_start(&d, NULL);
	snprintf(body, sizeof(body),
		 "{\"command\":\"(cd sub && dd if=/dev/zero bs=640M count=1 | sleep 60) "
		 "</dev/null >/dev/null 2>&1 & i=0; while [ ! -e go ] && [ $i -lt 1500 ]; do "
		 "sleep 0.02; i=$((i+1)); done; echo done\",\"workdir\":\"%s\"}",
		 wd);
	client = run_in_background(d.sock, body);
	for (int i = 0; i < 2000 && (dd = big_proc("dd if=/dev/zero bs=640M", 600 * 1024)) < 0; i++)
		usleep(10000);
	cr_assert_gt(dd, 0, "dd never held its 640 MiB");
	cr_assert(access(rc, F_OK) == 0, "no placeholder for the absent .bashrc during the run");
	pidfd = (int)syscall(SYS_pidfd_open, dd, 0);
	cr_assert_geq(pidfd, 0, "pidfd_open: %s", strerror(errno));
	in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	cr_assert_geq(in, 0);
	cr_assert_geq(inotify_add_watch(in, wd, IN_DELETE), 0);
	close(open(go, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	tu_exit_and_delete(pidfd, in, ".bashrc", 20000, &t_exit, &t_del);
	cr_assert_eq(waitpid(client, &st, 0), client);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 2, "the run's answer was not a 200");
	cr_expect(t_exit > 0, "dd did not die with the run");
	cr_expect(t_del > 0, "the .bashrc placeholder was not removed after the run");
	cr_expect(t_exit <= t_del,
		  "the .bashrc placeholder went %.1f ms before the run's last process was gone",
		  t_exit - t_del);
	cr_expect(access(rc, F_OK) < 0, ".bashrc exists on the host after the run");
	close(in);
	close(pidfd);
	cr_expect_eq(daemon_stop(&d), 0);
	tu_rmtree(wd);
}

/* The /tmp entries named prefix*, one per line, sorted. */
static char *tmp_entries(const char *prefix)
{
	char cmd[200], *out = NULL;
	size_t n = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "ls -d /tmp/%s* 2>/dev/null | LC_ALL=C sort", prefix);
	f = popen(cmd, "r");
	cr_assert(f);
	if (getdelim(&out, &n, 0, f) < 0 && out)
		out[0] = 0;
	pclose(f);
	return out ? out : strdup("");
}

/* The kernel's table of file locks, /proc/locks (malloc'd). */
static char *read_locks(void)
{
	char *locks = NULL;
	size_t n = 0;
	FILE *f = fopen("/proc/locks", "re");

	cr_assert(f);
	if (getdelim(&locks, &n, 0, f) < 0 && locks)
		locks[0] = 0;
	fclose(f);
	return locks;
}

/* Does the lock table show a lock on st's file, held by pid (by anyone: pid 0)? */
static bool locked(const char *locks, const struct stat *st, pid_t pid)
{
	char key[96];

	if (pid > 0)
		snprintf(key, sizeof(key), " %d %02x:%02x:%lu ", (int)pid, major(st->st_dev),
			 minor(st->st_dev), (unsigned long)st->st_ino);
	else
		snprintf(key, sizeof(key), " %02x:%02x:%lu ", major(st->st_dev), minor(st->st_dev),
			 (unsigned long)st->st_ino);
	return locks && strstr(locks, key);
}

/*
 * The /tmp entries named prefix* that process pid holds an flock on (/proc/locks): cordond holds
 * its runners' directories and its members' temp workdirs. Other tests running meanwhile make
 * entries of the same names, which this keeps apart. Newline-separated, malloc'd.
 */
static char *held_by(pid_t pid, const char *prefix)
{
	char *locks = read_locks(), *out = calloc(1, 1), *names = tmp_entries(prefix), *save = NULL;
	size_t len = 0;

	cr_assert(out);
	for (char *l = strtok_r(names, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		struct stat st;

		if (lstat(l, &st) < 0 || !S_ISDIR(st.st_mode) || !locked(locks, &st, pid))
			continue;
		out = realloc(out, len + strlen(l) + 2);
		cr_assert(out);
		len += (size_t)sprintf(out + len, "%s\n", l);
	}
	free(locks);
	free(names);
	return out;
}

/* How many of the newline-separated paths in list still exist. */
static int count_present(const char *list)
{
	char *copy = strdup(list), *save = NULL;
	int n = 0;

	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		n += access(l, F_OK) == 0;
	free(copy);
	return n;
}

/*
 * Every path in list is gone, within 10 s: a restarted cordond sweeps what its killed
 * predecessor left once it has started, and its socket may answer before that is done (on a
 * loaded machine, it did).
 */
static void expect_gone(const char *list, const char *what)
{
	char *copy, *save = NULL;

	for (int i = 0; i < 1000 && count_present(list) > 0; i++)
		usleep(10000);
	copy = strdup(list);
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		cr_expect(access(l, F_OK) != 0, "%s %s left after a restart", what, l);
	free(copy);
}

/* The value of a counter or gauge in a /metrics reply, or -1. */
static long metric(const struct res *r, const char *name)
{
	char key[128];
	const char *p;

	snprintf(key, sizeof(key), "\n%s ", name);
	p = strstr(r->body, key);
	return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

/*
 * Every request is authorised (SPEC section 7), not only a connection's first: a member taken
 * out of group cordon is refused on the connections they hold open as well, at their next
 * request, and their runs there have their groups as they are now. It was decided once, at
 * accept, so a keep-alive connection kept serving a removed member for as long as they sent
 * a request within each --request-timeout, that is for ever (found in review).
 */
#define KEEPER "cordon-tk"

/* One request on the keep-alive connection fd; its reply into *r. false: the connection ended. */
static bool ka_call(int fd, const char *method, const char *path, const char *body, struct res *r)
{
	char head[512];
	size_t blen = body ? strlen(body) : 0;

	snprintf(head, sizeof(head),
		 "%s %s HTTP/1.1\r\nHost: cordond\r\n%sContent-Length: %zu\r\n\r\n", method, path,
		 body ? "Content-Type: application/json\r\n" : "", blen);
	write_all(fd, head, strlen(head));
	if (blen)
		write_all(fd, body, blen);
	return read_one_res(fd, r);
}

/* POST /v1/run on the keep-alive connection fd: the reply's body (malloc'd), or NULL. */
static char *ka_request(int fd, const char *body)
{
	struct res r;

	if (!ka_call(fd, "POST", "/v1/run", body, &r))
		return NULL;
	free(r.head);
	return r.body;
}

Test(daemon, group_removal_applies_to_open_connections, .timeout = 60)
{
	struct daemon d;
	char *b;
	int fd;

	ensure_users();
	cr_assert_eq(system("flock /tmp/cordon-test-users.lock sh -c '"
			    "id " KEEPER " >/dev/null 2>&1 || useradd -M -N -s /bin/sh " KEEPER
			    "; gpasswd -a " KEEPER " cordon' >/dev/null 2>&1"),
		     0, "cannot make " KEEPER);
	daemon_start(&d, NULL);
	fd = connect_as(KEEPER, d.sock);
	b = ka_request(fd, "{\"command\":\"echo in\"}");
	cr_assert(b && strstr(b, "\"output\": \"in\""), "%s", b ? b : "(no reply)");
	free(b);
	cr_assert_eq(
		system("flock /tmp/cordon-test-users.lock gpasswd -d " KEEPER " cordon >/dev/null"),
		0);
	b = ka_request(fd, "{\"command\":\"echo still in\"}");
	cr_expect(b && strstr(b, "not authorised: uid"), "a removed member was served: %s",
		  b ? b : "(no reply)");
	free(b);
	close(fd);
	cr_expect_eq(daemon_stop(&d), 0);
}

/*
 * The runner pool follows the load (runners.c): CLIENTS clients sending run after run on
 * keep-alive connections keep at most two runners busy each (one running, one tearing down
 * the client's last run), and as many idle ones are kept as were busy at once, so the pool
 * stops growing there. A fixed cap of 4 idle runners started a runner for about one run in
 * five under such a load (and discarded as many): far more than this bound. Once the load
 * is over (--runner-idle 1: the pool remembers the last 1 to 2 s), the extra idle runners
 * are stopped, back to 4, with nothing of them left.
 */
Test(daemon, runner_pool_follows_the_load, .timeout = 90)
{
	enum { CLIENTS = 6, RUNS = 30 };
	const char *const args[] = { "--runner-idle", "1", NULL };
	struct daemon d;
	struct res r;
	pid_t kids[CLIENTS];
	long started, idle;

	daemon_start(&d, args);
	for (int k = 0; k < CLIENTS; k++) {
		kids[k] = fork();
		cr_assert_geq(kids[k], 0);
		if (kids[k] == 0) {
			static const char req[] =
				"POST /v1/run HTTP/1.1\r\nHost: cordond\r\n"
				"Content-Type: application/json\r\n"
				"Content-Length: 18\r\n\r\n{\"command\":\"true\"}";
			int fd = connect_to(d.sock);

			if (fd < 0)
				_exit(3);
			for (int i = 0; i < RUNS; i++) {
				char *body;

				write_all(fd, req, sizeof(req) - 1);
				body = read_one_reply(fd);
				if (!body || !strstr(body, "\"exit_code\": 0"))
					_exit(4);
				free(body);
			}
			_exit(0);
		}
	}
	for (int k = 0; k < CLIENTS; k++) {
		int st;

		cr_assert(waitpid(kids[k], &st, 0) == kids[k]);
		cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "client %d: %x", k, st);
	}
	cr_assert(http(d.sock, "GET", "/metrics", NULL, &r) == 0);
	cr_assert_eq(r.status, 200);
	started = metric(&r, "cordond_runners_started_total");
	idle = metric(&r, "cordond_runners_idle");
	cr_expect_eq(metric(&r, "cordond_runs_total"), CLIENTS * RUNS, "%s", r.body);
	cr_expect_gt(started, 0, "%s", r.body);
	/* Each client's two, the spare, and one more that a waiting request may have asked for. */
	cr_expect_leq(started, 2 * CLIENTS + 2, "%ld runners started for %d runs", started,
		      CLIENTS * RUNS);
	cr_expect_geq(idle, 1, "%s", r.body);
	cr_expect_leq(idle, started, "%s", r.body);
	cr_expect_geq(metric(&r, "cordond_runner_waits_total"), 0, "%s", r.body);
	res_free(&r);
	/* The load is over: down to 4 idle runners within a few seconds. */
	for (double t0 = now(); now() - t0 < 20; usleep(100 * 1000)) {
		cr_assert(http(d.sock, "GET", "/metrics", NULL, &r) == 0);
		idle = metric(&r, "cordond_runners_idle");
		res_free(&r);
		if (idle <= 4)
			break;
	}
	cr_expect_eq(idle, 4, "idle runners after the load");
	{
		char *held = held_by(d.pid, "cordond-runner-");
		int dirs = 0;

		for (char *c = held; *c; c++)
			dirs += *c == '\n';
		free(held);
		/* The stopped ones are reaped, and their directories gone: one of each per runner. */
		cr_expect_eq(children_of(d.pid, true, NULL, NULL), 4);
		cr_expect_eq(dirs, 4, "runner directories held by cordond");
	}
	cr_expect_eq(count_children(d.pid), 0, "processes left behind");
	cr_expect_eq(daemon_stop(&d), 0);
}

/*
 * A SIGKILLed cordond leaves its runners' directories (one holding a root run's workdir), its
 * members' temp workdirs and its runners' cgroups: the next cordond removes them at start.
 */
Test(daemon, killed_daemon_leftovers_removed_at_start, .timeout = 90)
{
	char *runners, *temps;
	pid_t runner_pids[16], root_bg, member_bg;
	struct daemon d, d2;
	int nrunners;

	ensure_users();
	daemon_start(&d, NULL);
	root_bg = run_in_background(d.sock, "{\"command\":\"sleep 41.5\"}");
	member_bg = fork();
	cr_assert(member_bg >= 0);
	if (member_bg == 0) {
		struct res r;

		(void)http_as(MEMBER, d.sock, "POST", "/v1/run", "{\"command\":\"sleep 42.5\"}",
			      &r);
		_exit(0);
	}
	wait_for_proc("sleep 41.5");
	wait_for_proc("sleep 42.5");
	nrunners = children_of(d.pid, true, NULL, runner_pids);
	cr_assert(nrunners > 0 && nrunners <= 16);
	runners = held_by(d.pid, "cordond-runner-");
	temps = held_by(d.pid, "cordon-");
	cr_assert(runners[0], "cordond holds no runner directory");
	cr_assert(temps[0], "cordond holds no member temp workdir");

	kill(d.pid, SIGKILL);
	waitpid(d.pid, NULL, 0);
	for (int i = 0; i < 500 && (find_proc("sleep 41.5") > 0 || find_proc("sleep 42.5") > 0);
	     i++)
		usleep(10000);
	cr_expect(find_proc("sleep 41.5") < 0 && find_proc("sleep 42.5") < 0,
		  "a run outlived its cordond");
	waitpid(root_bg, NULL, 0);
	waitpid(member_bg, NULL, 0);
	tu_rmtree(d.dir);
	/* Precondition: the kill left them. */
	cr_expect(access(strtok(strdup(runners), "\n"), F_OK) == 0,
		  "the kill left no runner directory");

	/* cordond removes dead creators' cgroups 2 s old (younger: a later run, a minute on). */
	usleep(2100000);
	daemon_start(&d2, NULL);
	expect_gone(runners, "runner directory");
	expect_gone(temps, "member temp workdir");
	for (int i = 0; i < nrunners; i++) {
		for (int k = 0; k < 1000 && tu_run_cgroups(runner_pids[i], NULL, 0) > 0; k++)
			usleep(10000);
		cr_expect_eq(tu_run_cgroups(runner_pids[i], NULL, 0), 0,
			     "runner %d's cgroups left after a restart", (int)runner_pids[i]);
	}
	cr_expect_eq(daemon_stop(&d2), 0);
	free(runners);
	free(temps);
}

/*
 * A sandbox is cloned by a runner (`cordon __cordond-runner`, cordond's child), not by
 * cordond: its init is a copy of that small process, not of the daemon and everything the
 * daemon holds for other callers.
 */
Test(daemon, runs_happen_in_runners, .timeout = 60)
{
	struct daemon d;
	char cmd[512];
	pid_t client, sleeper, init, runner;
	int st;

	daemon_start(&d, NULL);
	client = run_in_background(d.sock, "{\"command\":\"sleep 78.5\",\"timeout\":30}");
	sleeper = wait_for_proc("sleep 78.5");
	init = parent_of(sleeper);
	runner = parent_of(init);
	tu_cmdline(runner, cmd, sizeof(cmd));
	cr_expect(strstr(cmd, "cordon __cordond-runner") != NULL, "the sandbox's init's parent: %s",
		  cmd);
	cr_expect_eq(parent_of(runner), d.pid, "the runner is not cordond's child");
	/* The run still ends as a run does: killed when its client goes. */
	kill(client, SIGKILL);
	waitpid(client, &st, 0);
	for (int i = 0; i < 300 && find_proc("sleep 78.5") > 0; i++)
		usleep(10000);
	cr_expect_lt(find_proc("sleep 78.5"), 0, "the run outlived its client");
	cr_expect_eq(daemon_stop(&d), 0);
	tu_cmdline(runner, cmd, sizeof(cmd));
	cr_expect(strstr(cmd, "__cordond-runner") == NULL, "a runner outlived cordond");
}

/* SIGKILL every idle runner of cordond (pid), and give cordond a moment to see them go. */
static void kill_idle_runners(pid_t pid)
{
	pid_t idle[16];
	int n = children_of(pid, true, NULL, idle);

	cr_assert_gt(n, 0);
	for (int i = 0; i < n && i < 16; i++)
		kill(idle[i], SIGKILL);
	usleep(50 * 1000);
}

/* A runner that dies mid-run: that run gets a 500, nothing of it is left, the next one runs. */
Test(daemon, runner_killed_mid_run, .timeout = 60)
{
	struct daemon d;
	struct res r;
	char wd[512];
	pid_t client, sleeper, runner;
	int st;

	daemon_start(&d, NULL);
	client = run_in_background(d.sock, "{\"command\":\"sleep 79.5\",\"timeout\":30}");
	sleeper = wait_for_proc("sleep 79.5");
	runner = parent_of(parent_of(sleeper));
	cr_assert_gt(runner, 1);
	/* The run's temp workdir (the command's cwd): only inside the sandbox, not on the host. */
	{
		char link[64];
		ssize_t k;

		snprintf(link, sizeof(link), "/proc/%d/cwd", (int)sleeper);
		k = readlink(link, wd, sizeof(wd) - 1);
		cr_assert_gt(k, 0);
		wd[k] = '\0';
		cr_assert(strncmp(wd, "/tmp/cordon-", 12) == 0, "%s", wd);
		cr_assert_neq(access(wd, F_OK), 0, "%s is on the host", wd);
	}
	kill(runner, SIGKILL);
	waitpid(client, &st, 0);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 5, "the client got %#x, not a 500", st);
	for (int i = 0; i < 300 && find_proc("sleep 79.5") > 0; i++)
		usleep(10000);
	cr_expect_lt(find_proc("sleep 79.5"), 0, "the run outlived its runner");
	cr_expect_neq(access(wd, F_OK), 0, "the dead runner's temp workdir %s is left", wd);
	/* Its cgroups too: the run's (its processes died with it), and what it had staged. */
	cr_expect_eq(tu_run_cgroups(runner, NULL, 0), 0, "cgroups of the killed runner %d are left",
		     (int)runner);
	cr_assert(http(d.sock, "POST", "/v1/run", "{\"command\":\"echo again\"}", &r) == 0);
	EXPECT_FIELD(&r, "output", "again");
	res_free(&r);
	/* Idle runners killed: the next run is not lost with them. */
	kill_idle_runners(d.pid);
	cr_assert(http(d.sock, "POST", "/v1/run", "{\"command\":\"echo still\"}", &r) == 0);
	EXPECT_FIELD(&r, "output", "still");
	res_free(&r);
	cr_expect_eq(daemon_stop(&d), 0);
}

/*
 * What a run sees of its sandbox: its identity and privileges, seccomp, the hostname, its pid
 * (in its own pid namespace), the network (only lo), the mounts and the root. A sandbox made in
 * cordond itself must show exactly what one made in a runner shows.
 */
#define SANDBOX_PROBE                                                                              \
	"grep -E '^(Uid|Gid|Groups|NoNewPrivs|Seccomp|CapInh|CapPrm|CapEff|CapBnd|CapAmb):' "      \
	"/proc/self/status; cat /proc/sys/kernel/hostname; echo pid $$; "                          \
	"tail -n +3 /proc/net/dev | cut -d: -f1; wc -l < /proc/self/mounts; ls /"

static char *sandbox_probe(const char *sock)
{
	struct res r;
	char *out;

	cr_assert(http(sock, "POST", "/v1/run", "{\"command\":\"" SANDBOX_PROBE "\"}", &r) == 0);
	cr_assert_eq(r.status, 200, "%s", r.body);
	out = jfield(&r, "output");
	res_free(&r);
	return out;
}

/* The probe's output shows a sandbox: no privileges, seccomp, cordon's hostname, only lo. */
static void expect_sandboxed(const char *probe)
{
	static const char *const want[] = { "NoNewPrivs:\t1\n",
					    "Seccomp:\t2\n",
					    "CapEff:\t0000000000000000\n",
					    "CapBnd:\t0000000000000000\n",
					    "CapAmb:\t0000000000000000\n",
					    "\ncordon\npid ",
					    "\n    lo\n" };

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		cr_expect(strstr(probe, want[i]), "no '%s' in: %s", want[i], probe);
	cr_expect(!strstr(probe, "Uid:\t0\t"), "root in the sandbox: %s", probe);
	cr_expect(!strstr(probe, "eth") && !strstr(probe, "ens"), "a network: %s", probe);
}

/* Without a runner binary (cordond alone in a directory), runs happen in cordond itself. */
Test(daemon, runs_without_a_runner_binary, .timeout = 60)
{
	struct daemon d;
	struct res r;
	char dir[] = "/tmp/cordond-alone-XXXXXX", bin[64], cmd[128];
	struct stat st;
	bool installed =
		stat(CORDON_BINDIR "/cordon", &st) == 0 && st.st_uid == 0 && !(st.st_mode & 022);

	cr_assert_not_null(mkdtemp(dir));
	snprintf(bin, sizeof(bin), "%s/cordond", dir);
	snprintf(cmd, sizeof(cmd), "cp %s %s", cordond_bin(), bin);
	cr_assert_eq(system(cmd), 0);
	daemon_start_bin(&d, bin, NULL);
	cr_assert(http(d.sock, "POST", "/v1/run", "{\"command\":\"echo alone; exit 4\"}", &r) == 0);
	EXPECT_FIELD(&r, "output", "alone\n[exit code: 4]");
	res_free(&r);
	/* Sandboxed all the same. */
	{
		char *probe = sandbox_probe(d.sock);

		expect_sandboxed(probe);
		free(probe);
	}
	cr_expect_eq(children_of(d.pid, true, NULL, NULL) > 0, installed,
		     "runners without a runner binary (or none with one in " CORDON_BINDIR ")");
	cr_expect_eq(daemon_stop(&d), 0);
	tu_rmtree(dir);
}

/*
 * The runner binary is opened once, when cordond starts, and runners are that file: replacing
 * it on disk (an upgrade, or a swap) does not change what cordond runs as root.
 */
Test(daemon, runner_binary_is_held_open, .timeout = 60)
{
	struct daemon d;
	struct res r;
	char dir[] = "/tmp/cordond-held-XXXXXX", cmd[512], path[128];

	cr_assert_not_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "cp %s %s/cordond && cp %s %s/cordon", cordond_bin(), dir,
		 tu_cordon(), dir);
	cr_assert_eq(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/cordond", dir);
	daemon_start_bin(&d, path, NULL);
	cr_assert(http(d.sock, "POST", "/v1/run", "{\"command\":\"echo first\"}", &r) == 0);
	EXPECT_FIELD(&r, "output", "first");
	res_free(&r);
	/* Swapped for something else, and every runner gone: new ones are the original file. */
	snprintf(path, sizeof(path), "%s/cordon", dir);
	cr_assert_eq(unlink(path), 0);
	tu_write_file(dir, "cordon", "#!/bin/sh\nexit 3\n");
	cr_assert_eq(chmod(path, 0755), 0);
	kill_idle_runners(d.pid);
	cr_assert(http(d.sock, "POST", "/v1/run", "{\"command\":\"echo second\"}", &r) == 0);
	EXPECT_FIELD(&r, "output", "second");
	res_free(&r);
	cr_expect_gt(children_of(d.pid, true, NULL, NULL), 0, "no runner after the swap");
	cr_expect_eq(daemon_stop(&d), 0);
	tu_rmtree(dir);
}

/* `cordon __cordond-runner` serving the other end of sv[1] as its fd 3; returns its pid. */
static pid_t start_runner(int sv[2])
{
	pid_t pid;

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (dup2(sv[1], 3) < 0)
			_exit(127);
		execl(tu_cordon(), "cordon", "__cordond-runner", (char *)NULL);
		_exit(127);
	}
	close(sv[1]);
	return pid;
}

/* One frame as cordond sends it: a 4-byte length, then the bytes. */
static void send_frame(int fd, const void *buf, uint32_t len, uint32_t claimed)
{
	cr_assert_eq(write(fd, &claimed, 4), 4);
	if (len)
		cr_assert_eq(write(fd, buf, len), (ssize_t)len);
}

/* The header line of the runner's next frame, or "" at EOF. */
static void read_frame(int fd, char *buf, size_t n)
{
	uint32_t len = 0;
	size_t got = 0;
	struct pollfd p = { .fd = fd, .events = POLLIN };

	buf[0] = '\0';
	cr_assert_eq(poll(&p, 1, 10000), 1, "the runner said nothing");
	if (read(fd, &len, 4) != 4)
		return;
	cr_assert_lt(len, n);
	while (got < len) {
		ssize_t k = read(fd, buf + got, len - got);

		cr_assert_gt(k, 0);
		got += (size_t)k;
	}
	buf[got] = '\0';
	if (strchr(buf, '\n'))
		*strchr(buf, '\n') = '\0';
}

/*
 * The runner trusts cordond and nothing else, but a malformed request still gets an answer and
 * not a run, and a broken frame ends it; started by hand without its socket, it does nothing.
 */
Test(daemon, runner_refuses_bad_frames, .timeout = 60)
{
	static const char *const bad[] = {
		"not json\n{\"command\":\"touch /tmp/cordon-runner-ran\"}",
		"{\"profile\":\"default\"}\n{\"command\":\"touch /tmp/cordon-runner-ran\"}",
		"{\"profile\":\"default\",\"session\":false,\"uid\":-1,\"gid\":0,\"cap\":100}\n"
		"{\"command\":\"touch /tmp/cordon-runner-ran\"}",
		/* a workdir path without its fd */
		"{\"profile\":\"default\",\"session\":false,\"uid\":0,\"gid\":0,\"cap\":100,"
		"\"workdir\":\"/etc\"}\n{\"command\":\"touch /tmp/cordon-runner-ran\"}",
		/* prebuild that is not a boolean */
		"{\"profile\":\"default\",\"session\":false,\"uid\":0,\"gid\":0,\"cap\":100,"
		"\"prebuild\":\"yes\"}\n{\"command\":\"touch /tmp/cordon-runner-ran\"}",
		/* groups that are not a list of gids */
		"{\"profile\":\"default\",\"session\":false,\"uid\":0,\"gid\":0,\"cap\":100,"
		"\"groups\":[0,\"wheel\"]}\n{\"command\":\"touch /tmp/cordon-runner-ran\"}",
		"{\"profile\":\"default\",\"session\":false,\"uid\":0,\"gid\":0,\"cap\":100,"
		"\"groups\":[-1]}\n{\"command\":\"touch /tmp/cordon-runner-ran\"}",
		"{\"profile\":\"default\",\"session\":false,\"uid\":0,\"gid\":0,\"cap\":100,"
		"\"groups\":7}\n{\"command\":\"touch /tmp/cordon-runner-ran\"}",
	};
	char buf[8192];
	int sv[2], st;
	pid_t pid;

	unlink("/tmp/cordon-runner-ran");
	pid = start_runner(sv);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		send_frame(sv[0], bad[i], (uint32_t)strlen(bad[i]), (uint32_t)strlen(bad[i]));
		read_frame(sv[0], buf, sizeof(buf));
		cr_expect(strstr(buf, "\"status\":500") && strstr(buf, "malformed"), "%zu: %s", i,
			  buf);
		read_frame(sv[0], buf, sizeof(buf));
		cr_expect_str_eq(buf, "{\"done\":true}");
	}
	/* A body cordond would have refused: a 400 naming the field, nothing run. */
	{
		const char *f = "{\"profile\":\"default\",\"session\":false,\"uid\":0,\"gid\":0,"
				"\"cap\":100}\n{\"command\":7}";

		send_frame(sv[0], f, (uint32_t)strlen(f), (uint32_t)strlen(f));
		read_frame(sv[0], buf, sizeof(buf));
		cr_expect(strstr(buf, "\"status\":400") && strstr(buf, "command"), "%s", buf);
		read_frame(sv[0], buf, sizeof(buf));
		cr_expect_str_eq(buf, "{\"done\":true}");
	}
	cr_expect_neq(access("/tmp/cordon-runner-ran", F_OK), 0, "a malformed request ran");
	/* A frame longer than allowed, or one cut short: the runner exits, having run nothing. */
	send_frame(sv[0], "x", 1, 0xffffffffu);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 1, "status %#x", st);
	close(sv[0]);
	pid = start_runner(sv);
	send_frame(sv[0], "{", 1, 100);
	close(sv[0]);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 1, "status %#x", st);
	/* By hand, with no socket on fd 3: nothing to serve. */
	{
		struct tu_run r;
		const char *const args[] = { "__cordond-runner", NULL };

		tu_cordon_run(&r, args);
		cr_expect_neq(r.status, 0);
		tu_run_free(&r);
	}
}

/* ---- starting: stale sockets, socket activation ---- */

Test(daemon, stale_socket_and_refusals, .timeout = 60)
{
	struct daemon d;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, st;
	char out[300];
	struct tu_run run;

	/* A stale socket (its daemon died) is replaced. */
	snprintf(d.dir, sizeof(d.dir), "/tmp/cordond-stale-XXXXXX");
	cr_assert(mkdtemp(d.dir));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/s", d.dir);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	cr_assert(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	close(fd);
	{
		const char *argv[] = { cordond_bin(), "--socket", sa.sun_path, NULL };
		pid_t pid = fork();

		if (pid == 0) {
			int null = open("/dev/null", O_WRONLY);

			dup2(null, 2);
			execv(argv[0], (char **)argv);
			_exit(127);
		}
		for (double t0 = now(); !sock_answers(sa.sun_path) && now() - t0 < 5;)
			usleep(10000);
		cr_expect(sock_answers(sa.sun_path), "stale socket not replaced");
		/* A second daemon on a live socket refuses to start and leaves it alone. */
		const char *const argv2[] = { cordond_bin(), "--socket", sa.sun_path, NULL };
		tu_exec(&run, NULL, NULL, (char *const *)argv2);
		cr_expect_eq(run.status, 1);
		cr_expect(strstr(run.err, "another daemon answers"), "%s", run.err);
		tu_run_free(&run);
		cr_expect(sock_answers(sa.sun_path));
		kill(pid, SIGTERM);
		waitpid(pid, &st, 0);
	}
	/* Not a socket: left alone. */
	snprintf(out, sizeof(out), "%s/file", d.dir);
	tu_write_file(d.dir, "file", "precious");
	{
		const char *const argv[] = { cordond_bin(), "--socket", out, NULL };

		tu_exec(&run, NULL, NULL, (char *const *)argv);
		cr_expect_eq(run.status, 1);
		cr_expect(strstr(run.err, "exists and is not a socket"), "%s", run.err);
		tu_run_free(&run);
	}
	/* Bad options. */
	{
		const char *const argv[] = { cordond_bin(), "--max-runs", "0", NULL };

		tu_exec(&run, NULL, NULL, (char *const *)argv);
		cr_expect_eq(run.status, 2);
		cr_expect(strstr(run.err, "--max-runs"), "%s", run.err);
		tu_run_free(&run);
	}
	expect_bad_bytes("--max-bodies", "64k");
	expect_bad_bytes("--max-bodies", "0");
	{
		const char *const argv[] = { cordond_bin(), "--runner-idle", "0", NULL };

		tu_exec(&run, NULL, NULL, (char *const *)argv);
		cr_expect_eq(run.status, 2);
		cr_expect(strstr(run.err,
				 "cordond: --runner-idle: expected a number of seconds > 0, "
				 "got '0'"),
			  "%s", run.err);
		tu_run_free(&run);
	}
	tu_rmtree(d.dir);
}

/*
 * Bad options and --config lines: exit 2 and one line naming what is wrong. Before, a missing
 * value and an unknown option were the same "unknown option or missing value", and a bad value
 * in a --config file was two lines (the option's, then "FILE:N: bad value for 'KEY'").
 */
static void expect_cordond_error(const char *const *args, const char *want)
{
	const char *argv[8] = { cordond_bin() };
	struct tu_run run;

	for (int i = 0; args[i] && i < 6; i++)
		argv[i + 1] = args[i];
	tu_exec(&run, NULL, NULL, (char *const *)argv);
	cr_expect_eq(run.status, 2, "%s: status %d", args[0], run.status);
	cr_expect_str_eq(run.err, want, "%s", args[0]);
	tu_run_free(&run);
}

Test(daemon, option_errors_are_one_line, .timeout = 30)
{
	char *dir = tu_tmpdir(), conf[300], want[400];

	expect_cordond_error((const char *const[]){ "--bogus", NULL },
			     "cordond: unknown option '--bogus' (see cordond --help)\n");
	expect_cordond_error((const char *const[]){ "-x", NULL },
			     "cordond: unknown option '-x' (see cordond --help)\n");
	expect_cordond_error((const char *const[]){ "--socket", NULL },
			     "cordond: option '--socket' needs a value\n");
	/* It said "unknown option '-h'". */
	expect_cordond_error((const char *const[]){ "--help=1", NULL },
			     "cordond: option '--help' takes no value\n");
	expect_cordond_error((const char *const[]){ "--max-runs", "abc", NULL },
			     "cordond: --max-runs: expected an integer between 1 and 100000, "
			     "got 'abc'\n");
	tu_write_file(dir, "c.conf", "# limits\nmax-runs = abc\n");
	snprintf(conf, sizeof(conf), "%s/c.conf", dir);
	snprintf(want, sizeof(want),
		 "cordond: %s:2: max-runs: expected an integer between 1 and 100000, got 'abc'\n",
		 conf);
	expect_cordond_error((const char *const[]){ "--config", conf, NULL }, want);
	tu_write_file(dir, "c.conf", "group =\n");
	snprintf(want, sizeof(want), "cordond: %s:1: group: empty name\n", conf);
	expect_cordond_error((const char *const[]){ "--config", conf, NULL }, want);
	/* An allowed image must be an image reference (a typo would otherwise allow nothing). */
	expect_cordond_error((const char *const[]){ "--docker-image", "a b", NULL },
			     "cordond: --docker-image: 'a b' is not an image reference\n");
	expect_cordond_error((const char *const[]){ "--daytona-image", "x::1", NULL },
			     "cordond: --daytona-image: 'x::1' is not an image reference\n");
	tu_write_file(dir, "c.conf", "docker-image = busybox\ndocker-image = /busybox\n");
	snprintf(want, sizeof(want),
		 "cordond: %s:2: docker-image: '/busybox' is not an image reference\n", conf);
	expect_cordond_error((const char *const[]){ "--config", conf, NULL }, want);
	tu_rmtree(dir);
	free(dir);
}

Test(daemon, socket_activation, .timeout = 60)
{
	char dir[] = "/tmp/cordond-act-XXXXXX", sock[128];
	struct res r = { 0 };
	pid_t pid;
	int st;

	if (access("/usr/bin/systemd-socket-activate", X_OK) != 0)
		DAEMON_SKIP("systemd-socket-activate is not installed");
	if (access(cordond_bin(), X_OK) != 0)
		DAEMON_SKIP("cordond is not built");
	cr_assert(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/s", dir);
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 2);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		/* --socket too: were activation ignored, it must not fall back to /run's socket. */
		execl("/usr/bin/systemd-socket-activate", "systemd-socket-activate", "-l", sock,
		      cordond_bin(), "--socket", "/nonexistent/fallback", NULL);
		_exit(127);
	}
	/*
	 * The first connection starts cordond, which serves it on the inherited socket. The
	 * socket's file exists from bind(), a moment before listen(): a connection refused in
	 * between is tried again (seen under load).
	 */
	for (double t0 = now(); now() - t0 < 5; usleep(10000))
		if (access(sock, F_OK) == 0 &&
		    http(sock, "POST", "/v1/run", "{\"command\":\"echo activated\"}", &r) == 0)
			break;
	cr_assert(r.status != 0, "no answer on the activation socket %s", sock);
	cr_expect_eq(r.status, 200);
	EXPECT_FIELD(&r, "output", "activated");
	res_free(&r);
	kill(pid, SIGTERM);
	waitpid(pid, &st, 0);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %x", st);
	tu_rmtree(dir);
}

/* ---- the CLI through the daemon ---- */

static void cli_env(struct tu_run *run, const char *sock, const char *extra,
		    const char *const args[])
{
	char env[200];
	char *const envp[] = { env, (char *)extra, NULL };
	const char *argv[32] = { tu_cordon() };
	int n = 1;

	snprintf(env, sizeof(env), "CORDON_SOCKET=%s", sock);
	for (int i = 0; args[i]; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	tu_exec(run, NULL, envp, (char *const *)argv);
}

static void cli(struct tu_run *run, const char *sock, const char *const args[])
{
	cli_env(run, sock, NULL, args);
}

/*
 * A CORDON_PROFILE_PATH of the caller's that gives a profile name another definition than
 * cordond's (a stricter default.conf of one's own): found in review, cordond ran the run under
 * its own profile of that name, silently. Now cordond refuses it (409) under --via daemon, and
 * --via auto runs it directly, under the caller's profile. The same definition elsewhere (a
 * copy) still goes through cordond.
 */
Test(daemon, caller_profile_path_is_not_silently_replaced, .timeout = 60)
{
	struct daemon d;
	struct tu_run a;
	char *dir = tu_tmpdir(), *same = tu_tmpdir(), *wd = tu_tmpdir(), env[400], cmd[600], f[500];
	const char *const via_daemon[] = {
		"run", "--via", "daemon", "-w", wd, "--", "touch x && echo wrote", NULL
	};
	const char *const via_auto[] = { "run", "-w", wd, "--", "touch y && echo wrote", NULL };

	chmod(dir, 0755);
	chmod(same, 0755);
	snprintf(cmd, sizeof(cmd),
		 "sed 's/^readonly = false/readonly = true/' %s/profiles/default.conf > "
		 "%s/default.conf && cp %s/profiles/default.conf %s/",
		 CORDON_SRCDIR, dir, CORDON_SRCDIR, same);
	cr_assert_eq(system(cmd), 0);
	daemon_start(&d, NULL);
	snprintf(env, sizeof(env), "CORDON_PROFILE_PATH=%s", dir);
	cli_env(&a, d.sock, env, via_daemon);
	cr_expect_eq(a.status, 125, "status %d: %s%s", a.status, a.out, a.err);
	cr_expect(strstr(a.err, "HTTP 409") && strstr(a.err, "not the same profile"), "%s", a.err);
	tu_run_free(&a);
	cli_env(&a, d.sock, env, via_auto);
	cr_expect_eq(a.status, 126, "auto did not run under the caller's readonly profile: %d %s%s",
		     a.status, a.out, a.err);
	tu_run_free(&a);
	snprintf(f, sizeof(f), "%s/x", wd);
	cr_expect_neq(access(f, F_OK), 0, "the run went through cordond's profile");
	snprintf(f, sizeof(f), "%s/y", wd);
	cr_expect_neq(access(f, F_OK), 0, "the run went through cordond's profile");
	snprintf(env, sizeof(env), "CORDON_PROFILE_PATH=%s", same);
	cli_env(&a, d.sock, env, via_daemon);
	cr_expect_eq(a.status, 0, "the same profile elsewhere: %d %s%s", a.status, a.out, a.err);
	tu_run_free(&a);
	cr_expect_eq(daemon_stop(&d), 0);
	tu_rmtree(dir);
	tu_rmtree(same);
	tu_rmtree(wd);
	free(dir);
	free(same);
	free(wd);
}

/*
 * The command's umask is its client's, as in a direct run (found in review: through cordond
 * every command ran with cordond's 022, so a caller's 077 made world-readable files). The
 * CLI sends its own; a body may say it ("umask": 63); a bad one is a 400.
 */
Test(daemon, commands_get_the_clients_umask, .timeout = 60)
{
	struct daemon d;
	struct res r;
	struct tu_run a;
	struct stat st;
	char *wd = tu_tmpdir(), body[600], f[500];
	const char *const args[] = {
		"run", "--via", "daemon", "-w", wd, "--", "touch viacli", NULL
	};
	mode_t old;

	daemon_start(&d, NULL);
	old = umask(077);
	cli(&a, d.sock, args);
	umask(old);
	cr_expect_eq(a.status, 0, "%d %s%s", a.status, a.out, a.err);
	tu_run_free(&a);
	snprintf(f, sizeof(f), "%s/viacli", wd);
	cr_assert_eq(stat(f, &st), 0);
	cr_expect_eq(st.st_mode & 0777, 0600, "the CLI's umask 077 gave %o", st.st_mode & 0777);
	for (int k = 0; k < 3; k++) {
		/* Twice with a umask (a pre-built sandbox takes the second), once without. */
		snprintf(body, sizeof(body), "{\"command\":\"touch b%d\",\"workdir\":\"%s\"%s}", k,
			 wd, k < 2 ? ",\"umask\":63" : "");
		cr_assert(http(d.sock, "POST", "/v1/run", body, &r) == 0);
		cr_expect_eq(r.status, 200);
		res_free(&r);
		snprintf(f, sizeof(f), "%s/b%d", wd, k);
		cr_assert_eq(stat(f, &st), 0);
		cr_expect_eq(st.st_mode & 0777, k < 2 ? 0600 : 0644, "b%d: %o", k,
			     st.st_mode & 0777);
	}
	static const char *const bad[] = { "-1", "512", "\"077\"", "1.5", "true" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(body, sizeof(body), "{\"command\":\"true\",\"umask\":%s}", bad[i]);
		cr_assert(http(d.sock, "POST", "/v1/run", body, &r) == 0);
		EXPECT(&r, 400, "umask: expected an integer from 0 to 511");
		res_free(&r);
	}
	cr_expect_eq(daemon_stop(&d), 0);
	tu_rmtree(wd);
	free(wd);
}

/* How many fds of any process name path (readlink of /proc/PID/fd/N). */
static int fds_naming(const char *path)
{
	DIR *proc = opendir("/proc");
	struct dirent *de;
	int n = 0;

	cr_assert(proc);
	while ((de = readdir(proc))) {
		char dir[300], link[600], target[4096];
		DIR *fds;
		struct dirent *f;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(dir, sizeof(dir), "/proc/%s/fd", de->d_name);
		fds = opendir(dir);
		if (!fds)
			continue;
		while ((f = readdir(fds))) {
			ssize_t k;

			snprintf(link, sizeof(link), "%s/%s", dir, f->d_name);
			k = readlink(link, target, sizeof(target) - 1);
			if (k <= 0)
				continue;
			target[k] = '\0';
			n += strcmp(target, path) == 0;
		}
		closedir(fds);
	}
	closedir(proc);
	return n;
}

/*
 * Nothing of a run outlives it in the sandbox pre-built after it: the runner closed the run's
 * workdir only after pre-building, so the next sandbox's waiting init held the caller's
 * directory (its file system could not be unmounted) for as long as it waited, for another
 * caller's run (found in review).
 */
Test(daemon, prebuilt_sandbox_holds_no_earlier_workdir, .timeout = 60)
{
	struct daemon d;
	struct res r;
	char *wd = tu_tmpdir(), body[600];
	int held = -1;

	daemon_start(&d, NULL);
	snprintf(body, sizeof(body), "{\"command\":\"echo hi > f\",\"workdir\":\"%s\"}", wd);
	cr_assert(http(d.sock, "POST", "/v1/run", body, &r) == 0);
	cr_expect_eq(r.status, 200);
	res_free(&r);
	/* The runner answers, tears down, then pre-builds: give it the time to. */
	for (int i = 0; i < 100 && held != 0; i++) {
		usleep(20000);
		held = fds_naming(wd);
	}
	cr_expect_eq(held, 0, "%d fds still name %s after its run", held, wd);
	cr_expect_eq(daemon_stop(&d), 0);
	tu_rmtree(wd);
	free(wd);
}

/*
 * Any environment name without '=' is taken: a caller's environment may hold bash's exported
 * functions (BASH_FUNC_which%%) or names such as A.B, which AG2's subprocess passes on; a 400
 * for them made every exec of an ag2-compat environment fail on such hosts (found in review).
 */
Test(daemon, env_names_any_but_with_equals, .timeout = 60)
{
	struct daemon d;
	struct res r;

	daemon_start(&d, NULL);
	cr_assert(http(d.sock, "POST", "/v1/run",
		       "{\"argv\":[\"printenv\",\"A.B\"],\"env\":{\"BASH_FUNC_which%%\":"
		       "\"() { echo w; }\",\"1ABC\":\"x\",\"A.B\":\"y\"}}",
		       &r) == 0);
	EXPECT(&r, 200, "\"stdout\": \"y\\n\"");
	res_free(&r);
	cr_assert(http(d.sock, "POST", "/v1/run", "{\"command\":\"x\",\"env\":{\"A=B\":\"c\"}}",
		       &r) == 0);
	EXPECT(&r, 400, "env: invalid variable name 'A=B'");
	res_free(&r);
	cr_expect_eq(daemon_stop(&d), 0);
}

/*
 * A member's run has the member's groups, all of those the group database gives them, as the
 * documentation always said: it had the primary gid only. Missing groups are not only less
 * access (a group's files unreadable in one's own run): a group can be a denial, a file
 * "rw----r--" of group G that everyone but G may read, and dropping G gets past it, which is
 * why the kernel forbids setgroups in an unprivileged user namespace. Through cordond a member
 * read such a file that they cannot read themselves (found in review).
 */
Test(daemon, runs_have_the_callers_groups, .timeout = 60)
{
	struct daemon d;
	struct res r;
	struct passwd *pw;
	struct group *gr = getgrnam("cordon");
	char body[1024], want[64], path[600], url[256], *wd = tu_tmpdir(), *id, *o;

	ensure_users();
	pw = getpwnam(MEMBER);
	cr_assert(pw && gr);
	cr_assert(chown(wd, pw->pw_uid, pw->pw_gid) == 0);
	/* Everyone may read it but group cordon, which the member is in. */
	tu_write_file(wd, "not-for-cordon", "secret");
	snprintf(path, sizeof(path), "%s/not-for-cordon", wd);
	cr_assert(chown(path, 0, gr->gr_gid) == 0 && chmod(path, 0604) == 0);
	snprintf(want, sizeof(want), " %u ", (unsigned)gr->gr_gid);
	daemon_start(&d, NULL);

	snprintf(body, sizeof(body),
		 "{\"command\":\"echo \\\" $(id -G) \\\"; cat not-for-cordon\",\"workdir\":\"%s\"}",
		 wd);
	cr_assert(http_as(MEMBER, d.sock, "POST", "/v1/run", body, &r) == 0);
	cr_assert_eq(r.status, 200, "%s", r.body);
	o = jfield(&r, "stdout");
	cr_expect(strstr(o, want), "the run lacks group cordon (%u): %s", (unsigned)gr->gr_gid, o);
	cr_expect(!strstr(o, "secret"), "the run read a file its group may not: %s", o);
	free(o);
	res_free(&r);
	/* A session's runs as well. */
	snprintf(body, sizeof(body), "{\"workdir\":\"%s\"}", wd);
	id = session_create(d.sock, MEMBER, body, NULL);
	snprintf(url, sizeof(url), "/v1/sessions/%s/run", id);
	cr_assert(http_as(MEMBER, d.sock, "POST", url,
			  "{\"command\":\"echo \\\" $(id -G) \\\"; cat not-for-cordon\"}",
			  &r) == 0);
	cr_assert_eq(r.status, 200, "%s", r.body);
	o = jfield(&r, "stdout");
	cr_expect(strstr(o, want), "the session's run lacks group cordon: %s", o);
	cr_expect(!strstr(o, "secret"), "the session's run read a file its group may not: %s", o);
	free(o);
	res_free(&r);
	/* Root's own runs have the run's gid only, never root's groups (docs/security.md). */
	cr_assert(http(d.sock, "POST", "/v1/run", "{\"command\":\"id -G\"}", &r) == 0);
	EXPECT_FIELD(&r, "output", "65533");
	res_free(&r);
	cr_expect_eq(daemon_stop(&d), 0);
	tu_rmtree(wd);
	free(wd);
	free(id);
}

/*
 * The policy resolves the paths a command names (ignore patterns, AG2's realpath rule) with the
 * caller's rights, as a direct run of the caller does: in a runner as root it followed links
 * the caller may not read, and the refusal named their targets (found in review): a symlink in
 * a directory of root's (0700), and /proc/<pid>/fd/N of any process, cordond's own included,
 * told a member which files they lead to.
 */
Test(daemon, policy_paths_resolved_with_the_callers_rights, .timeout = 60)
{
	struct daemon d;
	struct res r;
	struct passwd *pw;
	char body[2048], lnk[600], *hidden = tu_tmpdir(), *own = tu_tmpdir(), *o;

	ensure_users();
	pw = getpwnam(MEMBER);
	cr_assert(pw);
	/* hidden: root's, 0700; own: the member's workdir. */
	snprintf(lnk, sizeof(lnk), "%s/lnk", hidden);
	cr_assert(symlink("/nonexistent/cordon-hidden-target", lnk) == 0);
	cr_assert(chown(own, pw->pw_uid, pw->pw_gid) == 0);
	{
		char mine[600];

		snprintf(mine, sizeof(mine), "%s/mine", own);
		cr_assert(symlink("/etc/passwd", mine) == 0);
		cr_assert(lchown(mine, pw->pw_uid, pw->pw_gid) == 0);
	}
	daemon_start(&d, NULL);

	snprintf(body, sizeof(body),
		 "{\"command\":\"cat %s\",\"ignore\":[\"*cordon-hidden-target*\"],"
		 "\"workdir\":\"%s\"}",
		 lnk, own);
	cr_assert(http_as(MEMBER, d.sock, "POST", "/v1/run", body, &r) == 0);
	cr_assert_eq(r.status, 200, "%s", r.body);
	o = jfield(&r, "output");
	cr_expect(!strstr(o, "cordon-hidden-target"), "a member learnt a link's target: %s", o);
	free(o);
	res_free(&r);
	/* What cordond's stdout is (its log, in the test's directory). */
	snprintf(body, sizeof(body),
		 "{\"command\":\"cat /proc/%d/fd/1\",\"ignore\":[\"/*\"],\"workdir\":\"%s\"}",
		 (int)d.pid, own);
	cr_assert(http_as(MEMBER, d.sock, "POST", "/v1/run", body, &r) == 0);
	cr_assert_eq(r.status, 200, "%s", r.body);
	o = jfield(&r, "output");
	cr_expect(!strstr(o, d.dir), "a member learnt what cordond's fd 1 is: %s", o);
	free(o);
	res_free(&r);
	/* The member's own links are followed as before, and root's resolution is root's. */
	snprintf(body, sizeof(body),
		 "{\"command\":\"cat mine\",\"ignore\":[\"/etc/passwd\"],\"workdir\":\"%s\"}", own);
	cr_assert(http_as(MEMBER, d.sock, "POST", "/v1/run", body, &r) == 0);
	EXPECT_FIELD(&r, "output", "Access denied: /etc/passwd");
	res_free(&r);
	snprintf(body, sizeof(body),
		 "{\"command\":\"cat %s\",\"ignore\":[\"*cordon-hidden-target*\"]}", lnk);
	cr_assert(http(d.sock, "POST", "/v1/run", body, &r) == 0);
	EXPECT_FIELD(&r, "output", "Access denied: /nonexistent/cordon-hidden-target");
	res_free(&r);
	cr_expect_eq(daemon_stop(&d), 0);
	tu_rmtree(hidden);
	tu_rmtree(own);
	free(hidden);
	free(own);
}

/*
 * A workdir the local sandbox cannot have (it builds /, /tmp, /proc and /dev itself) is the
 * caller's mistake: 400 naming the field, before anything is made, and no session of it. It
 * was a 500 ("cordon failed") after the missing directories were made, and a session created
 * (201) whose every run then failed with a 500.
 */
Test(daemon, workdirs_the_sandbox_builds_are_refused, .timeout = 60)
{
	struct daemon d;
	struct res r;
	struct passwd *pw;
	char body[1024], made[128], lnk[600], *own = tu_tmpdir();
	const char *const wds[] = { "/tmp", "/tmp/", "/dev/shm", made, "/tmp/../dev/shm", lnk };

	ensure_users();
	pw = getpwnam(MEMBER);
	cr_assert(pw);
	cr_assert(chown(own, pw->pw_uid, pw->pw_gid) == 0);
	snprintf(made, sizeof(made), "/dev/shm/cordon-test-wd-%d/sub", (int)getpid());
	/* The member's own symlink into /dev/shm: the directory it names is what counts. */
	snprintf(lnk, sizeof(lnk), "%s/shm", own);
	cr_assert(symlink("/dev/shm", lnk) == 0);
	daemon_start(&d, NULL);
	for (size_t i = 0; i < sizeof(wds) / sizeof(wds[0]); i++) {
		snprintf(body, sizeof(body), "{\"command\":\"touch ran\",\"workdir\":\"%s\"}",
			 wds[i]);
		cr_assert(http_as(MEMBER, d.sock, "POST", "/v1/run", body, &r) == 0);
		EXPECT(&r, 400, "workdir: ");
		EXPECT(&r, 400, "cannot be /, /tmp, or in /proc or /dev");
		res_free(&r);
		snprintf(body, sizeof(body), "{\"workdir\":\"%s\"}", wds[i]);
		cr_assert(http_as(MEMBER, d.sock, "POST", "/v1/sessions", body, &r) == 0);
		EXPECT(&r, 400, "cannot be /, /tmp, or in /proc or /dev");
		res_free(&r);
	}
	cr_expect(access("/dev/shm/ran", F_OK) != 0);
	{
		char dir[128];

		snprintf(dir, sizeof(dir), "/dev/shm/cordon-test-wd-%d", (int)getpid());
		cr_expect(access(dir, F_OK) != 0, "%s was made for a refused workdir", dir);
		/* What a failure made (tu_rmtree keeps to /tmp): empty, as nothing ran there. */
		(void)rmdir(made);
		(void)rmdir(dir);
	}
	/* Below /tmp is a workdir like any other. */
	snprintf(body, sizeof(body), "{\"command\":\"touch ran\",\"workdir\":\"%s/sub\"}", own);
	cr_assert(http_as(MEMBER, d.sock, "POST", "/v1/run", body, &r) == 0);
	EXPECT(&r, 200, "\"exit_code\": 0");
	res_free(&r);
	cr_expect_eq(daemon_stop(&d), 0);
	tu_rmtree(own);
	free(own);
}

/*
 * The workdir's scan for what to hide (ignore patterns, masks) walks it with the caller's
 * rights, as the command will see it and as a direct run of the caller walks it: made as root
 * in the runner, it went into other users' directories the caller may not read (a workdir
 * such as a shared 1777 directory holds them), and every name it hid there, with each
 * directory on the way, became a mount point listed in the sandbox's /proc/self/mountinfo: a
 * member read the names in another user's 0700 directory (found in review).
 */
Test(daemon, hide_scan_sees_what_the_caller_sees, .timeout = 60)
{
	struct daemon d;
	struct res r;
	struct passwd *pw, *other;
	char body[1024], path[1200], shared[128], *top = tu_tmpdir(), *o;

	ensure_users();
	pw = getpwnam(MEMBER);
	other = getpwnam(OUTSIDER);
	cr_assert(pw && other);
	/*
	 * Not top itself: a sticky /tmp/cordon-* directory is what cordond's start sweeps as a
	 * killed run's leftover.
	 */
	cr_assert(chmod(top, 0755) == 0);
	snprintf(shared, sizeof(shared), "%s/shared", top);
	cr_assert(mkdir(shared, 0777) == 0 && chmod(shared, 01777) == 0);
	/* Another user's private tree in the shared directory. */
	snprintf(path, sizeof(path), "%s/theirs", shared);
	cr_assert(mkdir(path, 0700) == 0);
	snprintf(path, sizeof(path), "%s/theirs/deep", shared);
	cr_assert(mkdir(path, 0700) == 0);
	tu_write_file(path, "their-cordon-private-name", "theirs");
	snprintf(path, sizeof(path),
		 "chown -R %u:%u %s/theirs && chmod 700 %s/theirs %s/theirs/deep",
		 (unsigned)other->pw_uid, (unsigned)other->pw_gid, shared, shared, shared);
	cr_assert_eq(system(path), 0);
	/*
	 * And the member's own file of that name, which is to be hidden. (The command names
	 * mountinfo through a variable: compat's ignore check refuses a path outside the
	 * workdir, as AG2's does.)
	 */
	tu_write_file(shared, "my-cordon-private-name", "mine");
	snprintf(path, sizeof(path), "%s/my-cordon-private-name", shared);
	cr_assert(chown(path, pw->pw_uid, pw->pw_gid) == 0);
	daemon_start(&d, NULL);

	snprintf(body, sizeof(body),
		 "{\"command\":\"f=/proc/self/mountinfo; cat $f; cat my*\","
		 "\"ignore\":[\"*private-name*\"],\"workdir\":\"%s\"}",
		 shared);
	cr_assert(http_as(MEMBER, d.sock, "POST", "/v1/run", body, &r) == 0);
	cr_assert_eq(r.status, 200, "%s", r.body);
	o = jfield(&r, "stdout");
	cr_expect(!strstr(o, "their-cordon-private-name") && !strstr(o, "theirs/deep"),
		  "the sandbox named what is in another user's 0700 directory: %s", o);
	cr_expect(strstr(o, "my-cordon-private-name"), "the member's own file was not hidden: %s",
		  r.body);
	cr_expect(!strstr(o, "mine"), "the member's own ignored file was read: %s", o);
	free(o);
	res_free(&r);
	cr_expect_eq(daemon_stop(&d), 0);
	tu_rmtree(top);
	free(top);
}

Test(daemon, cli_via_daemon, .timeout = 90)
{
	struct daemon d;
	struct tu_run a, b;
	static const char *const cmds[][8] = {
		{ "echo hi; echo err >&2; exit 3", NULL },
		{ "sleep 5", "-t", "1.0", NULL },
		{ "rm -rf x", "--block", "rm", NULL },
		{ "echo abcdef", "--max-output", "3", NULL },
		{ "echo $FOO", "-e", "FOO=bar", NULL },
		{ "kill -9 $$", NULL },
	};

	daemon_start(&d, NULL);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		const char *args[16] = { "run", "--via", "daemon" };
		int n = 3;

		for (int k = 1; cmds[i][k]; k++)
			args[n++] = cmds[i][k];
		args[n++] = "--";
		args[n++] = cmds[i][0];
		args[n] = NULL;
		cli(&a, d.sock, args);
		args[2] = "direct";
		cli(&b, d.sock, args);
		cr_expect_str_eq(a.out, b.out, "%s: daemon '%s' vs direct '%s'", cmds[i][0], a.out,
				 b.out);
		cr_expect_eq(a.status, b.status, "%s: daemon %d vs direct %d (%s)", cmds[i][0],
			     a.status, b.status, a.err);
		tu_run_free(&a);
		tu_run_free(&b);
	}
	{
		const char *const args[] = { "run", "--via", "auto", "--format", "json",
					     "--",  "echo",  "j",    NULL };

		cli(&a, d.sock, args);
		cr_expect_eq(a.status, 0);
		cr_expect(a.out[0] == '{' && strstr(a.out, "\"j\""), "%s", a.out);
		tu_run_free(&a);
	}
	{
		const char *const args[] = {
			"run", "--via", "daemon", "-p", "profiles/default.conf", "--", "true", NULL
		};

		cli(&a, d.sock, args);
		cr_expect_eq(a.status, 125);
		cr_expect(strstr(a.err, "profiles by name only"), "%s", a.err);
		tu_run_free(&a);
	}
	{
		/*
		 * A profile (by name) that names another backend: under --via auto the CLI sends
		 * cordond local runs only, so it runs it directly (whatever the direct run makes
		 * of it here, it is not that refusal); --via daemon sends it to cordond, whose
		 * answer is about Docker (no dockerd, or no image, in this suite), not a refusal
		 * of the CLI's. The same for --backend docker.
		 */
		char *dir = tu_tmpdir(), *pp = NULL;
		const char *const args[] = { "run", "--via", "daemon", "-p",
					     "dk",  "--",    "true",   NULL };
		const char *const auto_args[] = { "run", "-p", "dk", "--", "true", NULL };
		const char *const dk_args[] = { "run",	  "--via", "daemon", "--backend",
						"docker", "--",	   "true",   NULL };

		tu_write_file(dir, "dk.conf", "[sandbox]\nbackend = docker\n");
		cr_assert(asprintf(&pp, "CORDON_PROFILE_PATH=%s", dir) > 0);
		cli_env(&a, d.sock, pp, auto_args);
		cr_expect_null(strstr(a.err, "local runs only"), "%s", a.err);
		tu_run_free(&a);
		cli_env(&a, d.sock, pp, args);
		cr_expect_null(strstr(a.err, "local runs only"), "%s", a.err);
		cr_expect(a.status == 0 || strstr(a.err, "cordond: ") || strstr(a.err, "docker"),
			  "%d %s", a.status, a.err);
		tu_run_free(&a);
		cli(&a, d.sock, dk_args);
		cr_expect_null(strstr(a.err, "local runs only"), "%s", a.err);
		cr_expect(a.status == 0 || strstr(a.err, "docker"), "%d %s", a.status, a.err);
		tu_run_free(&a);
		free(pp);
		tu_rmtree(dir);
		free(dir);
	}
	cr_expect_eq(daemon_stop(&d), 0);
	{
		const char *const args[] = { "run", "--via", "daemon", "--", "true", NULL };

		cli(&a, d.sock, args);
		cr_expect_eq(a.status, 125);
		cr_expect(strstr(a.err, "cordond is not reachable at"), "%s", a.err);
		cr_expect_str_eq(a.out, "");
		tu_run_free(&a);
	}
	{
		const char *const args[] = {
			"run", "--via", "auto", "--", "echo", "fallback", NULL
		};

		cli(&a, d.sock, args);
		cr_expect_eq(a.status, 0);
		cr_expect_str_eq(a.out, "fallback\n");
		tu_run_free(&a);
	}
}

/*
 * A command, -e value, workdir or pattern that is not UTF-8 cannot go in cordond's JSON: --via
 * daemon said "cordon: out of memory" (jansson's refusal of the string, reported as ENOMEM),
 * and --via auto did too, where a direct run takes it. Found in review (differential of
 * direct, daemon and the Python client): auto now runs it directly, daemon names the reason.
 */
Test(daemon, cli_not_utf8_runs_directly_under_auto, .timeout = 60)
{
	struct daemon d;
	struct tu_run a, b;
	char *top = tu_tmpdir(), *wd = NULL;
	static const char *const cmds[][4] = {
		{ "echo \xff", NULL },
		{ "echo $A", "-e", "A=\xff", NULL },
		{ "pwd", "-w", NULL, NULL },
		{ "echo ok", "--block", "\xfe", NULL },
	};

	cr_assert(asprintf(&wd, "%s/\xff", top) > 0);
	daemon_start(&d, NULL);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		const char *args[12] = { "run", "--via", "auto" };
		int n = 3;

		for (int k = 1; k < 3 && cmds[i][k]; k++)
			args[n++] = cmds[i][k];
		if (i == 2)
			args[n++] = wd;
		args[n++] = "--";
		args[n++] = cmds[i][0];
		args[n] = NULL;
		cli(&a, d.sock, args);
		args[2] = "direct";
		cli(&b, d.sock, args);
		cr_expect_eq(a.status, 0, "%s: auto %d (%s)", cmds[i][0], a.status, a.err);
		cr_expect_str_eq(a.out, b.out, "%s: auto '%s' vs direct '%s'", cmds[i][0], a.out,
				 b.out);
		tu_run_free(&a);
		tu_run_free(&b);
		args[2] = "daemon";
		cli(&a, d.sock, args);
		cr_expect_eq(a.status, 125);
		cr_expect(
			strstr(a.err, "--via daemon: ") &&
				strstr(a.err, "not valid UTF-8, which cordond's JSON cannot carry"),
			"%s: %s", cmds[i][0], a.err);
		cr_expect_null(strstr(a.err, "out of memory"), "%s", a.err);
		cr_expect_str_eq(a.out, "");
		tu_run_free(&a);
	}
	cr_expect_eq(daemon_stop(&d), 0);
	tu_rmtree(top);
	free(top);
	free(wd);
}

/*
 * A relative workdir is sent as the current directory's path joined to it. With the current
 * directory removed there is no path to send: --via daemon says so (it said "out of memory"),
 * and --via auto runs directly, which gives the direct run's own answer.
 */
Test(daemon, cli_relative_workdir_in_a_removed_directory, .timeout = 60)
{
	struct daemon d;
	struct tu_run a, b;
	char *top = tu_tmpdir(), gone[600], env[200], *bin = realpath(tu_cordon(), NULL);
	char *const envp[] = { env, NULL };

	cr_assert(bin);
	snprintf(gone, sizeof(gone), "%s/gone", top);
	daemon_start(&d, NULL);
	snprintf(env, sizeof(env), "CORDON_SOCKET=%s", d.sock);
	for (int k = 0; k < 3; k++) {
		static const char *const via[] = { "daemon", "auto", "direct" };
		const char *argv[] = { "/bin/sh",
				       "-c",
				       "mkdir \"$1\" && cd \"$1\" && rmdir \"$1\" && "
				       "exec \"$2\" run --via \"$3\" -w rel -- 'echo ran'",
				       "sh",
				       gone,
				       bin,
				       via[k],
				       NULL };

		tu_exec(k == 2 ? &b : &a, NULL, envp, (char *const *)argv);
		if (k == 0) {
			cr_expect_eq(a.status, 125, "daemon: %d %s", a.status, a.err);
			cr_expect(strstr(a.err, "--via daemon: the current directory has no path"),
				  "%s", a.err);
			cr_expect_null(strstr(a.err, "out of memory"), "%s", a.err);
			tu_run_free(&a);
		}
	}
	/* auto: the direct run's own answer, whatever it is. */
	cr_expect_eq(a.status, b.status, "auto %d (%s) vs direct %d (%s)", a.status, a.err,
		     b.status, b.err);
	cr_expect_str_eq(a.out, b.out);
	cr_expect_null(strstr(a.err, "out of memory"), "%s", a.err);
	tu_run_free(&a);
	tu_run_free(&b);
	cr_expect_eq(daemon_stop(&d), 0);
	tu_rmtree(top);
	free(top);
	free(bin);
}

/*
 * An -e value or a pattern longer than a field of cordond's request may be (64 KiB): --via
 * auto runs it directly, as a direct run takes it; --via daemon says why (it was cordond's 400).
 */
Test(daemon, cli_over_long_fields_run_directly_under_auto, .timeout = 60)
{
	struct daemon d;
	struct tu_run a, b;
	char *big = malloc(70000 + 3), *val = malloc(70000 + 1);

	cr_assert(big && val);
	memset(val, 'v', 70000);
	val[70000] = '\0';
	snprintf(big, 70000 + 3, "A=%s", val);
	daemon_start(&d, NULL);
	for (int k = 0; k < 2; k++) {
		const char *args[] = { "run",	      "--via", "auto",	     k ? "--block" : "-e",
				       k ? val : big, "--",    "echo ${#A}", NULL };

		cli(&a, d.sock, args);
		args[2] = "direct";
		cli(&b, d.sock, args);
		cr_expect_eq(a.status, 0, "auto %d (%s)", a.status, a.err);
		cr_expect_str_eq(a.out, b.out);
		cr_expect_str_eq(a.out, k ? "0\n" : "70000\n");
		tu_run_free(&a);
		tu_run_free(&b);
		args[2] = "daemon";
		cli(&a, d.sock, args);
		cr_expect_eq(a.status, 125);
		cr_expect(strstr(a.err, "--via daemon: ") &&
				  strstr(a.err, "longer than cordond takes"),
			  "%s", a.err);
		tu_run_free(&a);
	}
	cr_expect_eq(daemon_stop(&d), 0);
	free(big);
	free(val);
}

/* ---- the fuzz corpora, as a regression test ---- */

/*
 * Every libFuzzer target (tests/fuzz/fuzz_*.c) replays its corpus, tests/fuzz/corpus/<target>/,
 * through tests/fuzz/driver.c built with gcc: the inputs that once crashed a target, or broke
 * one of the invariants it checks, stay fixed. A target without a corpus, or whose driver was
 * not built, fails: a new target cannot drop out of `make check` unnoticed.
 */
Test(daemon, fuzz_corpus, .timeout = 300)
{
	DIR *d = opendir("tests/fuzz");
	struct dirent *de;
	int targets = 0;

	cr_assert(d, "tests/fuzz: %s", strerror(errno));
	while ((de = readdir(d))) {
		char name[128], exe[192], corpus[192], want[64];
		const char *argv[] = { exe, corpus, NULL };
		size_t len = strlen(de->d_name), files = 0;
		struct tu_run run;
		struct dirent *ce;
		DIR *cd;

		if (strncmp(de->d_name, "fuzz_", 5) != 0 || len < 3 || len >= sizeof(name) ||
		    strcmp(de->d_name + len - 2, ".c") != 0)
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)(len - 2), de->d_name);
		snprintf(exe, sizeof(exe), "build/tests/fuzz-%s", name);
		snprintf(corpus, sizeof(corpus), "tests/fuzz/corpus/%s", name);
		if (access(exe, X_OK) != 0) {
			closedir(d);
			DAEMON_SKIP("a fuzz corpus driver is not built (make tests)");
		}
		cd = opendir(corpus);
		cr_assert(cd, "%s: %s (each target needs a corpus)", corpus, strerror(errno));
		while ((ce = readdir(cd)))
			files += ce->d_name[0] != '.';
		closedir(cd);
		cr_expect_gt(files, 0, "%s is empty", corpus);
		tu_exec(&run, NULL, NULL, (char *const *)argv);
		snprintf(want, sizeof(want), "%zu inputs, no crash", files);
		cr_expect_eq(run.status, 0, "%s: %s%s", name, run.out, run.err);
		cr_expect(strstr(run.out, want), "%s: %s", name, run.out);
		tu_run_free(&run);
		targets++;
	}
	closedir(d);
	cr_expect_gt(targets, 1, "no fuzz targets found in tests/fuzz");
}

/*
 * Runners stage each run's network namespace ahead (stage.c): one serves one run only. Run 1
 * leaves a TCP socket in TIME_WAIT (kept by its namespace, not by a process, for a minute):
 * run 2 must see no socket at all, as with a namespace of its own.
 */
Test(daemon, runs_never_share_a_network_namespace, .timeout = 60)
{
	struct daemon d;
	struct res r;

	daemon_start(&d, NULL);
	for (int i = 0; i < 3; i++) {
		cr_assert(
			http(d.sock, "POST", "/v1/run",
			     "{\"command\":\"tail -n +2 /proc/net/tcp | wc -l; python3 -c "
			     "\\\"import "
			     "socket; s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(); "
			     "c=socket.create_connection(s.getsockname()); a,_=s.accept(); "
			     "a.close(); c.close()\\\"; tail -n +2 /proc/net/tcp | cut -c35-36\"}",
			     &r) == 0);
		/* none at the start; the one it left (06: TIME_WAIT) at the end */
		EXPECT_FIELD(&r, "output", "0\n06");
		res_free(&r);
	}
	cr_expect_eq(daemon_stop(&d), 0);
}

/* How many times the daemon's log says a run took a pre-built sandbox (CORDON_TRACE_SETUP). */
static int prebuilt_taken(const struct daemon *d)
{
	return log_lines(d, "pre-built sandbox taken");
}

/*
 * Runners pre-build the next sandbox (docs/daemon.md, "Pre-built sandboxes"), the first one
 * for the default profile's mounts at their start: a fresh cordond's first run already takes
 * one, and so does every run after it; a run of another profile's mounts is built on demand
 * and answers as well. CORDON_PREBUILD=0 turns it off: no run takes one.
 */
Test(daemon, runs_take_prebuilt_sandboxes, .timeout = 60)
{
	struct daemon d;
	struct res r;

	if (geteuid() != 0)
		DAEMON_SKIP("cordond runs as root");
	for (int off = 0; off < 2; off++) {
		setenv("CORDON_TRACE_SETUP", "1", 1);
		if (off)
			setenv("CORDON_PREBUILD", "0", 1);
		daemon_start(&d, NULL);
		unsetenv("CORDON_TRACE_SETUP");
		unsetenv("CORDON_PREBUILD");
		for (int i = 0; i < 4; i++) {
			cr_assert_eq(
				http(d.sock, "POST", "/v1/run", "{\"command\":\"echo ok\"}", &r),
				0);
			cr_assert_eq(r.status, 200, "%s", r.body);
			cr_assert(body_has(&r, "\"output\": \"ok\""), "%s", r.body);
			res_free(&r);
			cr_assert_eq(prebuilt_taken(&d), off ? 0 : i + 1,
				     "run %d: %d pre-built sandboxes taken (prebuild %s)", i,
				     prebuilt_taken(&d), off ? "off" : "on");
		}
		if (!off) {
			/* The network profile (network = host): other mounts, built on demand. */
			cr_assert_eq(http(d.sock, "POST", "/v1/run",
					  "{\"command\":\"echo ok\",\"profile\":\"network\"}", &r),
				     0);
			cr_assert_eq(r.status, 200, "%s", r.body);
			cr_assert(body_has(&r, "\"output\": \"ok\""), "%s", r.body);
			res_free(&r);
			cr_assert_eq(prebuilt_taken(&d), 4);
		}
		cr_assert_eq(daemon_stop(&d), 0);
	}
	/* Any other value: cordond does not start, and says why in one line. */
	{
		struct tu_run tr;
		char *const argv[] = { (char *)cordond_bin(), "--socket",
				       "/tmp/cordond-test-never.sock", NULL };

		tu_exec(&tr, NULL, (char *[]){ "CORDON_PREBUILD=yes", NULL }, argv);
		cr_expect_eq(tr.status, 1, "%s", tr.err);
		cr_expect_str_eq(tr.err, "cordond: CORDON_PREBUILD must be 0 or 1, not 'yes'\n");
		cr_expect_neq(access("/tmp/cordond-test-never.sock", F_OK), 0);
		tu_run_free(&tr);
	}
}

/* How many times needle is in the readable memory of pid (its maps, read through its mem). */
static int memory_hits(pid_t pid, const char *needle)
{
	char path[64], line[512];
	size_t nl = strlen(needle);
	FILE *maps;
	int mem, hits = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = fopen(path, "re");
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	mem = open(path, O_RDONLY | O_CLOEXEC);
	if (!maps || mem < 0) {
		if (maps)
			fclose(maps);
		if (mem >= 0)
			close(mem);
		return 0; /* gone meanwhile */
	}
	while (fgets(line, sizeof(line), maps)) {
		unsigned long a, b;
		char perms[8];
		char *buf;
		ssize_t n;

		if (sscanf(line, "%lx-%lx %7s", &a, &b, perms) != 3 || perms[0] != 'r' ||
		    strstr(line, "[vvar") || b - a > (256ul << 20))
			continue;
		buf = malloc(b - a);
		cr_assert(buf);
		n = pread(mem, buf, b - a, (off_t)a);
		for (ssize_t i = 0; n > 0 && i + (ssize_t)nl <= n; i++)
			if (buf[i] == needle[0] && memcmp(buf + i, needle, nl) == 0)
				hits++;
		free(buf);
	}
	fclose(maps);
	close(mem);
	return hits;
}

/* The children of a runner (its sandboxes), up to max of them in ret; how many it has. */
static int sandboxes_of(pid_t runner, pid_t *ret, int max)
{
	char path[64];
	FILE *f;
	int c, n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)runner, (int)runner);
	f = fopen(path, "re");
	while (f && fscanf(f, "%d", &c) == 1) {
		if (n < max)
			ret[n] = (pid_t)c;
		n++;
	}
	if (f)
		fclose(f);
	return n;
}

/*
 * A runner serves every caller in turn, and every sandbox is a clone of it: a pre-built one,
 * made after a run for the next caller's, holds a copy of the runner's memory. Until
 * 2026-11-26 that copy held the run just served (its request and its answer, still allocated
 * when the next sandbox was cloned) and what earlier runs left in freed memory: a member's
 * command, env and output were in the init of the next caller's run (found in red team;
 * reading it needs root or a kernel bug: init is non-dumpable and under seccomp). Now the
 * runner frees them first, and freed memory is wiped (RUNNER_MALLOC_ENV).
 */
Test(daemon, runners_keep_no_earlier_callers_data, .timeout = 60)
{
	struct daemon d;
	struct res r;
	char mark[64], body[256];
	pid_t runners[16];
	int n, hits = 0, inits = 0;

	if (geteuid() != 0)
		DAEMON_SKIP("cordond runs as root");
	ensure_users();
	daemon_start(&d, NULL);
	snprintf(mark, sizeof(mark), "rt-secret-%d-%ld", (int)getpid(), (long)time(NULL));
	snprintf(body, sizeof(body),
		 "{\"command\":\"echo %s; echo %s >&2\",\"env\":{\"TOKEN\":\"%s\"}}", mark, mark,
		 mark);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(http_as(MEMBER, d.sock, "POST", "/v1/run", body, &r), 0);
		cr_assert_eq(r.status, 200, "%s", r.body);
		cr_assert(body_has(&r, mark), "%s", r.body);
		res_free(&r);
	}
	/* The last run's teardown and the next sandbox's pre-building follow the answer. */
	for (double t0 = now(); now() - t0 < 5 && inits == 0; usleep(20000)) {
		n = children_of(d.pid, true, NULL, runners);
		for (int i = 0; i < n && i < 16; i++)
			inits += sandboxes_of(runners[i], NULL, 0);
	}
	cr_assert(inits > 0, "no pre-built sandbox to look into");
	usleep(200000);
	n = children_of(d.pid, true, NULL, runners);
	for (int i = 0; i < n && i < 16; i++) {
		pid_t kids[16];
		int k = sandboxes_of(runners[i], kids, 16);

		hits += memory_hits(runners[i], mark);
		for (int j = 0; j < k && j < 16; j++) {
			int h = memory_hits(kids[j], mark);

			cr_expect_eq(h, 0, "runner %d's sandbox %d holds %d copies of '%s'",
				     (int)runners[i], (int)kids[j], h, mark);
			hits += h;
		}
	}
	cr_expect_eq(hits, 0, "%d copies of a member's earlier run in the runners and sandboxes",
		     hits);
	daemon_stop(&d);
}

/*
 * `cordon run` through cordond given SIGTERM (or SIGINT, SIGHUP) while it waits: it closes the
 * connection (cordond kills the run), says so in one line and exits 128+n, as a direct run
 * does; it used to die of the signal, with nothing said.
 */
Test(daemon, cli_client_signal_stops_the_run, .timeout = 60)
{
	struct daemon d;
	char out[200], err[200], sock_env[200], buf[512];
	int st = 0;
	ssize_t n;
	pid_t pid;

	daemon_start(&d, NULL);
	snprintf(out, sizeof(out), "%s/out", d.dir);
	snprintf(err, sizeof(err), "%s/err", d.dir);
	snprintf(sock_env, sizeof(sock_env), "CORDON_SOCKET=%s", d.sock);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(o, 1);
		dup2(e, 2);
		putenv(sock_env);
		execl(tu_cordon(), "cordon", "run", "--via", "daemon", "--", "sleep 33.75",
		      (char *)NULL);
		_exit(127);
	}
	(void)wait_for_proc("sleep 33.75");
	kill(pid, SIGTERM);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 143, "status %#x", st);
	int fd = open(err, O_RDONLY);
	n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	buf[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
	cr_expect(strstr(buf, "Terminated: the run was stopped by cordond") != NULL, "%s", buf);
	cr_expect_eq(strchr(buf, '\n'), buf + strlen(buf) - 1, "not one line: %s", buf);
	struct stat so;
	cr_expect(stat(out, &so) == 0 && so.st_size == 0, "something on stdout");
	for (double t0 = now(); process_alive("sleep 33.75") && now() - t0 < 10;)
		usleep(20000);
	cr_expect(!process_alive("sleep 33.75"), "the run outlived its client");
	cr_expect_eq(daemon_stop(&d), 0);
}

/*
 * The soft NOFILE limit cordond hands its runners to restore (CORDON_RUNNER_NOFILE): a value
 * that is not a number makes the runner refuse to start (exit 1), never run with the raised
 * limit; a good one is restored and gone from the runner's environment.
 */
Test(daemon, runner_nofile_value_is_checked, .timeout = 30)
{
	static const char *const bad[] = { "abc", "", "12x", "-1x", "99999999999999999999999" };
	int sv[2], st = 0;
	pid_t pid;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(setenv("CORDON_RUNNER_NOFILE", bad[i], 1), 0);
		pid = start_runner(sv);
		cr_assert_eq(waitpid(pid, &st, 0), pid);
		cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 1, "'%s': status %#x", bad[i], st);
		close(sv[0]);
	}
	unsetenv("CORDON_RUNNER_NOFILE");
}

/* ---- shortages: no fd to spare, runners that cannot be started ---- */

/*
 * The k-th lowest fd number (from 1) that pid does not have open: the numbers its next k fds
 * get end there, and a RLIMIT_NOFILE of that plus one lets it open exactly k more.
 */
static int free_fd(pid_t pid, int k)
{
	char path[64];
	struct stat st;

	for (int fd = 0;; fd++) {
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
		if (lstat(path, &st) != 0 && --k == 0)
			return fd;
	}
}

/* pid's soft RLIMIT_NOFILE (its hard one is left as it is); 0: back up to the hard one. */
static void set_nofile(pid_t pid, rlim_t soft)
{
	struct rlimit rl;

	cr_assert_eq(prlimit(pid, RLIMIT_NOFILE, NULL, &rl), 0);
	rl.rlim_cur = soft ? soft : rl.rlim_max;
	cr_assert_eq(prlimit(pid, RLIMIT_NOFILE, &rl, NULL), 0, "prlimit %d: %s", (int)pid,
		     strerror(errno));
}

/*
 * Leave cordond (pid) room for one more connection and nothing else: two fds, the socket
 * libmicrohttpd accepts and cordond's dup of it, so that whatever the request needs besides
 * fails with EMFILE, as at a real RLIMIT_NOFILE. Once its fds are back to quiet (the last
 * connection gone).
 */
static void starve(pid_t pid, int quiet)
{
	for (int i = 0; i < 300 && count_fds(pid) > quiet; i++)
		usleep(10000);
	set_nofile(pid, (rlim_t)free_fd(pid, 2) + 1);
}

/*
 * The same, but first the caller's identity (user's, or root's) is looked up afresh, so that
 * cordond has it cached (ident.c) for the next second and needs no fd for it: the request
 * gets as far as it can.
 */
static void starve_known(const struct daemon *d, const char *user, int quiet)
{
	struct res r;

	usleep(1050 * 1000); /* the cached entry, if any, is stale: the next lookup stores one */
	if (user)
		cr_assert(http_as(user, d->sock, "GET", "/v1/health", NULL, &r) == 0);
	else
		cr_assert(http(d->sock, "GET", "/v1/health", NULL, &r) == 0);
	cr_assert_eq(r.status, 200, "%s", r.body);
	res_free(&r);
	starve(d->pid, quiet);
}

/* The temp workdirs (/tmp/cordon-XXXXXX) uid owns. */
static int temp_dirs_of(uid_t uid)
{
	char *names = tmp_entries("cordon-"), *save = NULL;
	int n = 0;

	for (char *l = strtok_r(names, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		struct stat st;

		if (strlen(l) == strlen("/tmp/cordon-XXXXXX") && lstat(l, &st) == 0 &&
		    S_ISDIR(st.st_mode) && st.st_uid == uid)
			n++;
	}
	free(names);
	return n;
}

#define EXPECT_BUSY(r, what)                                                                       \
	do {                                                                                       \
		EXPECT((r), 503, "\"error\":\"busy: " what);                                       \
		cr_expect(body_has((r), "Too many open files; try again\"}"), "%s", (r)->body);    \
	} while (0)

/*
 * A request that finds cordond out of file descriptors (EMFILE: its RLIMIT_NOFILE reached, here
 * for real, with prlimit on the running daemon) is answered 503 with Retry-After and one line
 * naming the shortage, "busy: <what failed>: Too many open files; try again": the server's
 * shortage, not the client's mistake. It was a 400 ("workdir: open /: Too many open files"),
 * a 500 for a session's file, a 403 for a member whose passwd entry could not be read (cached
 * as an outsider's). Client errors under the same shortage stay 400, and nothing is left: no
 * fd, no process, no temp workdir (a member's, made before the shortage struck, is removed).
 */
Test(daemon, fd_shortage_in_cordond_is_a_503, .timeout = 90)
{
	char wd[] = "/tmp/cordon-test-short-XXXXXX", body[300], url[160], *id;
	struct passwd *pw;
	struct daemon d;
	struct res r;
	int quiet, temps0;

	ensure_users();
	pw = getpwnam(MEMBER);
	cr_assert(pw);
	cr_assert(mkdtemp(wd));
	daemon_start(&d, NULL);
	id = session_create(d.sock, NULL, NULL, NULL);
	cr_assert(http(d.sock, "POST", "/v1/run", "{\"command\":\"true\"}", &r) == 0);
	EXPECT(&r, 200, "\"exit_code\": 0");
	res_free(&r);
	cr_assert(http_as(MEMBER, d.sock, "POST", "/v1/run", "{\"command\":\"true\"}", &r) == 0);
	EXPECT(&r, 200, "\"exit_code\": 0");
	res_free(&r);
	usleep(300 * 1000);
	quiet = count_fds(d.pid);
	temps0 = temp_dirs_of(pw->pw_uid);

	/* A workdir to open: 503, and its Retry-After. */
	snprintf(body, sizeof(body), "{\"command\":\"touch ran\",\"workdir\":\"%s\"}", wd);
	starve_known(&d, NULL, quiet);
	cr_assert(http(d.sock, "POST", "/v1/run", body, &r) == 0);
	set_nofile(d.pid, 0);
	EXPECT_BUSY(&r, "workdir: ");
	cr_expect(strstr(r.head, "\r\nRetry-After: 1"), "%s", r.head);
	res_free(&r);
	/* A session's workdir, and a session's file. */
	snprintf(body, sizeof(body), "{\"workdir\":\"%s\"}", wd);
	starve_known(&d, NULL, quiet);
	cr_assert(http(d.sock, "POST", "/v1/sessions", body, &r) == 0);
	set_nofile(d.pid, 0);
	EXPECT_BUSY(&r, "profile: "); /* loaded first, before the workdir */
	res_free(&r);
	snprintf(url, sizeof(url), "/v1/sessions/%s/files/f", id);
	starve_known(&d, NULL, quiet);
	cr_assert(http(d.sock, "PUT", url, "data", &r) == 0);
	set_nofile(d.pid, 0);
	EXPECT_BUSY(&r, "path: ");
	res_free(&r);
	/* The client's mistakes are still theirs: 400, named as ever. */
	starve_known(&d, NULL, quiet);
	cr_assert(http(d.sock, "POST", "/v1/run", "{\"command\":", &r) == 0);
	set_nofile(d.pid, 0);
	EXPECT(&r, 400, "\"error\":\"body: invalid JSON");
	res_free(&r);
	starve_known(&d, NULL, quiet);
	cr_assert(http(d.sock, "POST", "/v1/run", "{\"command\":\"true\",\"workdir\":\"rel\"}",
		       &r) == 0);
	set_nofile(d.pid, 0);
	EXPECT(&r, 400, "\"error\":\"workdir: must be an absolute path\"");
	res_free(&r);
	/* A member's temp workdir is made (mkdir needs no fd), cannot be opened, and goes. */
	starve_known(&d, MEMBER, quiet);
	cr_assert(http_as(MEMBER, d.sock, "POST", "/v1/run", "{\"command\":\"true\"}", &r) == 0);
	set_nofile(d.pid, 0);
	EXPECT_BUSY(&r, "workdir: ");
	res_free(&r);
	cr_expect_eq(temp_dirs_of(pw->pw_uid), temps0, "a member's temp workdir was left");
	/* A member whose passwd entry cannot be read now (not cached: a second old): not 403. */
	usleep(1050 * 1000);
	starve(d.pid, quiet);
	cr_assert(http_as(MEMBER, d.sock, "GET", "/v1/health", NULL, &r) == 0);
	set_nofile(d.pid, 0);
	EXPECT_BUSY(&r, "cannot identify the caller");
	res_free(&r);
	/* ... nor cached as an outsider: with fds again, the member is served. */
	cr_assert(http_as(MEMBER, d.sock, "POST", "/v1/run", "{\"command\":\"echo back\"}", &r) ==
		  0);
	EXPECT_FIELD(&r, "output", "back");
	res_free(&r);
	cr_assert(http(d.sock, "GET", "/metrics", NULL, &r) == 0);
	cr_expect(body_has(&r, "cordond_http_responses_total{code=\"503\"} 5\n"), "%s", r.body);
	res_free(&r);

	/* Nothing ran, nothing is left. */
	snprintf(url, sizeof(url), "%s/ran", wd);
	cr_expect_neq(access(url, F_OK), 0, "a starved request ran");
	for (int i = 0; i < 300 && count_fds(d.pid) > quiet; i++)
		usleep(10000);
	cr_expect_eq(count_fds(d.pid), quiet, "cordond's fds: %d, %d before", count_fds(d.pid),
		     quiet);
	cr_expect_eq(count_children(d.pid), 0, "processes left behind");
	cr_expect_eq(temp_dirs_of(pw->pw_uid), temps0, "a member's temp workdir was left");
	snprintf(url, sizeof(url), "/v1/sessions/%s", id);
	cr_assert(http(d.sock, "DELETE", url, NULL, &r) == 0);
	EXPECT(&r, 200, "");
	res_free(&r);
	free(id);
	cr_expect_eq(daemon_stop(&d), 0);
	tu_rmtree(wd);
}

/*
 * The same in a runner: one out of fds (its RLIMIT_NOFILE reached) cannot open the profile,
 * which was a 400 ("profile: cannot open profile ...: Too many open files"); it is a 503 named
 * as such, and the runner serves the next run once it has fds again.
 */
Test(daemon, fd_shortage_in_a_runner_is_a_503, .timeout = 60)
{
	struct daemon d;
	struct res r;
	pid_t runners[16];
	int n;

	daemon_start(&d, NULL);
	cr_assert(http(d.sock, "POST", "/v1/run", "{\"command\":\"true\"}", &r) == 0);
	EXPECT(&r, 200, "\"exit_code\": 0");
	res_free(&r);
	usleep(200 * 1000);
	n = children_of(d.pid, true, NULL, runners);
	cr_assert(n > 0 && n <= 16);
	for (int i = 0; i < n; i++)
		set_nofile(runners[i], (rlim_t)free_fd(runners[i], 1));
	cr_assert(http(d.sock, "POST", "/v1/run", "{\"command\":\"echo no\"}", &r) == 0);
	EXPECT_BUSY(&r, "profile: ");
	cr_expect(strstr(r.head, "\r\nRetry-After: 1"), "%s", r.head);
	res_free(&r);
	for (int i = 0; i < n; i++)
		set_nofile(runners[i], 0);
	for (int i = 0; i < n; i++) {
		cr_assert(http(d.sock, "POST", "/v1/run", "{\"command\":\"echo yes\"}", &r) == 0);
		EXPECT_FIELD(&r, "output", "yes");
		res_free(&r);
	}
	cr_expect_eq(count_children(d.pid), 0, "processes left behind");
	cr_expect_eq(daemon_stop(&d), 0);
}

/*
 * The /tmp/cordond-runner-* directories made since t0 that nobody holds (fsutil_temp_hold): a
 * runner's is held from the moment it is made, for its whole life, so an unheld one is left
 * behind. Other suites' cordonds make and hold theirs meanwhile; those are held.
 */
static int unheld_runner_dirs_since(time_t t0)
{
	char *names = tmp_entries("cordond-runner-"), *save = NULL, *locks = read_locks();
	int n = 0;

	for (char *l = strtok_r(names, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		struct stat st;

		if (lstat(l, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_ctime < t0 ||
		    locked(locks, &st, 0))
			continue;
		fprintf(stderr, "unheld runner directory: %s\n", l);
		n++;
	}
	free(locks);
	free(names);
	return n;
}

/*
 * cordond cannot start a runner for a while (no fd left: its RLIMIT_NOFILE lowered with prlimit
 * after its runners were killed, so that it must start new ones). It used to say "cannot start
 * a runner ... runs go on in cordond itself" and never start one again: every run from then on
 * in cordond, until a restart. Now it tries again, 10 ms then twice as long each time up to a
 * second, says so once for the streak, counts every attempt; a request meanwhile waits for a
 * runner, then gets a 503 naming the reason (not a run in cordond); once fds are back, runners
 * start again and runs happen in them. The killed runners' cgroups and directories, which
 * could not be removed without an fd, are removed once there are fds again; failed starts
 * leave no directory, and cordond's fds are back to what they were.
 */
Test(daemon, runner_start_failures_are_retried, .timeout = 90)
{
	struct daemon d;
	struct res r;
	pid_t killed[16];
	char *dirs;
	int fd, n, fds0, runners0, fds1, runners1;
	long started0;
	time_t t0 = time(NULL);

	daemon_start(&d, NULL);
	fd = connect_to(d.sock);
	cr_assert(fd >= 0);
	cr_assert(ka_call(fd, "POST", "/v1/run", "{\"command\":\"true\"}", &r));
	EXPECT(&r, 200, "\"exit_code\": 0");
	res_free(&r);
	cr_assert(ka_call(fd, "GET", "/metrics", NULL, &r));
	started0 = metric(&r, "cordond_runners_started_total");
	res_free(&r);
	usleep(300 * 1000);
	fds0 = count_fds(d.pid);
	runners0 = children_of(d.pid, true, NULL, NULL);
	dirs = held_by(d.pid, "cordond-runner-");

	/* Its runners killed, then no fd for cordond to start another with. */
	usleep(1050 * 1000);
	/* Root's identity looked up afresh: cached for the next second, needing no fd then. */
	cr_assert(ka_call(fd, "GET", "/v1/health", NULL, &r));
	res_free(&r);
	n = children_of(d.pid, true, NULL, killed);
	cr_assert(n > 0 && n <= 16);
	for (int i = 0; i < n; i++)
		kill(killed[i], SIGKILL);
	usleep(50 * 1000);
	set_nofile(d.pid, 3);
	{
		double t = now();

		cr_assert(ka_call(fd, "POST", "/v1/run",
				  "{\"command\":\"touch /tmp/cordon-test-ran\"}", &r));
		cr_expect_geq(now() - t, 4.5, "answered after %.1fs, before the wait", now() - t);
	}
	set_nofile(d.pid, 0);
	EXPECT(&r, 503, "\"error\":\"busy: no runner could be started in 5 s (");
	cr_expect(body_has(&r, "Too many open files); try again\"}"), "%s", r.body);
	cr_expect(strstr(r.head, "\r\nRetry-After: 1"), "%s", r.head);
	res_free(&r);
	cr_expect_neq(access("/tmp/cordon-test-ran", F_OK), 0, "the run happened in cordond");
	unlink("/tmp/cordon-test-ran");

	/* fds again: a runner starts within a second or so, and runs happen in runners. */
	for (int i = 0; i < 300 && children_of(d.pid, true, NULL, NULL) == 0; i++)
		usleep(10000);
	cr_assert_gt(children_of(d.pid, true, NULL, NULL), 0, "no runner started again");
	cr_assert(ka_call(fd, "POST", "/v1/run", "{\"command\":\"echo again\"}", &r));
	EXPECT_FIELD(&r, "output", "again");
	res_free(&r);
	cr_assert(ka_call(fd, "GET", "/metrics", NULL, &r));
	cr_expect_gt(metric(&r, "cordond_runners_started_total"), started0, "%s", r.body);
	cr_expect_geq(metric(&r, "cordond_runner_spawn_failures_total"), 3, "%s", r.body);
	res_free(&r);
	cr_expect_eq(log_lines(&d, "cannot start a runner"), 1, "not logged once for the streak");
	cr_expect_eq(log_lines(&d, "a runner started again, after "), 1);
	cr_expect_eq(log_lines(&d, "in cordond itself"), 0);

	/* Nothing of the killed runners or the failed starts is left. */
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < 300 && tu_run_cgroups(killed[i], NULL, 0) > 0; k++)
			usleep(10000);
		cr_expect_eq(tu_run_cgroups(killed[i], NULL, 0), 0,
			     "cgroups of the killed runner %d are left", (int)killed[i]);
	}
	for (int i = 0; i < 300 && count_present(dirs) > 0; i++)
		usleep(10000);
	cr_expect_eq(count_present(dirs), 0, "the killed runners' directories are left: %s", dirs);
	cr_expect_eq(unheld_runner_dirs_since(t0), 0);
	cr_expect_eq(count_children(d.pid), 0, "processes left behind");
	/* Each idle runner holds two fds of cordond's (its socket and its directory). */
	usleep(300 * 1000);
	fds1 = count_fds(d.pid);
	runners1 = children_of(d.pid, true, NULL, NULL);
	cr_expect_eq(fds1 - 2 * runners1, fds0 - 2 * runners0,
		     "cordond's fds: %d with %d runners, %d with %d before", fds1, runners1, fds0,
		     runners0);
	close(fd);
	free(dirs);
	cr_expect_eq(daemon_stop(&d), 0);
}

/*
 * A runner binary that is no longer trusted (made writable by its group after cordond opened
 * it: the fd cordond holds sees that) is never started again, a permanent failure, not a
 * shortage to wait out: cordond says so once, in one line, and from then on runs happen in
 * cordond itself, as without a runner binary. Those are sandboxes all the same: a probe shows
 * exactly what it showed in a runner, and the run's init is cordond's child.
 */
Test(daemon, untrusted_runner_binary_stops_runners, .timeout = 60)
{
	char dir[] = "/tmp/cordond-untrusted-XXXXXX", cmd[512], path[128], *in_runner, *here;
	pid_t client, sleeper;
	struct daemon d;
	struct res r;
	int st;

	cr_assert_not_null(mkdtemp(dir));
	chmod(dir, 0755);
	snprintf(cmd, sizeof(cmd), "cp %s %s/cordond && cp %s %s/cordon", cordond_bin(), dir,
		 tu_cordon(), dir);
	cr_assert_eq(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/cordond", dir);
	daemon_start_bin(&d, path, NULL);
	in_runner = sandbox_probe(d.sock);
	expect_sandboxed(in_runner);
	cr_assert_gt(children_of(d.pid, true, NULL, NULL), 0, "no runner to begin with");

	snprintf(path, sizeof(path), "%s/cordon", dir);
	cr_assert_eq(chmod(path, 0775), 0);
	kill_idle_runners(d.pid);
	here = sandbox_probe(d.sock);
	cr_expect_str_eq(here, in_runner, "a run in cordond shows another sandbox");
	expect_sandboxed(here);
	cr_expect_eq(children_of(d.pid, true, NULL, NULL), 0, "a runner of an untrusted binary");
	cr_expect_eq(log_lines(&d, "is no longer an executable of root's that only root may write; "
				   "from now on runs go on in cordond itself"),
		     1);
	cr_expect_eq(log_lines(&d, "cannot start a runner"), 1);
	cr_assert(http(d.sock, "GET", "/metrics", NULL, &r) == 0);
	cr_expect_eq(metric(&r, "cordond_runner_spawn_failures_total"), 0, "%s", r.body);
	res_free(&r);

	/* It is cordond's own sandbox: its init is cordond's child, and ends as runs end. */
	client = run_in_background(d.sock, "{\"command\":\"sleep 76.25\",\"timeout\":30}");
	sleeper = wait_for_proc("sleep 76.25");
	cr_expect_eq(parent_of(parent_of(sleeper)), d.pid, "the sandbox's init is not cordond's");
	kill(client, SIGKILL);
	waitpid(client, &st, 0);
	for (int i = 0; i < 300 && find_proc("sleep 76.25") > 0; i++)
		usleep(10000);
	cr_expect_lt(find_proc("sleep 76.25"), 0, "the run outlived its client");
	for (int i = 0; i < 300 && count_children(d.pid) > 0; i++)
		usleep(10000);
	cr_expect_eq(count_children(d.pid), 0, "processes left behind");
	free(in_runner);
	free(here);
	cr_expect_eq(daemon_stop(&d), 0);
	tu_rmtree(dir);
}

/*
 * A workdir given as a path that is text, naming a directory whose path is not (a symlink to
 * it): cordond's JSON (the runner's request, the session's answer) cannot carry it. A 400 that
 * says so, for a run and a session; it was a 503 "busy: out of memory; try again" for each,
 * and the run's runner was thrown away (found in red team).
 */
Test(daemon, a_workdir_whose_path_is_not_utf8_is_the_callers_400, .timeout = 60)
{
	struct daemon d;
	struct res r;
	char *top = tu_tmpdir(), dir[300], ln[300], body[600];
	const char *const urls[] = { "/v1/run", "/v1/sessions" };
	struct passwd *pw;

	ensure_users();
	pw = getpwnam(MEMBER);
	cr_assert_eq(chmod(top, 0755), 0);
	snprintf(dir, sizeof(dir), "%s/\xff", top);
	snprintf(ln, sizeof(ln), "%s/ln", top);
	cr_assert_eq(mkdir(dir, 0755), 0);
	cr_assert_eq(chown(dir, pw->pw_uid, pw->pw_gid), 0);
	cr_assert_eq(symlink(dir, ln), 0);
	daemon_start(&d, NULL);
	for (size_t i = 0; i < 2; i++) {
		snprintf(body, sizeof(body), "{%s\"workdir\":\"%s\"}",
			 i ? "" : "\"command\":\"touch ran\",", ln);
		cr_assert_eq(http_as(MEMBER, d.sock, "POST", urls[i], body, &r), 0);
		EXPECT(&r, 400,
		       "names a directory whose path is not UTF-8, which cordond's JSON "
		       "cannot carry");
		cr_expect(body_has(&r, ln), "%s", r.body);
		res_free(&r);
	}
	snprintf(body, sizeof(body), "%s/ran", dir);
	cr_expect_neq(access(body, F_OK), 0, "the command ran");
	cr_expect_eq(daemon_stop(&d), 0);
	tu_rmtree(top);
	free(top);
}
