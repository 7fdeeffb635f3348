/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * File: plugin/slurm_ctld.c
 *
 * The slurmctld half of switch/lua for Slurm 24.11: switch_p_job_start,
 * switch_p_job_complete, switch_p_restore, switch_p_save, and the actions
 * the core asks of slurmctld (slc_ctld_ops_t).  Every decision is the
 * core's; this file only knows how to make Slurm do it.
 *
 * Mechanisms (see the 24.11 source notes):
 *   launch delay   details->prolog_running + JOB_CONFIGURING, as
 *                  PrologSlurmctld does; undone with prolog_running_decr().
 *   failed setup   job_requeue(0, id, NULL, false, 0), else SIGKILL, with
 *                  state_reason FAIL_LAUNCH and state_desc set first.
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
 *   restart        switch_p_restore() starts a thread that waits for the
 *                  startup locks and re-arms the jobs the core re-runs;
 *                  a job whose launch the core's journal says was released
 *                  before the crash gets job_config_fini() (CONFIGURING
 *                  ended) without launch_job(), so job_time_limit() does
 *                  not launch its batch script a second time; then the
 *                  core tears down the journal's orphaned attempts.
 *
 * Locking: Slurm's locks always come first; hold_mutex, armed_mutex and
 * svc_mutex are leaves taken under them (or alone) and never held while
 * taking a Slurm lock.
 */

#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"

#include "src/common/slurm_xlator.h"

#include "src/common/bitstring.h"
#include "src/common/hostlist.h"
#include "src/common/id_util.h"
#include "src/common/list.h"
#include "src/common/log.h"
#include "src/common/macros.h"
#include "src/common/node_conf.h"
#include "src/common/read_config.h"
#include "src/common/sluid.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/interfaces/switch.h"
#include "src/slurmctld/job_scheduler.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"
#include "src/slurmctld/state_save.h"
#include "src/stepmgr/srun_comm.h"

#include "switch_lua_core.h"
#include "switch_lua_glue.h"

#ifndef SWITCHLUA_LIBEXECDIR
#error "SWITCHLUA_LIBEXECDIR (folder of switch-lua-supervisor) must be defined by the build"
#endif

/*
 * slurmctld's globals, declared weak: the plugin is also loaded by
 * slurmd, slurmstepd and srun, where they do not exist.  Data references
 * are bound when the plugin is loaded (functions only when first called),
 * so a strong reference would make every other process refuse the plugin.
 * The code below only runs in slurmctld, where they resolve.
 */
extern list_t *job_list __attribute__((weak));
extern bitstr_t *idle_node_bitmap __attribute__((weak));
extern bitstr_t *cg_node_bitmap __attribute__((weak));
extern time_t last_node_update __attribute__((weak));

/* Seconds between two re-assertions of the held nodes' flag and bits. */
#define REASSERT_PERIOD_SEC 5

/* What every worker of ours takes: what prep_prolog_slurmctld_callback()
 * and _start_prolog_slurmctld_thread() take. */
static const slurmctld_lock_t job_node_write_lock = {
	.conf = READ_LOCK,
	.job = WRITE_LOCK,
	.node = WRITE_LOCK,
	.fed = READ_LOCK,
};
static const slurmctld_lock_t node_write_lock = {
	.node = WRITE_LOCK,
};

static bool ctld_active = false;

/* ---------------------------------------------------------------------- */
/* Our outstanding prolog_running increments, per job.                    */
/* ---------------------------------------------------------------------- */

/*
 * prolog_running is shared with PrologSlurmctld, zeroed by a restart, and
 * left alone by a failed reconfigure (which calls switch_p_restore again
 * in the same process).  Counting our own increments lets end_configuring
 * decrement exactly what we added, once, and lets a repeated restore skip
 * jobs that are still armed.
 */
typedef struct {
	uint32_t job_id;
	uint32_t count;
} armed_t;

static pthread_mutex_t armed_mutex = PTHREAD_MUTEX_INITIALIZER;
static armed_t *armed = NULL;
static size_t armed_cnt = 0, armed_cap = 0;

static armed_t *_armed_find(uint32_t job_id)
{
	for (size_t i = 0; i < armed_cnt; i++)
		if (armed[i].job_id == job_id)
			return &armed[i];
	return NULL;
}

