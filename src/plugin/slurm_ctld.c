/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * File: plugin/slurm_ctld.c
 *
 * The slurmctld half of switch/lua, every supported Slurm series: the
 * glue of job_start, job_complete, restore and save (called by the
 * switch_p_* of switch_ops.c), the slurmctld half of init()/fini(),
 * and the table of the actions the core asks of slurmctld
 * (slc_ctld_ops_t).  Every decision is the core's; the glue only knows how
 * to make Slurm do it, one file per mechanism (see the 24.11 source notes;
 * what moved in 25.11 and 26.05 is in slurm_compat.h):
 *   ctld_launch.c   launch delay: details->prolog_running + JOB_CONFIGURING,
 *                   and the count of our outstanding increments.
 *   ctld_holds.c    job and node holds, and the service thread that
 *                   releases job holds and re-asserts node holds.
 *   ctld_actions.c  requeue, cancel (failed setup), drain, forget, save.
 *   ctld_restore.c  restart: the restore thread that re-arms the setups
 *                   and has the core reconcile its journal.
 * What they share is in ctld_internal.h.
 *
 * Locking: Slurm's locks always come first; hold_mutex, armed_mutex,
 * svc_mutex and restore_mutex are leaves taken under them (or alone) and
 * never held while taking a Slurm lock.
 */

#include "config.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"

#include "src/common/slurm_xlator.h"

#include "src/common/hostlist.h"
#include "src/common/id_util.h"
#include "src/common/list.h"
#include "src/common/log.h"
#include "src/common/macros.h"
#include "src/common/read_config.h"
#include "src/common/sluid.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/interfaces/switch.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"
#include "src/slurmctld/state_save.h"

#include "slurm_compat.h"
#include "switch_lua_core.h"
#include "switch_lua_glue.h"
#include "ctld_internal.h"

#ifndef SWITCHLUA_LIBEXECDIR
#error "SWITCHLUA_LIBEXECDIR (folder of switch-lua-supervisor) must be defined by the build"
#endif

/* What every worker of ours takes: what prep_prolog_slurmctld_callback()
 * and _start_prolog_slurmctld_thread() take. */
const slurmctld_lock_t ctld_job_node_write_lock = {
	.conf = READ_LOCK,
	.job = WRITE_LOCK,
	.node = WRITE_LOCK,
	.fed = READ_LOCK,
};

static bool ctld_active = false;

/* ---------------------------------------------------------------------- */
/* The actions (slc_ctld_ops_t), in ctld_launch.c, ctld_holds.c and       */
/* ctld_actions.c.  Slurm's conf R, job W, node W, fed R locks are held   */
/* by the caller in every one of them but lock().                         */
/* ---------------------------------------------------------------------- */

static void _op_lock(void)
{
	lock_slurmctld(ctld_job_node_write_lock);
}

static void _op_unlock(void)
{
	unlock_slurmctld(ctld_job_node_write_lock);
}

/* Slurm 25.05 and later close the accounting storage as soon as slurmctld
 * begins to stop (shutdown_time set: SIGTERM, a takeover or hand-back, a
 * reconfigure), before switch_p_save: a requeue, a cancel, a drain or a
 * job's end from then on would call into it (slurm_compat.h).  24.11 keeps
 * it until after switch_p_save, which flushes the decided actions. */
extern bool ctld_slurmctld_stopping(void)
{
	return SLURM_COMPAT_ACCT_CLOSED_AT_STOP &&
	       (slurmctld_config.shutdown_time != 0);
}

static const slc_ctld_ops_t ctld_ops = {
	.lock = _op_lock,
	.unlock = _op_unlock,
	.end_configuring = ctld_op_end_configuring,
	.requeue = ctld_op_requeue,
	.requeue_held = ctld_op_requeue_held,
	.cancel = ctld_op_cancel,
	.hold = ctld_op_hold,
	.release = ctld_op_release,
	.drain = ctld_op_drain,
	.forget = ctld_op_forget,
	.save_state = ctld_op_save_state,
	.log = switchlua_log_line,
	.job_may_run = ctld_op_job_may_run,
	.stopping = ctld_slurmctld_stopping,
	.schedule = ctld_op_schedule,
};

time_t ctld_control_time = 0;
struct timespec ctld_control_mono = {0, 0};
time_t ctld_clear_wall = 0;
atomic_bool ctld_jobs_loaded = false;

/* ---------------------------------------------------------------------- */
/* Hooks.                                                                 */
/* ---------------------------------------------------------------------- */

/* The job table the core's setup gets: job_ptr's fields, and what the
 * caller built from them (names, user_name, sluid), which it frees. */
