/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * File: plugin/switch_ops.c
 *
 * The switch_p_* symbols of the tree's switch ABI (syms[] of
 * src/interfaces/switch.c: 20 symbols with plugin_id, of switch_lua.c, in
 * 24.11, 21 in 25.05, 22 in 25.11, 23 in 26.05), with that series'
 * signatures, over the version-free glue (switch_lua_glue.h).  One file
 * for every series: each difference is an #if on a SLURM_COMPAT_SWITCH_*
 * macro of slurm_compat.h (which names the series that changed it);
 * src/plugin/meson.build checks that the .so exports exactly the symbol
 * list of the series' switch ABI (src/plugin/slurm_series).  No logic
 * beyond what each series' callers need lives here.
 */

#include "config.h"

#include <stdbool.h>
#include <stdint.h>

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"

#include "src/common/slurm_xlator.h"

#include "src/interfaces/switch.h"

#include "slurm_compat.h"

#if SLURM_COMPAT_SWITCH_STEPMGR_BY_BUILD
#include "src/common/run_in_daemon.h"
#endif

#include "switch_lua_glue.h"

#if SLURM_COMPAT_SWITCH_STEPMGR_BY_BUILD
/*
 * 25.11 has no stepmgr_init: the job's stepmgr slurmstepd is the only
 * slurmstepd that builds stepinfo, so it enters stepmgr mode at its first
 * stepinfo_build, and leaves it when the extern step ends
 * (extern_step_fini).  26.05 calls stepmgr_init / stepmgr_fini itself.
 */
static bool stepmgr_started = false;

/* The stepmgr slurmstepd's first stepinfo_build (its steps are created one
 * at a time, under its job write lock). */
static void _stepmgr_init_once(void)
{
	if (stepmgr_started)
		return;
	stepmgr_started = true;
	switchlua_stepmgr_init();
}
#endif

extern int switch_p_save(void)
{
	return switchlua_save();
}

extern int switch_p_restore(bool recover)
{
	return switchlua_restore(recover);
}

/* 24.11, 25.05: called for every job, NULL jobinfo included.  25.11+: only
 * for a non-NULL jobinfo (dynamic_plugin_data_pack() packs a NULL one as
 * length 0 itself). */
#if SLURM_COMPAT_SWITCH_RECORD_NAMES
extern void switch_p_jobinfo_pack(void *switch_jobinfo, buf_t *buffer,
				  uint16_t protocol_version)
#else
extern void switch_p_pack_jobinfo(void *switch_jobinfo, buf_t *buffer,
				  uint16_t protocol_version)
#endif
{
	switchlua_jobinfo_pack(switch_jobinfo, buffer, protocol_version);
}

#if SLURM_COMPAT_SWITCH_RECORD_NAMES
extern int switch_p_jobinfo_unpack(void **switch_jobinfo, buf_t *buffer,
				   uint16_t protocol_version)
#else
extern int switch_p_unpack_jobinfo(void **switch_jobinfo, buf_t *buffer,
				   uint16_t protocol_version)
#endif
{
	return switchlua_jobinfo_unpack(switch_jobinfo, buffer,
					protocol_version);
}

#if SLURM_COMPAT_SWITCH_FREES_JOBINFO
/* switch_g_jobinfo_free() (25.05: switch_g_free_jobinfo()) hands over the
 * job record, not the jobinfo (the ops table declares void *): from
 * _job_record_delete(), in every process that frees a job record carrying
 * a switch_jobinfo. */
#if SLURM_COMPAT_SWITCH_RECORD_NAMES
extern void switch_p_jobinfo_free(void *job_record)
#else
extern void switch_p_free_jobinfo(void *job_record)
#endif
{
	switchlua_jobinfo_free((job_record_t *) job_record);
}
#endif

#if SLURM_COMPAT_SWITCH_BUILD_GETS_JOBINFO
/* step_ptr NULL: the batch credential (job_scheduler.c) and the extern
 * step's credential (node_scheduler.c), only when setup_special_steps() is
 * true; else a step being created (stepmgr.c: _switch_setup(), in
 * slurmctld or in the job's stepmgr slurmstepd).  A negative return fails
 * the step (ESLURM_INTERCONNECT_FAILURE) or the credential. */
