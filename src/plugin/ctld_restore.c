/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * File: plugin/ctld_restore.c
 *
 * The restart of switch/lua in slurmctld (Slurm 24.11): the restore thread
 * that re-arms the setups the core re-runs and has the core reconcile its
 * journal.
 *
 *   restart        switch_p_restore() starts a thread that waits for the
 *                  startup locks and re-arms the jobs the core re-runs;
 *                  a job whose launch the core's journal says was released
 *                  before the crash gets job_config_fini() (CONFIGURING
 *                  ended) without launch_job(), so job_time_limit() does
 *                  not launch its batch script a second time; then the
 *                  core tears down the journal's orphaned attempts.
 *   WAITING        (issue 40) when switch_p_restore could not take control
 *                  of the journal, the thread first tries again every
 *                  second, and walks only once control is taken; it ends
 *                  without walking when control is given up meanwhile
 *                  (switch_p_save) or at fini.
 *
 * Locking: Slurm's locks always come first; restore_mutex is a leaf taken
 * under them (or alone) and never held while taking a Slurm lock.
 */

#include "config.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"

#include "src/common/slurm_xlator.h"

#include "src/common/list.h"
#include "src/common/log.h"
#include "src/common/macros.h"
#include "src/slurmctld/job_scheduler.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"

#include "switch_lua_core.h"
#include "switch_lua_glue.h"
#include "ctld_internal.h"
#include "mono_wait.h"

/* ---------------------------------------------------------------------- */
/* Restart: re-arm the outstanding setups.                                */
/* ---------------------------------------------------------------------- */

static pthread_mutex_t restore_mutex = PTHREAD_MUTEX_INITIALIZER;
static bool restore_pending = false; /* a thread has not walked yet */
static bool restore_started = false; /* restore_thread needs a join */
static pthread_t restore_thread;
static bool restore_stop = false; /* fini: the WAITING loop ends */
static bool restore_cond_made = false;
static pthread_cond_t restore_cond; /* sl_mono_cond_init(): wakes the loop */

typedef struct {
	uint32_t seen;
	uint32_t rearmed;
	uint32_t unconfigured;
	uint32_t launched;
} restore_stats_t;

static int _recover_one(void *x, void *arg)
{
	job_record_t *job_ptr = x;
	restore_stats_t *stats = arg;
	bool configuring;

	if (!job_ptr->switch_jobinfo)
		return 0;
	stats->seen++;
	configuring = IS_JOB_RUNNING(job_ptr) && IS_JOB_CONFIGURING(job_ptr);
	switch (slc_ctld_recover_job(job_ptr->job_id, job_ptr->switch_jobinfo,
				     configuring)) {
	case 1:
		break;
	case 2:
		/*
		 * The setup had returned and the launch was released before
		 * the crash; Slurm's saved record is older (CONFIGURING).
		 * job_time_limit() would launch_job() a job that is
		 * CONFIGURING with prolog_running 0: end CONFIGURING here,
		 * without launching the batch script a second time.
		 */
		if (configuring && !ctld_armed_has(job_ptr->job_id) &&
		    (!job_ptr->details || !job_ptr->details->prolog_running)) {
			job_config_fini(job_ptr);
			stats->unconfigured++;
			sl_job_info(
				job_ptr->job_id,
				": launch released before the restart, CONFIGURING ended without a second launch");
		}
		return 0;
	case 3:
		if (configuring && !ctld_armed_has(job_ptr->job_id) &&
		    (!job_ptr->details || !job_ptr->details->prolog_running)) {
			stats->launched++;
			sl_job_info(
				job_ptr->job_id,
				": switch setup had returned before the restart, launching the job");
			prolog_running_decr(job_ptr);
		}
		return 0;
	default:
		return 0;
	}
	/* Still armed in this process (a failed reconfigure calls restore
	 * again without zeroing prolog_running): our increment stands. */
	if (ctld_armed_has(job_ptr->job_id))
		return 0;
	if (!configuring)
		sl_job_error(
			job_ptr->job_id,
			": setup re-run for a job that is not RUNNING+CONFIGURING");
	ctld_delay_launch(job_ptr);
	stats->rearmed++;
	sl_job_info(job_ptr->job_id,
		    ": switch setup re-run after restart, launch delayed");
	return 0;
}

