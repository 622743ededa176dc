/* SPDX-License-Identifier: MIT */
/*
 * The Daytona backend: one remote sandbox per open() (a run, or a cordond session), created
 * from a snapshot or an image, each command one call of the toolbox's execute endpoint with the
 * workdir as cwd and the run's environment (AG2's DaytonaEnvironment passes neither), deleted at
 * close. The REST calls and their pitfalls: shared/reference/docker-daytona.md part B; what
 * users see and every difference from AG2: docs/daytona.md.
 *
 * The sandbox is created on first use (exec, the files calls, or daytona_ensure), so that the
 * wait for it honours the run's cancel flag; open() only checks the configuration.
 */
#define _GNU_SOURCE
#include "backends/daytona/daytona.h"
#include "backends/daytona/jstream.h"
#include "backends/daytona/rest.h"
#include "backends/orphan.h"
#include "runtime/capture.h"
#include "runtime/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_API_URL "https://app.daytona.io/api"
#define DEFAULT_WORKDIR "/workspace"
#define DEFAULT_START_TIMEOUT_S 60
/* How long past the command's own timeout the answer may take to begin (queueing, network). */
#define EXEC_GRACE_MS 10000L
#define CALL_TIMEOUT_MS 60000L
#define DELETE_TIMEOUT_MS 15000L
#define GC_MAX_PAGES 1000u /* of the sandbox list, for cordon gc */
#define MAX_FILE (64u << 20)
/* The SDK's wait: every 100 ms for 5 s, then backing off to 1 s (docker-daytona.md B3). */
#define POLL_FAST_MS 100.0
#define POLL_FAST_FOR_MS 5000.0
#define POLL_MAX_MS 1000.0
/* Creates sent when the earlier ones are known to have made nothing. */
#define CREATE_TRIES 3
/* autoStopInterval when the profile sets none: Daytona's own default, said explicitly. */
#define DEFAULT_AUTO_STOP_MIN 15

struct daytona {
	long call_timeout_ms; /* an API call's whole answer (0: CALL_TIMEOUT_MS for its headers) */
	/*
	 * One call at a time: a cordond session's runs and file calls may come from several
	 * threads, and a libcurl handle serves one transfer at a time.
	 */
	pthread_mutex_t lock;
	struct dt_client c;
	char *api; /* the control plane's base URL, without a trailing '/' */
	char *target, *snapshot, *image, *workdir;
	uint64_t cpu, memory, disk, auto_stop, start_timeout_s;
	bool block_net;
	struct cordon_list labels;
	char session[33];
	struct orphan_self self; /* the machine, boot, pid namespace and owner labels */
	char *id;
	char *toolbox;	/* {toolboxProxyUrl}/{id} */
	char *last_url; /* the URL of the last call: its dt_request's, for messages */
	bool failed;	/* the sandbox could not be had: do not try again */
};

static char *dup_or_null(const char *s)
{
	return s && *s ? strdup(s) : NULL;
}

/*
 * cordond clears its environment at start (no command may see it): what the Daytona backend
 * needs from it is taken first, and kept here only.
 */
static struct {
	char *key, *api_url, *target;
	bool captured;
} daemon_env;

int daytona_capture_env(cordon_error *e)
{
	const char *creds = getenv("CREDENTIALS_DIRECTORY");
	const char *key = getenv("DAYTONA_API_KEY");
	char buf[4096];
	ssize_t n = -1;

	/* systemd's LoadCredential=daytona-api-key:FILE: the key never is in an environment. */
	if (creds && *creds) {
		char path[PATH_MAX];
		int fd;

		(void)snprintf(path, sizeof(path), "%s/daytona-api-key", creds);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd >= 0) {
			n = read(fd, buf, sizeof(buf) - 1);
			(void)close(fd);
			if (n < 0)
				return cordon_err(e, errno, "daytona: reading %s", path);
			buf[n] = '\0';
			buf[strcspn(buf, "\r\n")] = '\0';
			key = buf;
		}
	}
	daemon_env.key = key && *key ? strdup(key) : NULL;
	daemon_env.api_url = dup_or_null(getenv("DAYTONA_API_URL"));
	daemon_env.target = dup_or_null(getenv("DAYTONA_TARGET"));
	explicit_bzero(buf, sizeof(buf));
	daemon_env.captured = true;
	return 0;
}

static const char *config_env(const char *name)
{
	const char *v;

	if (daemon_env.captured)
		v = !strcmp(name, "DAYTONA_API_KEY")   ? daemon_env.key
		    : !strcmp(name, "DAYTONA_API_URL") ? daemon_env.api_url
						       : daemon_env.target;
	else
		v = getenv(name);
	return v && *v ? v : NULL;
}

#define now_ms dt_now_ms
#define oom dt_oom

/* Sandbox ids go into URL paths: accept nothing that could change the path. */
static bool id_ok(const char *id)
{
	if (!id || !*id || strlen(id) > 128)
		return false;
	for (const char *p = id; *p; p++)
		if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') &&
		    !(*p >= '0' && *p <= '9') && !strchr("-_.", *p))
			return false;
	return strcmp(id, ".") && strcmp(id, "..");
}

