/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * File: plugin/switch_lua_glue.h
 *
 * Private to the C files of the Slurm glue (switch_lua.c, slurm_ctld.c
 * and its ctld_*.c, slurm_stepd.c, switch_ops.c).  Include it after
 * Slurm's headers: the logging macros below expand to Slurm's
 * info()/error()/debug(), and the hook glue names Slurm's types.
 *
 * Nothing here is part of the interface with the C++ core; that is
 * switch_lua_core.h.
 */
#ifndef SWITCH_LUA_GLUE_H
#define SWITCH_LUA_GLUE_H

#include <stdbool.h>
#include <stdint.h>

/* buf_t, job_record_t, step_record_t, stepd_step_rec_t */
#include "src/interfaces/switch.h"

#include "switch_lua_core.h" /* slc_log_subject() for the stamps below */

/*
 * Every line this plugin logs starts with this prefix, so that
 * `grep 'switch/lua: '` finds all of them.  The core's lines come with the
 * prefix already (they go through switchlua_log_line() unchanged).
 * SLURM_PLUGIN_DEBUG is not used: it would add the C function name and
 * prefix the core's lines a second time.
 */
#define SWITCHLUA_LOG_PREFIX "switch/lua: "

#define sl_error(fmt, ...)   error(SWITCHLUA_LOG_PREFIX fmt, ##__VA_ARGS__)
#define sl_info(fmt, ...)    info(SWITCHLUA_LOG_PREFIX fmt, ##__VA_ARGS__)
#define sl_verbose(fmt, ...) verbose(SWITCHLUA_LOG_PREFIX fmt, ##__VA_ARGS__)
#define sl_debug(fmt, ...)   debug(SWITCHLUA_LOG_PREFIX fmt, ##__VA_ARGS__)
#define sl_debug2(fmt, ...)  debug2(SWITCHLUA_LOG_PREFIX fmt, ##__VA_ARGS__)

/*
 * A line about a job or one of its steps, stamped the way the core stamps
 * its own (slc_log_subject(), common/log_stamp.hpp):
 *   sl_job_info(42, ": not requeued, the job is gone")
 *     -> "switch/lua: JobId=42: not requeued, the job is gone"
 *   sl_step_error(42, SLURM_BATCH_SCRIPT, "step_postfini", ": draining node %s", n)
 *     -> "switch/lua: JobId=42 StepId=42.batch step_postfini: draining node node1"
 * fmt continues the stamp, so it starts with ':' or ' '.
 */