/* Issue 40: while the core is WAITING, retry taking control every second.
 * RET true once in control (or never WAITING), false when control was
 * given up meanwhile or fini stops the thread. */
static bool _wait_for_control(void)
{
	struct timespec deadline;
	int rc;

	slurm_mutex_lock(&restore_mutex);
	while (!restore_stop) {
		slurm_mutex_unlock(&restore_mutex);
		rc = slc_ctld_retry_control();
		slurm_mutex_lock(&restore_mutex);
		if (rc >= 0) {
			slurm_mutex_unlock(&restore_mutex);
			return rc == 1;
		}
		sl_mono_deadline(&deadline, 1);
		if (restore_cond_made)
			(void) sl_mono_timedwait(&restore_cond, &restore_mutex,
						 &deadline);
	}
	slurm_mutex_unlock(&restore_mutex);
	return false;
}

static void *_restore_main(void *arg)
{
	restore_stats_t stats = {0};

	if (!_wait_for_control()) {
		sl_info("restore: control not taken (given up, or stopping): no job recovered here");
		slurm_mutex_lock(&restore_mutex);
		restore_pending = false;
		slurm_mutex_unlock(&restore_mutex);
		return NULL;
	}

	/* Blocks until slurmctld's startup releases config_write_lock, after
	 * read_slurm_conf() has loaded job_list. */
	lock_slurmctld(ctld_job_node_write_lock);
	atomic_store(&ctld_jobs_loaded, true);
	if (job_list)
		(void) list_for_each(job_list, _recover_one, &stats);
	slc_ctld_reconcile();
	unlock_slurmctld(ctld_job_node_write_lock);
	if (stats.seen)
		sl_info("recovered %u jobs with switch state: %u setups re-armed, %u released before the restart (CONFIGURING ended, not launched again), %u launched now",
			stats.seen, stats.rearmed, stats.unconfigured,
			stats.launched);

	slurm_mutex_lock(&restore_mutex);
	restore_pending = false;
	slurm_mutex_unlock(&restore_mutex);
	return NULL;
}

/* The body of switch_p_restore() (slurm_ctld.c), which has checked that the
 * plugin is active. */
extern int ctld_restore_start(void)
{
	int rc;

	slurm_mutex_lock(&restore_mutex);
	if (restore_pending) {
		/* That thread has not walked job_list yet; it will see the
		 * same list this call would. */
		slurm_mutex_unlock(&restore_mutex);
		return SLURM_SUCCESS;
	}
	if (restore_started)
		pthread_join(restore_thread, NULL); /* done or finishing */
	if (!restore_cond_made && !sl_mono_cond_init(&restore_cond))
		restore_cond_made = true;
	restore_stop = false;
	if ((rc = pthread_create(&restore_thread, NULL, _restore_main, NULL))) {
		restore_started = false;
		slurm_mutex_unlock(&restore_mutex);
		sl_error("cannot start the restore thread: %s", strerror(rc));
		return SLURM_ERROR;
	}
	restore_started = restore_pending = true;
	slurm_mutex_unlock(&restore_mutex);
	return SLURM_SUCCESS;
}

/* From fini: the thread is done or finishing. */
extern void ctld_restore_join(void)
{
	slurm_mutex_lock(&restore_mutex);
	restore_stop = true; /* a WAITING loop ends at once */
	if (restore_cond_made)
		slurm_cond_signal(&restore_cond);
	if (restore_started) {
		slurm_mutex_unlock(&restore_mutex);
		pthread_join(restore_thread, NULL);
		slurm_mutex_lock(&restore_mutex);
		restore_started = restore_pending = false;
	}
	slurm_mutex_unlock(&restore_mutex);
}