static void daytona_free(struct daytona *d)
{
	if (!d)
		return;
	dt_client_free(&d->c);
	free(d->api);
	free(d->target);
	free(d->snapshot);
	free(d->image);
	free(d->workdir);
	cordon_list_free(&d->labels);
	free(d->id);
	free(d->toolbox);
	free(d->last_url);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

static int daytona_open(const struct cordon_open *o, void **ret_h, cordon_error *e)
{
	const struct cordon_profile *p = o->profile;
	struct daytona *d = calloc(1, sizeof(*d));
	const char *key = config_env("DAYTONA_API_KEY");
	/*
	 * The environment wins over the profile, as for Daytona's SDKs: the key and the URL it
	 * was given for come together (a profile must not send an administrator's key
	 * elsewhere); the profile's are the defaults.
	 */
	const char *api =
		config_env("DAYTONA_API_URL") ? config_env("DAYTONA_API_URL") : p->daytona_api_url;
	size_t len;
	int rc = -1;

	/* o->workdir is the host's: the sandbox has its own (docs/daytona.md) */
	if (!d)
		return oom(e);
	pthread_mutex_init(&d->lock, NULL);
	if (!key || !*key) {
		cordon_err(e, 0,
			   "daytona: DAYTONA_API_KEY is not set (the API key of the Daytona "
			   "organisation to run in)");
		goto out;
	}
	if (p->daytona_snapshot && p->daytona_image) {
		cordon_err(e, 0,
			   "daytona: the profile sets both snapshot '%.64s' and image '%.64s': "
			   "choose one",
			   p->daytona_snapshot, p->daytona_image);
		goto out;
	}
	if (!p->daytona_image && (p->daytona_cpu || p->daytona_memory || p->daytona_disk)) {
		cordon_err(e, 0,
			   "daytona: cpu, memory and disk apply only to an image (Daytona refuses "
			   "resources for a snapshot, its default included)");
		goto out;
	}
	d->api = strdup(api ? api : DEFAULT_API_URL);
	d->workdir = strdup(p->daytona_workdir ? p->daytona_workdir : DEFAULT_WORKDIR);
	if (!d->api || !d->workdir) {
		oom(e);
		goto out;
	}
	len = strlen(d->api);
	while (len > 0 && d->api[len - 1] == '/')
		d->api[--len] = '\0';
	if (dt_check_url(d->api, "API URL", e) < 0)
		goto out;
	d->target = dup_or_null(config_env("DAYTONA_TARGET") ? config_env("DAYTONA_TARGET")
							     : p->daytona_target);
	d->snapshot = dup_or_null(p->daytona_snapshot);
	d->image = dup_or_null(p->daytona_image);
	d->cpu = p->daytona_cpu;
	d->memory = p->daytona_memory;
	d->disk = p->daytona_disk;
	d->auto_stop = p->daytona_auto_stop;
	d->start_timeout_s =
		p->daytona_start_timeout ? p->daytona_start_timeout : DEFAULT_START_TIMEOUT_S;
	d->block_net = p->network == CORDON_NET_NONE;
	if (cordon_list_copy(&d->labels, &p->daytona_labels, e) < 0)
		goto out;
	backend_random_hex(d->session, 16);
	orphan_self_read(&d->self);
	if (dt_client_init(&d->c, key, e) < 0)
		goto out;
	*ret_h = TAKE_PTR(d);
	rc = 0;
out:
	daytona_free(d);
	return rc;
}

/* Send rq; an answer that never came (cancel, timeout) is an error here. */
static int send_call(struct daytona *d, struct dt_request *rq, struct dt_response *r,
		     cordon_error *e)
{
	if (dt_send(&d->c, rq, r, e) < 0)
		return -1;
	if (r->cancelled)
		return cordon_err(e, ECANCELED, "daytona: %s: cancelled", rq->what);
	if (r->timed_out)
		return cordon_err(e, ETIMEDOUT, "daytona: %s: no answer within %ld s", rq->what,
				  rq->header_timeout_ms / 1000);
	return 0;
}

/* A control-plane call whose answer is collected: 0 with the status in r. */
static int api_call(struct daytona *d, const char *method, const char *path, const char *what,
		    json_t *body, enum dt_retry retry, struct dt_request *rq, struct dt_response *r,
		    cordon_error *e)
{
	_cleanup_free_ char *text = NULL;
	char *url;

	if (body && !(text = json_dumps(body, JSON_COMPACT)))
		return oom(e);
	if (asprintf(&url, "%s%s", d->api, path) < 0)
		return oom(e);
	free(d->last_url);
	d->last_url = url;
	*rq = (struct dt_request){
		.method = method,
		.url = url,
		.what = what,
		.content_type = text ? "application/json" : NULL,
		.body = text,
		.body_len = text ? strlen(text) : 0,
		.retry = retry,
		.header_timeout_ms = d->call_timeout_ms ? d->call_timeout_ms : CALL_TIMEOUT_MS,
		.total_timeout_ms = d->call_timeout_ms,
	};
	if (send_call(d, rq, r, e) < 0)
		return -1;
	/* The body was ours: rq is used for messages only from here. */
	rq->body = NULL;
	return 0;
}

/* GET path: its JSON answer in *ret (NULL when the body is not JSON); any status but 200 is
 * an error naming what was asked. */
static int api_get_json(struct daytona *d, const char *path, const char *what, json_t **ret,
			cordon_error *e)
{
	struct dt_request rq;
	struct dt_response r = { 0 };
	int rc = -1;

	*ret = NULL;
	if (api_call(d, "GET", path, what, NULL, DT_RETRY_ALL, &rq, &r, e) < 0)
		goto out;
	if (r.status != 200) {
		dt_status_error(&d->c, &rq, &r, e);
		goto out;
	}
	*ret = json_loadb(r.body, r.body_len, 0, NULL);
	rc = 0;
out:
	dt_response_free(&r);
	return rc;
}

/*
 * The sandboxes whose label key has this value (GET /sandbox?labels=...), as the answer: one
 * page, from cursor (NULL: the first); the answer's nextCursor names the next.
 */
static int list_labelled(struct daytona *d, const char *key, const char *value, const char *cursor,
			 json_t **ret, cordon_error *e)
{
	_cleanup_free_ char *labels = NULL, *path = NULL, *paged = NULL;

	*ret = NULL;
	if (asprintf(&labels, "{\"%s\":\"%s\"}", key, value) < 0) {
		labels = NULL;
		return oom(e);
	}
	path = dt_url_query("", "/sandbox", "labels", labels);
	if (path && cursor)
		paged = dt_url_query("", path, "cursor", cursor);
	if (!path || (cursor && !paged))
		return oom(e);
	return api_get_json(d, paged ? paged : path, "list sandboxes", ret, e);
}

static json_t *create_body(const struct daytona *d)
{
	json_t *b = json_object(), *labels = json_object();

	if (!b || !labels)
		goto fail;
	for (size_t i = 0; i < d->labels.n; i++) {
		const char *kv = d->labels.v[i], *eq = strchr(kv, '=');
		_cleanup_free_ char *k = eq ? strndup(kv, (size_t)(eq - kv)) : NULL;

		if (!k || json_object_set_new(labels, k, json_string(eq + 1)) < 0)
			goto fail;
	}
	/*
	 * Ours last: a profile cannot disguise a sandbox as another run's. What gc needs to
	 * prove a sandbox an orphan (orphan.h); a boot or pid namespace that cannot be read
	 * is left out (a profile's label of that name too), and gc then keeps the sandbox.
	 */
	(void)json_object_del(labels, ORPHAN_LABEL_BOOT);
	(void)json_object_del(labels, ORPHAN_LABEL_PIDNS);
	if (json_object_set_new(labels, ORPHAN_LABEL_SESSION, json_string(d->session)) < 0 ||
	    json_object_set_new(labels, ORPHAN_LABEL_HOST, json_string(d->self.host)) < 0 ||
	    json_object_set_new(labels, ORPHAN_LABEL_OWNER, json_string(d->self.owner)) < 0 ||
	    json_object_set_new(labels, ORPHAN_LABEL_MACHINE, json_string(d->self.machine)) < 0 ||
	    (d->self.boot[0] &&
	     json_object_set_new(labels, ORPHAN_LABEL_BOOT, json_string(d->self.boot)) < 0) ||
	    (d->self.pidns[0] &&
	     json_object_set_new(labels, ORPHAN_LABEL_PIDNS, json_string(d->self.pidns)) < 0))
		goto fail;
	/* json_object_set_new takes labels, even when it fails */
	if (json_object_set_new(b, "labels", TAKE_PTR(labels)) < 0)
		goto fail_b;
	if (d->image) {
		_cleanup_free_ char *df = NULL;

		/* The SDK's Image.base(img): a one-line Dockerfile. */
		if (asprintf(&df, "FROM %s\n", d->image) < 0) {
			df = NULL;
			goto fail_b;
		}
		if (json_object_set_new(b, "buildInfo",
					json_pack("{s:s}", "dockerfileContent", df)) < 0)
			goto fail_b;
		if ((d->cpu && json_object_set_new(b, "cpu", json_integer((json_int_t)d->cpu))) ||
		    (d->memory &&
		     json_object_set_new(b, "memory", json_integer((json_int_t)d->memory))) ||
		    (d->disk && json_object_set_new(b, "disk", json_integer((json_int_t)d->disk))))
			goto fail_b;
	} else if (d->snapshot && json_object_set_new(b, "snapshot", json_string(d->snapshot))) {
		goto fail_b;
	}
	if (d->target && json_object_set_new(b, "target", json_string(d->target)))
		goto fail_b;
	if (json_object_set_new(b, "autoStopInterval",
				json_integer((json_int_t)(d->auto_stop ? d->auto_stop
								       : DEFAULT_AUTO_STOP_MIN))))
		goto fail_b;
	/*
	 * Deleted as soon as it stops: a sandbox whose cordon was SIGKILLed goes by itself after
	 * the auto-stop interval (Daytona's default 15 minutes) instead of living on.
	 */
	if (json_object_set_new(b, "autoDeleteInterval", json_integer(0)) ||
	    json_object_set_new(b, "networkBlockAll", json_boolean(d->block_net)) ||
	    json_object_set_new(b, "public", json_false()))
		goto fail_b;
	return b;
fail:
	json_decref(labels);
fail_b:
	json_decref(b);
	return NULL;
}

/* The toolbox's base for this sandbox: {toolboxProxyUrl}/{id} (docker-daytona.md B2). */
static int set_toolbox(struct daytona *d, const char *proxy_url, cordon_error *e)
{
	size_t len = strlen(proxy_url);

	while (len > 0 && proxy_url[len - 1] == '/')
		len--;
	if (asprintf(&d->toolbox, "%.*s/%s", (int)len, proxy_url, d->id) < 0) {
		d->toolbox = NULL;
		return oom(e);
	}
	return 0;
}

/* Take id, state and the toolbox URL from a Sandbox answer. */
static int read_sandbox(struct daytona *d, const struct dt_response *r, const char *what,
			char *state, size_t n, char *reason, size_t rn, cordon_error *e)
{
	json_t *j = json_loadb(r->body ? r->body : "", r->body_len, 0, NULL);
	const char *id = json_string_value(json_object_get(j, "id"));
	const char *st = json_string_value(json_object_get(j, "state"));
	const char *tb = json_string_value(json_object_get(j, "toolboxProxyUrl"));
	const char *why = json_string_value(json_object_get(j, "errorReason"));
	int rc = -1;

	if (!json_is_object(j) || !id_ok(id)) {
		cordon_err(e, 0, "daytona: %s: the answer is not a sandbox with a valid id", what);
		goto out;
	}
	if (!d->id && !(d->id = strdup(id))) {
		oom(e);
		goto out;
	}
	if (strcmp(d->id, id)) {
		cordon_err(e, 0, "daytona: %s: the answer is about another sandbox", what);
		goto out;
	}
	(void)snprintf(state, n, "%s", st ? st : "unknown");
	/* The server's words: the key masked, as in its error messages (found in review). */
	dt_clean_line(d->c.key, why ? why : "", reason, rn);
	if (tb && *tb && !d->toolbox && set_toolbox(d, tb, e) < 0)
		goto out;
	rc = 0;
out:
	json_decref(j);
	return rc;
}

/*
 * The ids of the sandboxes that carry this handle's session label, NULL-terminated in *ret
 * (a create whose outcome was unknown may have made one).
 */
static int find_by_session(struct daytona *d, char ***ret, cordon_error *e)
{
	json_t *j = NULL, *items, *it;
	char **ids = NULL;
	size_t i, n = 0;
	int rc = -1;

	if (list_labelled(d, ORPHAN_LABEL_SESSION, d->session, NULL, &j, e) < 0)
		goto out;
	items = json_object_get(j, "items");
	ids = calloc(json_array_size(items) + 1, sizeof(*ids));
	if (!ids) {
		oom(e);
		goto out;
	}
	json_array_foreach(items, i, it)
	{
		const char *id = json_string_value(json_object_get(it, "id"));
		const char *sess = json_string_value(
			json_object_get(json_object_get(it, "labels"), ORPHAN_LABEL_SESSION));

		/* The filter is the server's: check the label ourselves too. */
		if (id_ok(id) && sess && !strcmp(sess, d->session) && !(ids[n++] = strdup(id))) {
			oom(e);
			goto out;
		}
	}
	*ret = TAKE_PTR(ids);
	rc = 0;
out:
	if (ids)
		for (i = 0; i < n; i++)
			free(ids[i]);
	free(ids);
	json_decref(j);
	return rc;
}

static void delete_id(struct daytona *d, const char *id)
{
	_cleanup_free_ char *path = NULL;
	struct dt_request rq;
	struct dt_response r = { 0 };
	cordon_error e;

	if (asprintf(&path, "/sandbox/%s", id) < 0) {
		path = NULL;
		return;
	}
	(void)api_call(d, "DELETE", path, "delete sandbox", NULL, DT_RETRY_ALL, &rq, &r, &e);
	dt_response_free(&r);
}

/* Delete whatever carries this handle's session label, and forget the id if it was one. */
static void delete_by_session(struct daytona *d)
{
	volatile int *cancel = d->c.cancel;
	char **ids = NULL;
	cordon_error e;

	d->c.cancel = NULL; /* cleaning up after a cancel is the point */
	if (find_by_session(d, &ids, &e) == 0) {
		for (char **p = ids; *p; p++) {
			delete_id(d, *p);
			free(*p);
		}
		free(ids);
	}
	d->c.cancel = cancel;
}

static int toolbox_url(struct daytona *d, cordon_error *e)
{
	_cleanup_free_ char *path = NULL;
	json_t *j = NULL;
	const char *url;
	int rc = -1;

	if (!d->toolbox) {
		/* An answer without toolboxProxyUrl: ask for it, as the SDK does. */
		if (asprintf(&path, "/sandbox/%s/toolbox-proxy-url", d->id) < 0) {
			path = NULL;
			return oom(e);
		}
		if (api_get_json(d, path, "get toolbox URL", &j, e) < 0)
			goto out;
		url = json_string_value(json_object_get(j, "url"));
		if (!url || !*url) {
			cordon_err(e, 0, "daytona: get toolbox URL: the answer has no url");
			goto out;
		}
		if (set_toolbox(d, url, e) < 0)
			goto out;
	}
	rc = dt_check_url(d->toolbox, "toolbox URL", e);
out:
	json_decref(j);
	return rc;
}

/* A toolbox call on the sandbox: url = toolbox + path + ?path=<remote path>[&extra]. */
static int toolbox_call(struct daytona *d, const char *method, const char *path, const char *remote,
			const char *extra, const char *what, const char *ctype, const void *body,
			size_t n, enum dt_retry retry, size_t max_body, struct dt_response *r,
			struct dt_request *rq, cordon_error *e)
{
	_cleanup_free_ char *url = dt_url_query(d->toolbox, path, "path", remote);
	char *full;

	if (!url || asprintf(&full, "%s%s", url, extra ? extra : "") < 0)
		return oom(e);
	free(d->last_url);
	d->last_url = full;
	*rq = (struct dt_request){
		.method = method,
		.url = full,
		.what = what,
		.content_type = ctype,
		.body = body,
		.body_len = n,
		.retry = retry,
		.header_timeout_ms = CALL_TIMEOUT_MS,
		.max_body = max_body,
	};
	return send_call(d, rq, r, e);
}

static int make_workdir(struct daytona *d, cordon_error *e)
{
	struct dt_request rq;
	struct dt_response r = { 0 };
	int rc = 0;

	if (toolbox_call(d, "POST", "/files/folder", d->workdir, "&mode=0755", "create workdir",
			 NULL, NULL, 0, DT_RETRY_ALL, 0, &r, &rq, e) < 0)
		return -1;
	if (r.status / 100 != 2)
		rc = dt_status_error(&d->c, &rq, &r, e);
	dt_response_free(&r);
	return rc;
}

/* 1: started; 0: on its way; -1 (e filled): a state it will not start from. */
static int judge_state(const struct daytona *d, const char *state, const char *reason,
		       cordon_error *e)
{
	if (!strcmp(state, "started"))
		return 1;
	if (!strcmp(state, "error") || !strcmp(state, "build_failed"))
		return cordon_err(e, 0, "daytona: sandbox %s is in state %s: %s", d->id, state,
				  reason[0] ? reason : "no reason given");
	if (!strcmp(state, "destroyed") || !strcmp(state, "destroying") ||
	    !strcmp(state, "archived") || !strcmp(state, "stopped"))
		return cordon_err(e, 0,
				  "daytona: sandbox %s went to state %s while cordon waited for it "
				  "to start",
				  d->id, state);
	return 0;
}

static int wait_started(struct daytona *d, cordon_error *e)
{
	_cleanup_free_ char *path = NULL;
	double start = now_ms(), limit = (double)d->start_timeout_s * 1e3, delay = POLL_FAST_MS;
	char state[32] = "", reason[160];

	if (asprintf(&path, "/sandbox/%s", d->id) < 0) {
		path = NULL;
		return oom(e);
	}
	for (;;) {
		struct dt_request rq;
		struct dt_response r = { 0 };
		double left;
		int rc = api_call(d, "GET", path, "get sandbox", NULL, DT_RETRY_ALL, &rq, &r, e);

		if (rc == 0 && r.status != 200)
			rc = dt_status_error(&d->c, &rq, &r, e);
		if (rc == 0)
			rc = read_sandbox(d, &r, "get sandbox", state, sizeof(state), reason,
					  sizeof(reason), e);
		dt_response_free(&r);
		if (rc < 0)
			return -1;
		rc = judge_state(d, state, reason, e);
		if (rc != 0)
			return rc > 0 ? 0 : -1;
		left = start + limit - now_ms();
		if (left <= 0)
			return cordon_err(
				e, ETIMEDOUT,
				"daytona: sandbox %s did not start within %llu s (still %s)", d->id,
				(unsigned long long)d->start_timeout_s, state);
		if (now_ms() - start > POLL_FAST_FOR_MS)
			delay = delay * 2 > POLL_MAX_MS ? POLL_MAX_MS : delay * 2;
		{
			double ms = delay < left ? delay : left;
			double end = now_ms() + ms;

			while (now_ms() < end) {
				struct timespec ts = { 0, 10 * 1000 * 1000 };

				if (d->c.cancel && *d->c.cancel)
					return cordon_err(e, ECANCELED,
							  "daytona: cancelled while sandbox %s "
							  "was starting",
							  d->id);
				(void)nanosleep(&ts, NULL);
			}
		}
	}
}

/*
 * POST /sandbox, then wait until it is started. Create is sent again only when it cannot have
 * made anything, or when the sandbox is known not to exist: after an answer that leaves it
 * open (a broken connection, no answer in time, a 500/502/504), the sandboxes with this
 * handle's session label are looked up, and the one found is taken as this handle's own.
 */
static int create_sandbox(struct daytona *d, json_t *body, cordon_error *e)
{
	char state[32], reason[160];

	for (unsigned attempt = 1;; attempt++) {
		struct dt_request rq;
		struct dt_response r = { 0 };
		char **ids = NULL;
		/*
		 * Not cut short by the caller's cancel flag: Daytona makes the sandbox whether
		 * anyone waits for its answer or not, and a lookup by the session label made at
		 * once finds nothing while it is still being made (found in red team: a client of
		 * cordond that went away during the create left a sandbox running until its
		 * auto-stop, counted by no limit). The create is waited for, the flag looked at
		 * after it, and the sandbox, known by its id then, deleted (daytona_close).
		 */
		volatile int *cancel = TAKE_PTR(d->c.cancel);
		int rc = api_call(d, "POST", "/sandbox", "create sandbox", body, DT_RETRY_SAFE, &rq,
				  &r, e);
		bool unknown;

		d->c.cancel = cancel;
		if (rc == 0 && (r.status == 200 || r.status == 201)) {
			rc = read_sandbox(d, &r, "create sandbox", state, sizeof(state), reason,
					  sizeof(reason), e);
			dt_response_free(&r);
			if (rc < 0) {
				delete_by_session(d);
				return -1;
			}
			if (cancel && *cancel)
				return cordon_err(e, ECANCELED,
						  "daytona: cancelled while sandbox %s was created",
						  d->id);
			break;
		}
		if (rc == 0)
			dt_status_error(&d->c, &rq, &r, e);
		unknown = rc < 0 ? e->code != ENOMEM
				 : r.status == 500 || r.status == 502 || r.status == 504;
		dt_response_free(&r);
		if (!unknown)
			return -1;
		{
			cordon_error fe;

			if (find_by_session(d, &ids, &fe) < 0)
				return -1; /* e: the create's own error */
		}
		if (ids[0]) {
			/* It was made: this one is ours; any other (there should be none) goes. */
			d->id = ids[0];
			for (char **p = ids + 1; *p; p++) {
				delete_id(d, *p);
				free(*p);
			}
			free(ids);
			return wait_started(d, e);
		}
		free(ids);
		if (attempt >= CREATE_TRIES)
			return -1;
	}
	switch (judge_state(d, state, reason, e)) {
	case 1:
		return 0;
	case 0:
		return wait_started(d, e);
	default:
		return -1;
	}
}

static int ensure_locked(void *h, volatile int *cancel, cordon_error *e)
{
	struct daytona *d = h;
	json_t *body = NULL;
	int rc = -1;

	if (d->id && d->toolbox && !d->failed)
		return 0;
	if (d->failed)
		return cordon_err(e, 0, "daytona: the sandbox is gone (an earlier error)");
	d->c.cancel = cancel;
	body = create_body(d);
	if (!body)
		return oom(e);
	if (create_sandbox(d, body, e) < 0)
		goto out;
	if (toolbox_url(d, e) < 0 || make_workdir(d, e) < 0)
		goto out;
	rc = 0;
out:
	if (rc < 0)
		d->failed = true;
	json_decref(body);
	return rc;
}

int daytona_ensure(void *h, volatile int *cancel, cordon_error *e)
{
	struct daytona *d = h;
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = ensure_locked(d, cancel, e);
	d->c.cancel = NULL;
	pthread_mutex_unlock(&d->lock);
	return rc;
}

const char *daytona_workdir(const void *h)
{
	return ((const struct daytona *)h)->workdir;
}

static void daytona_close(void *h)
{
	struct daytona *d = h;

	if (!d)
		return;
	if (d->id) {
		_cleanup_free_ char *path = NULL;
		struct dt_request rq;
		struct dt_response r = { 0 };
		cordon_error e;

		d->c.cancel = NULL; /* a cancelled run still deletes its sandbox */
		d->c.max_tries = 3;
		d->c.retry_budget_ms = DELETE_TIMEOUT_MS;
		/*
		 * ...within DELETE_TIMEOUT_MS a try, the answer's body included: it is the one call
		 * a signal does not cut short, so a server that drips must not hold cordon (found
		 * in review: over a minute, SIGTERM ignored). What is left, cordon gc removes.
		 */
		d->call_timeout_ms = DELETE_TIMEOUT_MS;
		if (asprintf(&path, "/sandbox/%s", d->id) >= 0)
			(void)api_call(d, "DELETE", path, "delete sandbox", NULL, DT_RETRY_ALL, &rq,
				       &r, &e);
		else
			path = NULL;
		dt_response_free(&r);
	}
	daytona_free(d);
}

/* Python's shlex.quote, as AG2 joins argv (shlex.join). */
static int shell_append(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
	if (*len + n + 1 > *cap) {
		size_t nc = *cap ? *cap : 256;
		char *p;

		while (nc < *len + n + 1)
			nc *= 2;
		p = realloc(*buf, nc);
		if (!p)
			return -1;
		*buf = p;
		*cap = nc;
	}
	memcpy(*buf + *len, s, n);
	*len += n;
	(*buf)[*len] = '\0';
	return 0;
}

static char *shell_join(char *const *argv)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;

	for (char *const *a = argv; *a; a++) {
		const char *s = *a;
		bool safe = *s != '\0';

		for (const char *p = s; *p && safe; p++)
			safe = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			       (*p >= '0' && *p <= '9') || strchr("@%+=:,./-_", *p);
		if ((a != argv && shell_append(&buf, &len, &cap, " ", 1) < 0) ||
		    (!safe && shell_append(&buf, &len, &cap, "'", 1) < 0))
			goto fail;
		for (const char *p = s; *p; p++) {
			if (*p == '\'' && !safe) {
				if (shell_append(&buf, &len, &cap, "'\"'\"'", 5) < 0)
					goto fail;
			} else if (shell_append(&buf, &len, &cap, p, 1) < 0) {
				goto fail;
			}
		}
		if (!safe && shell_append(&buf, &len, &cap, "'", 1) < 0)
			goto fail;
	}
	return buf ? buf : strdup("");
fail:
	free(buf);
	return NULL;
}

