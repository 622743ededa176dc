/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "backends/daytona/rest.h"
#include "runtime/cleanup.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

/*
 * The SDK version the toolbox daemon should treat cordon as: below 0.167 it answers session
 * logs in plain text, without the header it merges streams (docker-daytona.md B2). The same as
 * the specs the tests validate against.
 */
#define SDK_VERSION "0.205.0"
#define CONNECT_TIMEOUT_MS 10000L
#define DEFAULT_HEADER_TIMEOUT_MS 60000L
#define BODY_GRACE_MS 30000.0 /* a body, once its headers came (dt_request.total_timeout_ms) */
#define DEFAULT_MAX_BODY (1u << 20)
#define BACKOFF_BASE_MS 250.0
#define BACKOFF_CAP_MS 8000.0
#define RETRY_AFTER_CAP_MS 30000.0
#define SLEEP_SLICE_MS 20
#define now_ms dt_now_ms
#define oom dt_oom

double dt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int dt_oom(cordon_error *e)
{
	return cordon_err(e, ENOMEM, "out of memory");
}

int dt_client_init(struct dt_client *c, const char *key, cordon_error *e)
{
	static int global_done;
	_cleanup_free_ char *auth = NULL;
	struct curl_slist *h = NULL, *h2;

	memset(c, 0, sizeof(*c));
	for (const char *k = key; *k; k++)
		if ((unsigned char)*k < 0x20 || *k == 0x7f)
			return cordon_err(e, 0,
					  "daytona: DAYTONA_API_KEY contains a control character");
	/* libcurl >= 7.84 makes this thread-safe; Debian 12 has 7.88. */
	if (!__atomic_load_n(&global_done, __ATOMIC_ACQUIRE)) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
			return cordon_err(e, 0, "daytona: libcurl could not be initialised");
		__atomic_store_n(&global_done, 1, __ATOMIC_RELEASE);
	}
	c->key = strdup(key);
	if (!c->key || asprintf(&auth, "Authorization: Bearer %s", key) < 0) {
		auth = NULL;
		dt_client_free(c);
		return oom(e);
	}
	if (asprintf(&c->user_agent, "cordon/%s", CORDON_VERSION) < 0) {
		c->user_agent = NULL;
		dt_client_free(c);
		return oom(e);
	}
	h = curl_slist_append(NULL, auth);
	h2 = h ? curl_slist_append(h, "X-Daytona-SDK-Version: " SDK_VERSION) : NULL;
	h2 = h2 ? curl_slist_append(h2, "X-Daytona-Source: cordon") : NULL;
	/* No "Expect: 100-continue" round trip before a body. */
	h2 = h2 ? curl_slist_append(h2, "Expect:") : NULL;
	explicit_bzero(auth, strlen(auth));
	if (!h2) {
		curl_slist_free_all(h);
		dt_client_free(c);
		return oom(e);
	}
	c->headers = h2;
	c->curl = curl_easy_init();
	if (!c->curl) {
		dt_client_free(c);
		return oom(e);
	}
	c->max_tries = 5;
	c->retry_budget_ms = 60000;
	return 0;
}

void dt_client_free(struct dt_client *c)
{
	if (c->curl)
		curl_easy_cleanup(c->curl);
	if (c->headers) {
		/* The key is in the first header: wipe it before it goes back to malloc. */
		struct curl_slist *h = c->headers;

		explicit_bzero(h->data, strlen(h->data));
		curl_slist_free_all(h);
	}
	if (c->key) {
		explicit_bzero(c->key, strlen(c->key));
		free(c->key);
	}
	free(c->user_agent);
	memset(c, 0, sizeof(*c));
}

void dt_response_free(struct dt_response *r)
{
	free(r->body);
	memset(r, 0, sizeof(*r));
}

/* One attempt's state, shared with libcurl's callbacks. */
struct attempt {
	CURL *curl;
	const struct dt_request *rq;
	struct dt_response *r;
	size_t cap;
	size_t alloc;
	double start, header_deadline, total_deadline;
	volatile int *cancel;
	double retry_after_ms; /* -1: none given */
	bool header_timeout, cancelled, oom;
};

static size_t on_write(char *buf, size_t size, size_t nmemb, void *arg)
{
	struct attempt *a = arg;
	size_t n = size * nmemb, take;
	long status = 0;

	(void)curl_easy_getinfo(a->curl, CURLINFO_RESPONSE_CODE, &status);
	if (status == 200 && a->rq->sink) {
		a->rq->sink(a->rq->sink_arg, buf, n);
		return n;
	}
	take = a->r->body_len < a->cap ? a->cap - a->r->body_len : 0;
	if (take > n)
		take = n;
	if (take < n)
		a->r->truncated = true;
	if (!take)
		return n; /* drained, not kept */
	if (a->r->body_len + take + 1 > a->alloc) {
		size_t na = a->alloc ? a->alloc * 2 : 4096;
		char *p;

		while (na < a->r->body_len + take + 1)
			na *= 2;
		p = realloc(a->r->body, na);
		if (!p) {
			a->oom = true;
			return 0; /* aborts the transfer */
		}
		a->r->body = p;
		a->alloc = na;
	}
	memcpy(a->r->body + a->r->body_len, buf, take);
	a->r->body_len += take;
	a->r->body[a->r->body_len] = '\0';
	return n;
}

