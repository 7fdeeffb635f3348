/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * File: plugin/ctld_actions.c
 *
 * The actions of switch/lua on jobs and nodes in slurmctld
 * that hold nothing: requeue, cancel, drain, forget a job's state, save
 * the state.  Slurm's conf R, job W, node W, fed R locks are held by the
 * caller in every one of them.
 *
 *   failed setup   job_requeue(0, id, NULL, false, 0), else SIGKILL, with
 *                  state_reason FAIL_LAUNCH and state_desc set first, and
 *                  the reason kept in system_comment.
 *   held setup     switch_max_setup_failures reached: job_requeue with
 *                  JOB_REQUEUE_HOLD, then WAIT_HELD (admin hold).
 */

#include "config.h"

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"

#include "src/common/slurm_xlator.h"

#include "src/common/hostlist.h"
#include "src/common/log.h"
#include "src/common/read_config.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"
#include "src/slurmctld/state_save.h"
#include "src/stepmgr/srun_comm.h"

#include "slurm_compat.h"
#include "switch_lua_glue.h"
#include "ctld_internal.h"

/*
 * The job's reason, and the same text in its system comment: Slurm replaces
 * state_reason/state_desc of a requeued job within seconds (BeginTime, then
 * Priority/Resources), while SystemComment stays in the job record (and its
 * state file) until the next failure replaces it, so `scontrol show job`
 * keeps saying why the job came back.
 */
static void _set_reason(job_record_t *job_ptr, const char *reason)
{
	const char *r = reason ? reason : "switch setup failed";

	job_ptr->state_reason = FAIL_LAUNCH;
	xfree(job_ptr->state_desc);
	job_ptr->state_desc = xstrdup(r);
	xfree(job_ptr->system_comment);
	job_ptr->system_comment = xstrdup(r);
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
		leader = job_ptr->het_job_list
				 ? job_ptr
				 : find_job_record(job_ptr->het_job_id);
		if (!leader) {
			sl_job_error(job_ptr->job_id,
				     ": no hetjob leader JobId=%u to cancel",
				     job_ptr->het_job_id);
			xfree(msg);
			return;
		}
		rc = het_job_signal(leader, SIGKILL, 0, 0, false);
	} else {
		rc = job_signal(job_ptr, SIGKILL, 0, 0, false);
	}
	if (rc)
		sl_job_error(job_ptr->job_id, ": cannot cancel the job: %s",
			     slurm_strerror(rc));
	else
		sl_job_info(job_ptr->job_id, " cancelled: %s", msg);
	xfree(msg);
}

/*
 * The job's reason set, then job_requeue() (slurm_compat_job_requeue())
 * with `flags` of the job (of its het job leader for a het job component).
 * RET false when the job is gone (logged: nothing to requeue), true with
 * job_requeue()'s return in *rc.
 */
static bool _requeue(uint32_t job_id, const char *reason, uint32_t flags,
		     int *rc)
{
	job_record_t *job_ptr = find_job_record(job_id);

	if (!job_ptr) {
		sl_job_info(job_id, ": not requeued, the job is gone");
		return false;
	}
	_set_reason(job_ptr, reason);
	*rc = slurm_compat_job_requeue(
		job_ptr->het_job_id ? job_ptr->het_job_id : job_id, flags);
	return true;
}

extern void ctld_op_requeue(uint32_t job_id, const char *reason)
{
	job_record_t *job_ptr;
	int rc;

	if (!_requeue(job_id, reason, 0, &rc))
		return;
	if (rc == SLURM_SUCCESS) {
		job_ptr = find_job_record(job_id);
		sl_job_info(job_id, " requeued: %s",
			    job_ptr ? job_ptr->state_desc : reason);
		return;
	}
	if (rc == ESLURM_JOB_PENDING) {
		sl_job_info(job_id, ": not requeued, it is pending already");
		return;
	}
	sl_job_info(job_id, ": cannot requeue (%s), cancelling it",
		    slurm_strerror(rc));
	/* job_requeue() may have ended a het job; look it up again. */
	if ((job_ptr = find_job_record(job_id)))
		_kill_job(job_ptr, reason);
}

/*
 * As job_requeue() with JOB_REQUEUE_HOLD (scontrol requeuehold), then an
 * admin hold: WAIT_HELD, which the job's user cannot release and Slurm's
 * scheduler keeps with its state_desc (job_scheduler.c keeps the reason
 * of a held job), released by an operator's `scontrol release`.
 */