/*
 * The envs of the execute call: the run's environment without the host's PATH and HOME, and
 * never the Daytona credentials of the machine cordon runs on (a profile with env_inherit
 * would pass them) unless the profile's env names them itself.
 */
static bool credential_var(const struct cordon_profile *p, const char *kv)
{
	const char *names[] = { "DAYTONA_API_KEY=", "DAYTONA_JWT_TOKEN=" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t n = strlen(names[i]);

		if (strncmp(kv, names[i], n))
			continue;
		for (size_t j = 0; j < p->env.n; j++)
			if (!strncmp(p->env.v[j], names[i], n))
				return false;
		return true;
	}
	return false;
}

/*
 * JSON carries only UTF-8 text: anything else is said so, not taken for a lack of memory
 * (jansson refuses it; found in red team). Out of memory here, jansson says that next.
 */
static bool utf8_valid(const char *s)
{
	_cleanup_free_ char *fixed = NULL;
	size_t n = strlen(s), len;
	cordon_error e;

	return capture_utf8_repair(s, n, &fixed, &len, &e) < 0 ||
	       (len == n && !memcmp(fixed, s, n));
}

static json_t *exec_body(const struct daytona *d, const struct cordon_exec *x, long timeout_s,
			 cordon_error *e)
{
	_cleanup_free_ char *cmd = shell_join(x->argv);
	json_t *envs = json_object(), *b = NULL;

	if (!cmd || !envs)
		goto oom;
	if (!utf8_valid(cmd)) {
		cordon_err(
			e, EINVAL,
			"daytona: the command is not valid UTF-8 (Daytona's API takes JSON text)");
		goto fail;
	}
	for (char *const *v = x->envp; v && *v; v++) {
		const char *eq = strchr(*v, '=');
		_cleanup_free_ char *k = NULL;

		if (!eq || eq == *v || backend_host_only_var(x->profile, *v) ||
		    credential_var(x->profile, *v))
			continue;
		if (!utf8_valid(*v)) {
			cordon_err(e, EINVAL,
				   "daytona: an environment variable is not valid UTF-8 (Daytona's "
				   "API takes JSON text)");
			goto fail;
		}
		k = strndup(*v, (size_t)(eq - *v));
		if (!k || json_object_set_new(envs, k, json_string(eq + 1)) < 0)
			goto oom;
	}
	b = json_pack("{s:s, s:s, s:o}", "command", cmd, "cwd", d->workdir, "envs", envs);
	envs = NULL; /* json_pack's "o" took it, even on failure */
	if (b && timeout_s > 0 && json_object_set_new(b, "timeout", json_integer(timeout_s)) < 0)
		goto oom;
	if (b)
		return b;
oom:
	oom(e);
fail:
	json_decref(envs);
	json_decref(b);
	return NULL;
}

