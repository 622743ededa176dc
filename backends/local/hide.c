/* SPDX-License-Identifier: MIT */
/*
 * What the sandbox hides in the workdir: every existing entry that matches one of the
 * profile's `ignore` patterns (AG2's check_ignore rule, ag2-behaviour.md §4.7) or `mask`
 * entries. This runs in the parent, before clone, so it may allocate and use the policy
 * engine's Python-exact fnmatch; the child only re-resolves the names it gets and checks that
 * each is still the inode found here (mounts.c: hide_all).
 *
 * Matching:
 *  - ignore: a pattern with any of "*?[" matches when fnmatch(rel, p), or p starts with "**"
 *    "/" and fnmatch(name, p[3:]), or fnmatch(name, p); a plain pattern matches when
 *    name == p or rel == p. fnmatch is Python's: '*' crosses '/'. `rel` is the path relative
 *    to the workdir, `name` its last component.
 *  - mask: a workdir-relative path ("./" and a leading or trailing '/' ignored) or a glob
 *    matched against `rel` only. Literal entries are looked up directly, at any depth.
 * A matching directory is hidden whole and not walked into.
 *
 * The walk is bounded (HIDE_MAX_DEPTH levels below the workdir, HIDE_MAX_ENTRIES entries) so a
 * huge tree cannot stall every start; a workdir past a bound is refused (hide_scan), never run
 * with a name left visible (docs/security.md). Every directory on the way to a hidden name is
 * pinned in the sandbox (pin_hidden_parents), so the command cannot move what is hidden to
 * where a later scan would miss it. It never follows a symlink (every directory is opened with O_NOFOLLOW
 * relative to its parent's fd), so a planted symlink cannot send it outside the workdir.
 * A big workdir's top-level subdirectories are walked on two threads, with the serial walk's
 * result (walk_shared): readdir is the walk's cost, and it is the kernel's.
 *
 * Symlinks and hard links: a matching symlink is hidden by its name, and its target as well
 * when that resolves inside the workdir (`.env -> config/real.env` hides both). A matching
 * regular file with other hard links: the walk is repeated with an lstat of every regular
 * file and each other name of that inode found in the workdir is hidden too.
 *
 * With HIDE_SETID (a root caller's run in an idmapped workdir that is not read-only) the
 * first pass of the walk is also setid.c's scan: every file it passes that setid_privileged
 * says the command must not change goes to out->ro, exactly what setid_scan would list, so the
 * workdir is read once for both (it was read twice, by each walk in turn). That walk goes on
 * into the directories it hides (with setid_scan's bounds and nothing matched there), for the
 * reason given at walk_entry, and fails on a directory it cannot read, as setid_scan does.
 */
#define _GNU_SOURCE
#include "backends/local/cpus.h"
#include "backends/local/sandbox.h"
#include "backends/local/setid.h"
#include "policy/internal.h"
#include "runtime/cleanup.h"
#include "runtime/grow.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <sys/xattr.h>
#include <unistd.h>

#define DENTS_SIZE (32 * 1024)
/*
 * The walk shares the workdir's top-level subdirectories with a second thread (walk_shared)
 * once what is left looks worth it: two subdirectories at least (one cannot be shared) and,
 * at the pace of those walked so far, this many entries. Starting and joining the thread
 * costs about 0.1 ms in a fresh CLI process, some 800 entries' walk; sharing saves half of
 * what is left.
 */
#define HIDE_SHARE_MIN_ENTRIES 2000
/*
 * A shared walk records what it finds before anything is hidden (walk_shared): a top level
 * with more subdirectories and matches than this, or a thread's records past this many bytes,
 * and the pass is walked on one thread instead, which records nothing (a hostile workdir of
 * 100,000 long names would otherwise hold hundreds of megabytes twice over).
 */
#define HIDE_SHARE_MAX_TOP 4096
#define HIDE_SHARE_MAX_BYTES (8u << 20)
/* What following hidden symlinks to their targets may take in one scan (add_symlink_target). */
#define HIDE_SYMLINK_BUDGET_NS 1000000000ull
/* Entries a thread takes from the entry bound at once (take_entry). */
#define HIDE_CREDIT 256

struct inode_id {
	dev_t dev;
	ino_t ino;
};

/* An unnamed placeholder inode of this run's, named under each absent mask entry. */
struct ph_tmpfile {
	int fd; /* holds the run's shared flock */
	dev_t dev;
	ino_t ino;
};

struct walk {
	const struct cordon_profile *p;
	int wd_fd;
	const char *workdir;
	struct sb_hide_list *out;
	uint64_t symlink_ns; /* spent following hidden symlinks (add_symlink_target) */
	size_t nsymlinks;
	/* second pass: other names of hard-linked hidden files */
	struct inode_id *links;
	size_t nlinks, links_cap;
	bool link_pass;
	bool setid; /* HIDE_SETID: the first pass also lists what setid_scan would */
	cordon_error *e;
	/*
	 * The patterns compiled once per scan (one automaton each, policy/pyglobset.c): rel_globs
	 * run on the workdir-relative path (ignore globs and glob masks), name_globs on the last
	 * component (ignore globs, and those after a leading "**" "/"). lits: the plain ignore
	 * patterns, sorted for bsearch. All read-only once compiled: the walk's two threads
	 * share them (each has its own automaton states, struct walker).
	 */
	bool placeholders;	       /* make absent literal masks (hide.c: placeholder) */
	struct ph_tmpfile tmpfiles[4]; /* one per mount that has absent names (usually one) */
	size_t ntmpfiles;
	struct pyglobset *rel_globs, *name_globs;
	char **lits;
	size_t nlits;
	char **normed; /* ignore patterns written another way (ignore_norm), owned */
	size_t nnormed;
	size_t taken; /* entries taken from the bound this pass, by every thread (atomic) */
};

/* What a record of the walk is (struct rec). */
enum rec_kind {
	REC_HIDE, /* a match, to hide (hide_found) */
	REC_RO,	  /* a file the command must not change (HIDE_SETID), for out->ro */
	REC_DIR,  /* a top-level subdirectory, walked apart */
	/* a top-level subdirectory hidden whole, walked apart for HIDE_SETID alone (covered) */
	REC_COVERED_DIR,
};

/*
 * What the walk found, recorded rather than kept at once (walk_shared), or a top-level
 * subdirectory walked apart: a directory, and then sub holds, in walk order, what its walk
 * found.
 */
struct rec {
	char *rel;
	struct stat st;
	enum rec_kind kind;
	struct rec *sub;
	size_t nsub, subcap;
};

static bool rec_is_dir(const struct rec *r)
{
	return r->kind == REC_DIR || r->kind == REC_COVERED_DIR;
}

/*
 * What one thread of the walk writes: rel_globs' state at each depth (rel_state: its state
 * after the directory's path and its '/', so an entry costs only its own name), the match
 * scratch, and a getdents64 buffer a depth (walk_fd).
 */
struct walker {
	struct walk *w;
	cordon_error *e;
	uint64_t *rel_state, *scratch, *name_scratch;
	char *dents; /* HIDE_MAX_DEPTH + 1 buffers of DENTS_SIZE (walk_fd's depth indexes them) */
	/* NULL: hide each match at once (hide_found); else record it in rec->sub */
	struct rec *rec;
	bool defer;	/* the top level of a shared walk: record its subdirectories, walk none */
	bool covered;	/* below a directory it hid: nothing matched, only HIDE_SETID's checks */
	bool truncated; /* the depth bound, or this thread's share of the entry bound, was hit */
	bool stop; /* the entry bound, or a bound of a shared walk's records, was hit: no further */
	size_t rec_bytes; /* what this thread's records hold (HIDE_SHARE_MAX_BYTES) */
	size_t credit;	  /* entries taken from the bound and not walked yet (take_entry) */
	size_t seen;	  /* entries this thread walked */
	size_t dirs;	  /* top-level subdirectories this thread walked (walk_dirs) */
};

static bool has_glob(const char *p)
{
	return strpbrk(p, "*?[") != NULL;
}

int hide_match_ignore(const char *pattern, const char *rel, const char *name, cordon_error *e)
{
	size_t n;
	int r;

	if (has_glob(pattern)) {
		r = pyfnmatch(rel, pattern, e);
		if (r != 0)
			return r;
		if (strncmp(pattern, "**/", 3) == 0) {
			r = pyfnmatch(name, pattern + 3, e);
			if (r != 0)
				return r;
		}
		return pyfnmatch(name, pattern, e);
	}
	if (strcmp(name, pattern) == 0 || strcmp(rel, pattern) == 0)
		return 1;
	n = strlen(pattern);
	return n > 0 && strncmp(rel, pattern, n) == 0 && rel[n] == '/';
}

bool hide_wanted(const struct cordon_profile *p)
{
	return p && (p->ignore.n > 0 || p->mask.n > 0);
}

bool hide_walks(const struct cordon_profile *p)
{
	if (!p)
		return false;
	for (size_t i = 0; i < p->mask.n; i++)
		if (has_glob(p->mask.v[i]))
			return true;
	return p->ignore.n > 0;
}