extern void ctld_op_requeue_held(uint32_t job_id, const char *reason)
{
	job_record_t *job_ptr;
	int rc;

	if (!_requeue(job_id, reason, JOB_REQUEUE_HOLD, &rc))
		return;
	if ((rc == SLURM_SUCCESS) && (job_ptr = find_job_record(job_id))) {
		job_ptr->priority = 0;
		job_ptr->state_reason = WAIT_HELD;
		xfree(job_ptr->state_desc);
		job_ptr->state_desc = xstrdup(reason);
		sl_job_info(job_id, " requeued held (scontrol release): %s",
			    reason);
		return;
	}
	if (rc == SLURM_SUCCESS)
		return;
	sl_job_info(job_id, ": cannot requeue held (%s), cancelling it",
		    slurm_strerror(rc));
	if ((job_ptr = find_job_record(job_id)))
		_kill_job(job_ptr, reason);
}

extern void ctld_op_cancel(uint32_t job_id, const char *reason)
{
	job_record_t *job_ptr = find_job_record(job_id);

	if (!job_ptr) {
		sl_job_info(job_id, ": not cancelled, the job is gone");
		return;
	}
	_kill_job(job_ptr, reason);
}

extern void ctld_op_drain(const char *nodes, const char *reason)
{
	char *n = xstrdup(nodes);
	char *r = xstrdup(reason ? reason
				 : "switch teardown failed (switch/lua)");
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

extern void ctld_op_schedule(void)
{
	queue_job_scheduler();
}

extern void ctld_op_forget(uint32_t job_id)
{
	job_record_t *job_ptr;

	/* No job table (a takeover has just freed it, or it is not loaded
	 * yet): find_job_record() would dereference it.  Not list_count():
	 * job_list's lock is held when restore walks the list. */
	if (!job_list || !atomic_load(&ctld_jobs_loaded))
		return;
	if ((job_ptr = find_job_record(job_id)))
		job_ptr->switch_jobinfo = NULL;
}

extern void ctld_op_save_state(void)
{
	schedule_job_save();
}

/*
 * The lost start (issue 24): a job launched before a slurmctld crash whose
 * saved record came back PENDING (or gone) may still run on its nodes.
 * slurmctld asks every node to register when it starts and aborts there a
 * job it does not run (abort_job_on_node() in validate_jobs_on_node()).  A
 * node is taken as clear once it has answered this slurmctld after
 * KillWait + 2 * MessageTimeout have passed since it took control (its
 * registration, the abort and the kill have had their time); a node that
 * does not answer may still run the job.  That bound is measured on the
 * monotonic clock (issue 40: a forward step of the wall clock ended it at
 * once); a node's answer (Slurm's last_response, wall clock) counts from the
 * wall time at which the bound was reached, taken once as the wall clock
 * less the monotonic time since then, so a step before it does not shorten
 * the wait either.  Node W held.
 */
extern bool ctld_op_job_may_run(uint32_t job_id, const char *nodes)
{
	long bound = (long) slurm_conf.kill_wait + 2L * slurm_conf.msg_timeout;
	long elapsed;
	struct timespec now;
	hostlist_t *hl;
	char *name;
	bool may = false;

	if (!nodes || !nodes[0])
		return false;
	clock_gettime(CLOCK_MONOTONIC, &now);
	elapsed = now.tv_sec - ctld_control_mono.tv_sec;
	if (elapsed < bound)
		return true;
	/* The wall time the bound was reached: now less the monotonic time
	 * since then (a node's registration right after it counts). */
	if (!ctld_clear_wall)
		ctld_clear_wall = time(NULL) - (time_t) (elapsed - bound);
	if (!(hl = hostlist_create(nodes)))
		return true;
	while ((name = hostlist_shift(hl))) {
		node_record_t *node_ptr = find_node_record(name);

		if (node_ptr && (IS_NODE_NO_RESPOND(node_ptr) ||
				 (node_ptr->last_response < ctld_clear_wall)))
			may = true;
		free(name);
	}
	FREE_NULL_HOSTLIST(hl);
	if (may)
		sl_job_debug(
			job_id,
			": nodes %s may still run an instance lost by the restart",
			nodes);
	return may;
}
