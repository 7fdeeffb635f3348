/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * File: plugin/switch_lua_core.h
 *
 * The one interface between the Slurm glue (C files that include Slurm's
 * internal headers: switch_lua.c, slurm_ctld.c, slurm_stepd.c) and the C++
 * core (no Slurm headers).  Plain C types only; no function here throws or
 * longjmps; strings are NUL-terminated UTF-8 owned by the caller unless said.
 *
 * slurmctld side
 *   slc_ctld_init()         from init() in slurmctld: parse SlurmctldParameters,
 *                           start the supervisor, load and check the script,
 *                           ask block_job_complete / setup_special_steps once.
 *   slc_ctld_job_start()    from switch_p_job_start (sched locks held): returns
 *                           1 when the job is ours (--network set): the glue
 *                           then sets CONFIGURING and prolog_running++ and stores
 *                           the returned handle in job_ptr->switch_jobinfo.
 *   slc_ctld_settle_setup() right after it, for an interactive job: true when
 *                           the setup is over already (applied here), and
 *                           then the glue does not delay the launch.
 *   slc_ctld_job_complete() from switch_p_job_complete (job W + node W held).
 *   ops->...                the actions, called by the core either re-entrantly
 *                           from inside the two calls above (locks already
 *                           held) or from the core's worker thread between
 *                           ops->lock() and ops->unlock().
 * slurmstepd side
 *   slc_stepd_*()           preinit / init / postfini, in-process Lua.
 */
#ifndef SWITCH_LUA_CORE_H
#define SWITCH_LUA_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Log levels of ops->log / slc_log_fn: map to error(), info(), verbose(), debug()..debug5(). */
enum slc_log_level {
	SLC_LOG_ERROR = 0,
	SLC_LOG_INFO,
	SLC_LOG_VERBOSE,
	SLC_LOG_DEBUG,
	SLC_LOG_DEBUG2,
	SLC_LOG_DEBUG3,
	SLC_LOG_DEBUG4,
	SLC_LOG_DEBUG5,
};

/* Receives one complete log line, already prefixed "switch/lua: ". */
typedef void (*slc_log_fn)(int level, const char *line);

/* The job as the glue reads it from job_record_t (NULL = nil in Lua). */
typedef struct slc_job {
	uint32_t job_id;
	uint32_t user_id;
	uint32_t group_id;
	uint32_t num_nodes;
	uint32_t restart_count; /* job_ptr->restart_cnt */
	const char *user_name;  /* user_from_job() */
	const char *name;
	const char *nodes;             /* hostlist expression */
	const char *const *node_names; /* expanded, node_names_count entries */
	uint32_t node_names_count;
	const char *partition;
	const char
		*network; /* job_ptr->network; the job is ours iff non-empty */
	const char *account;
	const char *sluid;    /* sluid2str(job_ptr->db_index), or NULL */
	bool batch;           /* job_ptr->batch_flag */
	bool requeue_allowed; /* batch and details->requeue */
	int64_t submit_time;  /* details->submit_time (0 if no details) */
	/* Issue 11: read-only facts for the script (see switch.lua(5)). */
	const char *qos;     /* qos_ptr->name, or NULL */
	uint32_t time_limit; /* minutes; NO_VAL / INFINITE: nil */
	uint32_t num_tasks;  /* details->num_tasks */
	uint32_t num_cpus;   /* total_cpus, else details->min_cpus */
	const char *tres_per_node;
	const char *tres_per_task;
	bool has_array; /* array_task_id != NO_VAL */
	uint32_t array_job_id;
	uint32_t array_task_id;
	bool has_het; /* het_job_id != 0 */
	uint32_t het_job_id;
	uint32_t het_job_offset;
	const char *cluster_name; /* slurm_conf.cluster_name (issue 21) */
} slc_job_t;

/* The step as slurmstepd knows it (stepd_step_rec_t and the launch
 * credential: never the task environment).  Its network and, for a normal
 * step, its task count come from the stepinfo instead (slc_step_facts_t). */
