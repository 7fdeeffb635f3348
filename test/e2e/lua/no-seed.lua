-- SPDX-License-Identifier: GPL-2.0-or-later
--
-- test/e2e/lua/no-seed.lua: installed in place of the generated copies of
-- the contract script when that script is absent, so that the cluster still
-- boots.  Every test that needs the contract script skips (need_seed); this
-- file only has to load.  It declines every job.
function slurm_switch_job_start(job)
	slurm.log_info("e2e no-seed: JobId=%d declined (no contract script)", job.job_id)
	return slurm.SUCCESS, nil
end
