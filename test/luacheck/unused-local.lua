-- SPDX-License-Identifier: GPL-2.0-or-later
-- A luacheck fixture (test/luacheck/run.sh): one mistake, a local that is
-- never used on line 6; luacheck with the switchlua standard says "unused
-- variable nodes" there.
function slurm_switch_job_start(job)
	local nodes = job.node_names
	return slurm.SUCCESS, { vni = 1000 + job.job_id % 3000 }
end