static size_t on_header(char *buf, size_t size, size_t nmemb, void *arg)
{
	struct attempt *a = arg;
	size_t n = size * nmemb;
	const char name[] = "retry-after:";

	if (n > sizeof(name) && !strncasecmp(buf, name, sizeof(name) - 1)) {
		char tmp[32], *end;
		size_t k = n - (sizeof(name) - 1);
		double s;

		if (k >= sizeof(tmp))
			k = sizeof(tmp) - 1;
		memcpy(tmp, buf + sizeof(name) - 1, k);
		tmp[k] = '\0';
		errno = 0;
		s = strtod(tmp, &end);
		/* Seconds only; an HTTP date is left to the backoff. */
		if (!errno && end != tmp && s >= 0 && s < 86400)
			a->retry_after_ms = s * 1e3;
	}
	return n;
}

static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct attempt *a = arg;
	long status = 0;

	if (a->cancel && *a->cancel) {
		a->cancelled = true;
		return 1;
	}
	(void)curl_easy_getinfo(a->curl, CURLINFO_RESPONSE_CODE, &status);
	if ((!status && now_ms() > a->header_deadline) || now_ms() > a->total_deadline) {
		a->header_timeout = true;
		return 1;
	}
	return 0;
}

static uint32_t random_u32(void)
{
	uint32_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
		v = (uint32_t)(now_ms() * 1000.0);
	return v;
}

/* Sleep ms in slices, false when cancelled meanwhile. */
static bool sleep_ms(double ms, volatile int *cancel)
{
	double end = now_ms() + ms;

	for (;;) {
		double left = end - now_ms();
		struct timespec ts;

		if (cancel && *cancel)
			return false;
		if (left <= 0)
			return true;
		if (left > SLEEP_SLICE_MS)
			left = SLEEP_SLICE_MS;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)(left * 1e6);
		(void)nanosleep(&ts, NULL);
	}
}

/* "host[:port]/path" of a URL: what messages show (never a query, never credentials). */
static void url_shown(const char *url, char *buf, size_t n)
{
	const char *p = strstr(url, "://");
	size_t len;

	p = p ? p + 3 : url;
	len = strcspn(p, "?#");
	(void)snprintf(buf, n, "%.*s", (int)(len > 120 ? 120 : len), p);
}

static bool transport_safe(CURLcode rc)
{
	/* Nothing reached the server: any request may be sent again. */
	return rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ||
	       rc == CURLE_COULDNT_RESOLVE_PROXY;
}

static bool status_retryable(long status, enum dt_retry policy)
{
	if (status == 429 || status == 503)
		return true;
	return policy == DT_RETRY_ALL && status >= 500 && status <= 599;
}