static void feed_capture(void *arg, const char *buf, size_t n)
{
	capture_feed(arg, buf, n);
}

static void jstream_sink_fn(void *arg, const char *buf, size_t n)
{
	struct jstream *j = arg;

	/* After an error the rest of the body is drained, not parsed. */
	if (j->error)
		return;
	(void)jstream_feed(j, buf, n);
}

static int daytona_exec_locked(void *h, const struct cordon_exec *x, struct cordon_result *r,
			       cordon_error *e)
{
	struct daytona *d = h;
	const struct cordon_profile *p = x->profile;
	struct capture *cap_out = NULL, *cap_err = NULL;
	_cleanup_free_ char *url = NULL, *text = NULL, *wd = NULL;
	struct dt_request rq;
	struct dt_response resp = { 0 };
	struct jstream js;
	json_t *body = NULL;
	long timeout_s = p->timeout > 0 ? (long)ceil(p->timeout) : 0;
	bool timed_out = false, cancelled = false;
	long long code = 0;
	int rc = -1;
	double t0;

	if (x->ret_pending)
		*x->ret_pending = NULL;
	if (x->stdin_fd >= 0)
		return cordon_err(e, 0,
				  "daytona: --stdin is not supported (the toolbox's execute call "
				  "takes no input)");
	if (ensure_locked(d, x->cancel, e) < 0)
		return -1;
	if (capture_new(p->max_output, &cap_out, e) < 0 ||
	    capture_new(p->max_output, &cap_err, e) < 0)
		goto out;
	body = exec_body(d, x, timeout_s, e);
	if (!body)
		goto out;
	text = json_dumps(body, JSON_COMPACT);
	if (!text || asprintf(&url, "%s/process/execute", d->toolbox) < 0) {
		url = NULL;
		oom(e);
		goto out;
	}
	jstream_init(&js, feed_capture, cap_out);
	rq = (struct dt_request){
		.method = "POST",
		.url = url,
		.what = "execute",
		.content_type = "application/json",
		.body = text,
		.body_len = strlen(text),
		/* The command may have run: only what says it did not is sent again. */
		.retry = DT_RETRY_SAFE,
		.header_timeout_ms = timeout_s > 0 ? timeout_s * 1000 + EXEC_GRACE_MS : 0,
		.sink = jstream_sink_fn,
		.sink_arg = &js,
	};
	if (!timeout_s)
		rq.header_timeout_ms = 24L * 3600 * 1000;
	d->c.cancel = x->cancel;
	d->c.max_tries = 5;
	t0 = now_ms();
	if (dt_send(&d->c, &rq, &resp, e) < 0)
		goto out;
	if (resp.cancelled) {
		/* SIGINT/SIGTERM: the sandbox (and the command in it) goes at close. */
		cancelled = true;
	} else if (resp.timed_out || resp.status == 408) {
		timed_out = true;
	} else if (resp.status != 200) {
		dt_status_error(&d->c, &rq, &resp, e);
		goto out;
	} else {
		if (js.error || jstream_end(&js) < 0) {
			cordon_err(e, 0, "daytona: execute: malformed answer (%s)",
				   js.error ? js.error : "incomplete");
			goto out;
		}
		if (!jstream_exit_code(&js, &code))
			code = 0; /* the SDKs: exit_code None -> 0 */
		if (code < 0 || code > 255) {
			/* The daemon could not start the shell: "result" says why. */
			_cleanup_free_ char *why = NULL;
			size_t n;

			char line[161];

			capture_end(cap_out);
			if (capture_text(cap_out, &why, &n, e) < 0)
				goto out;
			/* The command's own output when a signal killed it: one clean line, no key
			 * (found in red team: newlines and terminal escapes went to stderr). */
			dt_clean_line(d->c.key, why, line, sizeof(line));
			cordon_err(e, 0, "daytona: execute: the command could not start: %s", line);
			goto out;
		}
	}
	capture_end(cap_out);
	capture_end(cap_err);
	r->duration_ms = now_ms() - t0;
	r->peak_memory_bytes = -1;
	if (cancelled)
		backend_cancelled(r, *x->cancel);
	else
		r->exit_code = r->status = (int)code;
	/* Like AG2's Docker text; its Daytona text embeds the SDK's exception (docs/daytona.md). */
	if (capture_fill_result(cap_out, cap_err, p, timed_out, "Execution", r, e) < 0)
		goto out;
	/* The result names the workdir the command ran in: the sandbox's. */
	wd = strdup(d->workdir);
	if (!wd) {
		oom(e);
		goto out;
	}
	free(r->workdir);
	r->workdir = TAKE_PTR(wd);
	rc = 0;
out:
	d->c.cancel = NULL; /* the caller's flag may not outlive this call */
	json_decref(body);
	dt_response_free(&resp);
	capture_free(cap_out);
	capture_free(cap_err);
	return rc;
}

