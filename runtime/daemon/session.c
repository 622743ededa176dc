/* SPDX-License-Identifier: MIT */
/*
 * Sessions: a persistent workdir per session, owned by the uid that created it, used by several
 * runs and by file uploads and downloads. The daemon holds the workdir open as an fd (opened as
 * the caller); every file operation resolves its path beneath that fd with
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS), so "..", absolute paths and symlinks that
 * lead out fail in the kernel's path walk itself, whatever the session's files look like by then.
 */
#define _GNU_SOURCE
#include "runtime/daemon/daemon.h"
#include "runtime/profile.h"
#include "backends/backend.h"
#include "backends/daytona/daytona.h"
#include "backends/docker/docker.h"
#include "runtime/cleanup.h"
#include "runtime/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The kernel's overflow id, Debian's nobody/nogroup. */
#define NOBODY 65534

struct reservation;

struct session {
	struct session *next;
	char id[SESSION_ID_LEN + 1];
	uid_t uid;
	struct caller owner; /* for tearing it down as the owner */
	char *workdir;
	char *profile;
	int dirfd;
	bool temp; /* the daemon made the workdir, so the daemon removes it */
	/*
	 * The session's container (docker) or remote sandbox (daytona), opened once for all its
	 * runs; NULL with the local backend.
	 */
	const struct cordon_backend_ops *ops;
	void *handle;
	/*
	 * Until ops->open: what opening it takes (session_open_backend), kept from session_prepare:
	 * the profile as the session (or the one-shot run) sees it, and a one-shot's cancel flag.
	 */
	struct cordon_profile *prof;
	volatile int *cancel;
	/* A one-shot (session_oneshot): its slot among the caller's sessions, its temp hold. */
	struct reservation *slot;
	int hold;
	int open_status; /* the status of a failed session_open_backend, with open_err */
	cordon_error open_err;
	bool dead; /* deleted: no new uses */
	unsigned refs;
	unsigned runs;
	double last_used;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct session *sessions;
static unsigned n_sessions;

static int copy_caller(struct caller *dst, const struct caller *src)
{
	*dst = *src;
	dst->groups = malloc((size_t)src->ngroups * sizeof(gid_t) + 1);
	dst->name = src->name ? strdup(src->name) : NULL;
	dst->home = src->home ? strdup(src->home) : NULL;
	if (!dst->groups || (src->name && !dst->name) || (src->home && !dst->home)) {
		caller_free(dst);
		return -1;
	}
	memcpy(dst->groups, src->groups, (size_t)src->ngroups * sizeof(gid_t));
	return 0;
}

static void session_free(struct session *s)
{
	if (!s)
		return;
	/* The container first: nothing of it may still write while its workdir goes. */
	if (s->ops)
		s->ops->close(s->handle);
	if (s->temp && s->workdir) {
		cordon_error e;

		if (ident_rmtree(&s->owner, s->workdir, &e) < 0) {
			char buf[512];

			daemon_log("session %s: removing %s: %s", s->id, s->workdir,
				   cordon_err_str(&e, buf, sizeof(buf)));
		}
	}
	/* A kept one-shot workdir loses its mark, so that no sweep takes it (fsutil.h). */
	fsutil_temp_release(s->hold, !s->temp);
	if (s->dirfd >= 0)
		(void)close(s->dirfd);
	cordon_profile_free(s->prof);
	caller_free(&s->owner);
	free(s->workdir);
	free(s->profile);
	free(s);
}

/*
 * The workdir a client sees: the session's directory here, or a Daytona session's in its
 * remote sandbox (the local one only anchors the policy's path checks there).
 */
static const char *shown_workdir(const struct session *s)
{
	return s->ops == &backend_daytona ? daytona_workdir(s->handle) : s->workdir;
}

unsigned sessions_count(void)
{
	unsigned n;

	pthread_mutex_lock(&lock);
	n = n_sessions;
	pthread_mutex_unlock(&lock);
	return n;
}

/*
 * Open a prepared session's container (docker) or remote sandbox (daytona), as session_prepare
 * left it: s->prof is the profile as the session sees it, with its owner's identity in it.
 * 0 (nothing to do for a local session), or -1 with *status and *e. Either way s->prof is gone.
 */
static int session_open_backend(struct session *s, int *status, cordon_error *e)
{
	struct cordon_profile *prof = TAKE_PTR(s->prof);
	int rc = 0;

	if (s->ops == &backend_docker) {
		/* A member's commands have the member's groups too (root's: the backend's rule). */
		bool member = s->uid != 0;
		const struct cordon_open o = {
			.profile = prof,
			.workdir = s->workdir,
			.workdir_fd = s->dirfd,
			.cancel = s->cancel,
			.groups = member ? s->owner.groups : NULL,
			.ngroups = member && s->owner.ngroups > 0 ? (size_t)s->owner.ngroups : 0,
		};

		if (backend_docker.open(&o, &s->handle, e) < 0) {
			*status = 500;
			rc = -1;
		}
	} else if (s->ops == &backend_daytona) {
		const struct cordon_open o = { .profile = prof,
					       .workdir = s->workdir,
					       .workdir_fd = -1 };

		if (backend_daytona.open(&o, &s->handle, e) < 0) {
			*status = 400;
			rc = -1;
		} else if (daytona_ensure(s->handle, s->cancel, e) < 0) {
			/* Created now, so that a bad key or a broken snapshot fails this request. */
			*status = 502;
			rc = -1;
		}
	}
	cordon_profile_free(prof);
	return rc;
}

/* *slot = a copy of v, which may be *slot itself; -1 when out of memory. */
static int set_string(char **slot, const char *v)
{
	char *copy = strdup(v);

	if (!copy)
		return -1;
	free(*slot);
	*slot = copy;
	return 0;
}

/*
 * Prepare a session for c (not yet in the list): the profile and the workdir, and for Docker
 * or Daytona what opening its container or sandbox takes (s->ops, s->prof), not yet opened
 * (session_open_backend). 0 with *ret, or -1 with *status and *e.
 */
static int session_prepare(const struct caller *c, const struct run_body *b, bool oneshot,
			   struct session **ret, int *status, cordon_error *e)
{
	struct session *s;
	unsigned char rnd[SESSION_ID_LEN / 2];