typedef struct slc_step {
	uint32_t job_id;
	uint32_t step_id;
	uint32_t node_id;
	uint32_t num_nodes;
	uint32_t num_tasks;
	uint32_t user_id;
	const char *node_name;
	const char *user_name;
	const char *nodes;
	const char *id; /* "JobId.StepId" as Slurm prints it, e.g. "1234.0" */
	const char *
		partition; /* the launch credential's partition; NULL on a batch step */
	bool batch;
} slc_step_t;

/* Actions the core asks of slurmctld.  Every function is called with
 * slurmctld's conf R, job W, node W, fed R locks held, and must not take
 * them.  `nodes` is the job's hostlist as saved at job_start. */
typedef struct slc_ctld_ops {
	void (*lock)(void); /* lock_slurmctld(conf R, job W, node W, fed R) */
	void (*unlock)(void);
	/* Setup over: prolog_running_decr() if the job still exists. */
	void (*end_configuring)(uint32_t job_id);
	/* Requeue with reason (state_reason FAIL_LAUNCH + state_desc); falls back to
	 * cancel when Slurm refuses the requeue. */
	void (*requeue)(uint32_t job_id, const char *reason);
	/* switch_max_setup_failures reached: requeue held (priority 0, admin
	 * hold released by `scontrol release`, state_desc = reason); falls back
	 * to cancel when Slurm refuses the requeue. */
	void (*requeue_held)(uint32_t job_id, const char *reason);
	/* Cancel with reason (state_desc), like a failed PrologSlurmctld. */
	void (*cancel)(uint32_t job_id, const char *reason);
	/* Keep the job COMPLETING (epilog hold); with hold_nodes, its nodes too. */
	void (*hold)(uint32_t job_id, const char *nodes, bool hold_nodes);
	/* Undo hold() (release_nodes as it was held). */
	void (*release)(uint32_t job_id, const char *nodes, bool release_nodes);
	/* drain_nodes(nodes, reason, SlurmUser). */
	void (*drain)(const char *nodes, const char *reason);
	/* The job's switch state ended: set job_ptr->switch_jobinfo = NULL. */
	void (*forget)(uint32_t job_id);
	/* schedule_job_save() (lock-free in Slurm). */
	void (*save_state)(void);
	slc_log_fn log;
	/* The lost start (issue 24): whether a node of `nodes` may still run an
	 * instance of job_id that slurmctld no longer knows it launched.  NULL:
	 * never (such an attempt is torn down at once). */
	bool (*job_may_run)(uint32_t job_id, const char *nodes);
	/* With lock() held: slurmctld has begun to stop or re-exec (its
	 * shutdown_time is set) and no action may call into it any more
	 * (Slurm 25.05 and later); the core then applies nothing until
	 * switch_p_restore.  NULL: never. */
	bool (*stopping)(void);
	/* queue_job_scheduler(): pool IDs came free while jobs wait PENDING
	 * for them (issue 38), so Slurm schedules again now rather than at
	 * its next sched_interval.  Lock-free in Slurm.  NULL: never. */
	void (*schedule)(void);
} slc_ctld_ops_t;

/* SlurmUser's uid (slurm_conf.slurm_user_id), from init() in every process
 * before slc_ctld_init / slc_stepd_init: the script, the directories above
 * it and its modules must be owned by root or this user and not writable by
 * group or others (switch.lua(5)), or they are refused. */
void slc_set_slurm_user(uint32_t uid);

/* Whether the Slurm this plugin was built for calls job_init for batch and
 * interactive steps when setup_special_steps() is true (switch.lua(5):
 * SETUP_SPECIAL_STEPS; Slurm 25.11 and later: true, 24.11: false, the
 * default).  From init() in every process, before slc_ctld_init /
 * slc_stepd_init: with false, slurmctld logs that a true answer is
 * ignored and slurmstepd does not ask; with true, slurmctld keeps the
 * answer for slc_ctld_setup_special_steps() and every slurmstepd asks
 * block_job_complete() and setup_special_steps() when it loads the script.
 * Tests set it directly; the glue calls slc_set_slurm_series(). */
void slc_set_slurm_special_steps(bool supported);
/* The Slurm series the glue was compiled for (slurm_compat.h:
 * SLURM_COMPAT_SERIES, e.g. 2411), from init() in every process before
 * slc_ctld_init / slc_stepd_init: sets slc_set_slurm_special_steps() from
 * the core's one table of per-series facts (common/slurm_series.hpp).
 * RET 0, or -1 for a series the table does not know (special steps off). */