void hide_list_free(struct sb_hide_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].rel);
	free(l->v);
	for (size_t i = 0; i < l->nph; i++) {
		free(l->ph[i].rel);
		closep(&l->ph[i].fd);
	}
	free(l->ph);
	for (size_t i = 0; i < l->npin; i++)
		free(l->pin[i].rel);
	free(l->pin);
	for (size_t i = 0; i < l->nro; i++)
		free(l->ro[i].rel);
	free(l->ro);
	*l = (struct sb_hide_list){ 0 };
}

static int add(struct sb_hide_list *l, const char *rel, const struct stat *st, cordon_error *e);

/*
 * A lookup that failed for want of an fd or memory says nothing about the name: the scan
 * fails (fail closed) rather than take it for absent and leave it, or what it leads to,
 * visible. The walk holds an fd a level, to a depth the command chooses (open_failed).
 */
static bool lookup_short(int err)
{
	return err == EMFILE || err == ENFILE || err == ENOMEM;
}

/*
 * The directory part of rel beneath the workdir, no symlink on the way, and *ret_name the
 * rest. A name at the workdir's top is looked up from wd_fd itself (nothing to open):
 * *ret_owned is then -1, else the fd opened here, for the caller to close.
 */
static int parent_fd(int wd_fd, const char *rel, const char **ret_name, int *ret_owned)
{
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	const char *slash = strrchr(rel, '/');
	char dir[PATH_MAX];

	*ret_owned = -1;
	if (!slash) {
		*ret_name = rel;
		return wd_fd;
	}
	if ((size_t)(slash - rel) >= sizeof(dir))
		return errno = ENAMETOOLONG, -1;
	memcpy(dir, rel, (size_t)(slash - rel));
	dir[slash - rel] = '\0';
	*ret_name = slash + 1;
	*ret_owned = (int)syscall(SYS_openat2, wd_fd, dir, &how, sizeof(how));
	return *ret_owned;
}

/* The mark of a placeholder (any run may remove it once no run masks it any more). */
#define HIDE_MARK_XATTR "user.cordon.placeholder"

/*
 * Record a placeholder name. fd: an open fd of its inode holding the run's shared flock,
 * taken over (set to -1); -1 when an earlier entry of the same inode holds it already.
 */
static int ph_push(struct walk *w, const char *rel, const struct stat *st, int *fd)
{
	struct sb_hide_list *l = w->out;

	if (l->nph % 8 == 0) {
		struct sb_placeholder *v = reallocarray(l->ph, l->nph + 8, sizeof(*v));

		if (!v)
			return cordon_err(w->e, ENOMEM, "out of memory");
		l->ph = v;
	}
	l->ph[l->nph].rel = strdup(rel);
	if (!l->ph[l->nph].rel)
		return cordon_err(w->e, ENOMEM, "out of memory");
	l->ph[l->nph].dev = st->st_dev;
	l->ph[l->nph].ino = st->st_ino;
	l->ph[l->nph].fd = fd ? *fd : -1;
	if (fd)
		*fd = -1;
	l->nph++;
	return 0;
}

/* An entry of this run's placeholders with that inode, or NULL. */
static const struct sb_placeholder *ph_find(const struct sb_hide_list *l, const struct stat *st)
{
	for (size_t i = 0; i < l->nph; i++)
		if (l->ph[i].dev == st->st_dev && l->ph[i].ino == st->st_ino)
			return &l->ph[i];
	return NULL;
}

/*
 * A new placeholder inode in the directory dfd: an unnamed file (O_TMPFILE), marked, made
 * read-only and locked before it gets any name, so that every name it is given appears
 * complete, at once (a concurrent run never sees an unmarked placeholder), and a cordon killed
 * before linking leaves nothing. -1 when the file system has no O_TMPFILE (or the directory
 * is not ours to write): the caller makes a named file instead.
 */