	s = calloc(1, sizeof(*s));
	if (!s) {
		*status = 500;
		return cordon_err(e, ENOMEM, "out of memory");
	}
	s->dirfd = -1;
	s->hold = -1;
	s->uid = c->uid;
	{
		/*
		 * Root's commands never run as root: in a root-owned workdir they run as nobody
		 * (backends/local/sandbox.c). So root's temporary session belongs to nobody, and
		 * its files are made as nobody, so that the commands can use them.
		 */
		static gid_t nobody_groups[] = { NOBODY };
		const struct caller nobody = { .uid = NOBODY,
					       .gid = NOBODY,
					       .groups = nobody_groups,
					       .ngroups = 1,
					       .home = (char *)"/",
					       .authorised = true };
		bool as_nobody = c->uid == 0 && !b->workdir;

		if (copy_caller(&s->owner, as_nobody ? &nobody : c) < 0 ||
		    !(s->profile = strdup(b->profile ? b->profile : "default"))) {
			session_free(s);
			*status = 500;
			return cordon_err(e, ENOMEM, "out of memory");
		}
	}
	/* The profile must exist now, not at the first run. */
	if (cordon_profile_load(s->profile, &s->prof, e) < 0) {
		session_free(s);
		return cordon_err_prefix(e, "profile");
	}
	struct cordon_profile *prof = s->prof;
	const char *bname = b->backend ? b->backend : prof->backend;
	bool docker = !strcmp(bname, "docker"), daytona = !strcmp(bname, "daytona");

	if (strcmp(bname, "local") && !docker && !daytona) {
		session_free(s);
		return cordon_err(e, 0, "backend: '%s' is not one cordond serves", bname);
	}
	/*
	 * A member's image: one the administrator allowed (image.c says why), checked before
	 * anything is made. What is used is the allowed string, not the member's spelling of it.
	 */
	const char *image = b->image;