/* rel: relative, without empty, '.' or '..' components. */
static int remote_path(const struct daytona *d, const char *rel, char **ret, cordon_error *e)
{
	const char *p = rel;

	if (!*rel || *rel == '/')
		return cordon_err(e, EINVAL, "daytona: file path '%.100s' must be relative", rel);
	while (*p) {
		size_t n = strcspn(p, "/");

		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return cordon_err(e, EINVAL,
					  "daytona: file path '%.100s' has an empty, '.' or '..' "
					  "component",
					  rel);
		p += n;
		if (*p && !*++p)
			return cordon_err(e, EINVAL, "daytona: file path '%.100s' ends with '/'",
					  rel);
	}
	if (asprintf(ret, "%s/%s", d->workdir, rel) < 0) {
		*ret = NULL;
		return oom(e);
	}
	return 0;
}

static int daytona_put_file_locked(void *h, const char *rel, const void *buf, size_t n,
				   cordon_error *e)
{
	struct daytona *d = h;
	_cleanup_free_ char *path = NULL, *body = NULL, *ctype = NULL;
	char boundary[33];
	struct dt_request rq;
	struct dt_response r = { 0 };
	size_t len = 0;
	int rc = -1, hl;

	if (remote_path(d, rel, &path, e) < 0 || ensure_locked(d, NULL, e) < 0)
		return -1;
	/* multipart/form-data with one part "file" (the toolbox spec's form of upload-v2) */
	do
		backend_random_hex(boundary, 16);
	while (n >= 32 && memmem(buf, n, boundary, 32));
	body = malloc(n + 256);
	if (!body || asprintf(&ctype, "multipart/form-data; boundary=%s", boundary) < 0) {
		ctype = NULL;
		return oom(e);
	}
	hl = snprintf(body, 256,
		      "--%s\r\nContent-Disposition: form-data; name=\"file\"; "
		      "filename=\"upload\"\r\nContent-Type: application/octet-stream\r\n\r\n",
		      boundary);
	len = (size_t)hl;
	memcpy(body + len, buf, n);
	len += n;
	len += (size_t)snprintf(body + len, 256 - (size_t)hl, "\r\n--%s--\r\n", boundary);
	if (toolbox_call(d, "POST", "/files/upload-v2", path, NULL, "upload file", ctype, body, len,
			 DT_RETRY_ALL, 0, &r, &rq, e) < 0)
		goto out;
	if (r.status / 100 != 2) {
		dt_status_error(&d->c, &rq, &r, e);
		goto out;
	}
	rc = 0;
out:
	dt_response_free(&r);
	return rc;
}