static int ph_tmpfile(int dfd, struct stat *ret_st)
{
	_cleanup_close_ int fd = -1;

	fd = openat(dfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	(void)fsetxattr(fd, HIDE_MARK_XATTR, "1", 1, 0);
	if (fchmod(fd, 0444) < 0 || fstat(fd, ret_st) < 0 || flock(fd, LOCK_SH) < 0)
		return -1;
	return TAKE_FD(fd);
}

/*
 * Give the placeholder inode tfd the name dfd/name. root may name an open file directly
 * (AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH); anyone may through its /proc/self/fd link.
 * EXDEV: the directory is on another mount than the inode.
 */
static int ph_link(int tfd, int dfd, const char *name)
{
	char proc[64];

	if (linkat(tfd, "", dfd, name, AT_EMPTY_PATH) == 0)
		return 0;
	if (errno != ENOENT && errno != EPERM)
		return -1;
	(void)snprintf(proc, sizeof(proc), "/proc/self/fd/%d", tfd);
	return linkat(AT_FDCWD, proc, dfd, name, AT_SYMLINK_FOLLOW);
}

/* The older way, for a file system without O_TMPFILE: one named, marked, locked file. */
static int ph_named(struct walk *w, int dfd, const char *rel, const char *name)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	fd = openat(dfd, name, O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return 0; /* not ours to make (a read-only or foreign directory): nothing to block */
	(void)fsetxattr(fd, HIDE_MARK_XATTR, "1", 1, 0);
	if (fchmod(fd, 0444) < 0 || fstat(fd, &st) < 0 || flock(fd, LOCK_SH) < 0) {
		(void)unlinkat(dfd, name, 0);
		return 0;
	}
	if (ph_push(w, rel, &st, &fd) < 0) {
		(void)unlinkat(dfd, name, 0);
		return -1;
	}
	return add(w->out, rel, &st, w->e) < 0 ? -1 : 1;
}

/*
 * An absent literal mask entry whose directory exists: an empty, read-only file takes its
 * place (no symlink followed), is masked like any other entry, and so the command can create
 * neither the name nor anything under it (`.git/hooks/post-commit` with `.git` present,
 * `.vscode/tasks.json`, `.bashrc`...). An entry under a directory that does not exist is not
 * blocked (docs/security.md, "What it does not stop": a repository the command makes). It is
 * marked (HIDE_MARK_XATTR, where the file system has user
 * xattrs) so that a concurrent run in the same workdir recognises it, and held with a shared
 * flock until the run ends (sb_placeholder).
 *
 * All the names a run makes are hard links of one inode (one per mount: w->tmpfiles), made
 * with O_TMPFILE and linked under each name: a link is a directory entry, where a file of its
 * own per name costs an inode allocation each, which ext4 makes slower and slower as a
 * workdir's recently freed inodes pile up (run after run: 0.3 to 3 ms for 18 names, against
 * 0.03 ms). 1: made; 0: not made (EEXIST: made meanwhile by a concurrent run); -1: error.
 */
static int placeholder(struct walk *w, const char *rel)
{
	_cleanup_close_ int owned = -1;
	const char *name;
	struct stat st;
	size_t i;
	int dfd, fd;

	dfd = parent_fd(w->wd_fd, rel, &name, &owned);
	if (dfd < 0 && lookup_short(errno))
		return cordon_err(w->e, errno, "mask '%s'", rel);
	if (dfd < 0 || !*name)
		return 0;
	for (i = 0;; i++) {
		if (i == w->ntmpfiles) {
			if (i == ARRAY_SIZE(w->tmpfiles))
				return ph_named(w, dfd, rel, name);
			fd = ph_tmpfile(dfd, &st);
			if (fd < 0)
				return ph_named(w, dfd, rel, name);
			w->tmpfiles[i] =
				(struct ph_tmpfile){ .fd = fd, .dev = st.st_dev, .ino = st.st_ino };
			w->ntmpfiles++;
		}
		if (ph_link(w->tmpfiles[i].fd, dfd, name) == 0)
			break;
		if (errno == EEXIST)
			return 0; /* made meanwhile by a concurrent run: the caller takes that one */
		/*
		 * Another mount (EXDEV): the next inode, or a new one in this directory. Any
		 * other refusal (a file system that takes O_TMPFILE but not a link to it): a
		 * named file, so that the name is blocked all the same.
		 */
		if (errno != EXDEV)
			return ph_named(w, dfd, rel, name);
	}
	st = (struct stat){ .st_dev = w->tmpfiles[i].dev,
			    .st_ino = w->tmpfiles[i].ino,
			    .st_mode = S_IFREG | 0444 };
	/* The fd (and with it the run's lock) goes to the inode's first entry (hide_scan). */
	if (ph_push(w, rel, &st, NULL) < 0) {
		(void)unlinkat(dfd, name, 0);
		return -1;
	}
	return add(w->out, rel, &st, w->e) < 0 ? -1 : 1;
}
/*
 * A marked placeholder that another run (running now, or killed) made: held like our own, so
 * that its maker does not remove it under our mask, and removed by whichever run ends last.
 * 1: held; 0: not a placeholder; -2: being removed right now (look again).
 */
static int adopt(struct walk *w, const char *rel, const struct stat *st)
{
	struct open_how how = {
		.flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	_cleanup_close_ int fd = -1;
	struct stat now, again;
	char mark[4];

	if (!S_ISREG(st->st_mode) || st->st_size != 0)
		return 0;
	/*
	 * Another name of an inode this run holds already (placeholders share one inode): its
	 * lock is ours, so nobody can be removing the inode's names, and it was checked then.
	 */
	if (ph_find(w->out, st))
		return ph_push(w, rel, st, NULL) < 0 ? -1 : 1;
	fd = (int)syscall(SYS_openat2, w->wd_fd, rel, &how, sizeof(how));
	if (fd < 0 || fstat(fd, &now) < 0 || now.st_dev != st->st_dev || now.st_ino != st->st_ino ||
	    fgetxattr(fd, HIDE_MARK_XATTR, mark, sizeof(mark)) != 1 || mark[0] != '1')
		return 0;
	if (flock(fd, LOCK_SH | LOCK_NB) < 0)
		return errno == EWOULDBLOCK ? -2 : 0;
	/* Locked: still the file at that name (its remover unlinks while it holds the lock)? */
	if (fstat(fd, &now) < 0 || now.st_nlink == 0 ||
	    fstatat(w->wd_fd, rel, &again, AT_SYMLINK_NOFOLLOW) < 0 || again.st_dev != now.st_dev ||
	    again.st_ino != now.st_ino)
		return -2;
	if (ph_push(w, rel, &now, &fd) < 0)
		return -1;
	return 1;
}

/* Unlink one placeholder name, if it is still the very file made (empty, that inode). */
static void ph_unlink(int wd_fd, const struct sb_placeholder *ph)
{
	_cleanup_close_ int owned = -1;
	const char *name;
	struct stat st;
	int dfd = parent_fd(wd_fd, ph->rel, &name, &owned);

	/* Only the very file made: the command may have renamed things around it. */
	if (dfd >= 0 && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	    st.st_dev == ph->dev && st.st_ino == ph->ino && st.st_size == 0)
		(void)unlinkat(dfd, name, 0);
}

/*
 * Remove the placeholders once the sandbox is gone: the names of each inode only if no other
 * run holds it (an exclusive flock, taken without waiting) and each is still that empty file.
 * A run that cannot take the lock leaves the names to the run that still masks them, which
 * removes them in turn. The lock is per inode, and an inode's names are those of the run that
 * made it: a run whose profile masks fewer names, ending last, removes only its own, and the
 * others wait for the next run that masks them (docs/security.md).
 */
void hide_placeholders_remove(int wd_fd, struct sb_placeholder *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (v[i].fd < 0 || wd_fd < 0 || flock(v[i].fd, LOCK_EX | LOCK_NB) < 0)
			continue;
		for (size_t j = i; j < n; j++)
			if (j == i || (v[j].fd < 0 && v[j].dev == v[i].dev && v[j].ino == v[i].ino))
				ph_unlink(wd_fd, &v[j]);
	}
	for (size_t i = 0; i < n; i++) {
		closep(&v[i].fd);
		free(v[i].rel);
	}
	free(v);
}

static int push(struct sb_hide **vp, size_t *np, size_t *capp, const char *rel,
		const struct stat *st, cordon_error *e)
{
	size_t n = *np;

	if (array_grow(vp, n, capp, 16, e) < 0)
		return -1;
	(*vp)[n].rel = strdup(rel);
	if (!(*vp)[n].rel)
		return cordon_err(e, ENOMEM, "out of memory");
	(*vp)[n].dev = st->st_dev;
	(*vp)[n].ino = st->st_ino;
	(*vp)[n].dir = S_ISDIR(st->st_mode);
	*np = n + 1;
	return 0;
}

/*
 * rel into the hide list. A name can come more than once (a match that is also a symlink's
 * target, a hard link met twice): dedup_list drops the later ones when the scan is done, in
 * O(n log n) whatever the names are. (Looking each one up as it came was quadratic in what a
 * workdir hides: 20,000 hidden .o files took 425 ms to list; a hash index would be linear
 * only for names nobody chose to collide, and the workdir's names are the command's.)
 */
static int add(struct sb_hide_list *l, const char *rel, const struct stat *st, cordon_error *e)
{
	return push(&l->v, &l->n, &l->cap, rel, st, e);
}

struct hide_at {
	const char *rel;
	size_t i;
};

static int cmp_hide_at(const void *a, const void *b)
{
	const struct hide_at *x = a, *y = b;
	int c = strcmp(x->rel, y->rel);

	return c ? c : (x->i > y->i) - (x->i < y->i);
}

/* The hide list with each name once, where it first came: the order the mounts are made in. */
static int dedup_list(struct sb_hide_list *l, cordon_error *e)
{
	_cleanup_free_ struct hide_at *by = NULL;
	_cleanup_free_ bool *dup = NULL;
	size_t k = 0;

	if (l->n < 2)
		return 0;
	by = calloc(l->n, sizeof(*by));
	dup = calloc(l->n, sizeof(*dup));
	if (!by || !dup)
		return cordon_err(e, ENOMEM, "out of memory");
	for (size_t i = 0; i < l->n; i++)
		by[i] = (struct hide_at){ l->v[i].rel, i };
	qsort(by, l->n, sizeof(*by), cmp_hide_at);
	for (size_t i = 1; i < l->n; i++)
		dup[by[i].i] = strcmp(by[i].rel, by[i - 1].rel) == 0;
	for (size_t i = 0; i < l->n; i++) {
		if (dup[i])
			free(l->v[i].rel);
		else
			l->v[k++] = l->v[i];
	}
	l->n = k;
	return 0;
}

static int cmp_inode(const void *a, const void *b)
{
	const struct inode_id *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return (x->ino > y->ino) - (x->ino < y->ino);
}

/* The hidden files' inodes sorted, each once: what the link pass looks its files up in. */
static void sort_links(struct walk *w)
{
	size_t k = 0;

	qsort(w->links, w->nlinks, sizeof(*w->links), cmp_inode);
	for (size_t i = 0; i < w->nlinks; i++)
		if (k == 0 || cmp_inode(&w->links[k - 1], &w->links[i]) != 0)
			w->links[k++] = w->links[i];
	w->nlinks = k;
}

/* Is st's inode one of the hidden files' (w->links, sorted)? Read-only: both walk threads ask. */
static bool is_hidden_inode(const struct walk *w, const struct stat *st)
{
	struct inode_id id = { st->st_dev, st->st_ino };

	return w->nlinks > 0 && bsearch(&id, w->links, w->nlinks, sizeof(*w->links), cmp_inode);
}

/* Is dir pinned already? (A few directories: those on the way to the literal masks.) */
static bool pinned(const struct sb_hide_list *l, const char *dir)
{
	for (size_t i = 0; i < l->npin; i++)
		if (strcmp(l->pin[i].rel, dir) == 0)
			return true;
	return false;
}

/*
 * Each directory on the way to a literal mask entry, up to the first that is absent or not a
 * plain directory (a symlink is not followed): pinned in the sandbox (mounts.c: pin_all), so
 * renaming `.git` away and making a new `.git/hooks` fails with EBUSY.
 */
static int pin_parents(struct walk *w, const char *rel)
{
	struct open_how how = {
		.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	char dir[PATH_MAX];

	for (const char *s = strchr(rel, '/'); s; s = strchr(s + 1, '/')) {
		_cleanup_close_ int fd = -1;
		struct stat st;

		if ((size_t)(s - rel) >= sizeof(dir))
			return 0;
		memcpy(dir, rel, (size_t)(s - rel));
		dir[s - rel] = '\0';
		fd = (int)syscall(SYS_openat2, w->wd_fd, dir, &how, sizeof(how));
		if (fd < 0 || fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode))
			return 0;
		if (!pinned(w->out, dir) &&
		    push(&w->out->pin, &w->out->npin, &w->out->pincap, dir, &st, w->e) < 0)
			return -1;
	}
	return 0;
}

/* Strip "./", leading and trailing slashes of a mask entry into buf; false when empty. */
static bool mask_norm(const char *m, char *buf, size_t n)
{
	size_t len;

	while (m[0] == '/' || (m[0] == '.' && m[1] == '/'))
		m += m[0] == '/' ? 1 : 2;
	if ((size_t)snprintf(buf, n, "%s", m) >= n)
		return false;
	len = strlen(buf);
	while (len > 0 && buf[len - 1] == '/')
		buf[--len] = '\0';
	return len > 0 && strcmp(buf, ".") != 0;
}

/*
 * The target of a hidden symlink, when it resolves inside the workdir: open it following
 * links (O_PATH: nothing is read, nothing is created), ask the kernel where it ended up, and
 * hide that name too. A target outside the workdir is not ours to hide: the sandbox only shows
 * it if a ro_bind does (docs/security.md).
 */
/* Tests only: the budget of symlink resolution instead of HIDE_SYMLINK_BUDGET_NS (0: it). */
uint64_t hide_test_symlink_budget_ns;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int add_symlink_target(struct walk *w, const char *rel)
{
	_cleanup_close_ int fd = -1;
	char proc[64], abs[PATH_MAX];
	size_t wl = strlen(w->workdir);
	uint64_t t0 = mono_ns(), budget;
	struct stat st;
	ssize_t n;
	int err;

	fd = openat(w->wd_fd, rel, O_PATH | O_CLOEXEC);
	err = fd < 0 ? errno : 0;
	/*
	 * A chain of 40 links with 4,000-byte targets ("././...") costs the kernel about a
	 * millisecond to follow, and a workdir can hold many: the scan's time following them is
	 * bounded, and past it the run is refused, not started with targets left unhidden.
	 */
	w->symlink_ns += mono_ns() - t0;
	w->nsymlinks++;
	budget = hide_test_symlink_budget_ns ? hide_test_symlink_budget_ns : HIDE_SYMLINK_BUDGET_NS;
	if (w->symlink_ns > budget)
		return cordon_err(
			w->e, ELOOP,
			"the workdir's symlinks take too long to resolve (%zu followed in "
			"%.1f s): remove them, or ignore their directory whole",
			w->nsymlinks, (double)w->symlink_ns / 1e9);
	if (fd < 0 && lookup_short(err))
		return cordon_err(w->e, err, "follow the hidden symlink '%s'", rel);
	if (fd < 0)
		return 0; /* dangling: nothing to read */
	(void)snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, abs, sizeof(abs) - 1);
	if (n < 0 || fstat(fd, &st) < 0)
		return 0;
	abs[n] = '\0';
	if ((size_t)n <= wl + 1 || strncmp(abs, w->workdir, wl) != 0 || abs[wl] != '/')
		return 0;
	return add(w->out, abs + wl + 1, &st, w->e);
}