	if (image && c->uid != 0 && (docker || daytona)) {
		image = docker ? image_for_member(b->image,
						  prof->docker_image ? prof->docker_image
								     : DOCKER_DEFAULT_IMAGE,
						  &cfg.docker_images)
			       : image_for_member(b->image, prof->daytona_image,
						  &cfg.daytona_images);
		if (!image) {
			session_free(s);
			*status = 403;
			return cordon_err(
				e, 0,
				"image: '%.128s' is not one members may use (the profile's "
				"[%s] image, or one cordond allows with --%s-image)",
				b->image, bname, bname);
		}
	}
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) {
		session_free(s);
		*status = 500;
		return cordon_err(e, errno, "getrandom");
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(s->id + 2 * i, 3, "%02x", rnd[i]);

	if (b->workdir) {
		if (ident_open_workdir(&s->owner, b->workdir, !docker && !daytona, &s->dirfd,
				       &s->workdir, e) < 0) {
			session_free(s);
			return cordon_err_prefix(e, "workdir");
		}
	} else {
		/* A one-shot's is named as a local run's temp workdir is (http.c). */
		if (ident_mktemp(&s->owner, oneshot ? "cordon" : "cordon-session", &s->workdir, e) <
		    0) {
			session_free(s);
			*status = 500;
			return cordon_err_prefix(e, "workdir");
		}
		s->temp = true;
		/*
		 * A one-shot's is held while in use, as a local run's is (fsutil.h): if cordond is
		 * killed, its next start sweeps it. A session's outlives cordond on purpose.
		 */
		if (oneshot) {
			cordon_error he;

			s->hold = fsutil_temp_hold(s->workdir, &he);
		}
		char *canon = NULL;

		if (ident_open_workdir(&s->owner, s->workdir, !docker && !daytona, &s->dirfd,
				       &canon, e) < 0) {
			session_free(s);
			*status = 500;
			return cordon_err_prefix(e, "workdir");
		}
		free(canon);
	}
	/*
	 * What the run asks of the container or sandbox itself, which is made with the profile:
	 * a read-only workdir mount (docker), the network (daytona). A session's body has neither
	 * (-1); a one-shot run's may, as the command line's `cordon run --readonly` has.
	 */
	if (b->readonly >= 0)
		prof->readonly = b->readonly;
	if (b->network >= 0)
		profile_set_network(prof, (enum cordon_network)b->network);
	if (docker) {
		/*
		 * One container for the session's life, of the directory opened above as the
		 * caller (s->dirfd: the backend checks that the container has that one, not
		 * whatever the path names when dockerd resolves it). A member's commands run as
		 * the member, never as root or the profile's user: dockerd acts with root's power,
		 * the caller must not. Root's run as the profile's [docker] user when it sets one,
		 * else as the backend decides from dirfd's owner: that owner, and nobody for a
		 * root-owned workdir (never root: docs/docker.md, "Which user").
		 */
		char user[32];

		(void)snprintf(user, sizeof(user), "%u:%u", (unsigned)s->owner.uid,
			       (unsigned)s->owner.gid);
		if ((image && set_string(&prof->docker_image, image) < 0) ||
		    (c->uid != 0 &&
		     (free(prof->docker_user), !(prof->docker_user = strdup(user))))) {
			session_free(s);
			*status = 500;
			return cordon_err(e, ENOMEM, "out of memory");
		}
		s->ops = &backend_docker;
	} else if (daytona) {
		/*
		 * One remote sandbox for the session's life. The key is cordond's (its
		 * environment): docs/daytona.md, "Through cordond".
		 */
		if (image && ((free(prof->daytona_snapshot), prof->daytona_snapshot = NULL),
			      set_string(&prof->daytona_image, image) < 0)) {
			session_free(s);
			*status = 500;
			return cordon_err(e, ENOMEM, "out of memory");
		}
		s->ops = &backend_daytona;
	} else {
		cordon_profile_free(TAKE_PTR(s->prof));
	}
	*ret = s;
	return 0;
}

/*
 * Make a session for c (not yet in the list): the profile, the workdir and, for Docker or
 * Daytona, the container or remote sandbox. 0 with *ret, or -1 with *status and *e.
 */
static int session_make(const struct caller *c, const struct run_body *b, struct session **ret,
			int *status, cordon_error *e)
{
	struct session *s = NULL;

	if (session_prepare(c, b, false, &s, status, e) < 0)
		return -1;
	if (session_open_backend(s, status, e) < 0) {
		session_free(s);
		return -1;
	}
	*ret = s;
	return 0;
}

/*
 * A create in progress holds a slot of its caller's from the moment it is counted: making the
 * session (the profile, the workdir, for Docker a container created and started) takes long,
 * and is done unlocked, so counting only the sessions already made let concurrent creates all
 * see room for one more (120 at once got 33 sessions with a limit of 32; 48 Docker ones, 48).
 * Each create links a reservation (on its own stack) under the lock it counts under, and
 * replaces it with the session, or drops it on failure, under that same lock.
 */
struct reservation {
	struct reservation *next;
	uid_t uid;
};

static struct reservation *reservations;

static void reservation_drop_locked(struct reservation *r)
{
	for (struct reservation **pp = &reservations; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			return;
		}
}

/*
 * Link slot as one of its uid's sessions, if that uid has room for one more: 0, or -1 with
 * *e (a 429). what names what is counted, in that error.
 */
static int reserve(struct reservation *slot, const char *what, cordon_error *e)
{
	unsigned mine = 0;

	pthread_mutex_lock(&lock);
	for (struct session *o = sessions; o; o = o->next)
		if (o->uid == slot->uid)
			mine++;
	for (struct reservation *r = reservations; r; r = r->next)
		if (r->uid == slot->uid)
			mine++;
	if (mine >= cfg.max_sessions_per_caller) {
		pthread_mutex_unlock(&lock);
		return cordon_err(e, 0, "sessions: limit of %u per caller reached%s",
				  cfg.max_sessions_per_caller, what);
	}
	slot->next = reservations;
	reservations = slot;
	pthread_mutex_unlock(&lock);
	return 0;
}

int sessions_create(const struct caller *c, const struct run_body *b, json_t **ret, int *status,
		    cordon_error *e)
{
	struct reservation slot = { .uid = c->uid };
	struct session *s = NULL;
	json_t *j = NULL;

	*status = 400;
	if (b->image && (!b->backend || !strcmp(b->backend, "local")))
		return cordon_err(e, 0, "image: only with \"backend\": \"docker\" or \"daytona\"");
	if (reserve(&slot, "", e) < 0) {
		*status = 429;
		return -1;
	}
	if (session_make(c, b, &s, status, e) == 0) {
		s->last_used = now_s();
		j = json_pack("{s:s,s:s,s:s,s:s}", "id", s->id, "workdir", shown_workdir(s),
			      "profile", s->profile, "backend", s->ops ? s->ops->name : "local");
		if (!j) {
			*status = 500;
			cordon_err(e, ENOMEM, "out of memory");
		}
	}
	pthread_mutex_lock(&lock);
	reservation_drop_locked(&slot);
	if (j) {
		s->next = sessions;
		sessions = s;
		n_sessions++;
	}
	pthread_mutex_unlock(&lock);
	if (!j) {
		session_free(s); /* NULL-safe */
		return -1;
	}
	*ret = j;
	return 0;
}

/*
 * One-shot sessions (POST /v1/run on Docker or Daytona, http.c). A one-shot is made by the
 * same session_prepare and session_open_backend as any session (the workdir opened as the
 * caller, a member's commands as the member with their groups, root's as the workdir's owner
 * or nobody), but it is never in the list: no request can name, run in, expire or stop it;
 * only the request that made it uses it, and ends it before answering. While it lives its
 * reservation counts as one of the caller's sessions, so runs cannot hold more containers or
 * sandboxes than --max-sessions-per-caller allows sessions to.
 */
int session_oneshot(const struct caller *c, const struct run_body *b, volatile int *cancel,
		    struct session **ret, int *status, cordon_error *e)
{
	struct reservation *slot = calloc(1, sizeof(*slot));
	struct session *s = NULL;

