/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * File: plugin/switch_lua.c
 *
 * switch/lua for Slurm 24.11: the plugin identity, init()/fini(), and the
 * switch_p_* hooks that only move bytes (jobinfo and stepinfo packing) or
 * do nothing.  The slurmctld hooks are in slurm_ctld.c, the slurmstepd
 * hooks in slurm_stepd.c; everything with a decision in it is in the C++
 * core behind switch_lua_core.h.
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
#include "src/common/run_in_daemon.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/interfaces/switch.h"

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
 * jobinfo.  24.11 calls pack for every job, NULL included, and unpack for
 * every record carrying our id, in slurmctld (state file) and in the
 * stepmgr slurmstepd / slurmd (job record relay).  The core packs NULL as
 * its own "absent" record; outside slurmctld it keeps the bytes unread.
 */
extern void switch_p_pack_jobinfo(void *switch_jobinfo, buf_t *buffer,
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

extern int switch_p_unpack_jobinfo(void **switch_jobinfo, buf_t *buffer,
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

extern int switch_p_build_stepinfo(switchlua_stepinfo_t **stepinfo,
				   slurm_step_layout_t *step_layout,
				   step_record_t *step_ptr)
{
	job_record_t *job_ptr = step_ptr ? step_ptr->job_ptr : NULL;
	char *bytes = NULL;
	size_t len = 0;

	*stepinfo = NULL;
	if (!job_ptr || !job_ptr->switch_jobinfo)
		return SLURM_SUCCESS;

	if (slc_ctld_stepinfo(job_ptr->switch_jobinfo, &bytes, &len) == 1 &&
	    bytes && len) {
		if (len > MAX_PACK_MEM_LEN) {
			sl_step_error(
				job_ptr->job_id, step_ptr->step_id.step_id,
				NULL,
				": stepinfo of %zu bytes is too large, step gets none",
				len);
		} else {
			*stepinfo = _stepinfo_new(bytes, (uint32_t) len);
			sl_step_debug2(job_ptr->job_id,
				       step_ptr->step_id.step_id, NULL,
				       ": stepinfo of %zu bytes", len);
		}
	}
	slc_free(bytes);
	return SLURM_SUCCESS;
}

extern void switch_p_duplicate_stepinfo(switchlua_stepinfo_t *source,
					switchlua_stepinfo_t **dest)
{
	*dest = NULL;
	if (source && (source->magic == SWITCHLUA_STEPINFO_MAGIC))
		*dest = _stepinfo_new(source->data, source->len);
}

extern void switch_p_free_stepinfo(switchlua_stepinfo_t *stepinfo)
{
	if (!stepinfo)
		return;
	stepinfo->magic = ~SWITCHLUA_STEPINFO_MAGIC;
	xfree(stepinfo->data);
	xfree(stepinfo);
}

/* May get NULL: batch and extern credentials, job end. */
extern void switch_p_pack_stepinfo(switchlua_stepinfo_t *stepinfo,
				   buf_t *buffer, uint16_t protocol_version)
{
	pack8(SWITCHLUA_STEPINFO_FORMAT, buffer);
	if (stepinfo && (stepinfo->magic == SWITCHLUA_STEPINFO_MAGIC) &&
	    stepinfo->data)
		packmem(stepinfo->data, stepinfo->len, buffer);
	else
		packmem(NULL, 0, buffer);
}

extern int switch_p_unpack_stepinfo(switchlua_stepinfo_t **stepinfo,
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

/* The hooks switch/lua has no use for in 24.11. */

extern int switch_p_job_attach(switchlua_stepinfo_t *stepinfo, char ***env,
			       uint32_t nodeid, uint32_t procid,
			       uint32_t nnodes, uint32_t nprocs, uint32_t rank)
{
	return SLURM_SUCCESS;
}

extern int switch_p_job_step_complete(switchlua_stepinfo_t *stepinfo,
				      char *nodelist)
{
	return SLURM_SUCCESS;
}

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

extern void switch_p_extern_step_fini(uint32_t job_id)
{
}
