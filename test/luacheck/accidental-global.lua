-- SPDX-License-Identifier: GPL-2.0-or-later
-- A luacheck fixture (test/luacheck/run.sh): one mistake, a global written
-- by accident (a missing "local") on line 6; luacheck with the switchlua
-- standard says "setting non-standard global variable tries" there.
function slurm_switch_job_start(job)
	tries = job.restart_count + 1
	return slurm.SUCCESS, { vni = 1000 + job.job_id % 3000 }
end