	if (!slot) {
		*status = 500;
		return cordon_err(e, ENOMEM, "out of memory");
	}
	slot->uid = c->uid;
	if (reserve(slot, " (a docker or daytona run holds one while it runs)", e) < 0) {
		free(slot);
		*status = 429;
		return -1;
	}
	*status = 400;
	if (session_prepare(c, b, true, &s, status, e) == 0 && !s->ops) {
		/* Its profile named another backend when the run was dispatched (http.c). */
		session_free(TAKE_PTR(s));
		*status = 503;
		cordon_err(e, 0, "profile: '%s' changed meanwhile; try again",
			   b->profile ? b->profile : "default");
	}
	if (!s) {
		pthread_mutex_lock(&lock);
		reservation_drop_locked(slot);
		pthread_mutex_unlock(&lock);
		free(slot);
		return -1;
	}
	s->slot = slot;
	s->cancel = cancel;
	*ret = s;
	return 0;
}

int session_oneshot_open(void *arg, void **ret_h, cordon_error *e)
{
	struct session *s = arg;

	if (session_open_backend(s, &s->open_status, e) < 0) {
		s->open_err = *e;
		return -1;
	}
	s->cancel = NULL; /* the request's flag: for the open only */
	*ret_h = s->handle;
	return 0;
}

int session_oneshot_error(const struct session *s, cordon_error *e)
{
	if (!s->open_status)
		return 0;
	*e = s->open_err;
	return s->open_status;
}

void session_oneshot_end(struct session *s, bool keep)
{
	struct reservation *slot;

	if (!s)
		return;
	slot = s->slot;
	if (keep)
		s->temp = false;
	/* Its container or sandbox counts among the caller's until it is gone. */
	session_free(s);
	pthread_mutex_lock(&lock);
	reservation_drop_locked(slot);
	pthread_mutex_unlock(&lock);
	free(slot);
}

struct session *session_get(const struct caller *c, const char *id)
{
	struct session *s;