extern int switch_p_stepinfo_build(switchlua_stepinfo_t **stepinfo,
				   void *switch_jobinfo,
				   step_record_t *step_ptr)
{
#if SLURM_COMPAT_SWITCH_STEPMGR_BY_BUILD
	/* Outside slurmctld only the job's stepmgr slurmstepd builds one. */
	if (running_in_slurmstepd())
		_stepmgr_init_once();
#endif
	return switchlua_stepinfo_build(stepinfo, switch_jobinfo, step_ptr);
}
#else
/* 24.11, 25.05: normal steps only (step_ptr is never NULL): the stepinfo of
 * the step's job. */
extern int switch_p_build_stepinfo(switchlua_stepinfo_t **stepinfo,
				   slurm_step_layout_t *step_layout,
				   step_record_t *step_ptr)
{
	job_record_t *job_ptr = step_ptr ? step_ptr->job_ptr : NULL;

	*stepinfo = NULL;
	if (!job_ptr)
		return SLURM_SUCCESS;
	return switchlua_stepinfo_build(stepinfo, job_ptr->switch_jobinfo,
					step_ptr);
}
#endif

#if SLURM_COMPAT_SWITCH_RECORD_NAMES
extern void switch_p_stepinfo_duplicate(switchlua_stepinfo_t *source,
					switchlua_stepinfo_t **dest)
#else
extern void switch_p_duplicate_stepinfo(switchlua_stepinfo_t *source,
					switchlua_stepinfo_t **dest)
#endif
{
	switchlua_stepinfo_duplicate(source, dest);
}

#if SLURM_COMPAT_SWITCH_RECORD_NAMES
extern void switch_p_stepinfo_free(switchlua_stepinfo_t *stepinfo)
#else
extern void switch_p_free_stepinfo(switchlua_stepinfo_t *stepinfo)
#endif
{
	switchlua_stepinfo_free(stepinfo);
}

/* May get NULL: a step or credential built without stepinfo (24.11,
 * 25.05: batch and extern credentials, job end). */
#if SLURM_COMPAT_SWITCH_RECORD_NAMES
extern void switch_p_stepinfo_pack(switchlua_stepinfo_t *stepinfo,
				   buf_t *buffer, uint16_t protocol_version)
#else
extern void switch_p_pack_stepinfo(switchlua_stepinfo_t *stepinfo,
				   buf_t *buffer, uint16_t protocol_version)
#endif
{
	switchlua_stepinfo_pack(stepinfo, buffer, protocol_version);
}

#if SLURM_COMPAT_SWITCH_RECORD_NAMES
extern int switch_p_stepinfo_unpack(switchlua_stepinfo_t **stepinfo,
				    buf_t *buffer, uint16_t protocol_version)
#else
extern int switch_p_unpack_stepinfo(switchlua_stepinfo_t **stepinfo,
				    buf_t *buffer, uint16_t protocol_version)
#endif
{
	return switchlua_stepinfo_unpack(stepinfo, buffer, protocol_version);
}

#if SLURM_COMPAT_SWITCH_SPECIAL_STEPS
/* slurmctld (batch/extern credentials, interactive step) and slurmstepd
 * (job_init of batch and interactive steps; the stepmgr's interactive
 * step) ask; the script's answer as this process asked it. */
extern bool switch_p_setup_special_steps(void)
{
	return switchlua_setup_special_steps();
}
#endif

extern int switch_p_job_preinit(stepd_step_rec_t *step)
{
	return switchlua_job_preinit(step);
}

/* 25.11+: also for batch and interactive steps when setup_special_steps()
 * is true. */
extern int switch_p_job_init(stepd_step_rec_t *step)
{
	return switchlua_job_init(step);
}

extern int switch_p_job_postfini(stepd_step_rec_t *step)
{
	return switchlua_job_postfini(step);
}