int slc_set_slurm_series(unsigned series);

/* `state_dir`: StateSaveLocation, where the journal switch_lua.journal
 * lives (NULL: no journal).
 * RET 0, or -1 after logging why (bad SlurmctldParameters).  A script that
 * does not load is logged, not fatal: every call loads it afresh, so each
 * job_start then fails ("switch setup failed: ... could not load the
 * script: file:line: ...") until the file is fixed, without a restart.  `libexec_dir` holds switch-lua-supervisor and
 * switch-lua-runner. */
int slc_ctld_init(const slc_ctld_ops_t *ops, const char *script_path,
		  const char *slurmctld_params, const char *libexec_dir,
		  const char *state_dir);
/* switch_p_save (before shutdown, a reconfigure re-exec, or standby after
 * handing control back): kill every supervised child, stop the supervisor,
 * and give up control: the journal is closed and its lock released. */
void slc_ctld_stop_children(void);
/* switch_p_restore: this slurmctld now holds control.  Takes the journal's
 * lock (waiting for a controller that is giving it up), reads the journal
 * and the last good script's copy as they are now.  keep_jobs: the job
 * states in memory stay (a failed reconfigure resumes; Slurm loads no job
 * state), else they are dropped (Slurm loads its job state next).
 * A lock held by another slurmctld past 5 s is fenced out (issue 40).
 * RET 0 in control, or 1 after logging why not: the core is WAITING (new
 * setups wait) and slc_ctld_retry_control() tries again; never a reason
 * for Slurm to stop. */
int slc_ctld_take_control(bool keep_jobs);
/* WAITING: take control again (no wait for the lock).  RET 1 in control, 0
 * not WAITING and not in control (given up meanwhile), -1 still WAITING. */
int slc_ctld_retry_control(void);
void slc_ctld_fini(void);
/* block_job_complete as the script answered at init. */
bool slc_ctld_block_job_complete(void);
/* setup_special_steps as the script answered at init; false when
 * slc_set_slurm_special_steps(false) or before init.  switch.lua contract:
 * setup_special_steps (Slurm 25.11+: slurmctld builds stepinfo for the
 * batch and extern credentials and the interactive step iff true). */
bool slc_ctld_setup_special_steps(void);

/* switch_p_job_start.  RET the handle for job_ptr->switch_jobinfo when the job
 * is ours (the glue then sets CONFIGURING, prolog_running++), else NULL. */
void *slc_ctld_job_start(const slc_job_t *job);
/* Slurm 25.11+, switch_p_job_start(job, test_only=true), under the sched
 * locks, for a job with --network: RET true when the job may start now;
 * false keeps it PENDING (a declared pool has too few IDs free; the glue
 * sets Reason=Resources).  From memory, never I/O (CtldCore::admit). */
bool slc_ctld_job_admit(uint32_t job_id);
/* switch_p_job_start of an interactive job, after slc_ctld_job_start()
 * returned a handle, the sched locks still held: waits at most
 * SlurmctldParameters=switch_interactive_wait ms for the setup and applies
 * it when it succeeded.  RET true: the setup is over, do not delay the
 * launch; false: delay it as for any job (CtldCore::settle_setup). */
bool slc_ctld_settle_setup(uint32_t job_id);
/* What slurmctld says of the job's nodes when it ends (issue 20, per-node
 * attribution), read from the job record and the node table by the glue;
 * NULL members: not known.  The core makes job.failed_nodes of them. */
typedef struct slc_job_end {
	/* job_ptr->nodes now: a --no-kill job whose node failed had it
	 * removed (excise_node_from_job()). */
	const char *nodes_now;
	/* Host list of the nodes of job_ptr->node_bitmap that are DOWN,
	 * NOT_RESPONDING or FAIL, and job_ptr->failed_node. */
	const char *failed_nodes;
} slc_job_end_t;

/* switch_p_job_complete, with job_ptr->switch_jobinfo (may be NULL: then
 * nothing happens) and what slurmctld says of its nodes (`end`, may be
 * NULL: nothing). */
