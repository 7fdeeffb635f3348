/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * File: plugin/ctld_launch.c
 *
 * The launch delay of switch/lua in slurmctld (Slurm 24.11), and the
 * count of our outstanding prolog_running increments per job.
 *
 *   launch delay   details->prolog_running + JOB_CONFIGURING, as
 *                  PrologSlurmctld does; undone with prolog_running_decr().
 *
 * Locking: armed_mutex is a leaf taken under Slurm's locks (or alone) and
 * never held while taking a Slurm lock.
 */

#include "config.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "slurm/slurm.h"

#include "src/common/slurm_xlator.h"

#include "src/common/log.h"
#include "src/common/macros.h"
#include "src/common/xmalloc.h"
#include "src/slurmctld/job_scheduler.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"

#include "switch_lua_glue.h"
#include "ctld_internal.h"

/* ---------------------------------------------------------------------- */
/* Our outstanding prolog_running increments, per job.                    */
/* ---------------------------------------------------------------------- */

/*
 * prolog_running is shared with PrologSlurmctld, zeroed by a restart, and
 * left alone by a failed reconfigure (which calls switch_p_restore again
 * in the same process).  Counting our own increments lets end_configuring
 * decrement exactly what we added, once, and lets a repeated restore skip
 * jobs that are still armed.
 */
typedef struct {
	uint32_t job_id;
	uint32_t count;
} armed_t;

static pthread_mutex_t armed_mutex = PTHREAD_MUTEX_INITIALIZER;
static armed_t *armed = NULL;
static size_t armed_cnt = 0, armed_cap = 0;

static armed_t *_armed_find(uint32_t job_id)
{
	for (size_t i = 0; i < armed_cnt; i++)
		if (armed[i].job_id == job_id)
			return &armed[i];
	return NULL;
}

static void _armed_add(uint32_t job_id)
{
	armed_t *a;

	slurm_mutex_lock(&armed_mutex);
	if (!(a = _armed_find(job_id))) {
		if (armed_cnt == armed_cap) {
			armed_cap = armed_cap ? 2 * armed_cap : 16;
			xrecalloc(armed, armed_cap, sizeof(*armed));
		}
		a = &armed[armed_cnt++];
		a->job_id = job_id;
		a->count = 0;
	}
	a->count++;
	slurm_mutex_unlock(&armed_mutex);
}

/* RET true when one increment of ours was outstanding (now taken). */
static bool _armed_take(uint32_t job_id)
{
	armed_t *a;
	bool found = false;

	slurm_mutex_lock(&armed_mutex);
	if ((a = _armed_find(job_id)) && a->count) {
		found = true;
		if (!--a->count)
			*a = armed[--armed_cnt];
	}
	slurm_mutex_unlock(&armed_mutex);
	return found;
}

extern bool ctld_armed_has(uint32_t job_id)
{
	bool found;

	slurm_mutex_lock(&armed_mutex);
	found = (_armed_find(job_id) != NULL);
	slurm_mutex_unlock(&armed_mutex);
	return found;
}

extern void ctld_armed_reset(void)
{
	slurm_mutex_lock(&armed_mutex);
	armed_cnt = 0;
	slurm_mutex_unlock(&armed_mutex);
}

/* Add one launch delay of ours to the job (job W held). */
extern void ctld_delay_launch(job_record_t *job_ptr)
{
	if (!job_ptr->details) {
		sl_job_error(
			job_ptr->job_id,
			": job has no details, its launch cannot be delayed");
		return;
	}
	job_ptr->details->prolog_running++;
	_armed_add(job_ptr->job_id);
	if (IS_JOB_RUNNING(job_ptr))
		job_state_set_flag(job_ptr, JOB_CONFIGURING);
}

/* An action (slc_ctld_ops_t): the caller holds Slurm's conf R, job W,
 * node W, fed R locks. */
extern void ctld_op_end_configuring(uint32_t job_id)
{
	job_record_t *job_ptr = find_job_record(job_id);

	if (!_armed_take(job_id)) {
		sl_job_debug(
			job_id,
			": setup over, no launch delay of ours outstanding");
		return;
	}
	if (!job_ptr) {
		sl_job_debug(job_id, ": setup over, the job is gone");
		return;
	}
	if (job_ptr->details && job_ptr->details->prolog_running) {
		sl_job_debug(job_id, ": setup over, ending the launch delay");
		prolog_running_decr(job_ptr);
	} else {
		sl_job_debug(job_id, ": setup over, prolog_running already 0");
	}
}
