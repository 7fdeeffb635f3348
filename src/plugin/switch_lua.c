/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * File: plugin/switch_lua.c
 *
 * switch/lua, every supported Slurm series: the plugin identity,
 * init()/fini(), and the glue of the hooks that only move bytes (jobinfo
 * and stepinfo packing, freeing) or answer a question every process asks
 * (setup_special_steps).  The switch_p_* symbols Slurm looks up are in the
 * one export file of every series (switch_ops.c, the tree's switch ABI),
 * which calls these; the slurmctld hooks are in slurm_ctld.c, the
 * slurmstepd hooks in slurm_stepd.c; everything with a decision in it is
 * in the C++ core behind switch_lua_core.h.
 *
 * Which process does what (Slurm loads the plugin in all of them):
 *   slurmctld   init() starts the core (script check, supervisor);
 *               job_start/job_complete/restore/save, jobinfo packing.
 *   slurmstepd  init() loads the script in-process; preinit/init/postfini
 *               for normal steps of managed jobs.
 *   slurmd, srun, others
 *               init() logs at debug level and does nothing else: srun
 *               loads every switch plugin it finds, as the user.
 */

#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"

#include "src/common/slurm_xlator.h"

#include "src/common/log.h"
#include "src/common/pack.h"
#include "src/common/read_config.h"
#include "src/common/slurm_step_layout.h"
#include "src/common/run_in_daemon.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/interfaces/switch.h"

#include "slurm_compat.h"
#include "switch_lua_core.h"
#include "switch_lua_glue.h"

/*
 * plugin_id: written into the job state file and into every step
 * credential next to our payload, and compared by Slurm with the ids of all
 * switch plugins it loads (a duplicate, or a value below 100, is fatal).
 * Slurm's own ids are 100-105 (SWITCH_PLUGIN_* in slurm/slurm.h), counting
 * up; 19541 is 0x4c55, "LU", far from that range.  Never change it: state
 * files with another id are skipped and the jobs lose their switch state.
 */
#define SWITCHLUA_PLUGIN_ID 19541

const char plugin_name[] = "switch lua plugin";
const char plugin_type[] = "switch/lua";
/* Must equal the running daemons' version to the micro version (Slurm masks
 * with 0xffffff).  meson checks that the configured tree and the installed
 * /usr/include/slurm/slurm_version.h agree. */
const uint32_t plugin_version = SLURM_VERSION_NUMBER;
const uint32_t plugin_id = SWITCHLUA_PLUGIN_ID;

/*
 * Framing of our payloads, inside Slurm's own (length, plugin id) frame:
 *   jobinfo:  u8 format version, then packmem(core bytes)    (len 0: none)
 *   stepinfo: u8 format version, then packmem(stepinfo bytes) (len 0: none)
 * Every future format keeps "u8 version, packmem" so that an older plugin
 * can skip a record it does not understand while consuming exactly what
 * was written (Slurm fails the whole job record on a length mismatch).
 */
#define SWITCHLUA_JOBINFO_FORMAT  1
#define SWITCHLUA_STEPINFO_FORMAT 1

/* Logging of the core's lines.  They are complete and prefixed already. */
extern void switchlua_log_line(int level, const char *line)
{
	if (!line)
		return;
	switch (level) {
	case SLC_LOG_ERROR:
		error("%s", line);
		break;
	case SLC_LOG_INFO:
		info("%s", line);
		break;
	case SLC_LOG_VERBOSE:
		verbose("%s", line);
		break;
	case SLC_LOG_DEBUG:
		debug("%s", line);
		break;
	case SLC_LOG_DEBUG2:
		debug2("%s", line);
		break;
	case SLC_LOG_DEBUG3:
		debug3("%s", line);
		break;
	case SLC_LOG_DEBUG4:
		debug4("%s", line);
		break;
	default:
		debug5("%s", line);
		break;
	}
}

extern int init(void)
{
	char *script = NULL;
	int rc = SLURM_SUCCESS;

	slc_set_slurm_user(slurm_conf.slurm_user_id);
	if (slc_set_slurm_series(SLURM_COMPAT_SERIES))
		sl_error(
			"Slurm series %d is not in the plugin's table: special steps off",
			SLURM_COMPAT_SERIES);
	if (running_in_slurmctld()) {
		script = get_extra_conf_path("switch.lua");
		rc = switchlua_ctld_init(script);
	} else if (running_in_slurmstepd()) {
		script = get_extra_conf_path("switch.lua");
		rc = switchlua_stepd_init(script);
	} else {
		/* slurmd and srun load every switch plugin; stay silent. */
		sl_debug("loaded, inactive in this process");
	}
	xfree(script);
	return rc;
}

extern int fini(void)
{
	if (switchlua_ctld_active())
		switchlua_ctld_fini();
	return SLURM_SUCCESS;
}

/*
 * jobinfo.  24.11 calls pack for every job, NULL included (25.11 only for
 * a non-NULL one), and unpack for every record carrying our id, in
 * slurmctld (state file) and in the stepmgr slurmstepd / slurmd (job
 * record relay).  The core packs NULL as its own "absent" record; outside
 * slurmctld it keeps the bytes unread.
 */
extern void switchlua_jobinfo_pack(void *switch_jobinfo, buf_t *buffer,
				   uint16_t protocol_version)
{
	char *bytes = NULL;
	size_t len = 0;

	pack8(SWITCHLUA_JOBINFO_FORMAT, buffer);
	slc_ctld_pack(switch_jobinfo, &bytes, &len);
	if (len > MAX_PACK_MEM_LEN) {
		sl_error(
			"jobinfo of %zu bytes is too large to save, saving none",
			len);
		len = 0;
	}
	packmem(bytes, (uint32_t) len, buffer);
	slc_free(bytes);
}

extern int switchlua_jobinfo_unpack(void **switch_jobinfo, buf_t *buffer,
				    uint16_t protocol_version)
{
	uint8_t format = 0;
	char *bytes = NULL;
	uint32_t len = 0;
	void *handle = NULL;

	*switch_jobinfo = NULL;
	safe_unpack8(&format, buffer);
	safe_unpackmem_ptr(&bytes, &len, buffer);

	if (format != SWITCHLUA_JOBINFO_FORMAT) {
		sl_error(
			"jobinfo record of unknown format %u (%u bytes) skipped; the job keeps no switch state",
			format, len);
		return SLURM_SUCCESS;
	}
	if (!len)
		return SLURM_SUCCESS;
	/* A record the core refuses costs the job its switch state, not the
	 * job itself: failing here would drop the whole job record. */
	if (slc_ctld_unpack(bytes, len, &handle) != 0)
		return SLURM_SUCCESS;
	*switch_jobinfo = handle;
	return SLURM_SUCCESS;

unpack_error:
	sl_error("truncated jobinfo record");
	return SLURM_ERROR;
}

/*
 * 25.05+: Slurm frees a job record (job_record.c, _job_record_delete()),
 * in every process that holds one, and hands us the record (25.05:
 * free_jobinfo, 25.11: jobinfo_free).
 * job_array_split() memcpy()s a record, switch_jobinfo included, so one
 * handle can sit in several records: the core frees it only for the record
 * that owns it, once (slc_jobinfo_free()), and never reads a pointer it
 * did not hand out.
 */
extern void switchlua_jobinfo_free(job_record_t *job_ptr)
{
	if (!job_ptr || !job_ptr->switch_jobinfo)
		return;
	/* One debug line per record either way: the e2e tests count them
	 * (t1303: no handle freed twice, none leaked). */
	if (!slc_jobinfo_free(job_ptr->switch_jobinfo, job_ptr->job_id))
		sl_stamped_(
			debug, job_ptr->job_id, SLC_NO_STEP, "jobinfo_free",
			": the switch_jobinfo pointer is not this record's (copied by job_array_split or already freed), left alone");
	else
		sl_stamped_(debug, job_ptr->job_id, SLC_NO_STEP, "jobinfo_free",
			    ": this record's jobinfo freed");
	job_ptr->switch_jobinfo = NULL;
}

/* stepinfo: a copy of the bytes the core derives from the job's jobinfo. */
static switchlua_stepinfo_t *_stepinfo_new(const char *data, uint32_t len)
{
	switchlua_stepinfo_t *si = xmalloc(sizeof(*si));

	si->magic = SWITCHLUA_STEPINFO_MAGIC;
	if (data && len) {
		si->data = xmalloc(len);
		memcpy(si->data, data, len);
		si->len = len;
	}
	return si;
}

/*
 * The stepinfo of a step of the job whose jobinfo is `switch_jobinfo`:
 * from slurmctld, or from the stepmgr slurmstepd (25.11+, after
 * stepmgr_init).  `step_ptr` is NULL for the batch and extern credentials
 * (25.11+, only when setup_special_steps is true).  Never fails: a job
 * without jobinfo, or a stepinfo too large, gives the step none.
 *
 * The step's own facts travel in it (slc_step_facts_t): step_ptr->network,
 * which step_create() set from the step request's --network (else the
 * job's), and the layout's task count, so that the step hooks never read
 * them from the task environment or the unsigned launch request (issue 21).
 */
extern int switchlua_stepinfo_build(switchlua_stepinfo_t **stepinfo,
				    void *switch_jobinfo,
				    step_record_t *step_ptr)
{
	uint32_t job_id, step_id = SLC_NO_STEP;
	slc_step_facts_t facts = {0};
	char *bytes = NULL;
	size_t len = 0;

	*stepinfo = NULL;
	if (!switch_jobinfo)
		return SLURM_SUCCESS;
	job_id = slc_jobinfo_job_id(switch_jobinfo);
	if (step_ptr) {
		job_id = step_ptr->step_id.job_id;
		step_id = step_ptr->step_id.step_id;
		facts.network = step_ptr->network;
		if (step_ptr->step_layout)
			facts.num_tasks = step_ptr->step_layout->task_cnt;
	}

	if (slc_ctld_stepinfo(switch_jobinfo, step_ptr ? &facts : NULL, &bytes,
			      &len) == 1 &&
	    bytes && len) {
		if (len > MAX_PACK_MEM_LEN) {
			sl_step_error(
				job_id, step_id, "stepinfo_build",
				": stepinfo of %zu bytes is too large, step gets none",
				len);
		} else {
			*stepinfo = _stepinfo_new(bytes, (uint32_t) len);
			sl_step_debug2(job_id, step_id, "stepinfo_build",
				       ": stepinfo of %zu bytes", len);
		}
	}
	slc_free(bytes);
	return SLURM_SUCCESS;
}

extern void switchlua_stepinfo_duplicate(switchlua_stepinfo_t *source,
					 switchlua_stepinfo_t **dest)
{
	*dest = NULL;
	if (source && (source->magic == SWITCHLUA_STEPINFO_MAGIC))
		*dest = _stepinfo_new(source->data, source->len);
}

extern void switchlua_stepinfo_free(switchlua_stepinfo_t *stepinfo)
{
	if (!stepinfo)
		return;
	stepinfo->magic = ~SWITCHLUA_STEPINFO_MAGIC;
	xfree(stepinfo->data);
	xfree(stepinfo);
}

/* May get NULL: batch and extern credentials, job end. */
extern void switchlua_stepinfo_pack(switchlua_stepinfo_t *stepinfo,
				    buf_t *buffer, uint16_t protocol_version)
{
	pack8(SWITCHLUA_STEPINFO_FORMAT, buffer);
	if (stepinfo && (stepinfo->magic == SWITCHLUA_STEPINFO_MAGIC) &&
	    stepinfo->data)
		packmem(stepinfo->data, stepinfo->len, buffer);
	else
		packmem(NULL, 0, buffer);
}

extern int switchlua_stepinfo_unpack(switchlua_stepinfo_t **stepinfo,
				     buf_t *buffer, uint16_t protocol_version)
{
	uint8_t format = 0;
	char *bytes = NULL;
	uint32_t len = 0;

	*stepinfo = NULL;
	safe_unpack8(&format, buffer);
	safe_unpackmem_ptr(&bytes, &len, buffer);

	if (format != SWITCHLUA_STEPINFO_FORMAT) {
		sl_error(
			"stepinfo record of unknown format %u (%u bytes) skipped",
			format, len);
		return SLURM_SUCCESS;
	}
	if (len)
		*stepinfo = _stepinfo_new(bytes, len);
	return SLURM_SUCCESS;

unpack_error:
	sl_error("truncated stepinfo record");
	return SLURM_ERROR;
}

/*
 * 25.11+: whether step_init also runs for the batch and interactive steps
 * (which then get a stepinfo).  slurmctld asks before it builds the batch
 * and extern credentials and the interactive step; slurmstepd before
 * job_init and, as stepmgr, before it builds the interactive step.  The
 * script's answer, as asked once per process (slurmctld at init, every
 * slurmstepd when it loads the script); false elsewhere.
 */
extern bool switchlua_setup_special_steps(void)
{
	if (running_in_slurmctld())
		return slc_ctld_setup_special_steps();
	if (running_in_slurmstepd())
		return slc_stepd_setup_special_steps();
	return false;
}

/*
 * 26.05: this slurmstepd became the job's stepmgr (it unpacked the job
 * record, with our jobinfo as raw bytes): from now on it builds the
 * stepinfo of the steps it creates from those bytes, with slurmctld's
 * SlurmctldParameters (switch_script_mismatch).
 */
extern void switchlua_stepmgr_init(void)
{
	if (slc_stepmgr_init(slurm_conf.slurmctld_params, switchlua_log_line))
		sl_error(
			"stepmgr_init: this slurmstepd cannot build stepinfo; the steps it creates get none");
	else
		sl_debug(
			"stepmgr_init: this slurmstepd builds the stepinfo of the steps it creates");
}

/* 26.05: the job's extern step ends in its stepmgr slurmstepd. */
extern void switchlua_stepmgr_fini(uint32_t job_id)
{
	slc_stepmgr_fini(job_id);
	sl_job_debug(job_id,
		     ": stepmgr_fini: this slurmstepd builds no more stepinfo");
}