static int perform(struct dt_client *c, const struct dt_request *rq, struct dt_response *r,
		   struct attempt *a, CURLcode *ret_rc, char errbuf[CURL_ERROR_SIZE],
		   cordon_error *e)
{
	CURL *h = c->curl;
	struct curl_slist *hdrs = NULL;
	_cleanup_free_ char *ctype = NULL;
	CURLcode rc;

	curl_easy_reset(h);
	dt_response_free(r);
	memset(a, 0, sizeof(*a));
	a->curl = h;
	a->rq = rq;
	a->r = r;
	a->cap = rq->max_body ? rq->max_body : DEFAULT_MAX_BODY;
	a->cancel = c->cancel;
	a->retry_after_ms = -1;
	a->start = now_ms();
	a->header_deadline = a->start + (double)(rq->header_timeout_ms ? rq->header_timeout_ms
								       : DEFAULT_HEADER_TIMEOUT_MS);
	a->total_deadline = rq->total_timeout_ms ? a->start + (double)rq->total_timeout_ms
						 : a->header_deadline + BODY_GRACE_MS;
	/* The client's headers (the key among them) and this request's content type. */
	for (struct curl_slist *s = c->headers; s; s = s->next) {
		struct curl_slist *n = curl_slist_append(hdrs, s->data);

		if (!n)
			goto oom;
		hdrs = n;
	}
	if (rq->content_type) {
		struct curl_slist *n;

		if (asprintf(&ctype, "Content-Type: %s", rq->content_type) < 0) {
			ctype = NULL;
			goto oom;
		}
		n = curl_slist_append(hdrs, ctype);
		if (!n)
			goto oom;
		hdrs = n;
	}
	errbuf[0] = '\0';
	(void)curl_easy_setopt(h, CURLOPT_URL, rq->url);
	(void)curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	(void)curl_easy_setopt(h, CURLOPT_USERAGENT, c->user_agent);
	(void)curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	(void)curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	(void)curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	/* A redirect would carry the key to wherever it points: never follow one. */
	(void)curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	/*
	 * Plain http is for loopback only (dt_check_url): never through a proxy from the
	 * environment (http_proxy, ALL_PROXY), which would carry the key in clear text over the
	 * network (found in review). https may go through one: the key stays inside TLS.
	 */
	if (!strncmp(rq->url, "http://", 7))
		(void)curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
	(void)curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
	(void)curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
	(void)curl_easy_setopt(h, CURLOPT_WRITEDATA, a);
	(void)curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	(void)curl_easy_setopt(h, CURLOPT_HEADERDATA, a);
	(void)curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
	(void)curl_easy_setopt(h, CURLOPT_XFERINFODATA, a);
	(void)curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	/* A transfer that stalls for 60 s once the answer has begun is dead. */
	(void)curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
	(void)curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 60L);
	/*
	 * A request that may have an effect goes on a new connection: on a kept-alive one that
	 * the server has closed, libcurl sends it again by itself, and a create or an execute
	 * must never be sent twice unseen.
	 */
	if (rq->retry == DT_RETRY_SAFE)
		(void)curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L);
	if (!strcmp(rq->method, "GET")) {
		(void)curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	} else {
		if (strcmp(rq->method, "POST"))
			(void)curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, rq->method);
		if (rq->body || !strcmp(rq->method, "POST")) {
			(void)curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
					       (curl_off_t)rq->body_len);
			(void)curl_easy_setopt(h, CURLOPT_POSTFIELDS, rq->body ? rq->body : "");
		}
	}
	rc = curl_easy_perform(h);
	curl_slist_free_all(hdrs);
	(void)curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
	if (a->oom)
		return oom(e);
	if (rc == CURLE_OK)
		(void)curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
	*ret_rc = rc;
	return 0;
oom:
	curl_slist_free_all(hdrs);
	return oom(e);
}

int dt_send(struct dt_client *c, const struct dt_request *rq, struct dt_response *r,
	    cordon_error *e)
{
	char errbuf[CURL_ERROR_SIZE], shown[160];
	double first = now_ms();

	memset(r, 0, sizeof(*r));
	for (unsigned attempt_no = 1;; attempt_no++) {
		struct attempt a;
		CURLcode rc = CURLE_OK;
		bool retry;
		double delay;

		if (perform(c, rq, r, &a, &rc, errbuf, e) < 0)
			return -1;
		if (a.cancelled) {
			r->cancelled = true;
			return 0;
		}
		if (a.header_timeout) {
			r->timed_out = true;
			return 0;
		}
		if (rc == CURLE_OK)
			retry = status_retryable(r->status, rq->retry);
		else
			retry = rq->retry == DT_RETRY_ALL || transport_safe(rc);
		/* Full jitter (AWS's "exponential backoff and jitter"): uniform in [0, cap]. */
		delay = BACKOFF_BASE_MS * (double)(1u << (attempt_no < 6 ? attempt_no - 1 : 5));
		if (delay > BACKOFF_CAP_MS)
			delay = BACKOFF_CAP_MS;
		delay = delay * (random_u32() / 4294967296.0);
		if (a.retry_after_ms >= 0)
			delay = a.retry_after_ms > RETRY_AFTER_CAP_MS ? RETRY_AFTER_CAP_MS
								      : a.retry_after_ms;
		if (retry &&
		    (attempt_no >= c->max_tries || now_ms() + delay - first > c->retry_budget_ms))
			retry = false;
		if (!retry) {
			if (rc == CURLE_OK)
				return 0;
			url_shown(rq->url, shown, sizeof(shown));
			return cordon_err(e, 0, "daytona: %s: %s %s: %s%s", rq->what, rq->method,
					  shown, errbuf[0] ? errbuf : curl_easy_strerror(rc),
					  attempt_no > 1 ? " (after retries)" : "");
		}
		if (!sleep_ms(delay, c->cancel)) {
			r->cancelled = true;
			return 0;
		}
	}
}