#define SL_SUBJECT_MAX 160
#define sl_stamped_(logfn, job_id, step_id, hook, fmt, ...)                    \
	do {                                                                   \
		char sl_subject_[SL_SUBJECT_MAX];                              \
		logfn(SWITCHLUA_LOG_PREFIX "%s" fmt,                           \
		      slc_log_subject(sl_subject_, sizeof(sl_subject_),        \
				      (job_id), (step_id), (hook)),            \
		      ##__VA_ARGS__);                                          \
	} while (0)
#define sl_job_error(job_id, fmt, ...)                                         \
	sl_stamped_(error, job_id, SLC_NO_STEP, NULL, fmt, ##__VA_ARGS__)
#define sl_job_info(job_id, fmt, ...)                                          \
	sl_stamped_(info, job_id, SLC_NO_STEP, NULL, fmt, ##__VA_ARGS__)
#define sl_job_verbose(job_id, fmt, ...)                                       \
	sl_stamped_(verbose, job_id, SLC_NO_STEP, NULL, fmt, ##__VA_ARGS__)
#define sl_job_debug(job_id, fmt, ...)                                         \
	sl_stamped_(debug, job_id, SLC_NO_STEP, NULL, fmt, ##__VA_ARGS__)
#define sl_step_error(job_id, step_id, hook, fmt, ...)                         \
	sl_stamped_(error, job_id, step_id, hook, fmt, ##__VA_ARGS__)
#define sl_step_debug2(job_id, step_id, hook, fmt, ...)                        \
	sl_stamped_(debug2, job_id, step_id, hook, fmt, ##__VA_ARGS__)

/* The stepinfo record: the bytes slc_ctld_stepinfo() produced, opaque here.
 * data == NULL (len 0): the step belongs to a job the plugin does not
 * manage.  Memory is xmalloc'd. */
#define SWITCHLUA_STEPINFO_MAGIC 0x5c1a5e9u

typedef struct {
	uint32_t magic; /* SWITCHLUA_STEPINFO_MAGIC */
	char *data;
	uint32_t len;
} switchlua_stepinfo_t;

/* switch_lua.c: hands one already-prefixed line of the core to Slurm's log
 * at the level of enum slc_log_level. */
extern void switchlua_log_line(int level, const char *line);

/* slurm_ctld.c: the slurmctld half of init()/fini(). */
extern int switchlua_ctld_init(const char *script_path);
extern void switchlua_ctld_fini(void);
extern bool switchlua_ctld_active(void);

/* slurm_stepd.c: the slurmstepd half of init(). */
extern int switchlua_stepd_init(const char *script_path);

/*
 * The hook glue, the same for every Slurm series: the switch_p_* symbols of
 * the tree's switch ABI (switch_ops.c, one file for every series) call
 * these with what their Slurm hands them.  Return
 * values are Slurm's (SLURM_SUCCESS / SLURM_ERROR) unless said.
 */
/* switch_lua.c: jobinfo and stepinfo records (Slurm's pack/unpack/free). */
extern void switchlua_jobinfo_pack(void *switch_jobinfo, buf_t *buffer,
				   uint16_t protocol_version);
extern int switchlua_jobinfo_unpack(void **switch_jobinfo, buf_t *buffer,
				    uint16_t protocol_version);
/* 25.05+: job_ptr's record is being freed; frees the handle only if the
 * record owns it (job_array_split() copies the pointer), then sets
 * job_ptr->switch_jobinfo = NULL. */
extern void switchlua_jobinfo_free(job_record_t *job_ptr);
/* step_ptr NULL: the batch or extern credential (25.11+). */
extern int switchlua_stepinfo_build(switchlua_stepinfo_t **stepinfo,
				    void *switch_jobinfo,
				    step_record_t *step_ptr);
extern void switchlua_stepinfo_duplicate(switchlua_stepinfo_t *source,
					 switchlua_stepinfo_t **dest);
extern void switchlua_stepinfo_free(switchlua_stepinfo_t *stepinfo);
extern void switchlua_stepinfo_pack(switchlua_stepinfo_t *stepinfo,
				    buf_t *buffer, uint16_t protocol_version);
extern int switchlua_stepinfo_unpack(switchlua_stepinfo_t **stepinfo,
				     buf_t *buffer, uint16_t protocol_version);
/* 25.11+: the script's setup_special_steps() as this process asked it
 * (slurmctld, slurmstepd); false elsewhere. */
extern bool switchlua_setup_special_steps(void);
/* 25.11+: this slurmstepd is the job's stepmgr / its extern step ends. */
extern void switchlua_stepmgr_init(void);
extern void switchlua_stepmgr_fini(uint32_t job_id);

/* slurm_ctld.c: slurmctld.  job_start: once per allocation, under the
 * scheduler's locks (25.11+: the test_only call goes to
 * switchlua_job_admit). */
extern void switchlua_job_start(job_record_t *job_ptr);
/* 25.11+: the test_only call, before the nodes are allocated:
 * SLURM_SUCCESS, or ESLURM_NODES_BUSY with job_ptr->state_reason set to
 * WAIT_RESOURCES (the job stays PENDING: a pool is short of IDs). */
extern int switchlua_job_admit(job_record_t *job_ptr);
extern void switchlua_job_complete(job_record_t *job_ptr);
extern int switchlua_restore(bool recover);
extern int switchlua_save(void);

/* slurm_stepd.c: slurmstepd, as root in job_manager(). */
extern int switchlua_job_preinit(stepd_step_rec_t *step);
extern int switchlua_job_init(stepd_step_rec_t *step);
extern int switchlua_job_postfini(stepd_step_rec_t *step);

#endif
