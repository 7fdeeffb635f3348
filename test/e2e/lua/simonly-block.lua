-- SPDX-License-Identifier: GPL-2.0-or-later
--
-- test/e2e/lua/simonly-block.lua: an abandoned setup whose teardown asks for
-- a retry, with block_job_complete true (t1201-simonly-timeouts.sh; run with
-- SlurmctldParameters=switch_timeout=2).
--
-- --network=e2e:hangagain:TAG  job_start sleeps 30 s (`sleep 30.TAG`,
--                              past switch_timeout); the first job_complete
--                              for TAG returns slurm.EAGAIN, a later one
--                              slurm.SUCCESS
-- any other --network          accepted, job_complete succeeds
--
-- job_complete logs "e2e simonly: job_complete jobinfo=<JSON or nil>".
function slurm_switch_block_job_complete()
	return true
end

local function tag_of(job)
	return string.match(job.network or "", "^e2e:hangagain:(%d+)$")
end

function slurm_switch_job_start(job)
	local tag = tag_of(job)
	if tag then
		os.execute("sleep 30." .. tag)
	end
	return slurm.SUCCESS, { token = "tok-" .. (tag or "0") }
end

function slurm_switch_job_complete(job, jobinfo)
	slurm.log_info("e2e simonly: job_complete jobinfo=%s", jobinfo == nil and "nil" or slurm.to_json(jobinfo))
	local tag = tag_of(job)
	if not tag then
		return slurm.SUCCESS
	end
	local path = string.format("/tmp/switch-lua-e2e.%s.again", tag)
	local f = io.open(path, "r")
	if f then
		f:close()
		return slurm.SUCCESS
	end
	f = assert(io.open(path, "w"))
	f:write("called\n")
	f:close()
	return slurm.EAGAIN
end