static void _armed_add(uint32_t job_id)
{
	armed_t *a;

	slurm_mutex_lock(&armed_mutex);
	if (!(a = _armed_find(job_id))) {
		if (armed_cnt == armed_cap) {
			armed_cap = armed_cap ? 2 * armed_cap : 16;
			xrecalloc(armed, armed_cap, sizeof(*armed));
		}
		a = &armed[armed_cnt++];
		a->job_id = job_id;
		a->count = 0;
	}
	a->count++;
	slurm_mutex_unlock(&armed_mutex);
}

/* RET true when one increment of ours was outstanding (now taken). */
static bool _armed_take(uint32_t job_id)
{
	armed_t *a;
	bool found = false;

	slurm_mutex_lock(&armed_mutex);
	if ((a = _armed_find(job_id)) && a->count) {
		found = true;
		if (!--a->count)
			*a = armed[--armed_cnt];
	}
	slurm_mutex_unlock(&armed_mutex);
	return found;
}

static bool _armed_has(uint32_t job_id)
{
	bool found;

	slurm_mutex_lock(&armed_mutex);
	found = (_armed_find(job_id) != NULL);
	slurm_mutex_unlock(&armed_mutex);
	return found;
}

/* Add one launch delay of ours to the job (job W held). */
static void _delay_launch(job_record_t *job_ptr)
{
	if (!job_ptr->details) {
		sl_error("JobId=%u: job has no details, its launch cannot be delayed",
			 job_ptr->job_id);
		return;
	}
	job_ptr->details->prolog_running++;
	_armed_add(job_ptr->job_id);
	if (IS_JOB_RUNNING(job_ptr))
		job_state_set_flag(job_ptr, JOB_CONFIGURING);
}

/* ---------------------------------------------------------------------- */
/* Holds: per job, whether we hold the job, and which nodes we hold.      */
/* ---------------------------------------------------------------------- */

typedef struct held_job {
	struct held_job *next;
	uint32_t job_id;
	bool job_held;   /* our prep_epilog_cnt++ is outstanding */
	char **nodes;    /* names of the nodes we added to comp_job_cnt */
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
		sl_error("JobId=%u: node %s comp_job_cnt already 0 on release",
			 job_id, node_ptr->name);
	make_node_idle(node_ptr, NULL);
}

/* ---------------------------------------------------------------------- */
/* Service thread: job-hold releases and the periodic node re-assertion.  */
/* ---------------------------------------------------------------------- */

static pthread_mutex_t svc_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t svc_cond = PTHREAD_COND_INITIALIZER;
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
				sl_verbose("JobId=%u: node %s was schedulable again while held, hold re-asserted",
					   rec->job_id, node_ptr->name);
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
	struct timespec deadline = { 0 };
	uint32_t *jobs = NULL;
	size_t cnt;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += REASSERT_PERIOD_SEC;

	slurm_mutex_lock(&svc_mutex);
	while (!svc_stop) {
		if (epilog_queue_cnt) {
			jobs = epilog_queue;
			cnt = epilog_queue_cnt;
			epilog_queue = NULL;
			epilog_queue_cnt = epilog_queue_cap = 0;
			slurm_mutex_unlock(&svc_mutex);
			for (size_t i = 0; i < cnt; i++) {
				sl_debug("JobId=%u: releasing the job hold",
					 jobs[i]);
				prep_epilog_slurmctld_callback(SLURM_SUCCESS,
							       jobs[i], false);
			}
			xfree(jobs);
			slurm_mutex_lock(&svc_mutex);
			continue;
		}
		if (pthread_cond_timedwait(&svc_cond, &svc_mutex, &deadline) ==
		    ETIMEDOUT) {
			slurm_mutex_unlock(&svc_mutex);
			_reassert_holds();
			clock_gettime(CLOCK_REALTIME, &deadline);
			deadline.tv_sec += REASSERT_PERIOD_SEC;
			slurm_mutex_lock(&svc_mutex);
		}
	}
	slurm_mutex_unlock(&svc_mutex);
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* The actions (slc_ctld_ops_t).  Slurm's conf R, job W, node W, fed R    */
/* locks are held by the caller in every one of them but lock().          */
/* ---------------------------------------------------------------------- */