static int hide_one(struct walk *w, const char *rel, const struct stat *st)
{
	if (add(w->out, rel, st, w->e) < 0)
		return -1;
	if (S_ISLNK(st->st_mode))
		return add_symlink_target(w, rel);
	if (S_ISREG(st->st_mode) && st->st_nlink > 1 && !w->link_pass) {
		if (array_grow(&w->links, w->nlinks, &w->links_cap, 8, w->e) < 0)
			return -1;
		w->links[w->nlinks++] = (struct inode_id){ st->st_dev, st->st_ino };
	}
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool lit_has(const struct walk *w, const char *s, size_t n)
{
	size_t lo = 0, hi = w->nlits;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strncmp(w->lits[mid], s, n);

		if (c == 0)
			c = w->lits[mid][n] == '\0' ? 0 : 1;
		if (c == 0)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/*
 * Whether rel (name its last component) is hidden: hide_match_ignore() for every ignore
 * pattern, pyfnmatch(rel, m) for every glob mask, with each kind of pattern looked up once,
 * however many there are. dir_state is rel_globs' state after rel's parent directory and '/'.
 */
static bool matches(struct walker *t, const char *rel, size_t rlen, const char *name,
		    const uint64_t *dir_state)
{
	const struct walk *w = t->w;
	size_t words = pyglobset_words(w->rel_globs), nlen = strlen(name);

	if (w->nlits) {
		if (lit_has(w, name, nlen) || lit_has(w, rel, rlen))
			return true;
		for (size_t i = 0; i < rlen; i++)
			if (rel[i] == '/' && lit_has(w, rel, i))
				return true;
	}
	/* rel ends with name: a last byte no pattern can end with rules the automaton out. */
	if (words && pyglobset_may_end(w->rel_globs, name, nlen)) {
		memcpy(t->scratch, dir_state, words * sizeof(uint64_t));
		pyglobset_feed(w->rel_globs, t->scratch, name, nlen);
		if (pyglobset_accepts(w->rel_globs, t->scratch))
			return true;
	}
	if (!pyglobset_words(w->name_globs) || !pyglobset_may_end(w->name_globs, name, nlen))
		return false;
	pyglobset_start(w->name_globs, t->name_scratch);
	pyglobset_feed(w->name_globs, t->name_scratch, name, nlen);
	return pyglobset_accepts(w->name_globs, t->name_scratch);
}

/*
 * An ignore pattern written as a path rather than a name (`secrets/`, `./secrets`,
 * `/secrets`, `secrets//x`, `secrets/.`, or the workdir's own absolute path before it): AG2's
 * rule compares it with names and workdir-relative paths as written, so it would match
 * nothing and hide nothing, silently. The walk also hides what the plain form matches
 * (hiding more is the safe side; the policy's checks of the command keep AG2's rule).
 * Returns the plain form when it differs, NULL otherwise (or when nothing is left).
 */
static char *ignore_norm(const char *given, const char *workdir)
{
	size_t wl = strlen(workdir), k = 0;
	const char *pat = given;
	char *s;

	if (wl > 1 && strncmp(pat, workdir, wl) == 0 && pat[wl] == '/')
		pat += wl + 1;
	s = malloc(strlen(pat) + 1);
	if (!s)
		return NULL;
	for (const char *c = pat; *c;) {
		const char *end = strchrnul(c, '/');
		size_t n = (size_t)(end - c);

		if (n > 0 && !(n == 1 && c[0] == '.')) {
			if (k)
				s[k++] = '/';
			memcpy(s + k, c, n);
			k += n;
		}
		c = *end ? end + 1 : end;
	}
	s[k] = '\0';
	if (k == 0 || strcmp(s, given) == 0) {
		free(s);
		return NULL;
	}
	return s;
}

/* Compile the profile's ignore patterns and glob masks (once per scan). */
static int compile_patterns(struct walk *w)
{
	const struct cordon_list *ig = &w->p->ignore, *mk = &w->p->mask;

	if (pyglobset_new(&w->rel_globs, w->e) < 0 || pyglobset_new(&w->name_globs, w->e) < 0)
		return -1;
	w->lits = calloc(2 * ig->n + 1, sizeof(*w->lits));
	w->normed = calloc(ig->n + 1, sizeof(*w->normed));
	if (!w->lits || !w->normed)
		return cordon_err(w->e, ENOMEM, "out of memory");
	for (size_t i = 0; i < 2 * ig->n; i++) {
		const char *pat = i < ig->n ? ig->v[i] : NULL;

		if (!pat) {
			pat = w->normed[w->nnormed] = ignore_norm(ig->v[i - ig->n], w->workdir);
			if (!pat)
				continue;
			w->nnormed++;
		}

		if (!has_glob(pat)) {
			w->lits[w->nlits++] = (char *)pat;
			continue;
		}
		/* fnmatch(name, p) implies fnmatch(rel, p) when p starts with '*' (it also
		 * matches the directories before name, '/' included): rel_globs covers it. */
		if (pyglobset_add(w->rel_globs, pat, w->e) < 0 ||
		    (pat[0] != '*' && pyglobset_add(w->name_globs, pat, w->e) < 0))
			return -1;
		if (strncmp(pat, "**/", 3) == 0 && pat[3] != '*' &&
		    pyglobset_add(w->name_globs, pat + 3, w->e) < 0)
			return -1;
	}
	for (size_t i = 0; i < mk->n; i++)
		if (has_glob(mk->v[i]) && pyglobset_add(w->rel_globs, mk->v[i], w->e) < 0)
			return -1;
	if (pyglobset_compile(w->rel_globs, w->e) < 0 || pyglobset_compile(w->name_globs, w->e) < 0)
		return -1;
	qsort(w->lits, w->nlits, sizeof(*w->lits), cmp_str);
	return 0;
}

static void walker_free(struct walker *t)
{
	free(t->rel_state);
	free(t->scratch);
	free(t->name_scratch);
	free(t->dents);
	*t = (struct walker){ 0 };
}

/* A thread's walk state, for the compiled patterns of w. Errors go to e. */
static int walker_init(struct walker *t, struct walk *w, cordon_error *e)
{
	size_t words = pyglobset_words(w->rel_globs);

	*t = (struct walker){ .w = w, .e = e };
	t->rel_state = calloc((HIDE_MAX_DEPTH + 1) * words + 1, sizeof(uint64_t));
	t->scratch = calloc(words + 1, sizeof(uint64_t));
	t->name_scratch = calloc(pyglobset_words(w->name_globs) + 1, sizeof(uint64_t));
	/* One block (touched a page at a time): no allocation in a thread that walks. */
	t->dents = malloc((size_t)(HIDE_MAX_DEPTH + 1) * DENTS_SIZE);
	if (!t->rel_state || !t->scratch || !t->name_scratch || !t->dents) {
		walker_free(t);
		return cordon_err(e, ENOMEM, "out of memory");
	}
	if (words)
		pyglobset_start(w->rel_globs, t->rel_state);
	return 0;
}

static void rec_free(struct rec *r)
{
	for (size_t i = 0; i < r->nsub; i++) {
		free(r->sub[i].rel);
		rec_free(&r->sub[i]);
	}
	free(r->sub);
	r->sub = NULL;
	r->nsub = r->subcap = 0;
}

static int rec_push(struct rec *into, const char *rel, const struct stat *st, enum rec_kind kind,
		    cordon_error *e)
{
	struct rec *r;

	if (array_grow(&into->sub, into->nsub, &into->subcap, 16, e) < 0)
		return -1;
	r = &into->sub[into->nsub];
	*r = (struct rec){ .rel = strdup(rel), .kind = kind };
	if (!r->rel)
		return cordon_err(e, ENOMEM, "out of memory");
	if (st)
		r->st = *st;
	into->nsub++;
	return 0;
}

/* What the walk does with an entry it found: hidden (hide_one), or in the link pass added. */
static int hide_found(struct walk *w, const char *rel, const struct stat *st)
{
	return w->link_pass ? add(w->out, rel, st, w->e) : hide_one(w, rel, st);
}

/* What the walk found (REC_HIDE or REC_RO), into the list. */
static int keep(struct walk *w, const char *rel, const struct stat *st, enum rec_kind kind)
{
	if (kind == REC_RO)
		return push(&w->out->ro, &w->out->nro, &w->out->rocap, rel, st, w->e);
	return hide_found(w, rel, st);
}

/* An entry found: kept now, or recorded to be kept later in the serial walk's order. */
static int found(struct walker *t, const char *rel, const struct stat *st, enum rec_kind kind)
{
	if (t->rec) {
		/* Too much to record: walk_shared walks the pass again, on one thread. */
		t->rec_bytes += sizeof(struct rec) + strlen(rel) + 1;
		if ((t->defer && t->rec->nsub >= HIDE_SHARE_MAX_TOP) ||
		    t->rec_bytes > HIDE_SHARE_MAX_BYTES) {
			t->stop = true;
			return 0;
		}
		return rec_push(t->rec, rel, st, kind, t->e);
	}
	return keep(t->w, rel, st, kind);
}

/* Compare the first len bytes of a, as a string of its own, with the string b. */
static int cmp_prefix(const char *a, size_t len, const char *b)
{
	int c = strncmp(a, b, len);

	return c ? c : b[len] ? -1 : 0;
}

/* Is a's first len bytes one of the n names of by (sorted by strcmp)? */
static bool among(const char *const *by, size_t n, const char *a, size_t len)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = cmp_prefix(a, len, by[mid]);

		if (c == 0)
			return true;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return false;
}

struct dir_ref {
	const char *s; /* a hidden name; the directory is its first len bytes */
	size_t len;
};

static int cmp_dir_ref(const void *a, const void *b)
{
	const struct dir_ref *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->s, y->s, n);

	return c ? c : (x->len > y->len) - (x->len < y->len);
}

