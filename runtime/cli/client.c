/* SPDX-License-Identifier: MIT */
/*
 * The CLI's cordond client: one HTTP/1.1 request over the Unix socket, POST /v1/run, and the
 * reply printed exactly as a direct run prints its result. Small on purpose: no keep-alive, no
 * chunked bodies (cordond sends Content-Length), one request per process.
 */
#define _GNU_SOURCE
#include "runtime/cli/client.h"
#include "runtime/daemon/daemon.h"
#include "runtime/cleanup.h"
#include "runtime/fsutil.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <time.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define DEFAULT_SOCKET "/run/cordon/cordon.sock"
#define MAX_REPLY (512u << 20)

const char *client_socket_path(void)
{
	const char *s = getenv("CORDON_SOCKET");

	return s && *s ? s : DEFAULT_SOCKET;
}

static const char *unsupported(const char *profile, bool pass_stdin, const char *image)
{
	size_t n = strlen(profile);

	if (strchr(profile, '/') || (n >= 5 && !strcmp(profile + n - 5, ".conf")))
		return "cordond loads profiles by name only, not from a path";
	if (pass_stdin)
		return "--stdin is not available through cordond";
	if (image)
		return "--image is not available through cordond (it takes the profile's)";
	return NULL;
}

static bool is_text(const char *s)
{
	json_t *t = s ? json_string(s) : NULL; /* jansson checks UTF-8 */

	if (s && !t)
		return false;
	json_decref(t);
	return true;
}

static bool list_is_text(const struct cordon_list *l)
{
	for (size_t i = 0; l && i < l->n; i++)
		if (!is_text(l->v[i]))
			return false;
	return true;
}

static const char *not_text(const char *profile, const char *command, const char *workdir,
			    const struct cordon_list *env, const struct cordon_list *allow,
			    const struct cordon_list *block, const struct cordon_list *ignore)
{
	if (!is_text(profile))
		return "the profile name is not valid UTF-8, which cordond's JSON cannot carry";
	if (!is_text(command))
		return "the command is not valid UTF-8, which cordond's JSON cannot carry";
	if (!is_text(workdir))
		return "the workdir is not valid UTF-8, which cordond's JSON cannot carry";
	/* A relative one is sent as the current directory's path joined to it (build_body). */
	if (workdir && workdir[0] != '/') {
		char cwd[PATH_MAX];

		if (!getcwd(cwd, sizeof(cwd)))
			return "the current directory has no path (removed?), so a relative "
			       "workdir cannot be sent to cordond";
		if (!is_text(cwd))
			return "the current directory's path is not valid UTF-8, which cordond's "
			       "JSON cannot carry";
	}
	if (!list_is_text(env))
		return "an -e value is not valid UTF-8, which cordond's JSON cannot carry";
	if (!list_is_text(allow) || !list_is_text(block) || !list_is_text(ignore))
		return "an --allow, --block or --ignore pattern is not valid UTF-8, which "
		       "cordond's JSON cannot carry";
	return NULL;
}

static bool list_fits(const struct cordon_list *l)
{
	for (size_t i = 0; l && i < l->n; i++)
		if (strlen(l->v[i]) > BODY_MAX_ITEM)
			return false;
	return true;
}

static const char *over_limits(const struct cordon_list *env, const struct cordon_list *allow,
			       const struct cordon_list *block, const struct cordon_list *ignore)
{
	static char why[160];

	for (size_t i = 0; env && i < env->n; i++) {
		const char *eq = strchr(env->v[i], '=');
		size_t name = eq ? (size_t)(eq - env->v[i]) : strlen(env->v[i]);

		if (name > BODY_MAX_ENV_NAME || (eq && strlen(eq + 1) > BODY_MAX_ITEM)) {
			(void)snprintf(why, sizeof(why),
				       "an -e name or value is longer than cordond takes (a name "
				       "of %d bytes, a value of %d)",
				       BODY_MAX_ENV_NAME, BODY_MAX_ITEM);
			return why;
		}
	}
	if (!list_fits(allow) || !list_fits(block) || !list_fits(ignore)) {
		(void)snprintf(why, sizeof(why),
			       "an --allow, --block or --ignore pattern is longer than cordond "
			       "takes (%d bytes)",
			       BODY_MAX_ITEM);
		return why;
	}
	return NULL;
}