static int daytona_get_file_locked(void *h, const char *rel, void **ret_buf, size_t *ret_n,
				   cordon_error *e)
{
	struct daytona *d = h;
	_cleanup_free_ char *path = NULL;
	struct dt_request rq;
	struct dt_response r = { 0 };
	int rc = -1;

	if (remote_path(d, rel, &path, e) < 0 || ensure_locked(d, NULL, e) < 0)
		return -1;
	if (toolbox_call(d, "GET", "/files/download", path, NULL, "download file", NULL, NULL, 0,
			 DT_RETRY_ALL, MAX_FILE, &r, &rq, e) < 0)
		goto out;
	if (r.status == 404) {
		cordon_err(e, ENOENT, "daytona: %s", path);
		goto out;
	}
	if (r.status != 200) {
		dt_status_error(&d->c, &rq, &r, e);
		goto out;
	}
	if (r.truncated) {
		cordon_err(e, EFBIG, "daytona: %s is larger than %u MiB", path, MAX_FILE >> 20);
		goto out;
	}
	*ret_n = r.body_len;
	*ret_buf = r.body ? TAKE_PTR(r.body) : calloc(1, 1);
	if (!*ret_buf) {
		oom(e);
		goto out;
	}
	rc = 0;
out:
	dt_response_free(&r);
	return rc;
}