static void _job_fill(slc_job_t *job, job_record_t *job_ptr, char **names,
		      uint32_t names_cnt, char *user_name, char *sluid)
{
	job->job_id = job_ptr->job_id;
	job->user_id = job_ptr->user_id;
	job->group_id = job_ptr->group_id;
	job->num_nodes = job_ptr->node_cnt;
	job->restart_count = job_ptr->restart_cnt;
	job->user_name = user_name;
	job->name = job_ptr->name;
	job->nodes = job_ptr->nodes;
	job->node_names = (const char *const *) names;
	job->node_names_count = names_cnt;
	job->partition = job_ptr->partition;
	job->network = job_ptr->network;
	job->account = job_ptr->account;
	job->sluid = sluid;
	job->batch = (job_ptr->batch_flag != 0);
	job->requeue_allowed = job_ptr->batch_flag && job_ptr->details &&
			       job_ptr->details->requeue;
	job->submit_time =
		job_ptr->details ? (int64_t) job_ptr->details->submit_time : 0;
	job->qos = job_ptr->qos_ptr ? job_ptr->qos_ptr->name : NULL;
	job->time_limit = job_ptr->time_limit;
	job->num_tasks = job_ptr->details ? job_ptr->details->num_tasks : 0;
	job->num_cpus = job_ptr->total_cpus;
	if (!job->num_cpus && job_ptr->details)
		job->num_cpus = job_ptr->details->min_cpus;
	job->tres_per_node = job_ptr->tres_per_node;
	job->tres_per_task = job_ptr->tres_per_task;
	job->has_array = (job_ptr->array_task_id != NO_VAL);
	job->array_job_id = job_ptr->array_job_id;
	job->array_task_id = job_ptr->array_task_id;
	job->has_het =
		(job_ptr->het_job_id != 0) && (job_ptr->het_job_id != NO_VAL);
	job->het_job_id = job_ptr->het_job_id;
	job->het_job_offset = job_ptr->het_job_offset;
	job->cluster_name = slurm_conf.cluster_name;
}

/* Under the scheduler's locks (conf R, job W, node W, part R, fed R), once
 * per allocation, after JOB_RUNNING and allocate_nodes(). */
/*
 * The setup of job_ptr was just started (job W, node W held): an interactive
 * job's srun polls for readiness as soon as it has its allocation, so a
 * setup over before we return (within switch_interactive_wait) leaves it
 * never CONFIGURING; else, and for batch jobs (launched when the setup ends
 * anyway), delay its launch until the setup is over.  Not while a launch
 * delay of an earlier run of this job is still counted: the setup's end
 * would take that one (ctld_launch.c).
 */
static void _settle_or_delay_launch(job_record_t *job_ptr)
{
	if (!job_ptr->batch_flag && !ctld_armed_has(job_ptr->job_id) &&
	    slc_ctld_settle_setup(job_ptr->job_id)) {
		sl_job_debug(
			job_ptr->job_id,
			": setup over within switch_interactive_wait, launch not delayed");
		return;
	}
	ctld_delay_launch(job_ptr);
	sl_job_debug(job_ptr->job_id,
		     ": launch delayed until the switch setup is over");
}

extern int switchlua_job_admit(job_record_t *job_ptr)
{
	if (!ctld_active || !job_ptr->network || !job_ptr->network[0])
		return SLURM_SUCCESS;
	if (slc_ctld_job_admit(job_ptr->job_id))
		return SLURM_SUCCESS;
	/* select_nodes() frees state_desc after this call: the words are in
	 * slurmctld.log (one line when the job starts waiting). */
	job_ptr->state_reason = WAIT_RESOURCES;
	return ESLURM_NODES_BUSY;
}