const char *client_cannot_send(const char *profile, bool pass_stdin, const char *image,
			       const char *command, const char *workdir,
			       const struct cordon_list *env, const struct cordon_list *allow,
			       const struct cordon_list *block, const struct cordon_list *ignore)
{
	const char *why = unsupported(profile, pass_stdin, image);

	if (!why)
		why = not_text(profile, command, workdir, env, allow, block, ignore);
	if (!why)
		why = over_limits(env, allow, block, ignore);
	return why;
}

static int add_list(json_t *o, const char *key, const struct cordon_list *l)
{
	json_t *a;

	if (!l || !l->n)
		return 0;
	a = json_array();
	if (!a)
		return -1;
	for (size_t i = 0; i < l->n; i++)
		if (json_array_append_new(a, json_string(l->v[i])) < 0) {
			json_decref(a);
			return -1;
		}
	return json_object_set_new(o, key, a);
}

static char *build_body(const struct client_request *r)
{
	json_t *o = json_object();
	char *s = NULL;

	if (!o)
		return NULL;
	if (json_object_set_new(o, "command", json_string(r->command)) < 0 ||
	    json_object_set_new(o, "profile", json_string(r->profile)) < 0)
		goto out;
	if (r->workdir) {
		_cleanup_free_ char *abs = NULL;
		char cwd[PATH_MAX];

		if (r->workdir[0] == '/') {
			abs = strdup(r->workdir);
		} else {
			if (!getcwd(cwd, sizeof(cwd)))
				goto out;
			if (asprintf(&abs, "%s/%s", cwd, r->workdir) < 0)
				abs = NULL;
		}
		if (!abs || json_object_set_new(o, "workdir", json_string(abs)) < 0)
			goto out;
	}
	if (r->keep && json_object_set_new(o, "keep", json_true()) < 0)
		goto out;
	if (add_list(o, "allowed", r->allow) < 0 || add_list(o, "blocked", r->block) < 0 ||
	    add_list(o, "ignore", r->ignore) < 0)
		goto out;
	if (r->env && r->env->n) {
		json_t *env = json_object();

		if (!env || json_object_set_new(o, "env", env) < 0)
			goto out;
		for (size_t i = 0; i < r->env->n; i++) {
			_cleanup_free_ char *k = strdup(r->env->v[i]);
			char *eq = k ? strchr(k, '=') : NULL;

			if (!eq)
				goto out;
			*eq = '\0';
			if (json_object_set_new(env, k, json_string(eq + 1)) < 0)
				goto out;
		}
	}
	if (r->readonly && json_object_set_new(o, "readonly", json_true()) < 0)
		goto out;
	if (r->mode >= 0 &&
	    json_object_set_new(o, "policy_mode",
				json_string(r->mode == CORDON_MODE_STRICT ? "strict" : "compat")) <
		    0)
		goto out;
	if (r->network >= 0 &&
	    json_object_set_new(o, "network",
				json_string(r->network == CORDON_NET_HOST ? "host" : "none")) < 0)
		goto out;
	/* The text as written, so "Command timed out after 1.50s" reads as in a direct run. */
	if (r->timeout && json_object_set_new(o, "timeout", json_string(r->timeout)) < 0)
		goto out;
	if (r->max_output &&
	    json_object_set_new(o, "max_output", json_integer(strtoll(r->max_output, NULL, 10))) <
		    0)
		goto out;
	if (r->backend && json_object_set_new(o, "backend", json_string(r->backend)) < 0)
		goto out;
	{
		/* The command's files get our umask's modes, as in a direct run. */
		mode_t m = umask(0);

		(void)umask(m);
		if (json_object_set_new(o, "umask", json_integer((json_int_t)(m & 0777))) < 0)
			goto out;
	}
	if (r->profile_digest &&
	    json_object_set_new(o, "profile_digest", json_string(r->profile_digest)) < 0)
		goto out;
	s = json_dumps(o, JSON_COMPACT);
out:
	json_decref(o);
	return s;
}