	pthread_mutex_lock(&lock);
	for (s = sessions; s; s = s->next)
		/* Someone else's session does not exist, as far as this caller can tell. */
		if (!strcmp(s->id, id) && s->uid == c->uid && !s->dead) {
			s->refs++;
			s->last_used = now_s();
			break;
		}
	pthread_mutex_unlock(&lock);
	return s;
}

static void unlink_locked(struct session *s)
{
	for (struct session **pp = &sessions; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			n_sessions--;
			return;
		}
}

void session_put(struct session *s)
{
	bool free_it;

	if (!s)
		return;
	pthread_mutex_lock(&lock);
	s->refs--;
	s->last_used = now_s();
	free_it = s->dead && s->refs == 0;
	pthread_mutex_unlock(&lock);
	if (free_it)
		session_free(s);
}

const char *session_workdir(const struct session *s)
{
	return s->workdir;
}

int session_dirfd(const struct session *s)
{
	return s->dirfd;
}

void *session_backend_handle(const struct session *s)
{
	return s->handle;
}

const char *session_backend_name(const struct session *s)
{
	return s->ops ? s->ops->name : "local";
}

const char *session_profile(const struct session *s)
{
	return s->profile;
}

json_t *session_json(const struct session *s)
{
	return json_pack("{s:s,s:s,s:s,s:s,s:i}", "id", s->id, "workdir", shown_workdir(s),
			 "profile", s->profile, "backend", s->ops ? s->ops->name : "local", "runs",
			 (int)s->runs);
}

bool session_run_begin(struct session *s)
{
	bool alive;

	/*
	 * Under the lock session_delete looks at runs under: a run found its session, then
	 * parsed its body before it counted itself here, and a DELETE in between answered 200
	 * while the run went on in the deleted session (found in red team).
	 */
	pthread_mutex_lock(&lock);
	alive = !s->dead;
	if (alive)
		s->runs++;
	pthread_mutex_unlock(&lock);
	return alive;
}

void session_run_end(struct session *s)
{
	pthread_mutex_lock(&lock);
	s->runs--;
	pthread_mutex_unlock(&lock);
}

int session_delete(const struct caller *c, const char *id, cordon_error *e)
{
	struct session *s;
	bool free_it = false;

	pthread_mutex_lock(&lock);
	for (s = sessions; s; s = s->next)
		if (!strcmp(s->id, id) && s->uid == c->uid && !s->dead)
			break;
	if (!s) {
		pthread_mutex_unlock(&lock);
		cordon_err(e, 0, "id: no such session");
		return 404;
	}
	if (s->runs) {
		pthread_mutex_unlock(&lock);
		cordon_err(e, 0, "id: the session has runs in progress");
		return 409;
	}
	s->dead = true;
	unlink_locked(s);
	free_it = s->refs == 0;
	pthread_mutex_unlock(&lock);
	if (free_it)
		session_free(s);
	return 0;
}

void sessions_expire(void)
{
	struct session *expired = NULL, **pp;
	double now = now_s();

	pthread_mutex_lock(&lock);
	for (pp = &sessions; *pp;) {
		struct session *s = *pp;

		if (!s->dead && s->refs == 0 && s->runs == 0 &&
		    now - s->last_used > cfg.session_idle) {
			*pp = s->next;
			n_sessions--;
			s->dead = true;
			s->next = expired;
			expired = s;
			continue;
		}
		pp = &s->next;
	}
	pthread_mutex_unlock(&lock);
	while (expired) {
		struct session *s = expired;

		expired = s->next;
		daemon_log("session %s (uid %u) expired after %.0fs idle", s->id, (unsigned)s->uid,
			   cfg.session_idle);
		session_free(s);
	}
}

void sessions_shutdown(void)
{
	pthread_mutex_lock(&lock);
	while (sessions) {
		struct session *s = sessions;

		sessions = s->next;
		n_sessions--;
		/* "Removes nothing the user made": a stop is not a DELETE. */
		if (s->temp)
			daemon_log("session %s: leaving its workdir %s in place", s->id,
				   s->workdir);
		s->temp = false;
		session_free(s);
	}
	pthread_mutex_unlock(&lock);
}

/* ---- files ---- */

static int beneath(int dirfd, const char *path, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.mode = (flags & O_CREAT) ? mode : 0,
		/*
		 * BENEATH: no "..", absolute path or symlink may take the walk above dirfd.
		 * NO_MAGICLINKS: /proc-style links that jump anywhere are refused outright.
		 * NO_XDEV would refuse mounts the user made inside; those are theirs, allowed.
		 */
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};

