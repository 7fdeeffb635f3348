/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * File: plugin/ctld_holds.c
 *
 * The holds of switch/lua in slurmctld (Slurm 24.11): per job, whether we
 * hold the job and which nodes we hold, the hold and release actions, and
 * the service thread that runs the job-hold releases and re-asserts the
 * node holds.
 *
 *   job hold       prep_epilog_cnt + epilog_running, as an asynchronous
 *                  EpilogSlurmctld does; released with
 *                  prep_epilog_slurmctld_callback(), which takes its own
 *                  locks and therefore runs in our service thread.
 *   node hold      comp_job_cnt, NODE_STATE_COMPLETING, the cg_node_bitmap
 *                  bit and a clear idle_node_bitmap bit, as expedited
 *                  requeue does; released with comp_job_cnt-- and
 *                  make_node_idle(node, NULL).  The service thread
 *                  re-asserts the flag and bits every few seconds, since a
 *                  restart or a DOWN/reboot can set the idle bit again.
 *
 * Locking: Slurm's locks always come first; hold_mutex and svc_mutex are
 * leaves taken under them (or alone) and never held while taking a Slurm
 * lock.
 */

#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"

#include "src/common/slurm_xlator.h"

#include "src/common/bitstring.h"
#include "src/common/hostlist.h"
#include "src/common/log.h"
#include "src/common/macros.h"
#include "src/common/node_conf.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"

#include "switch_lua_glue.h"
#include "ctld_internal.h"
#include "mono_wait.h"

/* Seconds between two re-assertions of the held nodes' flag and bits. */
#define REASSERT_PERIOD_SEC 5

/* What _reassert_holds() takes. */
static const slurmctld_lock_t node_write_lock = {
	.node = WRITE_LOCK,
};

/* ---------------------------------------------------------------------- */
/* Holds: per job, whether we hold the job, and which nodes we hold.      */
/* ---------------------------------------------------------------------- */

typedef struct held_job {
	struct held_job *next;
	uint32_t job_id;
	bool job_held; /* our prep_epilog_cnt++ is outstanding */
	char **nodes;  /* names of the nodes we added to comp_job_cnt */
	uint32_t node_cnt;
} held_job_t;

static pthread_mutex_t hold_mutex = PTHREAD_MUTEX_INITIALIZER;
static held_job_t *held_jobs = NULL;

static held_job_t *_held_find(uint32_t job_id, bool create)
{
	held_job_t *rec;

	for (rec = held_jobs; rec; rec = rec->next)
		if (rec->job_id == job_id)
			return rec;
	if (!create)
		return NULL;
	rec = xmalloc(sizeof(*rec));
	rec->job_id = job_id;
	rec->next = held_jobs;
	held_jobs = rec;
	return rec;
}

static void _held_remove(held_job_t *rec)
{
	held_job_t **pp;

	for (pp = &held_jobs; *pp; pp = &(*pp)->next) {
		if (*pp == rec) {
			*pp = rec->next;
			break;
		}
	}
	for (uint32_t i = 0; i < rec->node_cnt; i++)
		xfree(rec->nodes[i]);
	xfree(rec->nodes);
	xfree(rec);
}

static bool _held_has_node(held_job_t *rec, const char *name)
{
	for (uint32_t i = 0; i < rec->node_cnt; i++)
		if (!xstrcmp(rec->nodes[i], name))
			return true;
	return false;
}

static bool _node_unavail(node_record_t *node_ptr)
{
	/* The conditions under which make_node_comp() sets no COMPLETING. */
	return IS_NODE_DOWN(node_ptr) || IS_NODE_POWERED_DOWN(node_ptr) ||
	       IS_NODE_POWERING_UP(node_ptr);
}

static bool _bit_ok(bitstr_t *b, node_record_t *node_ptr)
{
	return b && ((bitoff_t) node_ptr->index < bit_size(b));
}

/* Make the node look COMPLETING to the scheduler.  Node W held.
 * RET true if anything changed. */
static bool _assert_node_hold(node_record_t *node_ptr)
{
	bool changed = false;

	if (_node_unavail(node_ptr))
		return false;
	if (!IS_NODE_COMPLETING(node_ptr)) {
		node_ptr->node_state |= NODE_STATE_COMPLETING;
		changed = true;
	}
	if (_bit_ok(cg_node_bitmap, node_ptr) &&
	    !bit_test(cg_node_bitmap, node_ptr->index)) {
		bit_set(cg_node_bitmap, node_ptr->index);
		changed = true;
	}
	/* Exclusive jobs in 24.11 look only at idle_node_bitmap. */
	if (_bit_ok(idle_node_bitmap, node_ptr) &&
	    bit_test(idle_node_bitmap, node_ptr->index)) {
		bit_clear(idle_node_bitmap, node_ptr->index);
		changed = true;
	}
	return changed;
}