/* Connect; -1 with errno when nobody answers. */
static int connect_socket(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int err = errno;

		(void)close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

/* A whole reply: the head, and Content-Length bytes of body after it. */
static bool reply_complete(const char *buf, size_t len)
{
	const char *end = strstr(buf, "\r\n\r\n"), *cl;
	unsigned long long n;

	if (!end)
		return false;
	for (cl = buf; (cl = strcasestr(cl, "\r\nContent-Length:")) && cl < end; cl++) {
		n = strtoull(cl + 17, NULL, 10);
		return len - (size_t)(end + 4 - buf) >= n;
	}
	return false;
}

static int read_reply(int fd, double wait_s, volatile int *cancel, char **ret, size_t *ret_len)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;
	struct timespec t0;

	(void)clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		ssize_t n;
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		struct timespec t;
		double left;

		if (len + 65536 + 1 > cap) {
			char *nb;

			cap = cap ? cap * 2 : 131072;
			if (cap > MAX_REPLY) {
				free(buf);
				errno = EFBIG;
				return -1;
			}
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				return -1;
			}
			buf = nb;
		}
		/*
		 * The answer within the run's own timeout and a grace: a cordond that accepted
		 * the connection and never answers must not hold `cordon run` for ever (found in
		 * review: `-t 1` hung until killed).
		 */
		(void)clock_gettime(CLOCK_MONOTONIC, &t);
		left = wait_s - ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9);
		if (left <= 0) {
			free(buf);
			errno = ETIMEDOUT;
			return -1;
		}
		if (cancel && *cancel) {
			free(buf);
			errno = EINTR;
			return -1;
		}
		n = poll(&pfd, 1, left > 1e6 ? 1000000000 : (int)(left * 1000) + 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			continue; /* the deadline, checked above */
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(buf);
			return -1;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		buf[len] = '\0';
		/*
		 * Stop at the end of the body rather than at EOF: the server's close may trail its
		 * last byte, and waiting for it would be pure latency on every run.
		 */
		if (reply_complete(buf, len))
			break;
	}
	buf[len] = '\0';
	*ret = buf;
	*ret_len = len;
	return 0;
}

static int exit_status(json_t *j)
{
	json_t *sig = json_object_get(j, "signal");

	if (json_is_string(json_object_get(j, "refused")))
		return CORDON_EXIT_REFUSED;
	if (json_is_true(json_object_get(j, "timed_out")))
		return CORDON_EXIT_TIMEOUT;
	if (json_is_integer(sig) && json_integer_value(sig) > 0)
		return 128 + (int)json_integer_value(sig);
	return (int)(json_integer_value(json_object_get(j, "exit_code")) & 0xff);
}

