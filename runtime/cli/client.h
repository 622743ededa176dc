/* SPDX-License-Identifier: MIT */
/* `cordon run --via daemon|auto`: the same run, through cordond's socket (SPEC §7). */
#pragma once

#include <cordon/cordon.h>

struct client_request {
	const char *socket_path;
	const char *command;
	const char *profile;
	const char *workdir; /* as given; made absolute against the caller's cwd */
	bool keep;
	const struct cordon_list *allow, *block, *ignore, *env;
	bool readonly;
	int mode;		/* -1: the profile's */
	int network;		/* -1: the profile's */
	const char *timeout;	/* as the user wrote it */
	const char *max_output; /* as the user wrote it */
	const char *backend;
	bool json;
	/* profile_digest() of this caller's profile, sent for cordond to compare with its
	 * own; NULL: not sent. */
	const char *profile_digest;
	/* A 409 for that (cordond finds another file) ends quietly as "cannot serve":
	 * *ret_unreachable with errno ENOTSUP (--via auto then runs directly); so does a 403
	 * (cordond refuses this caller), with errno EACCES, as a socket whose mode refuses
	 * them. */
	bool quiet_profile_mismatch;
	/* How long to wait for cordond's answer, in seconds: the run's timeout and a grace. */
	double answer_wait_s;
	/*
	 * Set to a signal's number by its handler (NULL: none watched): the wait for the answer
	 * ends, the connection is closed (cordond then kills the run), and client_run returns
	 * 128 + that number with one line on stderr.
	 */
	volatile int *cancel;
};

/* The socket cordon talks to: $CORDON_SOCKET, else /run/cordon/cordon.sock. */
const char *client_socket_path(void);
/*
 * NULL when cordond can take this request, else why not, in words for --via daemon's error
 * (--via auto then runs directly): what its /v1/run has no field for (a profile given as a
 * path, --stdin, --image), a string that is not UTF-8 (JSON cannot carry its bytes; a
 * relative workdir is sent joined to the current directory's path, which must have one), or a
 * field longer than cordond takes (body.c's limits).
 */
const char *client_cannot_send(const char *profile, bool pass_stdin, const char *image,
			       const char *command, const char *workdir,
			       const struct cordon_list *env, const struct cordon_list *allow,
			       const struct cordon_list *block, const struct cordon_list *ignore);
/*
 * Send the run, print the result as a direct run would (text or JSON) and return the exit status
 * (the command's, 124, 126, or 125 with a line on stderr). When nothing could be sent because no
 * daemon answers, *ret_unreachable is set and nothing is printed (errno: connect's); so too when
 * cordond's profile is another file than the caller's, under quiet_profile_mismatch (ENOTSUP).
 */
int client_run(const struct client_request *r, bool *ret_unreachable);

/* Print "cordon: <message>" as one line on stderr; returns 125 (cordon failed). Defined in main.c,
 * shared by every part of the CLI so that all its errors look alike. */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
