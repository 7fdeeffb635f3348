/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * File: plugin/slurm_stepd.c
 *
 * The slurmstepd half of switch/lua, every supported Slurm series: the
 * glue of job_preinit, job_init and job_postfini (called by the switch_p_*
 * of switch_ops.c), run as root in mgr.c: job_manager() for the
 * normal steps of a job the plugin manages (its steps carry stepinfo).
 *
 * 24.11 calls preinit for !batch && !extern && !interactive, init for
 * !batch && !interactive && argv, postfini for !batch && !interactive
 * (the extern step has returned by then).  The same conditions are
 * checked here again, so a change on Slurm's side cannot make the hooks
 * run where the contract says they do not.  25.11+ also calls init for
 * the batch and interactive steps when setup_special_steps() is true
 * (which it is on a node whose script did not load, so that such a step
 * of a managed job fails instead of running without step_init); that is
 * still only the core's to allow (slc_stepd_init_step).
 */

#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"

#include "src/common/slurm_xlator.h"

#include "src/common/env.h"
#include "src/common/hostlist.h"
#include "src/common/log.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/interfaces/cred.h"
#include "src/interfaces/switch.h"
#include "src/slurmd/slurmstepd/slurmstepd.h"
#include "src/slurmd/slurmstepd/slurmstepd_job.h"

#include "slurm_compat.h"
#include SLURM_COMPAT_STEPD_DRAIN_H

#include "switch_lua_core.h"
#include "switch_lua_glue.h"

static bool stepd_active = false;

extern int switchlua_stepd_init(const char *script_path)
{
	/*
	 * A script that does not load (or is refused) is logged by the core,
	 * which then fails every managed step's preinit and init with a line
	 * naming the node and why (slc_stepd_preinit(): issue 20, a managed
	 * step gets its fabric or fails) and leaves unmanaged steps alone.
	 * So the hooks stay active here whatever the load said: skipping them
	 * ran a managed step without its hooks, as if it had its fabric
	 * (seen live, t1501).  Failing init() would fail every step.
	 */
	(void) slc_stepd_init(script_path, switchlua_log_line);
	stepd_active = true;
	return SLURM_SUCCESS;
}

/*
 * The stepinfo of a normal step of a managed job, else NULL.  With
 * `special` (step_init only), also of its batch or interactive step when
 * the script's setup_special_steps() said true here and Slurm honours it,
 * or when the script did not load here (slc_stepd_setup_special_steps():
 * 25.11+; the core then fails the step); never of the extern step.
 */
static switchlua_stepinfo_t *_managed_step(stepd_step_rec_t *step, bool special)
{
	switchlua_stepinfo_t *si;
	bool is_special = step->batch ||
			  (step->step_id.step_id == SLURM_BATCH_SCRIPT) ||
			  (step->step_id.step_id == SLURM_INTERACTIVE_STEP);

	if (!stepd_active || (step->step_id.step_id == SLURM_EXTERN_CONT))
		return NULL;
	if (is_special && !(special && slc_stepd_setup_special_steps()))
		return NULL;
	if (!step->switch_step || !(si = step->switch_step->data))
		return NULL;
	if ((si->magic != SWITCHLUA_STEPINFO_MAGIC) || !si->data || !si->len)
		return NULL;
	return si;
}

/*
 * `id` (at least 64 bytes) receives the step's "JobId.StepId" text; `hl`
 * the hostlist of the step's nodes (destroyed by the caller), or NULL.
 *
 * Trust (issue 21, switch.lua(5) SECURITY): every field comes from
 * slurmstepd's own record, from what the launch credential's signature
 * covers, or (network, num_tasks: the core fills them) from the stepinfo
 * slurmctld built, never from the task environment or the unsigned part
 * of the launch request (msg->nnodes, msg->ntasks, msg->complete_nodelist
 * are srun's to write).  uid, user_name and step_id: slurmd checked them
 * against the credential (_check_job_credential) before starting us.
 */