static void _hold_node(node_record_t *node_ptr)
{
	/* Counted even on a DOWN node (as Slurm keeps comp_job_cnt there):
	 * re-registration then restores COMPLETING from the count. */
	node_ptr->comp_job_cnt++;
	(void) _assert_node_hold(node_ptr);
}

static void _release_node(uint32_t job_id, node_record_t *node_ptr)
{
	if (node_ptr->comp_job_cnt)
		node_ptr->comp_job_cnt--;
	else
		sl_job_error(job_id,
			     ": node %s comp_job_cnt already 0 on release",
			     node_ptr->name);
	make_node_idle(node_ptr, NULL);
}

/* ---------------------------------------------------------------------- */
/* Service thread: job-hold releases and the periodic node re-assertion.  */
/* ---------------------------------------------------------------------- */

static pthread_mutex_t svc_mutex = PTHREAD_MUTEX_INITIALIZER;
/* Made by sl_mono_cond_init() in ctld_svc_start(): its timed waits measure
 * CLOCK_MONOTONIC, so a step of the wall clock does not stop the thread. */
static pthread_cond_t svc_cond;
static uint32_t *epilog_queue = NULL;
static size_t epilog_queue_cnt = 0, epilog_queue_cap = 0;
static bool svc_stop = false;
static bool svc_started = false;
static pthread_t svc_thread;

/* Called with Slurm's locks held: prep_epilog_slurmctld_callback() takes
 * job W + node W itself, so it runs later, from the service thread. */
static void _queue_job_release(uint32_t job_id)
{
	slurm_mutex_lock(&svc_mutex);
	if (epilog_queue_cnt == epilog_queue_cap) {
		epilog_queue_cap = epilog_queue_cap ? 2 * epilog_queue_cap : 16;
		xrecalloc(epilog_queue, epilog_queue_cap,
			  sizeof(*epilog_queue));
	}
	epilog_queue[epilog_queue_cnt++] = job_id;
	slurm_cond_signal(&svc_cond);
	slurm_mutex_unlock(&svc_mutex);
}

static void _reassert_holds(void)
{
	held_job_t *rec;
	node_record_t *node_ptr;
	bool any;
	int changed = 0;

	slurm_mutex_lock(&hold_mutex);
	any = (held_jobs != NULL);
	slurm_mutex_unlock(&hold_mutex);
	if (!any)
		return;

	lock_slurmctld(node_write_lock);
	slurm_mutex_lock(&hold_mutex);
	for (rec = held_jobs; rec; rec = rec->next) {
		for (uint32_t i = 0; i < rec->node_cnt; i++) {
			if (!(node_ptr = find_node_record(rec->nodes[i])))
				continue;
			if (_assert_node_hold(node_ptr)) {
				changed++;
				sl_job_verbose(
					rec->job_id,
					": node %s was schedulable again while held, hold re-asserted",
					node_ptr->name);
			}
		}
	}
	slurm_mutex_unlock(&hold_mutex);
	if (changed)
		last_node_update = time(NULL);
	unlock_slurmctld(node_write_lock);
}

static void *_svc_main(void *arg)
{
	struct timespec deadline = {0};
	uint32_t *jobs = NULL;
	size_t cnt;

	sl_mono_deadline(&deadline, REASSERT_PERIOD_SEC);

	slurm_mutex_lock(&svc_mutex);
	while (!svc_stop) {
		/* Once slurmctld stops (25.05 and later), the releases wait:
		 * they would call into its accounting storage, closed from then
		 * on; they run after a failed reconfigure's resume, else never. */
		bool stopping = ctld_slurmctld_stopping();

		if (epilog_queue_cnt && !stopping) {
			jobs = epilog_queue;
			cnt = epilog_queue_cnt;
			epilog_queue = NULL;
			epilog_queue_cnt = epilog_queue_cap = 0;
			slurm_mutex_unlock(&svc_mutex);
			for (size_t i = 0; i < cnt; i++) {
				sl_job_debug(jobs[i],
					     ": releasing the job hold");
				prep_epilog_slurmctld_callback(SLURM_SUCCESS,
							       jobs[i], false);
			}
			xfree(jobs);
			slurm_mutex_lock(&svc_mutex);
			continue;
		}
		if (sl_mono_timedwait(&svc_cond, &svc_mutex, &deadline) ==
		    ETIMEDOUT) {
			slurm_mutex_unlock(&svc_mutex);
			if (!stopping)
				_reassert_holds();
			sl_mono_deadline(&deadline, REASSERT_PERIOD_SEC);
			slurm_mutex_lock(&svc_mutex);
		}
	}
	slurm_mutex_unlock(&svc_mutex);
	return NULL;
}

/* From init.  RET 0 or the errno of sl_mono_cond_init() or
 * pthread_create(). */
extern int ctld_svc_start(void)
{
	int rc;

	svc_stop = false;
	if ((rc = sl_mono_cond_init(&svc_cond)))
		return rc;
	if ((rc = pthread_create(&svc_thread, NULL, _svc_main, NULL))) {
		pthread_cond_destroy(&svc_cond);
		return rc;
	}
	svc_started = true;
	return 0;
}