void slc_ctld_job_complete(uint32_t job_id, void *handle,
			   const slc_job_end_t *end);
/* From the glue's restore thread after a restart (started in
 * switch_p_restore; it waits for the locks, then walks job_list with them
 * held), once per job whose switch_jobinfo is non-NULL.  `configuring`: the
 * job is RUNNING+CONFIGURING.  RET what to do with the job's launch:
 *   0  nothing;
 *   1  the core re-runs the setup (or first job_complete(nil) for the killed
 *      one): prolog_running++ (restore zeroed it) so the job waits;
 *   2  the journal says the setup returned and the launch was released
 *      before the crash: end CONFIGURING (job_config_fini) WITHOUT launching
 *      the batch script again;
 *   3  the setup had returned but the launch was not released: end
 *      CONFIGURING and launch (prolog_running_decr with prolog_running 0).
 * Held teardowns are re-run from slc_ctld_job_complete, which Slurm calls
 * again for COMPLETING jobs on restart; jobs it did not reach are re-run
 * here. */
int slc_ctld_recover_job(uint32_t job_id, void *handle, bool configuring);
/* After the restore walk, with the same locks held: tear down the setups the
 * journal knows and no job record carries any more. */
void slc_ctld_reconcile(void);

/* Pack the handle's state (handle may be NULL: the "absent" record).
 * RET malloc'd bytes in *buf (free with slc_free), length in *len. */
void slc_ctld_pack(void *handle, char **buf, size_t *len);
/* Unpack a record.  RET 0 with *handle set (NULL for "absent"), or -1 after
 * logging why the record is unreadable: the job then keeps no switch state
 * (nothing is invented), and the glue must STILL return SLURM_SUCCESS to
 * Slurm once it consumed the bytes, so the job record itself loads.  In a
 * process other than slurmctld (no slc_ctld_init) the record is only kept
 * for a later pack, never interpreted. */
int slc_ctld_unpack(const char *buf, size_t len, void **handle);

/* What slurmctld recorded of one step (step_record_t), for its stepinfo:
 * the step hooks take these from the signed stepinfo, never from the task
 * environment or the unsigned part of the launch request (issue 21). */
typedef struct slc_step_facts {
	/* step_ptr->network: the step's --network, else the job's (Slurm's
	 * step_create defaults it); NULL: the job's. */
	const char *network;
	/* step_ptr->step_layout->task_cnt (0: not known). */
	uint32_t num_tasks;
} slc_step_facts_t;

/* switch_p_build_stepinfo: the stepinfo record for a step of the job (the
 * jobinfo + sluid, the job's cluster_name, and the step's `facts`; NULL
 * for the batch and extern credentials: the job's network, no task
 * count), malloc'd into *buf and *len.  RET 1 when the job has
 * jobinfo (a managed, set-up job), 0 when not (no stepinfo: *buf NULL).
 * In slurmctld from the core's state; in the job's stepmgr slurmstepd
 * (after slc_stepmgr_init) from the jobinfo record slurmctld relayed
 * (the handle slc_ctld_unpack kept as bytes); 0 anywhere else. */
int slc_ctld_stepinfo(void *handle, const slc_step_facts_t *facts, char **buf,
		      size_t *len);

/* Slurm 25.05+ frees job records with their switch_jobinfo
 * (switch_p_free_jobinfo; 25.11: switch_p_jobinfo_free), and
 * job_array_split() copies the pointer into other records, so one handle
 * can be handed to this several times, under several job ids, even after
 * it was freed.  The handle is freed only when
 * it is a live handle of this core (pointers it never handed out, or
 * freed already, are never dereferenced) and, in slurmctld, belongs to
 * `job_id` (the record it was made for); its job's switch state in the
 * core (journal included) is not touched.  RET 1 when freed, 0 when left
 * alone.  Any process; safe after slc_ctld_fini. */
int slc_jobinfo_free(void *handle, uint32_t job_id);
/* The job id of a live handle, for log lines; 0 when unknown (a record
 * kept as bytes and not read yet) or not a live handle. */
uint32_t slc_jobinfo_job_id(void *handle);

