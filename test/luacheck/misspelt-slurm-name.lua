-- SPDX-License-Identifier: GPL-2.0-or-later
-- A luacheck fixture (test/luacheck/run.sh): one mistake, a misspelt name
-- of the slurm table on line 6; luacheck with the switchlua standard says
-- "accessing undefined field log_inf of global slurm" there.
function slurm_switch_job_start(job)
	slurm.log_inf("JobId=%d: set up", job.job_id)
	return slurm.SUCCESS, { vni = 1 }
end