extern void switchlua_job_start(job_record_t *job_ptr)
{
	slc_job_t job = {0};
	hostlist_t *hl = NULL;
	char **names = NULL, *name;
	uint32_t names_cnt = 0;
	char *user_name = NULL, *sluid = NULL;
	sluid_t job_sluid;
	void *handle;

	if (!ctld_active)
		return;

	if (job_ptr->switch_jobinfo) {
		/* job_array_split() memcpy()s the meta job, switch_jobinfo
		 * included: the pointer belongs to another record.  Drop it;
		 * freeing it would free that record's state. */
		sl_job_verbose(
			job_ptr->job_id,
			": dropping a switch_jobinfo pointer copied from another job record");
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
	if ((job_sluid = slurm_compat_job_sluid(job_ptr)))
		sluid = sluid2str(job_sluid);

	_job_fill(&job, job_ptr, names, names_cnt, user_name, sluid);

	handle = slc_ctld_job_start(&job);

	for (uint32_t i = 0; i < names_cnt; i++)
		xfree(names[i]);
	xfree(names);
	xfree(user_name);
	xfree(sluid);

	if (!handle)
		return;
	job_ptr->switch_jobinfo = handle;
	_settle_or_delay_launch(job_ptr);
	schedule_job_save();
}

/*
 * Issue 20, per-node attribution: the nodes of the job's allocation that
 * are DOWN, NOT_RESPONDING or FAIL, and, for a job ending NODE_FAIL, the
 * one Slurm names as its failed_node (kill_running_job_by_node_name() sets
 * it; nothing clears it at a requeue, hence only then), as a host list
 * (xfree), NULL when none.  Here job_ptr->node_bitmap still holds every
 * node the job has (deallocate_nodes() calls us before make_node_comp());
 * the nodes Slurm removed from a --no-kill job are the core's to find, from
 * job_ptr->nodes against the list saved at job_start.  The same in every
 * supported series (slurm_compat.h).
 */
static char *_failed_nodes(job_record_t *job_ptr)
{
	hostlist_t *hl = hostlist_create(NULL);
	node_record_t *node_ptr;
	char *out = NULL;

	for (int i = 0; job_ptr->node_bitmap &&
			(node_ptr = next_node_bitmap(job_ptr->node_bitmap, &i));
	     i++) {
		if (IS_NODE_DOWN(node_ptr) || IS_NODE_NO_RESPOND(node_ptr) ||
		    IS_NODE_FAIL(node_ptr))
			hostlist_push_host(hl, node_ptr->name);
	}
	if (IS_JOB_NODE_FAILED(job_ptr) && job_ptr->failed_node &&
	    job_ptr->failed_node[0])
		hostlist_push_host(hl, job_ptr->failed_node);
	if (hostlist_count(hl)) {
		hostlist_uniq(hl);
		out = hostlist_ranged_string_xmalloc(hl);
	}
	FREE_NULL_HOSTLIST(hl);
	return out;
}

/* From deallocate_nodes() only (job W + node W), before EpilogSlurmctld
 * and make_node_comp(); again for COMPLETING jobs after a restart. */
extern void switchlua_job_complete(job_record_t *job_ptr)
{
	slc_job_end_t end = {0};
	char *failed;

	if (!ctld_active || !job_ptr->switch_jobinfo)
		return;
	failed = _failed_nodes(job_ptr);
	end.nodes_now = job_ptr->nodes;
	end.failed_nodes = failed;
	slc_ctld_job_complete(job_ptr->job_id, job_ptr->switch_jobinfo, &end);
	xfree(failed);
}

/* Under config_write_lock, before read_slurm_conf(): job_list is not
 * loaded yet (start-up; a takeover has just emptied it), or, after a failed
 * reconfigure, is loaded and unchanged.  From here on this slurmctld holds
 * control: the core takes the journal (issue 24), fencing out a holder
 * that keeps its lock past 5 s (issue 40).  Never an error (an error here
 * makes a backup abort): when control cannot be taken the core runs
 * WAITING and the restore thread retries.  A takeover starts with none of
 * the holds and launch delays of an earlier period in this process: their
 * job and node records are gone (issue 40). */
extern int switchlua_restore(bool recover)
{
	bool keep_jobs;

	if (!ctld_active)
		return SLURM_SUCCESS;
	atomic_store(&ctld_jobs_loaded, false);
	keep_jobs = job_list && (list_count(job_list) > 0);
	ctld_control_time = time(NULL);
	clock_gettime(CLOCK_MONOTONIC, &ctld_control_mono);
	ctld_clear_wall = 0;
	if (!keep_jobs) {
		ctld_holds_reset();
		ctld_armed_reset();
	}
	if (slc_ctld_take_control(keep_jobs))
		sl_error(
			"restore: WAITING for control of the journal under StateSaveLocation (line above); retried every second");
	return ctld_restore_start();
}

/* The last hook before a reconfigure re-exec (fini is not called then),
 * at shutdown, and when a backup hands control back (it then waits in
 * standby and may take over again: switch_p_restore).  No locks held.  The
 * core gives up control: children killed, journal closed, lock released. */
extern int switchlua_save(void)
{
	atomic_store(&ctld_jobs_loaded, false);
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

	if ((rc = ctld_svc_start())) {
		sl_error("cannot start the service thread: %s", strerror(rc));
		slc_ctld_fini();
		return SLURM_ERROR;
	}
	ctld_active = true;
	sl_verbose("active in slurmctld, script %s", script_path);
	return SLURM_SUCCESS;
}

/* Slurm dlclose()s the plugin after fini(): no thread of ours may be left
 * running its code. */
extern void switchlua_ctld_fini(void)
{
	ctld_svc_stop();
	ctld_restore_join();

	slc_ctld_fini();
	ctld_active = false;
	ctld_svc_clear_queue();
}