/* The job's stepmgr slurmstepd (Slurm 25.11+, SlurmctldParameters=
 * enable_stepmgr): from now on slc_ctld_stepinfo() builds stepinfo in this
 * process from the relayed jobinfo records, with switch_script_mismatch
 * from `slurmctld_params` (slurm_conf.slurmctld_params, as slurmctld
 * reads it); `log` receives this process's stepinfo errors.  RET 0, or -1
 * after logging why (the steps then get no stepinfo). */
int slc_stepmgr_init(const char *slurmctld_params, slc_log_fn log);
/* The job's extern step ended in its stepmgr slurmstepd: no more stepinfo
 * is built in this process. */
void slc_stepmgr_fini(uint32_t job_id);

void slc_free(void *p);

/* No step: slc_log_subject() for a line about a job, not one of its steps.
 * (Slurm's NO_VAL; never a step id Slurm hands to a plugin.) */
#define SLC_NO_STEP 0xfffffffeu

/* The subject of a log line, as every line of the plugin names it
 * (common/log_stamp.hpp): "JobId=42", "JobId=42 StepId=42.batch
 * step_postfini" (step_id SLC_NO_STEP: no step; hook NULL: none; job_id 0:
 * no job, then ""). Written into buf (len bytes, NUL-terminated, cut if
 * too long); RET buf.  Never fails, allocates nothing the caller frees. */
const char *slc_log_subject(char *buf, size_t len, uint32_t job_id,
			    uint32_t step_id, const char *hook);

/* slurmstepd side.  Loads the script once per process; RET 0 / -1 (script
 * refused: logged; then a managed step, one with a stepinfo, fails in
 * preinit and init, and an unmanaged one is left alone: switch.lua(5),
 * "When the script does not load").  With
 * slc_set_slurm_special_steps(true), then asks the script's
 * block_job_complete() and setup_special_steps() (switch.lua contract:
 * every slurmstepd asks both when it starts; an error or a non-boolean is
 * logged and taken as false). */
int slc_stepd_init(const char *script_path, slc_log_fn log);
/* setup_special_steps as this slurmstepd's script answered at
 * slc_stepd_init; false without slc_set_slurm_special_steps(true) or
 * before slc_stepd_init.  True when the script did not load here (outside
 * the job's stepmgr): Slurm then calls job_init for the batch and
 * interactive steps, and slc_stepd_init_step fails those that carry a
 * stepinfo (a managed step never runs without its step hooks). */
bool slc_stepd_setup_special_steps(void);
/* stepinfo = the record built by slc_ctld_stepinfo (NULL/0: none; the
 * hooks do not run for a job without stepinfo: contract).
 * RET 0 proceed, -1 fail the step (ESLURM_INTERCONNECT_FAILURE). */
int slc_stepd_preinit(const slc_step_t *step, const char *stepinfo, size_t len);
/* RET as preinit; environment changes through the callbacks (Slurm's own
 * SLURM_* names are never passed). */
int slc_stepd_init_step(
	const slc_step_t *step, const char *stepinfo, size_t len,
	void (*set_env)(void *ctx, const char *name, const char *value),
	void (*unset_env)(void *ctx, const char *name), void *ctx);
/* What slurmctld says of the step's job now, asked by the glue for a step
 * that did not end by itself (aborted, or its tasks killed): it may run
 * where slurmctld no longer runs its job, the node back after a partition
 * (issue 20). */
typedef struct slc_job_now {
	bool found;             /* slurmctld knows the job */
	uint32_t restart_count; /* its restart_cnt (a requeue bumps it) */
	const char *state;      /* job_state_string(), e.g. "PENDING" */
} slc_job_now_t;

/* RET 0, or -1: drain the node (stepd_drain_node with the returned reason in
 * *reason, malloc'd, free with slc_free).  `now` (NULL: not asked): when it
 * says the job was requeued since the setup of the step's stepinfo (a
 * higher restart count) or is gone, one line says that this postfini is of
 * an attempt that is over, naming it; the hook runs all the same, with
 * that attempt in step.attempt. */
int slc_stepd_postfini(const slc_step_t *step, const char *stepinfo, size_t len,
		       const slc_job_now_t *now, char **reason);

#ifdef __cplusplus
}
#endif
#endif
