-- SPDX-License-Identifier: GPL-2.0-or-later
--
-- test/e2e/lua/info-level.lua (t0211): job_start raises an error two calls
-- deep for --network=crash (line 9, called from line 14), accepts every
-- other job; job_complete succeeds.
local function fabric_call(what)
	-- keep the error on line 9: t0211 asserts the traceback's line numbers
	local msg = "fabric manager refused " .. what
	error(msg)
end

function slurm_switch_job_start(job)
	if job.network == "crash" then
		fabric_call("the VNI")
	end
	return slurm.SUCCESS, { vni = 7 }
end

function slurm_switch_job_complete(job, jobinfo)
	return slurm.SUCCESS
end