	return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

static int errno_status(int err, const char *path, cordon_error *e)
{
	switch (err) {
	case ENOENT:
		cordon_err(e, 0, "path: '%s' does not exist", path);
		return 404;
	case EXDEV:
	case ELOOP:
		cordon_err(e, 0, "path: '%s' leads outside the session workdir", path);
		return 400;
	case EACCES:
	case EPERM:
		cordon_err(e, err, "path: '%s'", path);
		return 403;
	case EISDIR:
	case ENOTDIR:
		cordon_err(e, err, "path: '%s'", path);
		return 400;
	default:
		cordon_err(e, err, "path: '%s'", path);
		return 500;
	}
}

struct file_op {
	struct session *s;
	const char *path;
	const void *buf;
	size_t n;
	int fd;
	uint64_t size;
	int status;
};

/* Open the parent directory of op->path beneath the session, creating missing directories. */
static int open_parent(struct file_op *op, bool create, const char **ret_base, cordon_error *e)
{
	_cleanup_free_ char *dir = strdup(op->path);
	_cleanup_close_ int cur = -1;
	char *slash, *name, *save = NULL;

	if (!dir)
		return cordon_err(e, ENOMEM, "out of memory");
	slash = strrchr(dir, '/');
	*ret_base = strrchr(op->path, '/') ? strrchr(op->path, '/') + 1 : op->path;
	if (!slash)
		return fcntl(op->s->dirfd, F_DUPFD_CLOEXEC, 3);
	*slash = '\0';
	if (!create)
		return beneath(op->s->dirfd, dir, O_PATH | O_DIRECTORY, 0);
	/* mkdir -p one component at a time, each step resolved beneath the previous one. */
	cur = fcntl(op->s->dirfd, F_DUPFD_CLOEXEC, 3);
	for (name = strtok_r(dir, "/", &save); name && cur >= 0;
	     name = strtok_r(NULL, "/", &save)) {
		int next;

		if (mkdirat(cur, name, 0755) < 0 && errno != EEXIST)
			return -1;
		next = beneath(cur, name, O_PATH | O_DIRECTORY, 0);
		closep(&cur);
		cur = next;
	}
	return TAKE_FD(cur);
}

/* fd's stat into *st; anything but a regular file is a 400 (a FIFO would block). */
static int regular_only(struct file_op *op, int fd, struct stat *st, cordon_error *e)
{
	if (fstat(fd, st) < 0) {
		op->status = 500;
		return cordon_err(e, errno, "path: '%s'", op->path);
	}
	if (!S_ISREG(st->st_mode)) {
		op->status = 400;
		return cordon_err(e, 0, "path: '%s' is not a regular file", op->path);
	}
	return 0;
}

static int put_fn(void *arg, cordon_error *e)
{
	struct file_op *op = arg;
	_cleanup_close_ int pfd = -1, fd = -1;
	const char *base;
	const char *p;
	struct stat st;
	size_t left;
	int flags;

	pfd = open_parent(op, true, &base, e);
	if (pfd < 0) {
		op->status = errno_status(errno, op->path, e);
		return -1;
	}
	/*
	 * O_NOFOLLOW on the last component: writing through a symlink is not an upload.
	 * O_NONBLOCK: the path is the session's, so whatever its commands made it, and opening a
	 * FIFO for writing waits for a reader, for ever if none comes (this thread, and SIGTERM
	 * with it); without a reader it now fails at once with ENXIO, as any socket's file does.
	 * No O_TRUNC: nothing is truncated before it is known to be a regular file. O_NOCTTY: a
	 * terminal is never made cordond's controlling terminal.
	 */
	fd = beneath(pfd, base, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0644);
	if (fd < 0 && errno == ENXIO) {
		op->status = 400;
		return cordon_err(e, 0, "path: '%s' is not a regular file", op->path);
	}
	if (fd < 0) {
		op->status = errno_status(errno, op->path, e);
		return -1;
	}
	/* A FIFO with a reader, a device: regular files only, as for a download. */
	if (regular_only(op, fd, &st, e) < 0)
		return -1;
	if (ftruncate(fd, 0) < 0) {
		op->status = errno_status(errno, op->path, e);
		return -1;
	}
	/* Writes to a regular file never block anyway; cleared so that none can see EAGAIN. */
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
		op->status = 500;
		return cordon_err(e, errno, "path: '%s'", op->path);
	}
	for (p = op->buf, left = op->n; left > 0;) {
		ssize_t w = write(fd, p, left);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			op->status =
				errno == ENOSPC || errno == EDQUOT || errno == EFBIG ? 413 : 500;
			return cordon_err(e, errno, "path: writing '%s'", op->path);
		}
		p += w;
		left -= (size_t)w;
	}
	op->status = 0;
	return 0;
}

