-- SPDX-License-Identifier: GPL-2.0-or-later
--
-- test/e2e/lua/chunk-fails.lua: a script whose main chunk returns -1.  The
-- plugin must refuse it everywhere it loads it: at slurmctld start (the two
-- questions), in every job_start call (a failed setup: "could not load the
-- script") and in slurmstepd (no step hook).  The hooks below would accept
-- every job if the script were loaded.
function slurm_switch_block_job_complete()
	return false
end

function slurm_switch_job_start(job)
	return slurm.SUCCESS, { accepted = true }
end

function slurm_switch_step_init(step, stepinfo)
	return slurm.SUCCESS, { E2E_CHUNK_FAILS_LOADED = true }
end

slurm.log_info("e2e chunk-fails: the chunk returns -1")
return -1
