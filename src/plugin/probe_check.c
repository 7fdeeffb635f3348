/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * probe_check.c: a BUILD CHECK, not the plugin.
 *
 * Built by src/plugin/meson.build as slurm_build_check.so, never installed
 * and never loaded by Slurm.  It proves two things about the build settings
 * the plugin glue uses:
 *   - C code can include Slurm's internal controller and slurmstepd headers
 *     (config.h first, as every Slurm source does) with slurm_src_inc and
 *     slurm_plugin_c_args;
 *   - a module that calls into the daemon links with that symbol left
 *     undefined (it resolves when slurmctld dlopen()s a plugin).
 */
#include "config.h"

#include "src/slurmctld/slurmctld.h"
#include "src/slurmd/slurmstepd/slurmstepd_job.h"

/* The struct sizes as these headers see them (scripts/layoutcheck compares
 * them with what the installed binaries allocate). */
const unsigned long slurm_build_check_sizes[] = {
	sizeof(job_record_t),
	sizeof(job_details_t),
	sizeof(step_record_t),
	sizeof(stepd_step_rec_t),
};

/* An undefined reference to slurmctld, as the glue will have many. */
job_record_t *slurm_build_check_find(uint32_t job_id)
{
	return find_job_record(job_id);
}