static void _fill_step(stepd_step_rec_t *step, slc_step_t *s, char *id,
		       int id_size, hostlist_t **hl)
{
	slurm_cred_arg_t *arg = NULL;
	int idx;

	*hl = NULL;
	memset(s, 0, sizeof(*s));
	log_build_step_id_str(&step->step_id, id, id_size,
			      STEP_ID_FLAG_NO_PREFIX);
	s->id = id;
	s->job_id = step->step_id.job_id;
	s->step_id = step->step_id.step_id;
	s->node_id = step->nodeid;
	s->num_nodes = step->nnodes;
	/* The launch's own count: kept only for a batch step (slurmctld's
	 * batch launch); the core takes a normal step's from the stepinfo. */
	s->num_tasks = step->ntasks;
	s->user_id = step->uid;
	s->node_name = step->node_name;
	s->user_name = step->user_name;
	s->nodes = step->node_list;
	/* Normal steps only: the launch request, with its credential. */
	if (step->msg && step->msg->cred && step->msg->cred->arg)
		arg = step->msg->cred->arg;
	if (arg) {
		s->partition = arg->job_partition;
		/* The step's nodes as signed, and this node's rank in them. */
		if (arg->step_hostlist &&
		    (*hl = hostlist_create(arg->step_hostlist))) {
			s->nodes = arg->step_hostlist;
			s->num_nodes = hostlist_count(*hl);
			if ((idx = hostlist_find(*hl, step->node_name)) >= 0)
				s->node_id = idx;
		}
	}
	s->batch = step->batch;
}

/* mgr.c turns a negative return into ESLURM_INTERCONNECT_FAILURE, which
 * srun reports as "Error configuring interconnect". */
static int _step_failed(stepd_step_rec_t *step, const char *hook)
{
	sl_step_error(step->step_id.job_id, step->step_id.step_id, hook,
		      " failed, the step fails");
	errno = ESLURM_INTERCONNECT_FAILURE;
	return SLURM_ERROR;
}

extern int switchlua_job_preinit(stepd_step_rec_t *step)
{
	switchlua_stepinfo_t *si = _managed_step(step, false);
	slc_step_t s;
	hostlist_t *hl;
	char id[64];
	int rc;

	if (!si)
		return SLURM_SUCCESS;
	_fill_step(step, &s, id, sizeof(id), &hl);
	rc = slc_stepd_preinit(&s, si->data, si->len);
	FREE_NULL_HOSTLIST(hl);
	if (rc < 0)
		return _step_failed(step, "step_preinit");
	return SLURM_SUCCESS;
}

static void _set_env(void *ctx, const char *name, const char *value)
{
	stepd_step_rec_t *step = ctx;

	if (!env_array_overwrite(&step->env, name, value))
		sl_step_error(step->step_id.job_id, step->step_id.step_id,
			      "step_init",
			      ": cannot set %s in the step environment", name);
}

static void _unset_env(void *ctx, const char *name)
{
	stepd_step_rec_t *step = ctx;

	unsetenvp(step->env, name);
}

extern int switchlua_job_init(stepd_step_rec_t *step)
{
	switchlua_stepinfo_t *si = _managed_step(step, true);
	slc_step_t s;
	hostlist_t *hl;
	char id[64];
	int rc;

	if (!si || !step->argv)
		return SLURM_SUCCESS;
	_fill_step(step, &s, id, sizeof(id), &hl);
	rc = slc_stepd_init_step(&s, si->data, si->len, _set_env, _unset_env,
				 step);
	FREE_NULL_HOSTLIST(hl);
	if (rc < 0)
		return _step_failed(step, "step_init");
	return SLURM_SUCCESS;
}

/*
 * If this node is drained already, the reason an admin (or Slurm) gave.
 * RET true when drained; *reason is then xmalloc'd (maybe empty).
 */
static bool _node_drained(const char *node_name, char **reason)
{
	node_info_msg_t *msg = NULL;
	bool drained = false;

	*reason = NULL;
	if (!node_name ||
	    slurm_load_node_single(&msg, (char *) node_name, SHOW_ALL) || !msg)
		return false; /* unknown: drain as usual */
	if (msg->record_count &&
	    (msg->node_array[0].node_state & NODE_STATE_DRAIN)) {
		drained = true;
		*reason = xstrdup(msg->node_array[0].reason
					  ? msg->node_array[0].reason
					  : "");
	}
	slurm_free_node_info_msg(msg);
	return drained;
}