static int get_fn(void *arg, cordon_error *e)
{
	struct file_op *op = arg;
	_cleanup_close_ int fd = -1;
	struct stat st;

	fd = beneath(op->s->dirfd, op->path, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
	if (fd < 0) {
		op->status = errno_status(errno, op->path, e);
		return -1;
	}
	/* A FIFO or a device would block or never end: regular files only. */
	if (regular_only(op, fd, &st, e) < 0)
		return -1;
	op->fd = TAKE_FD(fd);
	op->size = (uint64_t)st.st_size;
	op->status = 0;
	return 0;
}

static int delete_fn(void *arg, cordon_error *e)
{
	struct file_op *op = arg;
	_cleanup_close_ int pfd = -1;
	const char *base;
	struct stat st;

	pfd = open_parent(op, false, &base, e);
	if (pfd < 0) {
		op->status = errno_status(errno, op->path, e);
		return -1;
	}
	if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		op->status = errno_status(errno, op->path, e);
		return -1;
	}
	if (S_ISDIR(st.st_mode)) {
		op->status = 400;
		return cordon_err(e, 0, "path: '%s' is a directory", op->path);
	}
	if (unlinkat(pfd, base, 0) < 0) {
		op->status = errno_status(errno, op->path, e);
		return -1;
	}
	op->status = 0;
	return 0;
}

