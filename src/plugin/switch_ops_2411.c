/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * File: plugin/switch_ops_2411.c
 *
 * The switch_p_* symbols of the Slurm 24.11 switch ABI (syms[] of
 * src/interfaces/switch.c: 20 hooks besides plugin_id), with 24.11's
 * signatures, over the version-free glue (switch_lua_glue.h).  meson
 * compiles this file for a 24.11 tree only; switch_ops_2505.c,
 * switch_ops_2511.c and switch_ops_2605.c are the later generations.  No logic beyond what
 * 24.11's callers need lives here.
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

/* Called for every job, NULL jobinfo included. */
extern void switch_p_pack_jobinfo(void *switch_jobinfo, buf_t *buffer,
				  uint16_t protocol_version)
{
	switchlua_jobinfo_pack(switch_jobinfo, buffer, protocol_version);
}

extern int switch_p_unpack_jobinfo(void **switch_jobinfo, buf_t *buffer,
				   uint16_t protocol_version)
{
	return switchlua_jobinfo_unpack(switch_jobinfo, buffer,
					protocol_version);
}

/* Normal steps only (step_ptr is never NULL in 24.11): the stepinfo of the
 * step's job. */
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

extern void switch_p_duplicate_stepinfo(switchlua_stepinfo_t *source,
					switchlua_stepinfo_t **dest)
{
	switchlua_stepinfo_duplicate(source, dest);
}

extern void switch_p_free_stepinfo(switchlua_stepinfo_t *stepinfo)
{
	switchlua_stepinfo_free(stepinfo);
}

/* May get NULL: batch and extern credentials, job end. */
extern void switch_p_pack_stepinfo(switchlua_stepinfo_t *stepinfo,
				   buf_t *buffer, uint16_t protocol_version)
{
	switchlua_stepinfo_pack(stepinfo, buffer, protocol_version);
}

extern int switch_p_unpack_stepinfo(switchlua_stepinfo_t **stepinfo,
				    buf_t *buffer, uint16_t protocol_version)
{
	return switchlua_stepinfo_unpack(stepinfo, buffer, protocol_version);
}

extern int switch_p_job_preinit(stepd_step_rec_t *step)
{
	return switchlua_job_preinit(step);
}

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

/* Once per allocation, under the scheduler's locks, after JOB_RUNNING and
 * allocate_nodes(). */
extern void switch_p_job_start(job_record_t *job_ptr)
{
	switchlua_job_start(job_ptr);
}

extern void switch_p_job_complete(job_record_t *job_ptr)
{
	switchlua_job_complete(job_ptr);
}

/* Unused by switch/lua: no file system to prepare in the step's namespace. */
extern int switch_p_fs_init(stepd_step_rec_t *step)
{
	return SLURM_SUCCESS;
}

/* The extern step carries no stepinfo: its stepd runs no switch hook. */
extern void switch_p_extern_stepinfo(switchlua_stepinfo_t **stepinfo,
				     job_record_t *job_ptr)
{
	*stepinfo = NULL;
}

/* Nothing of switch/lua lives in the extern step. */
extern void switch_p_extern_step_fini(uint32_t job_id)
{
}