int client_run(const struct client_request *r, bool *ret_unreachable)
{
	_cleanup_free_ char *body = NULL, *head = NULL, *reply = NULL;
	_cleanup_close_ int fd = -1;
	size_t reply_len = 0, blen;
	const char *sep, *payload;
	json_t *j;
	json_error_t je;
	int status = 0, rc;
	double wait_s;
	bool wrote;

	*ret_unreachable = false;
	body = build_body(r);
	if (!body)
		return cli_fail("out of memory");
	fd = connect_socket(r->socket_path);
	if (fd < 0) {
		*ret_unreachable = true;
		return CORDON_EXIT_FAILURE;
	}
	{
		/*
		 * Only a cordond of root's (or the caller's own, for a daemon run unprivileged)
		 * gets the command, its workdir and -e values: CORDON_SOCKET kept by sudo or a
		 * service could name a socket another user listens on.
		 */
		struct ucred cr;
		socklen_t cl = sizeof(cr);

		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0)
			return cli_fail("cordond at %s: SO_PEERCRED: %s", r->socket_path,
					strerror(errno));
		if (cr.uid != 0 && cr.uid != geteuid())
			return cli_fail(
				"cordond at %s: the listener is uid %u, neither root nor you; "
				"not sending it the command",
				r->socket_path, (unsigned)cr.uid);
	}
	blen = strlen(body);
	if (asprintf(&head,
		     "POST /v1/run HTTP/1.1\r\nHost: cordond\r\nContent-Type: application/json\r\n"
		     "Content-Length: %zu\r\nConnection: close\r\n\r\n",
		     blen) < 0) {
		head = NULL;
		return cli_fail("out of memory");
	}
	if (fsutil_write_all(fd, head, strlen(head)) < 0 || fsutil_write_all(fd, body, blen) < 0)
		return cli_fail("cordond at %s: sending the request: %s", r->socket_path,
				strerror(errno));
	wait_s = r->answer_wait_s > 0 ? r->answer_wait_s : 3600;
	if (read_reply(fd, wait_s, r->cancel, &reply, &reply_len) < 0 && errno == EINTR) {
		/* Closing the connection is how cordond is told: it kills the run. */
		int sig = *r->cancel;

		(void)close(TAKE_FD(fd));
		fprintf(stderr,
			"cordon: %s: the run was stopped by cordond; its output is not "
			"available through cordond\n",
			strsignal(sig));
		return 128 + sig;
	}
	if (!reply)
		return errno == ETIMEDOUT
			       ? cli_fail("cordond at %s: no answer within %.0f s (the run's "
					  "timeout and a grace): is cordond hung?",
					  r->socket_path, wait_s)
			       : cli_fail("cordond at %s: reading the reply: %s", r->socket_path,
					  strerror(errno));
	if (sscanf(reply, "HTTP/1.%*d %d", &status) != 1 || !(sep = strstr(reply, "\r\n\r\n")))
		return cli_fail("cordond at %s: not an HTTP reply", r->socket_path);
	payload = sep + 4;
	j = json_loadb(payload, reply_len - (size_t)(payload - reply), JSON_ALLOW_NUL, &je);
	if (status != 200) {
		json_t *err = j ? json_object_get(j, "error") : NULL;

		if (status == 409 && r->profile_digest && r->quiet_profile_mismatch &&
		    json_is_string(err) && !strncmp(json_string_value(err), "profile: ", 9)) {
			json_decref(j);
			*ret_unreachable = true;
			errno = ENOTSUP;
			return CORDON_EXIT_FAILURE;
		}

		/*
		 * cordond's own refusal of this caller (not root, not in its group, by its
		 * reading of the group database, which a socket's mode only approximates: a
		 * socket opened up, a process that still holds the group after it was taken out
		 * of it): under --via auto, as a socket whose mode refuses them, a direct run.
		 */
		if (status == 403 && r->quiet_profile_mismatch) {
			json_decref(j);
			*ret_unreachable = true;
			errno = EACCES;
			return CORDON_EXIT_FAILURE;
		}

		rc = cli_fail("cordond: %s (HTTP %d)",
			      json_is_string(err) ? json_string_value(err) : "request failed",
			      status);
		json_decref(j);
		return rc;
	}
	if (!j || !json_is_object(j) || !json_is_string(json_object_get(j, "output"))) {
		json_decref(j);
		return cli_fail("cordond at %s: malformed result", r->socket_path);
	}
	if (r->keep && !r->workdir && json_is_string(json_object_get(j, "workdir")))
		fprintf(stderr, "cordon: kept workdir %s\n",
			json_string_value(json_object_get(j, "workdir")));
	if (r->json) {
		size_t n = reply_len - (size_t)(payload - reply);

		while (n > 0 && payload[n - 1] == '\n')
			n--;
		wrote = fsutil_write_all(1, payload, n) == 0;
	} else {
		json_t *out = json_object_get(j, "output");

		wrote = fsutil_write_all(1, json_string_value(out), json_string_length(out)) == 0;
	}
	wrote = wrote && fsutil_write_all(1, "\n", 1) == 0;
	rc = wrote ? exit_status(j) : cli_fail("writing the result: %s", strerror(errno));
	json_decref(j);
	return rc;
}
