-- SPDX-License-Identifier: GPL-2.0-or-later
--
-- t0823-hostile-local: a step_postfini that creates files as root, one with
-- io.open and one through slurm.run (touch), so the test can read their
-- modes after a user ran the step with umask 0000 (issue 35 item 3).
-- --network=umask: managed (a jobinfo, so the step hooks run); any other
-- network is declined.

function slurm_switch_job_start(job)
	if job.network ~= "umask" then
		return slurm.SUCCESS, nil
	end
	return slurm.SUCCESS, { managed = true }
end

function slurm_switch_job_complete()
	return slurm.SUCCESS
end

function slurm_switch_step_postfini(step, stepinfo)
	if stepinfo == nil or step.step_id ~= 0 then
		return slurm.SUCCESS
	end
	local base = string.format("/tmp/switch-lua-e2e-umask.%d", step.job_id)
	local f = io.open(base .. ".io", "w")
	if f then
		f:write("postfini\n")
		f:close()
	end
	local r, err = slurm.run({ "touch", "--", base .. ".run" })
	if not r then
		slurm.log_error("JobId=%d step_postfini: %s", step.job_id, err)
	end
	return slurm.SUCCESS
end
