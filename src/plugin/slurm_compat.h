/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * File: plugin/slurm_compat.h
 *
 * The one place where the Slurm series the glue supports differ: the
 * Slurm internals it calls (the macros below) and the switch ABI, whose
 * differences are named here (SLURM_COMPAT_SWITCH_*) and used by the one
 * export file, switch_ops.c.  Every test is "this series or later"
 * (SLURM_COMPAT_SINCE), so a new series that changes nothing compiles as
 * the newest one before it; which series meson accepts, and which switch
 * ABI (symbol list) each has, is the table src/plugin/slurm_series.
 * Every other glue file is the same for all series.
 * What a series does differently for the script (special steps, who asks
 * the start-up questions) is not here but in the core's one table,
 * common/slurm_series.hpp, which init() selects with SLURM_COMPAT_SERIES
 * (slc_set_slurm_series()).
 *
 * Read from the trees of 24.11.5, 25.11.7 and 26.05.3 ("=": as before):
 *
 *   what differs               24.11            25.11            26.05
 *   -------------------------- ---------------- ---------------- ------------
 *   requeue from slurmctld     job_requeue(uid, job_requeue_     =
 *                              job_id, msg,     internal(uid,
 *                              preempt, flags)  job_ptr, preempt,
 *                                               flags)
 *   the job's SLUID            db_index         step_id.sluid    =
 *                                               (db_index changes
 *                                               on a resize)
 *   stepd_drain_node() in      slurmstepd.h     slurmstepd/mgr.h =
 *   slurmctld_lock_t           conf job node    =                + select_node
 *                              part fed                          (ours NO_LOCK,
 *                                                                as the prolog
 *                                                                paths take)
 *   switch ABI: symbols        20               22               23
 *   (switch_ops.c; the macro)  (with plugin_id)
 *     record hooks named       pack_jobinfo,    jobinfo_pack,    =
 *     (_RECORD_NAMES)          build_stepinfo.. stepinfo_build..
 *     Slurm frees the jobinfo  never            jobinfo_free(    =
 *     (_FREES_JOBINFO)                          job_ptr)
 *     stepinfo build gets      step_layout,     jobinfo, step    =
 *     (_BUILD_GETS_JOBINFO)    step             (NULL: batch and
 *                                               extern creds)
 *     a NULL jobinfo packed    by the plugin    no (length 0)    =
 *     job_start                void (job)       int (job,        =
 *     (_START_TEST_ONLY)                        test_only),
 *                                               called twice
 *     setup_special_steps,     absent           added            =
 *     job_channel (_SPECIAL_
 *     STEPS, _JOB_CHANNEL)
 *     extern_stepinfo          yes              dropped          -
 *     (_EXTERN_STEPINFO)
 *     extern_step_fini(job_id) yes              yes              stepmgr_init,
 *     (_STEPMGR_HOOKS)                                           stepmgr_fini(
 *                                                                job_id)
 *   slurm_load_job() of one    (resp, job_id,   =                (resp, slurm_
 *   job (slurm_stepd.c)        show_flags)                       step_id_t, show_
 *                                                                flags)
 *   accounting storage closed  no (after         when it begins   =
 *   while slurmctld stops      switch_p_save)   to stop, before
 *   (_ACCT_CLOSED_AT_STOP;                      switch_p_save:
 *   slurm_ctld.c: stopping)                     no job or node
 *                                               change after
 *                                               shutdown_time
 *   a job's failed nodes at    node_bitmap      =                =
 *   switch_p_job_complete      (all its nodes),
 *   (issue 20; slurm_ctld.c    IS_NODE_DOWN/
 *   _failed_nodes())           NO_RESPOND/FAIL,
 *                              failed_node (set
 *                              for NODE_FAIL),
 *                              nodes (a --no-kill
 *                              job's, minus the
 *                              excised ones)
 * 25.05 (read from the tag slurm-25-05-8-1; run live on 25.05.8) is 24.11
 * in every row but two: its switch ABI (21 symbols) adds
 * switch_p_free_jobinfo(job_ptr), as 25.11's jobinfo_free; and it closes
 * the accounting storage when slurmctld begins to stop, as 25.11 does.
 * 26.11 (a development snapshot: master at 284c3b95f08a, 26.11.0 0rc1) is
 * 26.05 in every row: src/interfaces/switch.[ch] are 26.05.3's byte for
 * byte, and so are the declarations the glue calls (job_requeue_internal,
 * slurmctld_lock_t, stepd_drain_node in slurmstepd/mgr.h, slurm_load_job
 * by slurm_step_id_t); no macro below names it.
 *
 * Include after Slurm's headers (it names their types).  Nothing here is
 * exported.
 */
#ifndef SWITCH_LUA_SLURM_COMPAT_H
#define SWITCH_LUA_SLURM_COMPAT_H

#include <stdint.h>

#include "slurm/slurm_version.h"

/* The series of the tree as a number, e.g. 2605 (common/slurm_series.hpp). */
#define SLURM_COMPAT_SERIES                                                    \
	(SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER) * 100 +                     \
	 SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER))

/* True when the tree is Slurm major.minor or a later series. */
#define SLURM_COMPAT_SINCE(major, minor)                                       \
	(SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM((major), (minor), 0))

/* The oldest series; the newest is whatever src/plugin/slurm_series lists
 * (meson refuses any series not in it). */
#if !SLURM_COMPAT_SINCE(24, 11)
#error "switch/lua supports Slurm 24.11 and later only (src/plugin/slurm_series)"
#endif

/* ---- the switch ABI (switch_ops.c) ------------------------------------ */

/* 25.05: Slurm frees the jobinfo with the job record (switch_p_free_jobinfo,
 * named switch_p_jobinfo_free from 25.11 on). */