/* From fini: Slurm dlclose()s the plugin after fini(), so the thread must
 * be gone. */
extern void ctld_svc_stop(void)
{
	if (svc_started) {
		slurm_mutex_lock(&svc_mutex);
		svc_stop = true;
		slurm_cond_signal(&svc_cond);
		slurm_mutex_unlock(&svc_mutex);
		pthread_join(svc_thread, NULL);
		pthread_cond_destroy(&svc_cond);
		svc_started = false;
	}
}

extern void ctld_holds_reset(void)
{
	uint32_t jobs = 0;

	slurm_mutex_lock(&hold_mutex);
	while (held_jobs) {
		_held_remove(held_jobs);
		jobs++;
	}
	slurm_mutex_unlock(&hold_mutex);
	slurm_mutex_lock(&svc_mutex);
	epilog_queue_cnt = 0;
	slurm_mutex_unlock(&svc_mutex);
	if (jobs)
		sl_info("restore: the holds of %u job(s) from an earlier period in control dropped (their records are gone)",
			jobs);
}

/* From fini, after the core has stopped and the thread is gone. */
extern void ctld_svc_clear_queue(void)
{
	xfree(epilog_queue);
	epilog_queue_cnt = epilog_queue_cap = 0;
}

/* ---------------------------------------------------------------------- */
/* The hold actions (slc_ctld_ops_t).  Slurm's conf R, job W, node W,     */
/* fed R locks are held by the caller.                                    */
/* ---------------------------------------------------------------------- */

extern void ctld_op_hold(uint32_t job_id, const char *nodes, bool hold_nodes)
{
	job_record_t *job_ptr = find_job_record(job_id);
	node_record_t *node_ptr;
	held_job_t *rec;
	hostlist_t *hl = NULL;
	char *name;
	uint32_t added = 0;
	bool job_now = false;

	slurm_mutex_lock(&hold_mutex);
	rec = _held_find(job_id, true);
	if (!rec->job_held) {
		if (job_ptr) {
			job_ptr->prep_epilog_cnt++;
			job_ptr->epilog_running = true;
			rec->job_held = job_now = true;
		} else {
			sl_job_error(job_id,
				     ": cannot hold the job, it is gone");
		}
	}
	if (hold_nodes && nodes && nodes[0] && !(hl = hostlist_create(nodes)))
		sl_job_error(job_id, ": cannot parse node list %s", nodes);
	while (hl && (name = hostlist_shift(hl))) {
		if (_held_has_node(rec, name)) {
			free(name);
			continue;
		}
		if (!(node_ptr = find_node_record(name))) {
			sl_job_error(job_id, ": cannot hold unknown node %s",
				     name);
			free(name);
			continue;
		}
		_hold_node(node_ptr);
		xrecalloc(rec->nodes, rec->node_cnt + 1, sizeof(char *));
		rec->nodes[rec->node_cnt++] = xstrdup(name);
		added++;
		free(name);
	}
	FREE_NULL_HOSTLIST(hl);
	if (!rec->job_held && !rec->node_cnt)
		_held_remove(rec);
	slurm_mutex_unlock(&hold_mutex);

	if (added)
		last_node_update = time(NULL);
	if (job_now || added)
		sl_job_verbose(job_id, ": holding%s%s%s%s",
			       job_now ? " the job" : "",
			       (job_now && added) ? " and" : "",
			       added ? " nodes " : "", added ? nodes : "");
}

extern void ctld_op_release(uint32_t job_id, const char *nodes,
			    bool release_nodes)
{
	node_record_t *node_ptr;
	held_job_t *rec;
	bool job_held;
	uint32_t released = 0;

	slurm_mutex_lock(&hold_mutex);
	if (!(rec = _held_find(job_id, false))) {
		slurm_mutex_unlock(&hold_mutex);
		sl_job_debug(job_id, ": release: nothing held");
		return;
	}
	/* All nodes we hold for the job go back: a node hold must never
	 * outlive its record, or nothing would ever undo it. */
	if (!release_nodes && rec->node_cnt)
		sl_job_debug(job_id,
			     ": releasing %u held nodes along with the job",
			     rec->node_cnt);
	for (uint32_t i = 0; i < rec->node_cnt; i++) {
		if (!(node_ptr = find_node_record(rec->nodes[i]))) {
			sl_job_error(job_id, ": held node %s no longer exists",
				     rec->nodes[i]);
			continue;
		}
		_release_node(job_id, node_ptr);
		released++;
	}
	job_held = rec->job_held;
	_held_remove(rec);
	slurm_mutex_unlock(&hold_mutex);

	if (job_held)
		_queue_job_release(job_id);
	if (released) {
		last_node_update = time(NULL);
		queue_job_scheduler();
	}
	sl_job_verbose(job_id, ": released%s%s%s", job_held ? " the job" : "",
		       (job_held && released) ? " and" : "",
		       released ? " its nodes" : "");
}