/*
 * As the session's owner, who is the caller of this request (sessions are found by uid), with
 * the groups the group database gives them now: not the copy made with the session, which
 * let a member taken out of a group keep its files' rights through any session made before
 * (found in review). Root's temporary sessions belong to nobody (session_make), whose rights
 * the commands have there.
 */
static int file_op(const struct caller *c, const struct session *s,
		   int (*fn)(void *, cordon_error *), struct file_op *op, cordon_error *e)
{
	op->status = 500;
	/* As the caller: the session's files are theirs, and so are the permission checks. */
	if (ident_as_caller(s->owner.uid == c->uid ? c : &s->owner, fn, op, e) < 0)
		return op->status ? op->status : 500;
	return 0;
}

/* A remote session's file call failed: the HTTP status for it. */
static int remote_status(const cordon_error *e)
{
	switch (e->code) {
	case EINVAL:
		return 400;
	case ENOENT:
		return 404;
	case ENOMEM:
		return 500;
	default:
		return 502; /* the remote end refused or failed */
	}
}

static bool remote(const struct session *s)
{
	return s->ops == &backend_daytona;
}

int session_put_file(const struct caller *c, struct session *s, const char *path, const void *buf,
		     size_t n, cordon_error *e)
{
	struct file_op op = { .s = s, .path = path, .buf = buf, .n = n, .fd = -1 };

	if (remote(s))
		return s->ops->put_file(s->handle, path, buf, n, e) < 0 ? remote_status(e) : 0;
	return file_op(c, s, put_fn, &op, e);
}

/* A remote file's bytes as an fd to stream from, like a local file's. */
static int remote_get(struct session *s, const char *path, int *ret_fd, uint64_t *ret_size,
		      cordon_error *e)
{
	_cleanup_free_ void *buf = NULL;
	_cleanup_close_ int fd = -1;
	size_t n = 0;

	if (s->ops->get_file(s->handle, path, &buf, &n, e) < 0)
		return remote_status(e);
	fd = memfd_create("cordon-file", MFD_CLOEXEC);
	if (fd < 0 || fsutil_write_all(fd, buf, n) < 0 || lseek(fd, 0, SEEK_SET) < 0) {
		cordon_err(e, errno, "path: buffering '%s'", path);
		return 500;
	}
	*ret_fd = TAKE_FD(fd);
	*ret_size = n;
	return 0;
}

int session_get_file(const struct caller *c, struct session *s, const char *path, int *ret_fd,
		     uint64_t *ret_size, cordon_error *e)
{
	struct file_op op = { .s = s, .path = path, .fd = -1 };
	int r;

	if (remote(s))
		return remote_get(s, path, ret_fd, ret_size, e);
	r = file_op(c, s, get_fn, &op, e);
	if (r == 0) {
		*ret_fd = op.fd;
		*ret_size = op.size;
	}
	return r;
}

int session_delete_file(const struct caller *c, struct session *s, const char *path,
			cordon_error *e)
{
	struct file_op op = { .s = s, .path = path, .fd = -1 };

	if (remote(s))
		return daytona_delete_file(s->handle, path, e) < 0 ? remote_status(e) : 0;
	return file_op(c, s, delete_fn, &op, e);
}
