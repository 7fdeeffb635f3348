-- SPDX-License-Identifier: GPL-2.0-or-later
--
-- test/e2e/lua/hang.lua: a job_start that never returns, for the
-- switch_timeout test (run with SlurmctldParameters=switch_timeout=3).
--
-- --network=e2e:hang:TAG   job_start starts `sleep 300.TAG` in the
--                          background (a grandchild in its process group)
--                          and another one with setsid (a grandchild that
--                          left the group), then blocks in `sleep 300.TAG`.
--                          The supervisor must kill all three at the
--                          deadline.
-- any other --network      accepted, jobinfo { token = "tok-<job id>" }.
--
-- job_complete logs its jobinfo as JSON, or "nil", and succeeds.
function slurm_switch_job_start(job)
	local tag = string.match(job.network, "^e2e:hang:(%d+)$")
	if tag then
		local cmd = "sleep 300." .. tag
		slurm.log_info("e2e hang: JobId=%d starting '%s' twice in the background and once in the foreground",
			job.job_id, cmd)
		os.execute(cmd .. " </dev/null >/dev/null 2>&1 &")
		os.execute("setsid " .. cmd .. " </dev/null >/dev/null 2>&1 &")
		os.execute(cmd)
		slurm.log_info("e2e hang: JobId=%d '%s' returned: the call was not killed", job.job_id, cmd)
	end
	return slurm.SUCCESS, { token = "tok-" .. job.job_id }
end

function slurm_switch_job_complete(job, jobinfo)
	slurm.log_info("e2e hang: job_complete JobId=%d jobinfo=%s", job.job_id,
		jobinfo == nil and "nil" or slurm.to_json(jobinfo))
	return slurm.SUCCESS
end