/*
 * Issue 20, a stale step: the step did not end by itself: slurmctld aborted
 * it (SIG_ABORT sets step->aborted: the node reported a job that slurmctld
 * no longer runs here), or slurmd killed its tasks (a kill request, such
 * as the one slurmctld sent when it requeued the job, which reaches a
 * node only once it answers again after a partition).  Only then is
 * slurmctld asked about the job, one job lookup from this node (none for a
 * step whose tasks all exited), so that the core can say whether the
 * attempt of the step's stepinfo is over (slurm_compat_load_job: 26.05
 * names the job by a slurm_step_id_t).  RET true with *now filled; false: not asked, or no answer.
 * `state` points into a static buffer.
 */
static bool _killed(stepd_step_rec_t *step)
{
	if (step->aborted)
		return true;
	for (uint32_t i = 0; step->task && (i < step->node_tasks); i++)
		if (step->task[i] && step->task[i]->killed_by_cmd)
			return true;
	return false;
}

static bool _job_now(stepd_step_rec_t *step, slc_job_now_t *now)
{
	static char state[32];
	job_info_msg_t *msg = NULL;
	uint32_t job_id = step->step_id.job_id;

	if (!_killed(step))
		return false;
	memset(now, 0, sizeof(*now));
	if (slurm_compat_load_job(&msg, job_id, SHOW_ALL)) {
		if (errno != ESLURM_INVALID_JOB_ID)
			return false;
		return true; /* found = false: gone */
	}
	for (uint32_t i = 0; msg && (i < msg->record_count); i++) {
		if (msg->job_array[i].job_id != job_id)
			continue;
		now->found = true;
		now->restart_count = msg->job_array[i].restart_cnt;
		snprintf(state, sizeof(state), "%s",
			 job_state_string(msg->job_array[i].job_state));
		now->state = state;
	}
	slurm_free_job_info_msg(msg);
	return true;
}

/*
 * A -1 from the core drains this node with the core's reason.  We drain
 * here and return success: on an error mgr.c sends a second drain
 * request, "switch_g_job_postfini failed", and slurmctld's update_node()
 * replaces the reason of an already drained node, so ours would be lost.
 *
 * One rule for every drain of switch/lua, Slurm's own (drain_nodes() in
 * slurmctld): a node that is drained already keeps its reason.  So we look
 * first, and only log when an admin's reason is in place.
 */
extern int switchlua_job_postfini(stepd_step_rec_t *step)
{
	switchlua_stepinfo_t *si = _managed_step(step, false);
	slc_step_t s;
	slc_job_now_t now;
	hostlist_t *hl;
	char id[64];
	int rc;
	char *reason = NULL, *drain_reason, *old_reason = NULL;

	if (!si)
		return SLURM_SUCCESS;
	_fill_step(step, &s, id, sizeof(id), &hl);
	rc = slc_stepd_postfini(&s, si->data, si->len,
				_job_now(step, &now) ? &now : NULL, &reason);
	FREE_NULL_HOSTLIST(hl);
	if (rc >= 0) {
		slc_free(reason);
		return SLURM_SUCCESS;
	}

	if (reason && reason[0]) {
		drain_reason = xstrdup(reason);
	} else {
		char subject[SL_SUBJECT_MAX];

		drain_reason = xstrdup_printf(
			"switch postfini failed (switch/lua step_postfini %s)",
			slc_log_subject(subject, sizeof(subject),
					step->step_id.job_id,
					step->step_id.step_id, NULL));
	}
	slc_free(reason);
	if (_node_drained(step->node_name, &old_reason)) {
		sl_step_error(
			step->step_id.job_id, step->step_id.step_id,
			"step_postfini",
			": node %s is drained already, its reason \"%s\" is kept; not set: %s",
			step->node_name, old_reason, drain_reason);
	} else {
		sl_step_error(step->step_id.job_id, step->step_id.step_id,
			      "step_postfini", ": draining node %s: %s",
			      step->node_name, drain_reason);
		stepd_drain_node(drain_reason);
	}
	xfree(old_reason);
	xfree(drain_reason);
	return SLURM_SUCCESS;
}