void dt_clean_line(const char *key, const char *src, char *buf, size_t n)
{
	size_t len = src ? strcspn(src, "\n") : 0, w = 0;
	_cleanup_free_ char *all = len ? strndup(src, len) : NULL;

	buf[0] = '\0';
	if (!all)
		return;
	/*
	 * Whatever a server echoes, the key never leaves cordon in a message: masked in the
	 * whole line before it is cut (cut first, a key across the cut left its start visible;
	 * found in review).
	 */
	if (key && *key)
		for (char *p = all; (p = strstr(p, key));)
			memset(p, '*', strlen(key));
	for (size_t i = 0; i < len && w + 1 < n; i++)
		buf[w++] = (unsigned char)all[i] < 0x20 ? ' ' : all[i];
	buf[w] = '\0';
}

/* The server's message from an error body, cleaned for one line, without the key. */
static void server_message(const struct dt_client *c, const struct dt_response *r, char *buf,
			   size_t n)
{
	json_t *j = r->body_len ? json_loadb(r->body, r->body_len, 0, NULL) : NULL;
	json_t *m = j ? json_object_get(j, "message") : NULL;
	const char *src = NULL;

	if (json_is_string(m)) {
		src = json_string_value(m);
	} else if (json_is_array(m) && json_is_string(json_array_get(m, 0))) {
		src = json_string_value(json_array_get(m, 0)); /* NestJS validation: a list */
	} else if (!j && r->body_len) {
		src = r->body;
	}
	dt_clean_line(c->key, src, buf, n);
	json_decref(j);
}

int dt_status_error(const struct dt_client *c, const struct dt_request *rq,
		    const struct dt_response *r, cordon_error *e)
{
	char shown[160], msg[160];
	const char *what;

	url_shown(rq->url, shown, sizeof(shown));
	server_message(c, r, msg, sizeof(msg));
	switch (r->status) {
	case 400:
		what = "rejected as invalid";
		break;
	case 401:
		what = "authentication failed (check DAYTONA_API_KEY)";
		break;
	case 403:
		what = "forbidden (the key may not do this in its organisation)";
		break;
	case 404:
		what = "not found";
		break;
	case 408:
		what = "timed out";
		break;
	case 409:
		what = "conflict";
		break;
	case 422:
		what = "unprocessable";
		break;
	case 429:
		what = "rate limited (retries exhausted)";
		break;
	default:
		what = r->status >= 500 ? "server error (retries exhausted)" : "unexpected answer";
	}
	return cordon_err(e, 0, "daytona: %s: %s (HTTP %ld from %s %s)%s%s", rq->what, what,
			  r->status, rq->method, shown, msg[0] ? ": " : "", msg);
}

char *dt_url_query(const char *base, const char *path, const char *name, const char *value)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(value);
	_cleanup_free_ char *enc = malloc(3 * n + 1);
	char *out = NULL, *q;

	if (!enc)
		return NULL;
	q = enc;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)value[i];

		if (isalnum(ch) || strchr("-._~/", ch)) {
			*q++ = (char)ch;
		} else {
			*q++ = '%';
			*q++ = hex[ch >> 4];
			*q++ = hex[ch & 15];
		}
	}
	*q = '\0';
	if (asprintf(&out, "%s%s%c%s=%s", base, path, strchr(path, '?') ? '&' : '?', name, enc) < 0)
		return NULL;
	return out;
}

int dt_check_url(const char *url, const char *what, cordon_error *e)
{
	const char *host;
	size_t hlen;
	bool https = !strncmp(url, "https://", 8);
	char h[256];

	if (!https && strncmp(url, "http://", 7))
		return cordon_err(e, 0, "daytona: %s '%.120s' is not an http:// or https:// URL",
				  what, url);
	host = url + (https ? 8 : 7);
	hlen = strcspn(host, "/?#");
	if (!hlen || memchr(host, '@', hlen) || hlen >= sizeof(h))
		return cordon_err(e, 0,
				  "daytona: %s '%.120s' has no host, or credentials in it (the key "
				  "is sent as a header)",
				  what, url);
	for (const char *p = url; *p; p++)
		if ((unsigned char)*p <= 0x20 || *p == 0x7f)
			return cordon_err(e, 0, "daytona: %s contains a blank or control character",
					  what);
	if (https)
		return 0;
	/* Plain http: the bearer key would cross the network in clear text. Loopback only. */
	memcpy(h, host, hlen);
	h[hlen] = '\0';
	if (h[0] == '[') {
		char *end = strchr(h, ']');

		if (end)
			*end = '\0';
		memmove(h, h + 1, strlen(h));
	} else {
		char *colon = strchr(h, ':');

		if (colon)
			*colon = '\0';
	}
	{
		struct in_addr a4;
		struct in6_addr a6;

		if (!strcmp(h, "localhost") ||
		    (inet_pton(AF_INET, h, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127) ||
		    (inet_pton(AF_INET6, h, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6)))
			return 0;
	}
	return cordon_err(e, 0,
			  "daytona: %s '%.120s' is plain http to a host that is not loopback: the "
			  "API key would cross the network unencrypted (use https://)",
			  what, url);
}
