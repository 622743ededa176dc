/* SPDX-License-Identifier: MIT */
/*
 * The Daytona backend's HTTP client, on libcurl: one reused connection, the bearer key on every
 * request (and in nothing else: no error, no log, no result ever holds it), bounded retries with
 * exponential backoff and full jitter, Retry-After honoured, cancellation from a signal flag,
 * and answers either collected (bounded) or streamed to a sink.
 */
#pragma once

#include <cordon/cordon.h>

#include <stdbool.h>
#include <stddef.h>

/* Which failures a request may be retried after (docs/daytona.md, "Retries"). */
enum dt_retry {
	DT_RETRY_ALL,  /* idempotent: 429, 5xx, connection and transfer errors */
	DT_RETRY_SAFE, /* may have side effects: only answers that say nothing ran (429, 503)
			  and connections that never reached the server */
};

struct dt_client {
	char *key;		/* the API key */
	volatile int *cancel;	/* non-zero: stop now (SIGINT/SIGTERM); may be NULL */
	unsigned max_tries;	/* per request, first try included */
	double retry_budget_ms; /* no retry starts later than this after the first try */
	void *curl;		/* CURL *, reused between requests (keep-alive) */
	void *headers;		/* struct curl_slist * with the key */
	char *user_agent;
};

typedef void (*dt_sink)(void *arg, const char *buf, size_t n);

struct dt_request {
	const char *method; /* GET POST DELETE */
	const char *url;
	const char *what; /* for messages: "create sandbox" */
	const char *content_type;
	const void *body;
	size_t body_len;
	enum dt_retry retry;
	/* No answer's headers after this long: give up (0: 60 s). */
	long header_timeout_ms;
	/*
	 * The whole answer, body included, within this long of the request (0: the headers'
	 * time and 30 s more): a server that sends its headers and then drips its body must not
	 * hold a run past its timeout (found in review; only stalls of 60 s were caught).
	 */
	long total_timeout_ms;
	/* A 200's body goes here as it arrives instead of into the response (NULL: collected). */
	dt_sink sink;
	void *sink_arg;
	size_t max_body; /* a collected body is cut here (0: 1 MiB); `truncated` says so */
};

struct dt_response {
	long status; /* 0 when no answer came */
	char *body;  /* NUL-terminated; the error body when a sink took a 200's */
	size_t body_len;
	bool truncated;
	bool timed_out; /* no answer within header_timeout_ms */
	bool cancelled;
};

int dt_client_init(struct dt_client *c, const char *key, cordon_error *e);
/* src's first line into buf (n bytes), control characters as spaces, key masked with '*'. */
void dt_clean_line(const char *key, const char *src, char *buf, size_t n);
void dt_client_free(struct dt_client *c);

/*
 * Send the request, retrying as its policy allows. 0 when an answer came (any status: a 4xx,
 * or the 429/5xx left after the retries, is the caller's to report with dt_status_error), or
 * when no answer came because of header_timeout_ms or cancellation (r->timed_out,
 * r->cancelled); -1 with a one-line error when the server could not be reached.
 */
int dt_send(struct dt_client *c, const struct dt_request *rq, struct dt_response *r,
	    cordon_error *e);
void dt_response_free(struct dt_response *r);

/* "daytona: WHAT: 401 Unauthorized from HOST/PATH: <the server's message> (hint)". */
int dt_status_error(const struct dt_client *c, const struct dt_request *rq,
		    const struct dt_response *r, cordon_error *e);

/* url with "?name=<value, percent-encoded>" appended; NULL when out of memory. */
char *dt_url_query(const char *base, const char *path, const char *name, const char *value);
/*
 * A URL cordon may send the key to: http or https, a host, and plain http only to a loopback
 * host (127.0.0.0/8, ::1, localhost). `what` names it in the error.
 */
int dt_check_url(const char *url, const char *what, cordon_error *e);

/* The monotonic clock in milliseconds; cordon_err(ENOMEM, "out of memory"). */
double dt_now_ms(void);
int dt_oom(cordon_error *e);