static int daytona_exec(void *h, const struct cordon_exec *x, struct cordon_result *r,
			cordon_error *e)
{
	struct daytona *d = h;
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = daytona_exec_locked(h, x, r, e);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

static int daytona_put_file(void *h, const char *rel, const void *buf, size_t n, cordon_error *e)
{
	struct daytona *d = h;
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = daytona_put_file_locked(h, rel, buf, n, e);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

static int daytona_get_file(void *h, const char *rel, void **ret_buf, size_t *ret_n,
			    cordon_error *e)
{
	struct daytona *d = h;
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = daytona_get_file_locked(h, rel, ret_buf, ret_n, e);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

int daytona_delete_file(void *h, const char *rel, cordon_error *e)
{
	struct daytona *d = h;
	_cleanup_free_ char *path = NULL;
	struct dt_request rq;
	struct dt_response r = { 0 };
	int rc = -1;

	pthread_mutex_lock(&d->lock);
	if (remote_path(d, rel, &path, e) < 0 || ensure_locked(d, NULL, e) < 0)
		goto out;
	if (toolbox_call(d, "DELETE", "/files", path, NULL, "delete file", NULL, NULL, 0,
			 DT_RETRY_ALL, 0, &r, &rq, e) < 0)
		goto out;
	if (r.status == 404) {
		cordon_err(e, ENOENT, "daytona: %s", path);
		goto out;
	}
	if (r.status / 100 != 2) {
		dt_status_error(&d->c, &rq, &r, e);
		goto out;
	}
	rc = 0;
out:
	dt_response_free(&r);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

int daytona_gc(const struct cordon_profile *p, unsigned *ret_removed, unsigned *ret_skipped,
	       cordon_error *e)
{
	struct daytona *d = NULL;
	struct dt_request rq;
	json_t *j = NULL, *it;
	size_t i;
	int rc = -1;

	*ret_removed = *ret_skipped = 0;
	if (daytona_open(&(struct cordon_open){ .profile = p, .workdir_fd = -1 }, (void **)&d, e) <
	    0)
		return -1;
	if (!d->self.boot[0]) {
		cordon_err(e, 0,
			   "daytona: gc: this boot's id cannot be read "
			   "(/proc/sys/kernel/random/boot_id): no sandbox can be proven an orphan");
		goto out;
	}
	/*
	 * Every page (the API's default is 100 a page: found in review, a first page of live
	 * sandboxes hid the orphans after it), at most GC_MAX_PAGES of them.
	 */
	for (unsigned page = 0; page < GC_MAX_PAGES; page++) {
		_cleanup_free_ char *cursor = NULL;

		if (j) {
			const char *next = json_string_value(json_object_get(j, "nextCursor"));

			if (!next || !*next)
				break;
			cursor = strdup(next);
			json_decref(j);
			j = NULL;
			if (!cursor) {
				oom(e);
				goto out;
			}
		}
		/*
		 * This machine's, by its machine label, not its hostname (found in review: a
		 * machine, container or cloned VM of the same name, sharing the organisation, had
		 * its running sandboxes deleted: their pids were not running here). orphan_judge
		 * checks each again, whatever the server's filter did.
		 */
		if (list_labelled(d, ORPHAN_LABEL_MACHINE, d->self.machine, cursor, &j, e) < 0)
			goto out;
		json_array_foreach(json_object_get(j, "items"), i, it)
		{
			json_t *l = json_object_get(it, "labels");
			const char *id = json_string_value(json_object_get(it, "id"));
			time_t created;
			/* createdAt: ISO 8601, Daytona's clock; one that cannot be read is unknown */
			const bool has_created = orphan_parse_time(
				json_string_value(json_object_get(it, "createdAt")), &created);
			const struct orphan_labels lab = {
				.session =
					json_string_value(json_object_get(l, ORPHAN_LABEL_SESSION)),
				.owner = json_string_value(json_object_get(l, ORPHAN_LABEL_OWNER)),
				.machine =
					json_string_value(json_object_get(l, ORPHAN_LABEL_MACHINE)),
				.boot = json_string_value(json_object_get(l, ORPHAN_LABEL_BOOT)),
				.pidns = json_string_value(json_object_get(l, ORPHAN_LABEL_PIDNS)),
				.created = has_created ? &created : NULL,
			};
			_cleanup_free_ char *del = NULL;
			struct dt_response r2 = { 0 };

			if (!id_ok(id))
				continue;
			switch (orphan_judge(&d->self, &lab)) {
			case ORPHAN_NOT_OURS:
			case ORPHAN_ALIVE:
				continue;
			case ORPHAN_UNKNOWN:
				(*ret_skipped)++;
				continue;
			case ORPHAN_GONE:
				break;
			}
			if (asprintf(&del, "/sandbox/%s", id) < 0) {
				del = NULL;
				continue;
			}
			if (api_call(d, "DELETE", del, "delete sandbox", NULL, DT_RETRY_ALL, &rq,
				     &r2, e) == 0 &&
			    (r2.status / 100 == 2 || r2.status == 404))
				(*ret_removed)++;
			dt_response_free(&r2);
		}
	}
	rc = 0;
out:
	json_decref(j);
	daytona_free(d);
	return rc;
}

const struct cordon_backend_ops backend_daytona = {
	.name = "daytona",
	.open = daytona_open,
	.exec = daytona_exec,
	.put_file = daytona_put_file,
	.get_file = daytona_get_file,
	.close = daytona_close,
};