#define SLURM_COMPAT_SWITCH_FREES_JOBINFO SLURM_COMPAT_SINCE(25, 5)

/* 25.11: the record hooks are renamed (pack_jobinfo -> jobinfo_pack,
 * build_stepinfo -> stepinfo_build, ...). */
#define SLURM_COMPAT_SWITCH_RECORD_NAMES SLURM_COMPAT_SINCE(25, 11)

/* 25.11: stepinfo_build gets the job's jobinfo and the step (NULL for the
 * batch and extern credentials), not the step layout and the step. */
#define SLURM_COMPAT_SWITCH_BUILD_GETS_JOBINFO SLURM_COMPAT_SINCE(25, 11)

/* 25.11: job_start(job, test_only) returns int and is called twice. */
#define SLURM_COMPAT_SWITCH_START_TEST_ONLY SLURM_COMPAT_SINCE(25, 11)

/* 25.11: setup_special_steps() is a hook (and slurmstepd runs job_init of
 * the batch and interactive steps when it answers true). */
#define SLURM_COMPAT_SWITCH_SPECIAL_STEPS SLURM_COMPAT_SINCE(25, 11)

/* 25.11: job_channel(job, node_name) is a hook. */
#define SLURM_COMPAT_SWITCH_JOB_CHANNEL SLURM_COMPAT_SINCE(25, 11)

/* 24.11 and 25.05 only: extern_stepinfo (dropped in 25.11). */
#define SLURM_COMPAT_SWITCH_EXTERN_STEPINFO (!SLURM_COMPAT_SINCE(25, 11))

/* 26.05: stepmgr_init() and stepmgr_fini(job_id) replace
 * extern_step_fini(job_id). */
#define SLURM_COMPAT_SWITCH_STEPMGR_HOOKS SLURM_COMPAT_SINCE(26, 5)

/* 25.11 only: no stepmgr hooks, so the plugin enters stepmgr mode at the
 * first stepinfo_build in a slurmstepd and leaves it at extern_step_fini. */
#define SLURM_COMPAT_SWITCH_STEPMGR_BY_BUILD                                   \
	(SLURM_COMPAT_SINCE(25, 11) && !SLURM_COMPAT_SINCE(26, 5))

/* 25.05: slurmctld closes its accounting storage as soon as it begins to
 * stop (shutdown_time set), before switch_p_save; a requeue, cancel, drain
 * or job release from then on calls into it (a NULL function: e2e t0911,
 * a backup handing control back).  24.11 closes it after switch_p_save. */
#define SLURM_COMPAT_ACCT_CLOSED_AT_STOP SLURM_COMPAT_SINCE(25, 5)

/* ---- the Slurm internals the other glue files call -------------------- */

/* ---- 24.11 and 25.05 -------------------------------------------------- */
#if !SLURM_COMPAT_SINCE(25, 11)

/*
 * job_requeue() of the job `job_id` (its het job leader for a het job) by
 * SlurmUser, not preempting, with JOB_REQUEUE_* `flags`.  RET Slurm's
 * error code (ESLURM_INVALID_JOB_ID when the job is gone).  Slurm's
 * conf R, job W, node W, fed R locks held.
 */
#define slurm_compat_job_requeue(job_id, flags)                                \
	job_requeue(0, (job_id), NULL, false, (flags))

/* The job's SLUID (sluid_t), 0 when it has none yet: 24.11 and 25.05 keep
 * it in db_index (job_record_set_sluid()). */
#define slurm_compat_job_sluid(job_ptr)                                        \
	(((job_ptr)->db_index && ((job_ptr)->db_index != NO_VAL64))            \
		 ? (sluid_t) (job_ptr)->db_index                               \
		 : (sluid_t) 0)

/* Where stepd_drain_node() is declared (slurm_stepd.c). */
#define SLURM_COMPAT_STEPD_DRAIN_H "src/slurmd/slurmstepd/slurmstepd.h"

/* slurm_load_job() of the job `job_id` (a job_info_msg_t in *resp, free
 * with slurm_free_job_info_msg()).  RET 0, or -1 with errno set
 * (ESLURM_INVALID_JOB_ID: no such job). */
#define slurm_compat_load_job(resp, job_id, show_flags)                        \
	slurm_load_job((resp), (job_id), (show_flags))

/* ---- 25.11 and later -------------------------------------------------- */
#else

#define slurm_compat_job_requeue(job_id, flags)                                \
	({                                                                     \
		job_record_t *compat_job_ = find_job_record(job_id);           \
		compat_job_                                                    \
			? job_requeue_internal(0, compat_job_, false, (flags)) \
			: ESLURM_INVALID_JOB_ID;                               \
	})

/* 25.11 keeps the SLUID in step_id.sluid (db_index changes on a resize). */
#define slurm_compat_job_sluid(job_ptr) ((job_ptr)->step_id.sluid)

#define SLURM_COMPAT_STEPD_DRAIN_H "src/slurmd/slurmstepd/mgr.h"

#if !SLURM_COMPAT_SINCE(26, 5)
#define slurm_compat_load_job(resp, job_id, show_flags)                        \
	slurm_load_job((resp), (job_id), (show_flags))
#else
/* 26.05 and later name the job by a slurm_step_id_t (its job_id, the rest
 * unset). */
#define slurm_compat_load_job(resp, job_id, show_flags)                        \
	({                                                                     \
		slurm_step_id_t compat_id_ = SLURM_STEP_ID_INITIALIZER;        \
		compat_id_.job_id = (job_id);                                  \
		slurm_load_job((resp), compat_id_, (show_flags));              \
	})
#endif

#endif

#endif