static void _op_lock(void)
{
	lock_slurmctld(job_node_write_lock);
}

static void _op_unlock(void)
{
	unlock_slurmctld(job_node_write_lock);
}

static void _op_end_configuring(uint32_t job_id)
{
	job_record_t *job_ptr = find_job_record(job_id);

	if (!_armed_take(job_id)) {
		sl_debug("JobId=%u: setup over, no launch delay of ours outstanding",
			 job_id);
		return;
	}
	if (!job_ptr) {
		sl_debug("JobId=%u: setup over, the job is gone", job_id);
		return;
	}
	if (job_ptr->details && job_ptr->details->prolog_running) {
		sl_debug("JobId=%u: setup over, ending the launch delay",
			 job_id);
		prolog_running_decr(job_ptr);
	} else {
		sl_debug("JobId=%u: setup over, prolog_running already 0",
			 job_id);
	}
}

static void _set_reason(job_record_t *job_ptr, const char *reason)
{
	job_ptr->state_reason = FAIL_LAUNCH;
	xfree(job_ptr->state_desc);
	job_ptr->state_desc = xstrdup(reason ? reason : "switch setup failed");
}

/* As prep_prolog_slurmctld_callback() does after a refused requeue. */
static void _kill_job(job_record_t *job_ptr, const char *reason)
{
	char *msg = xstrdup(reason ? reason : "switch setup failed");
	job_record_t *leader;
	int rc;

	_set_reason(job_ptr, reason);
	(void) srun_user_message(job_ptr, msg);
	if (job_ptr->het_job_id) {
		leader = job_ptr->het_job_list ?
				 job_ptr :
				 find_job_record(job_ptr->het_job_id);
		if (!leader) {
			sl_error("JobId=%u: no hetjob leader JobId=%u to cancel",
				 job_ptr->job_id, job_ptr->het_job_id);
			xfree(msg);
			return;
		}
		rc = het_job_signal(leader, SIGKILL, 0, 0, false);
	} else {
		rc = job_signal(job_ptr, SIGKILL, 0, 0, false);
	}
	if (rc)
		sl_error("JobId=%u: cannot cancel the job: %s",
			 job_ptr->job_id, slurm_strerror(rc));
	else
		sl_info("JobId=%u cancelled: %s", job_ptr->job_id, msg);
	xfree(msg);
}

static void _op_requeue(uint32_t job_id, const char *reason)
{
	job_record_t *job_ptr = find_job_record(job_id);
	uint32_t target;
	int rc;

	if (!job_ptr) {
		sl_info("JobId=%u: not requeued, the job is gone", job_id);
		return;
	}
	_set_reason(job_ptr, reason);
	target = job_ptr->het_job_id ? job_ptr->het_job_id : job_id;
	rc = job_requeue(0, target, NULL, false, 0);
	if (rc == SLURM_SUCCESS) {
		sl_info("JobId=%u requeued: %s", job_id, job_ptr->state_desc);
		return;
	}
	if (rc == ESLURM_JOB_PENDING) {
		sl_info("JobId=%u: not requeued, it is pending already",
			job_id);
		return;
	}
	sl_info("JobId=%u: cannot requeue (%s), cancelling it", job_id,
		slurm_strerror(rc));
	/* job_requeue() may have ended a het job; look it up again. */
	if ((job_ptr = find_job_record(job_id)))
		_kill_job(job_ptr, reason);
}

static void _op_cancel(uint32_t job_id, const char *reason)
{
	job_record_t *job_ptr = find_job_record(job_id);

	if (!job_ptr) {
		sl_info("JobId=%u: not cancelled, the job is gone", job_id);
		return;
	}
	_kill_job(job_ptr, reason);
}

