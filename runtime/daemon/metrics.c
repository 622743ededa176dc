/* SPDX-License-Identifier: MIT */
/* /metrics: Prometheus text exposition format 0.0.4, from lock-free counters. */
#define _GNU_SOURCE
#include "runtime/strbuf.h"
#include "runtime/daemon/daemon.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct metrics metrics;

static const int http_codes[] = { 200, 400, 403, 404, 405, 409, 413, 429, 500, 503 };
/* Upper bounds of the run duration histogram, in seconds. */
static const double buckets[] = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60 };

void metrics_http(int status)
{
	for (size_t i = 0; i < sizeof(http_codes) / sizeof(http_codes[0]); i++)
		if (http_codes[i] == status) {
			atomic_fetch_add(&metrics.http[i], 1);
			return;
		}
}

void metrics_run(double ms)
{
	size_t i;

	for (i = 0; i < sizeof(buckets) / sizeof(buckets[0]); i++)
		if (ms / 1e3 <= buckets[i])
			break;
	atomic_fetch_add(&metrics.hist[i], 1); /* i == n is the +Inf-only bucket */
	atomic_fetch_add(&metrics.dur_sum_us, (unsigned long)(ms * 1e3));
}

static void counter(struct strbuf *b, const char *name, const char *help, unsigned long v)
{
	strbuf_addf(b, "# HELP %s %s\n# TYPE %s counter\n%s %lu\n", name, help, name, name, v);
}

char *metrics_render(size_t *ret_len)
{
	struct strbuf b = { 0 };
	unsigned long cum = 0;
	size_t nb = sizeof(buckets) / sizeof(buckets[0]);

	counter(&b, "cordond_runs_total", "Runs that produced a result (refusals included).",
		atomic_load(&metrics.runs));
	counter(&b, "cordond_refusals_total", "Runs the policy refused.",
		atomic_load(&metrics.refusals));
	counter(&b, "cordond_timeouts_total", "Runs stopped by their timeout.",
		atomic_load(&metrics.timeouts));
	counter(&b, "cordond_errors_total", "Runs cordon itself failed to start (HTTP 500).",
		atomic_load(&metrics.errors));
	counter(&b, "cordond_cancelled_total",
		"Runs killed because the client disconnected or the daemon stopped.",
		atomic_load(&metrics.cancelled));
	counter(&b, "cordond_rejected_total", "Requests refused by a concurrency limit (429).",
		atomic_load(&metrics.rejected));
	counter(&b, "cordond_forbidden_total", "Requests from unauthorised callers (403).",
		atomic_load(&metrics.forbidden));
	strbuf_addf(&b,
		    "# HELP cordond_runs_in_flight Runs executing now.\n"
		    "# TYPE cordond_runs_in_flight gauge\ncordond_runs_in_flight %ld\n",
		    atomic_load(&metrics.in_flight));
	counter(&b, "cordond_runners_started_total",
		"Runner processes started (each serves runs one at a time, reused).",
		atomic_load(&metrics.runners_started));
	counter(&b, "cordond_runner_waits_total",
		"Runs that found no idle runner and waited for one to start or come back.",
		atomic_load(&metrics.runner_waits));
	counter(&b, "cordond_runner_spawn_failures_total",
		"Attempts to start a runner that failed (each retried, 10 ms to 1 s later).",
		atomic_load(&metrics.runner_spawn_failures));
	strbuf_addf(&b,
		    "# HELP cordond_runners_idle Runners waiting for a run, each with the next run "
		    "staged.\n# TYPE cordond_runners_idle gauge\ncordond_runners_idle %ld\n",
		    atomic_load(&metrics.runners_idle));
	strbuf_addf(&b,
		    "# HELP cordond_sessions Live sessions.\n# TYPE cordond_sessions gauge\n"
		    "cordond_sessions %u\n",
		    sessions_count());
	strbuf_addf(&b, "# HELP cordond_http_responses_total HTTP responses by status code.\n"
			"# TYPE cordond_http_responses_total counter\n");
	for (size_t i = 0; i < sizeof(http_codes) / sizeof(http_codes[0]); i++)
		strbuf_addf(&b, "cordond_http_responses_total{code=\"%d\"} %lu\n", http_codes[i],
			    atomic_load(&metrics.http[i]));
	strbuf_addf(&b, "# HELP cordond_run_duration_seconds Wall-clock duration of runs.\n"
			"# TYPE cordond_run_duration_seconds histogram\n");
	for (size_t i = 0; i < nb; i++) {
		cum += atomic_load(&metrics.hist[i]);
		strbuf_addf(&b, "cordond_run_duration_seconds_bucket{le=\"%g\"} %lu\n", buckets[i],
			    cum);
	}
	cum += atomic_load(&metrics.hist[nb]);
	strbuf_addf(&b, "cordond_run_duration_seconds_bucket{le=\"+Inf\"} %lu\n", cum);
	strbuf_addf(&b, "cordond_run_duration_seconds_sum %.6f\n",
		    (double)atomic_load(&metrics.dur_sum_us) / 1e6);
	strbuf_addf(&b, "cordond_run_duration_seconds_count %lu\n", cum);
	return strbuf_steal(&b, ret_len);
}
