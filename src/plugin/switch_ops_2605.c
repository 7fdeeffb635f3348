/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * File: plugin/switch_ops_2605.c
 *
 * The switch_p_* symbols of the Slurm 26.05 switch ABI (syms[] of
 * src/interfaces/switch.c: 23 hooks besides plugin_id), with 26.05's
 * signatures, over the version-free glue (switch_lua_glue.h).  meson
 * compiles this file for a 26.05 tree only (switch_ops_2411.c,
 * switch_ops_2505.c, switch_ops_2511.c: the earlier generations).  26.05 replaces
 * extern_step_fini with stepmgr_init / stepmgr_fini.
 */

#include "config.h"

#include <stdbool.h>
#include <stdint.h>

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"

#include "src/common/slurm_xlator.h"

#include "src/interfaces/switch.h"

#include "switch_lua_glue.h"

extern int switch_p_save(void)
{
	return switchlua_save();
}

extern int switch_p_restore(bool recover)
{
	return switchlua_restore(recover);
}

/* Only for a non-NULL jobinfo (dynamic_plugin_data_pack() packs a NULL one
 * as length 0 itself). */
extern void switch_p_jobinfo_pack(void *switch_jobinfo, buf_t *buffer,
				  uint16_t protocol_version)
{
	switchlua_jobinfo_pack(switch_jobinfo, buffer, protocol_version);
}

extern int switch_p_jobinfo_unpack(void **switch_jobinfo, buf_t *buffer,
				   uint16_t protocol_version)
{
	return switchlua_jobinfo_unpack(switch_jobinfo, buffer,
					protocol_version);
}

/* switch_g_jobinfo_free() hands over the job record, not the jobinfo (the
 * ops table declares void *): from _job_record_delete(), in every process
 * that frees a job record carrying a switch_jobinfo. */
extern void switch_p_jobinfo_free(void *job_record)
{
	switchlua_jobinfo_free((job_record_t *) job_record);
}

/* step_ptr NULL: the batch credential (job_scheduler.c) and the extern
 * step's credential (node_scheduler.c), only when setup_special_steps() is
 * true; else a step being created (stepmgr.c: _switch_setup(), in
 * slurmctld or in the job's stepmgr slurmstepd).  A negative return fails
 * the step (ESLURM_INTERCONNECT_FAILURE) or the credential. */
extern int switch_p_stepinfo_build(switchlua_stepinfo_t **stepinfo,
				   void *switch_jobinfo,
				   step_record_t *step_ptr)
{
	return switchlua_stepinfo_build(stepinfo, switch_jobinfo, step_ptr);
}

extern void switch_p_stepinfo_duplicate(switchlua_stepinfo_t *source,
					switchlua_stepinfo_t **dest)
{
	switchlua_stepinfo_duplicate(source, dest);
}

extern void switch_p_stepinfo_free(switchlua_stepinfo_t *stepinfo)
{
	switchlua_stepinfo_free(stepinfo);
}

/* May get NULL: a step or credential built without stepinfo. */
extern void switch_p_stepinfo_pack(switchlua_stepinfo_t *stepinfo,
				   buf_t *buffer, uint16_t protocol_version)
{
	switchlua_stepinfo_pack(stepinfo, buffer, protocol_version);
}

extern int switch_p_stepinfo_unpack(switchlua_stepinfo_t **stepinfo,
				    buf_t *buffer, uint16_t protocol_version)
{
	return switchlua_stepinfo_unpack(stepinfo, buffer, protocol_version);
}

/* slurmctld (batch/extern credentials, interactive step) and slurmstepd
 * (job_init of batch and interactive steps; the stepmgr's interactive
 * step) ask; the script's answer as this process asked it. */
extern bool switch_p_setup_special_steps(void)
{
	return switchlua_setup_special_steps();
}

extern int switch_p_job_preinit(stepd_step_rec_t *step)
{
	return switchlua_job_preinit(step);
}

/* Also for batch and interactive steps when setup_special_steps() is
 * true. */
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

/*
 * select_nodes() calls this twice: with test_only true after it picked the
 * nodes and before it allocates them (non-SLURM_SUCCESS: the job stays
 * pending, ESLURM_NODES_BUSY), on every scheduling attempt; then with
 * test_only false once per allocation, under the scheduler's locks, after
 * JOB_RUNNING and allocate_nodes() (return value ignored).  The setup
 * starts on the second call only; the first succeeds and does nothing.
 */
extern int switch_p_job_start(job_record_t *job_ptr, bool test_only)
{
	if (!test_only)
		switchlua_job_start(job_ptr);
	return SLURM_SUCCESS;
}

extern void switch_p_job_complete(job_record_t *job_ptr)
{
	switchlua_job_complete(job_ptr);
}

/* Packed per node into the job's layout (job_resources.c); switch/lua
 * allocates no channel: NO_VAL, as switch_g_job_channel() without a
 * plugin. */
extern uint32_t switch_p_job_channel(job_record_t *job_ptr, char *node_name)
{
	return NO_VAL;
}

/* Unused by switch/lua: no file system to prepare in the step's namespace. */
extern int switch_p_fs_init(stepd_step_rec_t *step)
{
	return SLURM_SUCCESS;
}

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
