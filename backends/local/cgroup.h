/* SPDX-License-Identifier: MIT */
/*
 * One cgroup per run: memory, pids, CPU accounting, peak memory, OOM detection, and a reliable
 * kill of every process. cgroup v2 where its controllers are delegated; the v1 memory, pids and
 * cpuacct controllers on hybrid hosts. Created and removed by cordon; never left behind.
 */
#pragma once

#include <cordon/cordon.h>
#include <sys/types.h>

struct local_usage;
struct cgroup_run;

enum cgroup_mode { CGROUP_NONE = 0, CGROUP_V1, CGROUP_V2 };

/* Which mode this host offers to this process, with a reason when NONE. */
enum cgroup_mode cgroup_detect(char *reason, size_t n);
/*
 * From now on, keep the host's cgroup layout between runs (a long-lived process: cordond), and
 * read it again only when using it fails.
 */
void cgroup_cache_plans(void);
/* cordon_claim_cgroup_delegation (cordon.h): 1 moved, 0 nothing to do, -1 with *e. */
int cgroup_claim_delegation(cordon_error *e);
/* Create the run's cgroup(s) with the profile's limits. *ret is NULL (and 0 returned) when the
 * host has no usable cgroup and the profile does not require one. */
int cgroup_run_create(const struct cordon_profile *p, struct cgroup_run **ret, cordon_error *e);
/*
 * pid, a process that made runs, is dead (a zombie still, or reaped by the caller just now):
 * remove the empty run directories it left behind (a staged cgroup, a run it could not tear
 * down). Returns how many are not empty yet (a run whose processes are still dying), or -1
 * (errno) when they could not all be looked at (no fd left, say): try again later. Without
 * this they go once they are a minute old (see cg_reap).
 */
int cgroup_reap_dead(pid_t pid);
/*
 * pid > 0: as cgroup_reap_dead. pid 0: the run directories of every dead creator, empty and
 * at least min_age seconds old. Returns how many of those looked at are not empty yet, or -1.
 */
int cgroup_reap_stale(pid_t pid, unsigned min_age);
void cgroup_remove_parents(void);
/*
 * Ahead of a run (stage.c): the run's cgroup(s) without limits yet; *ret NULL when the host has
 * none. cgroup_run_adopt() then gives it the run's limits, after checking it is still there;
 * on failure the caller destroys it.
 */
int cgroup_run_stage(struct cgroup_run **ret, cordon_error *e);
int cgroup_run_adopt(struct cgroup_run *cg, const struct cordon_profile *p, cordon_error *e);
/* v2: a directory fd usable with clone3(CLONE_INTO_CGROUP); -1 otherwise. */
int cgroup_run_dirfd(const struct cgroup_run *cg);
/* Move pid into the run's cgroup(s) (v1, or v2 without CLONE_INTO_CGROUP). */
int cgroup_run_attach(struct cgroup_run *cg, pid_t pid, cordon_error *e);
/*
 * v1: the `tasks` file of each of the run's hierarchies, opened for writing, in the order
 * the run's processes must join them (memory and pids first), for a single-threaded process
 * that moves itself: writing "0" (the caller) to `tasks` moves one thread without the
 * global lock a move by pid takes, which waits for an RCU grace period (up to 20 ms seen on
 * an idle host). Returns how many fds it stored in fds[0..max) (the caller closes them); 0
 * when the run's cgroup is v2 (use cgroup_run_attach), -1 with *e on an error.
 */
#define CGROUP_MAX_DIRS 8
int cgroup_run_task_fds(const struct cgroup_run *cg, int *fds, size_t max, cordon_error *e);
/* Kill every process in the cgroup (cgroup.kill, or a freeze+kill loop on v1). */
void cgroup_run_kill(struct cgroup_run *cg);
/* Peak memory, CPU time and OOM kill of the run. */
int cgroup_run_usage(struct cgroup_run *cg, struct local_usage *u, cordon_error *e);
/* Kill what is left and remove the directories. NULL-safe. */
void cgroup_run_destroy(struct cgroup_run *cg);

/* The mode of this run's cgroup (CGROUP_NONE for NULL). */
enum cgroup_mode cgroup_run_mode(const struct cgroup_run *cg);
/* The i-th directory of the run (v2: one; v1: one per hierarchy), NULL past the end. */
const char *cgroup_run_path(const struct cgroup_run *cg, size_t i);
/*
 * v2 at an explicit place: create <base>/cordon/<run>, switching memory and pids on in base's
 * subtree_control first when enable_base. Controllers base does not offer are left off (a
 * memory or pids limit then fails). cgroup_run_create() calls it with the detected base; tests
 * and `cordon doctor` use it on hosts whose v2 tree has no controllers.
 */
int cgroup_run_create_v2_at(const struct cordon_profile *p, const char *base, bool enable_base,
			    struct cgroup_run **ret, cordon_error *e);