static void _op_hold(uint32_t job_id, const char *nodes, bool hold_nodes)
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
			sl_error("JobId=%u: cannot hold the job, it is gone",
				 job_id);
		}
	}
	if (hold_nodes && nodes && nodes[0] && !(hl = hostlist_create(nodes)))
		sl_error("JobId=%u: cannot parse node list %s", job_id, nodes);
	while (hl && (name = hostlist_shift(hl))) {
		if (_held_has_node(rec, name)) {
			free(name);
			continue;
		}
		if (!(node_ptr = find_node_record(name))) {
			sl_error("JobId=%u: cannot hold unknown node %s",
				 job_id, name);
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
		sl_verbose("JobId=%u: holding%s%s%s%s", job_id,
			   job_now ? " the job" : "",
			   (job_now && added) ? " and" : "",
			   added ? " nodes " : "", added ? nodes : "");
}

static void _op_release(uint32_t job_id, const char *nodes,
			bool release_nodes)
{
	node_record_t *node_ptr;
	held_job_t *rec;
	bool job_held;
	uint32_t released = 0;

	slurm_mutex_lock(&hold_mutex);
	if (!(rec = _held_find(job_id, false))) {
		slurm_mutex_unlock(&hold_mutex);
		sl_debug("JobId=%u: release: nothing held", job_id);
		return;
	}
	/* All nodes we hold for the job go back: a node hold must never
	 * outlive its record, or nothing would ever undo it. */
	if (!release_nodes && rec->node_cnt)
		sl_debug("JobId=%u: releasing %u held nodes along with the job",
			 job_id, rec->node_cnt);
	for (uint32_t i = 0; i < rec->node_cnt; i++) {
		if (!(node_ptr = find_node_record(rec->nodes[i]))) {
			sl_error("JobId=%u: held node %s no longer exists",
				 job_id, rec->nodes[i]);
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
	sl_verbose("JobId=%u: released%s%s%s", job_id,
		   job_held ? " the job" : "",
		   (job_held && released) ? " and" : "",
		   released ? " its nodes" : "");
}

static void _op_drain(const char *nodes, const char *reason)
{
	char *n = xstrdup(nodes);
	char *r = xstrdup(reason ? reason : "switch teardown failed (switch/lua)");
	int rc;

	if (!n || !n[0]) {
		xfree(n);
		xfree(r);
		return;
	}
	rc = drain_nodes(n, r, slurm_conf.slurm_user_id);
	if (rc)
		sl_error("cannot drain %s (%s): %s", n, r, slurm_strerror(rc));
	else
		sl_info("drained %s: %s", n, r);
	xfree(n);
	xfree(r);
}

static void _op_forget(uint32_t job_id)
{
	job_record_t *job_ptr = find_job_record(job_id);

	if (job_ptr)
		job_ptr->switch_jobinfo = NULL;
}

static void _op_save_state(void)
{
	schedule_job_save();
}

static const slc_ctld_ops_t ctld_ops = {
	.lock = _op_lock,
	.unlock = _op_unlock,
	.end_configuring = _op_end_configuring,
	.requeue = _op_requeue,
	.cancel = _op_cancel,
	.hold = _op_hold,
	.release = _op_release,
	.drain = _op_drain,
	.forget = _op_forget,
	.save_state = _op_save_state,
	.log = switchlua_log_line,
};

/* ---------------------------------------------------------------------- */
/* Hooks.                                                                 */
/* ---------------------------------------------------------------------- */

/* Under the scheduler's locks (conf R, job W, node W, part R, fed R), once
 * per allocation, after JOB_RUNNING and allocate_nodes(). */
extern void switch_p_job_start(job_record_t *job_ptr)
{
	slc_job_t job = { 0 };
	hostlist_t *hl = NULL;
	char **names = NULL, *name;
	uint32_t names_cnt = 0;
	char *user_name = NULL, *sluid = NULL;
	void *handle;

	if (!ctld_active)
		return;

	if (job_ptr->switch_jobinfo) {
		/* job_array_split() memcpy()s the meta job, switch_jobinfo
		 * included: the pointer belongs to another record.  Drop it;
		 * freeing it would free that record's state. */
		sl_verbose("JobId=%u: dropping a switch_jobinfo pointer copied from another job record",
			   job_ptr->job_id);
		job_ptr->switch_jobinfo = NULL;
	}

	/* The core manages a job iff it asked for --network. */
	if (!job_ptr->network || !job_ptr->network[0])
		return;

	if (job_ptr->nodes && (hl = hostlist_create(job_ptr->nodes))) {
		names = xcalloc(hostlist_count(hl) + 1, sizeof(char *));
		while ((name = hostlist_shift(hl))) {
			names[names_cnt++] = xstrdup(name);
			free(name);
		}
		FREE_NULL_HOSTLIST(hl);
	}
	user_name = user_from_job(job_ptr);
	if (job_ptr->db_index && (job_ptr->db_index != NO_VAL64))
		sluid = sluid2str(job_ptr->db_index);

	job.job_id = job_ptr->job_id;
	job.user_id = job_ptr->user_id;
	job.group_id = job_ptr->group_id;
	job.num_nodes = job_ptr->node_cnt;
	job.restart_count = job_ptr->restart_cnt;
	job.user_name = user_name;
	job.name = job_ptr->name;
	job.nodes = job_ptr->nodes;
	job.node_names = (const char *const *) names;
	job.node_names_count = names_cnt;
	job.partition = job_ptr->partition;
	job.network = job_ptr->network;
	job.account = job_ptr->account;
	job.sluid = sluid;
	job.batch = (job_ptr->batch_flag != 0);
	job.requeue_allowed = job_ptr->batch_flag && job_ptr->details &&
			      job_ptr->details->requeue;
	job.submit_time = job_ptr->details ?
				  (int64_t) job_ptr->details->submit_time : 0;

	handle = slc_ctld_job_start(&job);

	for (uint32_t i = 0; i < names_cnt; i++)
		xfree(names[i]);
	xfree(names);
	xfree(user_name);
	xfree(sluid);

	if (!handle)
		return;
	job_ptr->switch_jobinfo = handle;
	_delay_launch(job_ptr);
	schedule_job_save();
	sl_debug("JobId=%u: launch delayed until the switch setup is over",
		 job_ptr->job_id);
}

/* From deallocate_nodes() only (job W + node W), before EpilogSlurmctld
 * and make_node_comp(); again for COMPLETING jobs after a restart. */
extern void switch_p_job_complete(job_record_t *job_ptr)
{
	if (!ctld_active || !job_ptr->switch_jobinfo)
		return;
	slc_ctld_job_complete(job_ptr->job_id, job_ptr->switch_jobinfo);
}

/* ---------------------------------------------------------------------- */
/* Restart: re-arm the outstanding setups.                                */
/* ---------------------------------------------------------------------- */

static pthread_mutex_t restore_mutex = PTHREAD_MUTEX_INITIALIZER;
static bool restore_pending = false; /* a thread has not walked yet */
static bool restore_started = false; /* restore_thread needs a join */
static pthread_t restore_thread;

typedef struct {
	uint32_t seen;
	uint32_t rearmed;
	uint32_t unconfigured;
	uint32_t launched;
} restore_stats_t;

static int _recover_one(void *x, void *arg)
{
	job_record_t *job_ptr = x;
	restore_stats_t *stats = arg;
	bool configuring;

	if (!job_ptr->switch_jobinfo)
		return 0;
	stats->seen++;
	configuring = IS_JOB_RUNNING(job_ptr) && IS_JOB_CONFIGURING(job_ptr);
	switch (slc_ctld_recover_job(job_ptr->job_id, job_ptr->switch_jobinfo,
				     configuring)) {
	case 1:
		break;
	case 2:
		/*
		 * The setup had returned and the launch was released before
		 * the crash; Slurm's saved record is older (CONFIGURING).
		 * job_time_limit() would launch_job() a job that is
		 * CONFIGURING with prolog_running 0: end CONFIGURING here,
		 * without launching the batch script a second time.
		 */
		if (configuring && !_armed_has(job_ptr->job_id) &&
		    (!job_ptr->details || !job_ptr->details->prolog_running)) {
			job_config_fini(job_ptr);
			stats->unconfigured++;
			sl_info("JobId=%u: launch released before the restart, CONFIGURING ended without a second launch",
				job_ptr->job_id);
		}
		return 0;
	case 3:
		if (configuring && !_armed_has(job_ptr->job_id) &&
		    (!job_ptr->details || !job_ptr->details->prolog_running)) {
			stats->launched++;
			sl_info("JobId=%u: switch setup had returned before the restart, launching the job",
				job_ptr->job_id);
			prolog_running_decr(job_ptr);
		}
		return 0;
	default:
		return 0;
	}
	/* Still armed in this process (a failed reconfigure calls restore
	 * again without zeroing prolog_running): our increment stands. */
	if (_armed_has(job_ptr->job_id))
		return 0;
	if (!configuring)
		sl_error("JobId=%u: setup re-run for a job that is not RUNNING+CONFIGURING",
			 job_ptr->job_id);
	_delay_launch(job_ptr);
	stats->rearmed++;
	sl_info("JobId=%u: switch setup re-run after restart, launch delayed",
		job_ptr->job_id);
	return 0;
}

static void *_restore_main(void *arg)
{
	restore_stats_t stats = { 0 };

	/* Blocks until slurmctld's startup releases config_write_lock, after
	 * read_slurm_conf() has loaded job_list. */
	lock_slurmctld(job_node_write_lock);
	if (job_list)
		(void) list_for_each(job_list, _recover_one, &stats);
	slc_ctld_reconcile();
	unlock_slurmctld(job_node_write_lock);
	if (stats.seen)
		sl_info("recovered %u jobs with switch state: %u setups re-armed, %u released before the restart (CONFIGURING ended, not launched again), %u launched now",
			stats.seen, stats.rearmed, stats.unconfigured,
			stats.launched);

	slurm_mutex_lock(&restore_mutex);
	restore_pending = false;
	slurm_mutex_unlock(&restore_mutex);
	return NULL;
}

/* Under config_write_lock, before read_slurm_conf(): job_list is not
 * loaded yet (or, after a failed reconfigure, is loaded and unchanged). */
extern int switch_p_restore(bool recover)
{
	int rc;

	if (!ctld_active)
		return SLURM_SUCCESS;

	slurm_mutex_lock(&restore_mutex);
	if (restore_pending) {
		/* That thread has not walked job_list yet; it will see the
		 * same list this call would. */
		slurm_mutex_unlock(&restore_mutex);
		return SLURM_SUCCESS;
	}
	if (restore_started)
		pthread_join(restore_thread, NULL); /* done or finishing */
	if ((rc = pthread_create(&restore_thread, NULL, _restore_main,
				 NULL))) {
		restore_started = false;
		slurm_mutex_unlock(&restore_mutex);
		sl_error("cannot start the restore thread: %s", strerror(rc));
		return SLURM_ERROR;
	}
	restore_started = restore_pending = true;
	slurm_mutex_unlock(&restore_mutex);
	return SLURM_SUCCESS;
}

/* The last hook before a reconfigure re-exec (fini is not called then),
 * and at shutdown.  No locks held. */
extern int switch_p_save(void)
{
	if (ctld_active)
		slc_ctld_stop_children();
	return SLURM_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* init / fini                                                            */
/* ---------------------------------------------------------------------- */

extern bool switchlua_ctld_active(void)
{
	return ctld_active;
}

extern int switchlua_ctld_init(const char *script_path)
{
	int rc;

	if (slc_ctld_init(&ctld_ops, script_path, slurm_conf.slurmctld_params,
			  SWITCHLUA_LIBEXECDIR,
			  slurm_conf.state_save_location)) {
		sl_error("not started (script %s)", script_path);
		return SLURM_ERROR;
	}

	svc_stop = false;
	if ((rc = pthread_create(&svc_thread, NULL, _svc_main, NULL))) {
		sl_error("cannot start the service thread: %s", strerror(rc));
		slc_ctld_fini();
		return SLURM_ERROR;
	}
	svc_started = true;
	ctld_active = true;
	sl_verbose("active in slurmctld, script %s", script_path);
	return SLURM_SUCCESS;
}

/* Slurm dlclose()s the plugin after fini(): no thread of ours may be left
 * running its code. */
extern void switchlua_ctld_fini(void)
{
	if (svc_started) {
		slurm_mutex_lock(&svc_mutex);
		svc_stop = true;
		slurm_cond_signal(&svc_cond);
		slurm_mutex_unlock(&svc_mutex);
		pthread_join(svc_thread, NULL);
		svc_started = false;
	}
	slurm_mutex_lock(&restore_mutex);
	if (restore_started) {
		slurm_mutex_unlock(&restore_mutex);
		pthread_join(restore_thread, NULL);
		slurm_mutex_lock(&restore_mutex);
		restore_started = restore_pending = false;
	}
	slurm_mutex_unlock(&restore_mutex);

	slc_ctld_fini();
	ctld_active = false;
	xfree(epilog_queue);
	epilog_queue_cnt = epilog_queue_cap = 0;
}