/* Unused by switch/lua: the environment comes from job_init. */
extern int switch_p_job_attach(switchlua_stepinfo_t *stepinfo, char ***env,
			       uint32_t nodeid, uint32_t procid,
			       uint32_t nnodes, uint32_t nprocs, uint32_t rank)
{
	return SLURM_SUCCESS;
}

/* Unused by switch/lua: the teardown is the job's (job_complete). */
extern int switch_p_job_step_complete(switchlua_stepinfo_t *stepinfo,
				      char *nodelist)
{
	return SLURM_SUCCESS;
}

#if SLURM_COMPAT_SWITCH_START_TEST_ONLY
/*
 * select_nodes() calls this twice: with test_only true after it picked the
 * nodes and before it allocates them (non-SLURM_SUCCESS: the job stays
 * pending, ESLURM_NODES_BUSY, with the state_reason set here), on every
 * scheduling attempt; then with test_only false once per allocation, under
 * the scheduler's locks, after JOB_RUNNING and allocate_nodes() (return
 * value ignored).  The first is the admission gate (a job stays PENDING
 * while a pool is short of IDs); the setup starts on the second.
 */
extern int switch_p_job_start(job_record_t *job_ptr, bool test_only)
{
	if (test_only)
		return switchlua_job_admit(job_ptr);
	switchlua_job_start(job_ptr);
	return SLURM_SUCCESS;
}
#else
/* 24.11, 25.05: once per allocation, under the scheduler's locks, after
 * JOB_RUNNING and allocate_nodes(). */
extern void switch_p_job_start(job_record_t *job_ptr)
{
	switchlua_job_start(job_ptr);
}
#endif

extern void switch_p_job_complete(job_record_t *job_ptr)
{
	switchlua_job_complete(job_ptr);
}

#if SLURM_COMPAT_SWITCH_JOB_CHANNEL
/* Packed per node into the job's layout (job_resources.c); switch/lua
 * allocates no channel: NO_VAL, as switch_g_job_channel() without a
 * plugin. */
extern uint32_t switch_p_job_channel(job_record_t *job_ptr, char *node_name)
{
	return NO_VAL;
}
#endif

/* Unused by switch/lua: no file system to prepare in the step's namespace. */
extern int switch_p_fs_init(stepd_step_rec_t *step)
{
	return SLURM_SUCCESS;
}

#if SLURM_COMPAT_SWITCH_EXTERN_STEPINFO
/* 24.11, 25.05: the extern step carries no stepinfo: its stepd runs no
 * switch hook. */
extern void switch_p_extern_stepinfo(switchlua_stepinfo_t **stepinfo,
				     job_record_t *job_ptr)
{
	*stepinfo = NULL;
}
#endif

#if SLURM_COMPAT_SWITCH_STEPMGR_HOOKS
/* slurmstepd.c: the slurmstepd of the job's batch host learned it is the
 * job's stepmgr (it unpacked the job record, our jobinfo as raw bytes);
 * it creates the job's steps from now on, stepinfo_build included. */
extern void switch_p_stepmgr_init(void)
{
	switchlua_stepmgr_init();
}

/* mgr.c: the extern step ends in the stepmgr slurmstepd
 * (running_with_stepmgr()), after its step complete messages. */
extern void switch_p_stepmgr_fini(uint32_t job_id)
{
	switchlua_stepmgr_fini(job_id);
}
#elif SLURM_COMPAT_SWITCH_STEPMGR_BY_BUILD
/* 25.11: at the end of every extern step, in its slurmstepd (mgr.c); the
 * stepmgr mode ends with it, where it was entered. */
extern void switch_p_extern_step_fini(uint32_t job_id)
{
	if (stepmgr_started) {
		stepmgr_started = false;
		switchlua_stepmgr_fini(job_id);
	}
}
#else
/* 24.11, 25.05: nothing of switch/lua lives in the extern step. */
extern void switch_p_extern_step_fini(uint32_t job_id)
{
}
#endif