static int cmp_hide_rel(const void *a, const void *b)
{
	return strcmp(((const struct sb_hide *)a)->rel, ((const struct sb_hide *)b)->rel);
}

/* How many directories the paths of v[0..n) have on their way, with repeats. */
static size_t count_dirs(const struct sb_hide *v, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		for (const char *s = strchr(v[i].rel, '/'); s; s = strchr(s + 1, '/'))
			k++;
	return k;
}

/*
 * Each of the k directories of dirs (sorted here) into l->pin once, but none that is one of
 * the first nskip pins of l already. One gone since the walk is left out: the name below it
 * then fails the setup (mounts.c); one that cannot be looked up for want of an fd or memory
 * fails the scan (lookup_short).
 */
static int pin_dirs(int wd_fd, struct sb_hide_list *l, struct dir_ref *dirs, size_t k, size_t nskip,
		    cordon_error *e)
{
	struct open_how how = {
		.flags = O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	char dir[PATH_MAX];

	qsort(dirs, k, sizeof(*dirs), cmp_dir_ref);
	for (size_t j = 0; j < k; j++) {
		_cleanup_close_ int fd = -1;
		struct stat st;
		bool skip = false;

		if ((j > 0 && cmp_dir_ref(&dirs[j - 1], &dirs[j]) == 0) ||
		    dirs[j].len >= sizeof(dir))
			continue;
		memcpy(dir, dirs[j].s, dirs[j].len);
		dir[dirs[j].len] = '\0';
		for (size_t i = 0; i < nskip && !skip; i++)
			skip = strcmp(l->pin[i].rel, dir) == 0;
		if (skip)
			continue;
		fd = (int)syscall(SYS_openat2, wd_fd, dir, &how, sizeof(how));
		if (fd < 0 && lookup_short(errno))
			return cordon_err(e, errno, "pin '%s'", dir);
		if (fd < 0 || fstat(fd, &st) < 0)
			continue;
		if (push(&l->pin, &l->npin, &l->pincap, dir, &st, e) < 0)
			return -1;
	}
	return 0;
}

/*
 * Every directory on the way to a hidden name, pinned like those on the way to the literal
 * masks (pin_parents; mounts.c: pin_all): a mount point cannot be renamed in the namespace that
 * sees it, so the command cannot move `config` (with the cover of `config/server.pem` on it)
 * to a name, or a depth, that the next run's scan, or the scan of a run starting meanwhile in
 * the same workdir, would not find it under. The covered name itself cannot be renamed or
 * removed either (EBUSY), so a hidden name stays where every scan looks for it. A name below
 * a hidden directory is dropped: the directory's cover hides it already (and re-resolving it
 * through that cover would find nothing). The pins end sorted, each directory before the
 * ones below it: the order they are mounted in.
 */
static int pin_hidden_parents(struct walk *w)
{
	struct sb_hide_list *l = w->out;
	_cleanup_free_ const char **by = NULL;
	_cleanup_free_ struct dir_ref *dirs = NULL;
	_cleanup_free_ bool *drop = NULL;
	size_t nlit = l->npin, ndirs = 0, k = 0;

	if (l->n == 0)
		return 0;
	by = calloc(l->n, sizeof(*by));
	drop = calloc(l->n, sizeof(*drop));
	ndirs = count_dirs(l->v, l->n);
	dirs = calloc(ndirs ? ndirs : 1, sizeof(*dirs));
	if (!by || !drop || !dirs)
		return cordon_err(w->e, ENOMEM, "out of memory");
	for (size_t i = 0; i < l->n; i++)
		by[i] = l->v[i].rel;
	qsort(by, l->n, sizeof(*by), cmp_str);
	for (size_t i = 0; i < l->n; i++) {
		const char *rel = l->v[i].rel;

		for (const char *s = strchr(rel, '/'); s && !drop[i]; s = strchr(s + 1, '/'))
			drop[i] = among(by, l->n, rel, (size_t)(s - rel));
		if (drop[i])
			continue;
		for (const char *s = strchr(rel, '/'); s; s = strchr(s + 1, '/'))
			dirs[k++] = (struct dir_ref){ rel, (size_t)(s - rel) };
	}
	if (pin_dirs(w->wd_fd, l, dirs, k, nlit, w->e) < 0)
		return -1;
	k = 0;
	for (size_t i = 0; i < l->n; i++) {
		if (drop[i])
			free(l->v[i].rel);
		else
			l->v[k++] = l->v[i];
	}
	l->n = k;
	if (l->npin > 1)
		qsort(l->pin, l->npin, sizeof(*l->pin), cmp_hide_rel);
	return 0;
}

int hide_pin_protected(int wd_fd, struct sb_hide_list *l, cordon_error *e)
{
	_cleanup_free_ struct dir_ref *dirs = NULL;
	size_t ndirs = count_dirs(l->ro, l->nro), k = 0;

	if (ndirs == 0)
		return 0;
	dirs = calloc(ndirs, sizeof(*dirs));
	if (!dirs)
		return cordon_err(e, ENOMEM, "out of memory");
	for (size_t i = 0; i < l->nro; i++)
		for (const char *s = strchr(l->ro[i].rel, '/'); s; s = strchr(s + 1, '/'))
			dirs[k++] = (struct dir_ref){ l->ro[i].rel, (size_t)(s - l->ro[i].rel) };
	if (pin_dirs(wd_fd, l, dirs, k, 0, e) < 0)
		return -1;
	/* Each directory once (the hide scan's pins may name it already), parents first. */
	qsort(l->pin, l->npin, sizeof(*l->pin), cmp_hide_rel);
	k = 0;
	for (size_t i = 0; i < l->npin; i++) {
		if (k > 0 && strcmp(l->pin[k - 1].rel, l->pin[i].rel) == 0)
			free(l->pin[i].rel);
		else
			l->pin[k++] = l->pin[i];
	}
	l->npin = k;
	return 0;
}

static bool is_dot(const char *name)
{
	return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

/* Tests only: the entry bound instead of HIDE_MAX_ENTRIES (0: HIDE_MAX_ENTRIES). */
size_t hide_test_max_entries;

static size_t max_entries(void)
{
	return hide_test_max_entries ? hide_test_max_entries : HIDE_MAX_ENTRIES;
}

/*
 * The entry bound, shared by the walk's threads: may the walk take one more entry? Each
 * thread takes its entries from the bound HIDE_CREDIT at a time (one atomic add for many
 * entries: two threads adding to one counter an entry at a time would pass its cache line to
 * and fro) and spends them an entry at a time, in walk order. So a walk on one thread covers
 * exactly the first entries in walk order, as it always did; a shared walk that reaches the
 * bound is walked again on one thread (walk_shared).
 */
static bool take_entry(struct walker *t)
{
	if (t->credit == 0) {
		size_t max = max_entries();
		size_t before = __atomic_fetch_add(&t->w->taken, HIDE_CREDIT, __ATOMIC_RELAXED);

		if (before >= max)
			return false;
		t->credit = max - before < HIDE_CREDIT ? max - before : HIDE_CREDIT;
	}
	t->credit--;
	t->seen++;
	return true;
}

/* rel_globs' state for the directory name at depth + 1, from its parent's at depth. */
static void enter(struct walker *t, int depth, const char *name, size_t nlen)
{
	size_t words = pyglobset_words(t->w->rel_globs);
	uint64_t *child = t->rel_state + (depth + 1) * words;

	if (!words)
		return;
	memcpy(child, t->rel_state + depth * words, words * sizeof(uint64_t));
	pyglobset_feed(t->w->rel_globs, child, name, nlen);
	pyglobset_feed(t->w->rel_globs, child, "/", 1);
}

static int walk_dir(struct walker *t, int dfd, char *rel, size_t rlen, int depth);

/*
 * A directory gone meanwhile (or replaced by a file or a symlink) is passed by, and one the walk
 * may not read (EACCES, EPERM) too: it runs with the command's user's rights, so the command
 * cannot read it either. Any other failure fails the walk: a directory not listed for want of
 * an fd (EMFILE: the walk holds one a level, and the command chooses the depth), of memory or
 * of a working disk may hold names to hide that the command can read (found in review: a
 * server.pem 60 levels down went unhidden at `ulimit -n 64`). A walk for HIDE_SETID fails on
 * EACCES and EPERM as well, as setid_scan does: it runs as root, to whom nothing is
 * unreadable, and a directory passed by could hold a program the command would own.
 */
static int open_failed(struct walker *t, const char *rel)
{
	bool setid = t->w->setid && !t->w->link_pass;

	if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP)
		return 0;
	if (!setid && (errno == EACCES || errno == EPERM))
		return 0;
	return cordon_err(t->e, errno, "%s: open '%s'", setid ? "setuid scan" : "walk", rel);
}

/*
 * An entry that cannot be stat'ed: gone meanwhile (ENOENT), passed by, and so is one the walk
 * may not search for (as open_failed passes a directory it may not open); any other failure
 * (an I/O error, memory) says nothing of it, and fails the walk: a name to hide, or a setuid
 * program, passed by for it was left visible or writable (red team).
 */
static int stat_failed(struct walker *t, const char *rel)
{
	bool setid = t->w->setid && !t->w->link_pass;

	if (errno == ENOENT)
		return 0;
	/* Not ours to search (a directory readable but not searchable): nor the command's. */
	if (!setid && (errno == EACCES || errno == EPERM))
		return 0;
	return cordon_err(t->e, errno, "%s: stat '%s'", setid ? "setuid scan" : "walk", rel);
}

/* The directory fd (the caller's, closed here) walked, below a hidden one when covered. */
static int walk_sub(struct walker *t, int fd, char *rel, size_t rlen, int depth, bool covered)
{
	bool was = t->covered;
	int r;

	t->covered = covered;
	r = walk_dir(t, fd, rel, rlen, depth);
	t->covered = was;
	return r;
}

/*
 * One entry of a directory (dfd): hidden, walked into, or passed by; with HIDE_SETID, listed
 * too when setid_privileged says so.
 *
 * With HIDE_SETID a directory the walk hides is still walked into (covered: nothing is matched
 * there, nothing hidden, no entry of it pinned), for the setid checks alone. Inside the sandbox
 * the files below it cannot be reached: mounts.c makes the pins, then the read-only binds of
 * out->ro (protect_all), then the covers (hide_all), so a bind below a hidden directory ends
 * up under its cover, unseen, and unneeded there. They are listed all the same, because
 * leaving them out would change three things:
 *  - a bind is on the file's dentry and moves with it: renamed out of the hidden directory
 *    into a visible one during the run, by a host user or by another run that sees it (a
 *    mount in this namespace does not stop a rename in another one), the file is still
 *    read-only here (checked on this kernel); one never bound would be the command's to
 *    rewrite through a shared mapping;
 *  - the bounds: setid_scan counted every entry, hidden or not, and refused a workdir past
 *    HIDE_MAX_ENTRIES of them or HIDE_MAX_DEPTH levels; skipping hidden directories would
 *    run workdirs it refused;
 *  - the list: out->ro stays exactly setid_scan's (tests/unit/test_setid.c compares them).
 * What this costs is what setid_scan cost: it read those directories too. Below a hidden
 * directory the bounds on depth and name length are setid_scan's, which allow one level (and
 * one byte) more than the hide walk's: those directories were walked by it alone.
 */
static int walk_entry(struct walker *t, int dfd, const struct dirent64 *de, char *rel, size_t rlen,
		      int depth)
{
	struct walk *w = t->w;
	bool setid = w->setid && !w->link_pass, covered = t->covered;
	const char *name = de->d_name;
	size_t nlen = strlen(name), len = rlen + nlen + (rlen ? 1 : 0);
	struct stat st;
	bool have_st = false, is_dir;
	int fd;

	/* A name too long to record: the walk is bounded here too. */
	if (covered ? len >= PATH_MAX : rlen + nlen + 2 >= PATH_MAX) {
		t->truncated = true;
		return 0;
	}
	if (rlen)
		rel[rlen] = '/';
	memcpy(rel + rlen + (rlen ? 1 : 0), name, nlen + 1);

	is_dir = de->d_type == DT_DIR;
	if (de->d_type == DT_UNKNOWN) {
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return stat_failed(t, rel);
		have_st = true;
		is_dir = S_ISDIR(st.st_mode);
	}

	if (w->link_pass) {
		if (de->d_type == DT_REG || (have_st && S_ISREG(st.st_mode))) {
			if (!have_st && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				return stat_failed(t, rel);
			if (st.st_nlink > 1 && is_hidden_inode(w, &st))
				return found(t, rel, &st, REC_HIDE);
		} else if (is_dir &&
			   matches(t, rel, len, name,
				   t->rel_state + depth * pyglobset_words(w->rel_globs))) {
			/*
			 * Hidden whole by the first pass: nothing in it to look for, and its
			 * entries must not spend the bound before the names still to be found.
			 */
			return 0;
		}
	} else if (!covered && matches(t, rel, len, name,
				       t->rel_state + depth * pyglobset_words(w->rel_globs))) {
		if (!have_st && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return stat_failed(t, rel);
		if (found(t, rel, &st, REC_HIDE) < 0)
			return -1;
		if (!setid || t->stop)
			return 0;
		have_st = true;
		is_dir = S_ISDIR(st.st_mode);
		covered = true;
	}
	/* setid_scan's checks: a stat of everything but directories and symlinks. */
	if (setid && !is_dir && de->d_type != DT_LNK) {
		if (!have_st && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return stat_failed(t, rel); /* gone meanwhile: nothing to protect */
		if (!S_ISDIR(st.st_mode))
			return setid_privileged(dfd, name, &st) ? found(t, rel, &st, REC_RO) : 0;
		is_dir = true; /* a directory since it was listed: walked, as setid_scan would */
	}
	if (!is_dir)
		return 0;
	/* Too deep: not walked into, and the walk goes on elsewhere. */
	if (covered ? depth + 1 > HIDE_MAX_DEPTH : depth + 1 >= HIDE_MAX_DEPTH) {
		t->truncated = true;
		return 0;
	}
	/* The top level of a shared walk: the subdirectory is walked later, by either thread. */
	if (t->defer)
		return found(t, rel, NULL, covered ? REC_COVERED_DIR : REC_DIR);
	if (!covered)
		enter(t, depth, name, nlen);
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return open_failed(t, rel);
	return walk_sub(t, fd, rel, len, depth + 1, covered);
}

/*
 * One directory (fd, the caller's): its entries by getdents64 into the buffer of its depth,
 * reused from directory to directory (no opendir: its fstat, fcntl and allocation a
 * directory add up over a big tree). One that cannot be read through fails the walk, as one
 * that cannot be opened does (open_failed).
 */
static int walk_fd(struct walker *t, int fd, char *rel, size_t rlen, int depth)
{
	char *buf = t->dents + (size_t)depth * DENTS_SIZE;
	long got;

	while ((got = syscall(SYS_getdents64, fd, buf, DENTS_SIZE)) > 0)
		for (long off = 0; off < got;) {
			const struct dirent64 *de = (const struct dirent64 *)(buf + off);

			off += de->d_reclen;
			if (is_dot(de->d_name))
				continue;
			if (!take_entry(t)) {
				t->truncated = t->stop = true;
				return 0;
			}
			if (walk_entry(t, fd, de, rel, rlen, depth) < 0)
				return -1;
			if (t->stop)
				return 0;
		}
	/* Removed meanwhile (ENOENT): nothing left in it. Anything else: as open_failed. */
	if (got < 0 && errno != ENOENT) {
		int err = errno;

		rel[rlen] = '\0';
		return cordon_err(t->e, err, "%s: read '%s'",
				  t->w->setid && !t->w->link_pass ? "setuid scan" : "walk",
				  rlen ? rel : ".");
	}
	return 0;
}

static int walk_dir(struct walker *t, int dfd, char *rel, size_t rlen, int depth)
{
	_cleanup_close_ int fd = dfd;

	return walk_fd(t, fd, rel, rlen, depth);
}

/*
 * The shared walk (walk_shared): the top-level subdirectories, taken one at a time by
 * whichever thread is free (an atomic index), each walked whole by the thread that took it.
 */
struct share {
	struct rec **dirs;
	size_t ndirs;
	size_t next; /* atomic: the next of dirs to take */
	bool failed; /* atomic: a thread's walk failed, the other takes no more */
	int top_fd;  /* the workdir, open for reading */
};

struct worker {
	struct walker t;
	struct share *q;
	cordon_error e;
	int r;
	pid_t tid;
	cpu_set_t cpus; /* the CPUs the process may run on */
	bool away;	/* two of them at least: the thread starts on another than its creator's */
};

bool hide_test_worker_fails;

/*
 * Take top-level subdirectories (the next not taken) and walk each whole, until none is left
 * (0) or, with one, after one (1; 0 when there was none). -1: an error, in t->e.
 */
static int walk_dirs(struct walker *t, struct share *q, bool one)
{
	char rel[PATH_MAX];

	for (;;) {
		size_t i, len;
		struct rec *d;
		int fd;

		if (__atomic_load_n(&q->failed, __ATOMIC_RELAXED))
			return 0;
		i = __atomic_fetch_add(&q->next, 1, __ATOMIC_RELAXED);
		if (i >= q->ndirs)
			return 0;
		d = q->dirs[i];
		len = strlen(d->rel); /* a top-level name: NAME_MAX at most */
		memcpy(rel, d->rel, len + 1);
		t->rec = d;
		t->dirs++;
		if (d->kind == REC_DIR)
			enter(t, 0, rel, len);
		fd = openat(q->top_fd, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 ? open_failed(t, rel) < 0
			   : walk_sub(t, fd, rel, len, 1, d->kind == REC_COVERED_DIR) < 0) {
			__atomic_store_n(&q->failed, true, __ATOMIC_RELAXED);
			return -1;
		}
		if (t->stop)
			return 0;
		if (one)
			return 1;
	}
}

static void *worker_main(void *arg)
{
	struct worker *k = arg;

	k->tid = gettid();
	/* Started away from the calling thread's CPU (worker_start), then free to move. */
	if (k->away)
		(void)sched_setaffinity(0, sizeof(k->cpus), &k->cpus);
	if (hide_test_worker_fails) {
		k->r = cordon_err(&k->e, ENOMEM, "out of memory (hide_test_worker_fails)");
		__atomic_store_n(&k->q->failed, true, __ATOMIC_RELAXED);
	} else {
		k->r = walk_dirs(&k->t, k->q, false);
	}
	return NULL;
}

/*
 * The second thread, or -1 when there is none (one CPU to run on, unless force; no memory for
 * its state; no thread): the calling thread then walks every subdirectory itself, with the
 * same result.
 *
 * It starts on another CPU than the calling thread's: a new thread is put on its creator's
 * CPU often enough, and then waits there until the creator blocks or the load balancer moves
 * it, about as long as the walk (measured on the reference VM: half the starts at ~1.5 ms
 * instead of 0.06 ms). It runs with every signal blocked, so that the CLI's handlers run on
 * the main thread.
 */
static int worker_start(struct worker *k, struct share *q, struct walk *w, bool force,
			pthread_t *ret)
{
	pthread_attr_t attr;
	cpu_set_t away;
	sigset_t all, old;
	int r = 0;

	k->q = q;
	/*
	 * Away whatever the load (not cpus_one_free, which the sandbox's child follows): the
	 * count it reads sees the kernel's own work left by the run before (its network
	 * namespace's teardown), so the walk lost its second thread in most back-to-back runs,
	 * and the walk alone was slower, idle or with a CPU busy: 10,000 files with 100 ignore
	 * globs, medians of 15, 2.15 ms against 1.61 idle, 3.46 against 2.59 with a nice 10
	 * loop on one vCPU (2026-11-26).
	 */
	k->away = cpus_mine(&k->cpus);
	if (!k->away && !force)
		return -1;
	if (walker_init(&k->t, w, &k->e) < 0)
		return -1;
	if (pthread_attr_init(&attr) != 0) {
		walker_free(&k->t);
		return -1;
	}
	if (k->away && cpus_away(&k->cpus, &away))
		r = pthread_attr_setaffinity_np(&attr, sizeof(away), &away);
	(void)sigfillset(&all);
	(void)pthread_sigmask(SIG_SETMASK, &all, &old);
	if (r == 0)
		r = pthread_create(ret, &attr, worker_main, k);
	(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
	(void)pthread_attr_destroy(&attr);
	if (r != 0) {
		walker_free(&k->t);
		return -1;
	}
	return 0;
}

/*
 * pthread_join returns once the kernel has cleared the thread's tid, a little before the
 * thread has left the thread group. Wait a little for that too, so that the process is
 * single-threaded again when hide_scan returns (unshare(CLONE_NEWUSER) or setns() into a user
 * namespace would refuse it otherwise; no caller does either today). Bounded: a traced
 * thread can stay a zombie, and in cordond another thread may reuse the tid.
 */
static void worker_join(struct worker *k, pthread_t th)
{
	(void)pthread_join(th, NULL);
	for (int i = 0; i < 1000 && syscall(SYS_tgkill, getpid(), k->tid, 0) == 0; i++)
		(void)sched_yield();
}

/*
 * The walk on two threads (docs/security.md): the calling thread reads the top level whole,
 * recording its matches and its subdirectories in getdents order; then it walks the
 * subdirectories, alone until what is left looks worth a second thread
 * (HIDE_SHARE_MIN_ENTRIES), then with it, each thread taking the next one not taken and
 * recording its matches apart; then the calling thread hides everything recorded, in the
 * serial walk's order (the top level, each subdirectory's matches in place of its name).
 * hide_one stays on one thread and in that order: it dedups, makes the list of hard links and
 * follows symlinks, and the mounts are made in the list's order. The result is walk_serial's
 * (tests/unit/test_hide.c compares them). Nothing is hidden before the replay, so a shared
 * walk can be dropped whole: when it reaches the entry bound (which entries come before it
 * would depend on the threads' timing) or its records would be too big (HIDE_SHARE_MAX_TOP,
 * HIDE_SHARE_MAX_BYTES), the pass is walked again on the calling thread alone: such a workdir
 * pays for two walks of the pass, within the same bounds.
 */
static int walk_shared_pass(struct walker *t0, int fd, bool force, unsigned *ret_threads)
{
	struct rec top = { 0 };
	struct share q = { .top_fd = fd };
	struct worker k = { 0 };
	char rel[PATH_MAX] = "";
	bool two = false;
	pthread_t th;
	int r;

	*ret_threads = 1;
	t0->rec = &top;
	t0->defer = true;
	r = walk_fd(t0, fd, rel, 0, 0);
	t0->defer = false;
	if (r == 0 && !t0->stop && top.nsub > 0) {
		q.dirs = calloc(top.nsub, sizeof(*q.dirs));
		if (!q.dirs)
			r = cordon_err(t0->e, ENOMEM, "out of memory");
		for (size_t i = 0; r == 0 && i < top.nsub; i++)
			if (rec_is_dir(&top.sub[i]))
				q.dirs[q.ndirs++] = &top.sub[i];
	}
	if (r == 0 && !t0->stop && q.ndirs > 0) {
		size_t at_top = t0->seen;
		bool may = q.ndirs >= 2;

		if (force && may) {
			two = worker_start(&k, &q, t0->w, true, &th) == 0;
			may = false;
			/* Tests: the second thread takes the first directory, however late it starts. */
			for (int i = 0;
			     two && i < 200000 && !__atomic_load_n(&q.next, __ATOMIC_RELAXED) &&
			     !__atomic_load_n(&q.failed, __ATOMIC_RELAXED);
			     i++)
				(void)sched_yield();
		}
		/*
		 * Alone, a subdirectory at a time, until what is left looks worth a second thread
		 * (HIDE_SHARE_MIN_ENTRIES at the pace so far) or cannot be shared any more.
		 */
		while (r == 0 && may && !t0->stop) {
			size_t done, left;

			r = walk_dirs(t0, &q, true);
			if (r <= 0)
				break;
			r = 0;
			done = q.next;
			left = q.ndirs - q.next;
			may = left >= 2;
			if (may && (t0->seen - at_top) / done * left >= HIDE_SHARE_MIN_ENTRIES) {
				two = worker_start(&k, &q, t0->w, false, &th) == 0;
				may = false;
			}
		}
		if (r == 0 && !t0->stop)
			r = walk_dirs(t0, &q, false);
		if (two) {
			worker_join(&k, th);
			if (k.r < 0 && r == 0) {
				*t0->e = k.e;
				r = -1;
			}
			/* The bound reached on either thread: the pass is walked again. */
			t0->stop = t0->stop || k.t.stop;
			t0->truncated = t0->truncated || k.t.truncated;
			t0->seen += k.t.seen;
			if (k.t.dirs > 0)
				*ret_threads = 2;
			walker_free(&k.t);
		}
	}
	t0->rec = NULL;
	for (size_t i = 0; r == 0 && !t0->stop && i < top.nsub; i++) {
		const struct rec *d = &top.sub[i];

		if (!rec_is_dir(d))
			r = keep(t0->w, d->rel, &d->st, d->kind);
		for (size_t j = 0; r == 0 && rec_is_dir(d) && j < d->nsub; j++)
			r = keep(t0->w, d->sub[j].rel, &d->sub[j].st, d->sub[j].kind);
	}
	free(q.dirs);
	rec_free(&top);
	return r;
}

static void walker_restart(struct walker *t)
{
	t->w->taken = 0;
	t->truncated = t->stop = false;
	t->rec_bytes = 0;
	t->credit = t->seen = t->dirs = 0;
}

static int walk_serial(struct walker *t, int fd);

/* A shared pass (walk_shared_pass), or, when it had to be dropped, a serial one. */
static int walk_shared(struct walker *t0, int fd, bool force, unsigned *ret_threads)
{
	int r = walk_shared_pass(t0, fd, force, ret_threads);

	if (r < 0 || !t0->stop)
		return r;
	walker_restart(t0);
	*ret_threads = 1;
	if (lseek(fd, 0, SEEK_SET) < 0)
		return cordon_err(t0->e, errno, "hide: rewind the workdir");
	return walk_serial(t0, fd);
}

/* The walk on the calling thread alone: each match hidden as it is found. */
static int walk_serial(struct walker *t, int fd)
{
	char rel[PATH_MAX] = "";

	return walk_fd(t, fd, rel, 0, 0);
}

/* One pass of the walk over the whole workdir (threads: hide_scan_threads). */
static int walk_root(struct walker *t, int threads, unsigned *ret_threads)
{
	_cleanup_close_ int fd = openat(t->w->wd_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	*ret_threads = 1;
	if (fd < 0)
		return cordon_err(t->e, errno, "hide: open workdir");
	walker_restart(t);
	if (threads != 1)
		return walk_shared(t, fd, threads == 2, ret_threads);
	return walk_serial(t, fd);
}

/* A literal mask entry: looked up directly, without symlinks on the way. */
static int mask_literal(struct walk *w, const char *entry)
{
	_cleanup_close_ int fd = -1;
	struct open_how how = {
		.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	char rel[PATH_MAX];
	struct stat st;

	if (!mask_norm(entry, rel, sizeof(rel)))
		return 0;
	if (pin_parents(w, rel) < 0)
		return -1;
	/* A few tries: a concurrent run may be removing its placeholder at this very name. */
	for (int tries = 0;; tries++) {
		int r;

		closep(&fd);
		fd = (int)syscall(SYS_openat2, w->wd_fd, rel, &how, sizeof(how));
		if (fd < 0) {
			/* A symlink on the way: hide where it leads, if that is inside the workdir. */
			if (errno == ELOOP)
				return add_symlink_target(w, rel);
			if (errno == ENOENT && w->placeholders) {
				r = placeholder(w, rel);
				if (r != 0 || tries >= 200 ||
				    faccessat(w->wd_fd, rel, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
					return r < 0 ? -1 : 0;
				continue; /* made meanwhile by a concurrent run: take that one */
			}
			if (lookup_short(errno))
				return cordon_err(w->e, errno, "mask '%s'", rel);
			return 0; /* absent, or outside the workdir: nothing to hide */
		}
		if (fstat(fd, &st) < 0)
			return 0;
		r = w->placeholders ? adopt(w, rel, &st) : 0;
		if (r == -1)
			return -1;
		if (r == -2 && tries < 200) {
			(void)usleep(1000);
			continue;
		}
		/*
		 * A placeholder is masked by its name alone: its other names are placeholders
		 * too (all empty), not the hard links to a secret that hide_one looks for.
		 */
		if (r == 1)
			return add(w->out, rel, &st, w->e);
		return hide_one(w, rel, &st);
	}
}

/* One pass of the walk, its bounds and its threads added to the list's. */
static int walk_pass(struct walker *t, int threads)
{
	struct sb_hide_list *out = t->w->out;
	unsigned used;
	int r = walk_root(t, threads, &used);

	/* What the serial walk counts: it stops at the first entry past the bound. */
	out->visited = t->stop ? max_entries() + 1 : t->seen;
	out->truncated = out->truncated || t->truncated;
	out->threads = out->threads > used ? out->threads : used;
	return r;
}

int hide_scan_threads(int wd_fd, const char *workdir, const struct cordon_profile *p,
		      unsigned flags, int threads, struct sb_hide_list *ret, cordon_error *e)
{
	struct sb_hide_list out = { 0 };
	bool need_walk = hide_walks(p);
	struct walk w = { .p = p,
			  .wd_fd = wd_fd,
			  .workdir = workdir,
			  .out = &out,
			  .e = e,
			  .placeholders = flags & HIDE_PLACEHOLDERS,
			  .setid = need_walk && (flags & HIDE_SETID) };
	struct walker t0 = { 0 };
	int r = 0;

	for (size_t i = 0; i < p->mask.n && r == 0; i++)
		if (!has_glob(p->mask.v[i]))
			r = mask_literal(&w, p->mask.v[i]);
	if (r == 0 && need_walk)
		r = compile_patterns(&w);
	if (r == 0 && (need_walk || w.nlinks > 0))
		r = walker_init(&t0, &w, e);
	if (r == 0 && need_walk)
		r = walk_pass(&t0, threads);
	if (r == 0 && w.nlinks > 0) {
		sort_links(&w);
		w.link_pass = true;
		r = walk_pass(&t0, threads);
	}
	/* No walk to find them in: setid_scan's own. */
	if (r == 0 && (flags & HIDE_SETID) && !w.setid)
		r = setid_scan(wd_fd, &out, e);
	if (r == 0)
		r = dedup_list(&out, e);
	if (r == 0)
		r = pin_hidden_parents(&w);
	/* Each placeholder inode's fd (and the run's lock on it) to its first name's entry. */
	for (size_t i = 0; i < w.ntmpfiles; i++) {
		struct stat st = { .st_dev = w.tmpfiles[i].dev, .st_ino = w.tmpfiles[i].ino };
		struct sb_placeholder *ph = (struct sb_placeholder *)ph_find(&out, &st);

		if (ph && ph->fd < 0)
			ph->fd = TAKE_FD(w.tmpfiles[i].fd);
		closep(&w.tmpfiles[i].fd);
	}
	free(w.links);
	pyglobset_free(w.rel_globs);
	pyglobset_free(w.name_globs);
	free(w.lits);
	for (size_t i = 0; i < w.nnormed; i++)
		free(w.normed[i]);
	free(w.normed);
	walker_free(&t0);
	if (r < 0) {
		hide_placeholders_remove(wd_fd, out.ph, out.nph);
		out.ph = NULL;
		out.nph = 0;
		hide_list_free(&out);
		return -1;
	}
	*ret = out;
	return 0;
}

int hide_scan(int wd_fd, const char *workdir, const struct cordon_profile *p, unsigned flags,
	      struct sb_hide_list *ret, cordon_error *e)
{
	if (hide_scan_threads(wd_fd, workdir, p, flags, 0, ret, e) < 0)
		return -1;
	if (!ret->truncated)
		return 0;
	/*
	 * Fail closed: past a bound, a name to hide would be left visible, and the command
	 * itself can put a workdir past them (a million empty files, a deep chain).
	 */
	hide_placeholders_remove(wd_fd, ret->ph, ret->nph);
	ret->ph = NULL;
	ret->nph = 0;
	hide_list_free(ret);
	if (flags & HIDE_SETID)
		return cordon_err(e, 0,
				  "the workdir is too big to search for the names to hide and for "
				  "the setuid, setgid and file-capability programs the command "
				  "would own (more than %d entries, or %d directory levels): "
				  "refused rather than run with one of them visible or writable; "
				  "give the workdir to another user, or run with --readonly",
				  HIDE_MAX_ENTRIES, HIDE_MAX_DEPTH);
	return cordon_err(e, 0,
			  "the workdir is too big to search for the names to hide "
			  "(more than %d entries, or %d directory levels): refused rather than "
			  "run with some of them visible; ignore its big directories whole",
			  HIDE_MAX_ENTRIES, HIDE_MAX_DEPTH);
}
