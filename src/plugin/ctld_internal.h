/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * File: plugin/ctld_internal.h
 *
 * Private to the slurmctld half of the glue: slurm_ctld.c (hooks,
 * init/fini, the slc_ctld_ops_t table) and the one file per mechanism it
 * calls: ctld_launch.c, ctld_holds.c, ctld_actions.c, ctld_restore.c.
 * Include it after Slurm's headers (it names their types).  Everything
 * declared here is hidden: not exported from switch_lua.so.
 *
 * Locking: Slurm's locks always come first; the mutexes of these files
 * (armed_mutex, hold_mutex, svc_mutex, restore_mutex) are leaves taken under
 * them (or alone) and never held while taking a Slurm lock.
 */
#ifndef SWITCH_LUA_CTLD_INTERNAL_H
#define SWITCH_LUA_CTLD_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/*
 * slurmctld's globals, declared weak: the plugin is also loaded by
 * slurmd, slurmstepd and srun, where they do not exist.  Data references
 * are bound when the plugin is loaded (functions only when first called),
 * so a strong reference would make every other process refuse the plugin.
 * The code of these files only runs in slurmctld, where they resolve.
 */
extern list_t *job_list __attribute__((weak));
extern bitstr_t *idle_node_bitmap __attribute__((weak));
extern bitstr_t *cg_node_bitmap __attribute__((weak));
extern time_t last_node_update __attribute__((weak));
extern slurmctld_config_t slurmctld_config __attribute__((weak));

#pragma GCC visibility push(hidden)

/* slurm_ctld.c: what every worker of ours takes (conf R, job W, node W,
 * fed R): what prep_prolog_slurmctld_callback() and
 * _start_prolog_slurmctld_thread() take. */
extern const slurmctld_lock_t ctld_job_node_write_lock;

/*
 * The actions (slc_ctld_ops_t), one file per mechanism.  Slurm's conf R,
 * job W, node W, fed R locks are held by the caller in every one of them.
 */
/* ctld_launch.c */
extern void ctld_op_end_configuring(uint32_t job_id);
/* ctld_holds.c */
extern void ctld_op_hold(uint32_t job_id, const char *nodes, bool hold_nodes);
extern void ctld_op_release(uint32_t job_id, const char *nodes,
			    bool release_nodes);
/* ctld_actions.c */
extern void ctld_op_requeue(uint32_t job_id, const char *reason);
extern void ctld_op_requeue_held(uint32_t job_id, const char *reason);
extern void ctld_op_cancel(uint32_t job_id, const char *reason);
extern void ctld_op_drain(const char *nodes, const char *reason);
extern void ctld_op_forget(uint32_t job_id);
extern void ctld_op_save_state(void);
extern void ctld_op_schedule(void);
extern bool ctld_op_job_may_run(uint32_t job_id, const char *nodes);
/* slurm_ctld.c: slurmctld has begun to stop or re-exec (shutdown_time
 * set): no job or node function of Slurm may be called any more. */
extern bool ctld_slurmctld_stopping(void);
/* When this slurmctld last took control (switch_p_restore): wall clock, and
 * monotonic for the lost-start guard's bound (ctld_op_job_may_run), which a
 * step of the wall clock must not shorten. */
extern time_t ctld_control_time;
extern struct timespec ctld_control_mono;
/* The wall time at which that bound was reached (0: not computed yet): a
 * node's answer counts only from then on.  Under the job lock. */
extern time_t ctld_clear_wall;
/* Whether Slurm's job table is loaded and may be searched: set by the restore
 * thread once it holds the job write lock after read_slurm_conf(), cleared
 * when this slurmctld takes or gives up control (a takeover frees the job
 * table and its hash).  Read under the job lock by ctld_op_forget(), which
 * must not take job_list's own lock: it can be called from inside
 * list_for_each(job_list) (restore), and that lock is not recursive. */
extern atomic_bool ctld_jobs_loaded;

/* ctld_launch.c: add one launch delay of ours to the job (job W held). */
extern void ctld_delay_launch(job_record_t *job_ptr);
/* ctld_launch.c: RET true while a launch delay of ours is outstanding for
 * the job. */
extern bool ctld_armed_has(uint32_t job_id);
/* ctld_launch.c: forget every launch delay of ours (issue 40: a takeover,
 * whose job records are new, with prolog_running 0). */
extern void ctld_armed_reset(void);
/* ctld_holds.c: forget every job and node hold of ours and the job
 * releases still queued, without touching a record (issue 40: a takeover;
 * the records they were of are gone, and a hold of an earlier control
 * period must not be re-asserted on the new ones). */
extern void ctld_holds_reset(void);

/* ctld_holds.c: start the service thread (init).  RET 0 or the errno of
 * pthread_create(). */
extern int ctld_svc_start(void);
/* ctld_holds.c: stop and join the service thread, if started (fini). */
extern void ctld_svc_stop(void);
/* ctld_holds.c: drop the job releases still queued (fini, after the
 * core has stopped). */
extern void ctld_svc_clear_queue(void);

/* ctld_restore.c: the body of switch_p_restore(): start the restore
 * thread unless one has not walked job_list yet.  RET SLURM_SUCCESS or
 * SLURM_ERROR (logged). */
extern int ctld_restore_start(void);
/* ctld_restore.c: join the restore thread, if started (fini). */
extern void ctld_restore_join(void);

#pragma GCC visibility pop

#endif
