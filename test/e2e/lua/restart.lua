-- SPDX-License-Identifier: GPL-2.0-or-later
--
-- test/e2e/lua/restart.lua: slow hooks to kill slurmctld under, for the
-- restart tests (run with SlurmctldParameters=switch_timeout=60).  Holds
-- the nodes while job_complete runs (block_job_complete true).
--
-- --network=e2e:slowstart:TAG  the first job_start for TAG runs
--                              `sleep 30.TAG` (30 s and a bit); a later one
--                              (the re-run after a restart) returns at once.
-- --network=e2e:slowend:TAG    the same for job_complete.
--
-- "First" is remembered in a marker file /tmp/switch-lua-e2e.TAG.start (or
-- .end) in the chroot, since every call runs in a fresh Lua state.  Every
-- accepted job gets the jobinfo { token = "tok-TAG-<job id>" }; step_init
-- hands it to the tasks as E2E_TOKEN, and both hooks log it.
function slurm_switch_block_job_complete()
	return true
end

-- first_call(TAG, WHAT): true the first time it is asked for TAG and WHAT.
local function first_call(tag, what)
	local path = string.format("/tmp/switch-lua-e2e.%s.%s", tag, what)
	local f = io.open(path, "r")
	if f then
		f:close()
		return false
	end
	f = assert(io.open(path, "w"))
	f:write("called\n")
	f:close()
	return true
end

local function tag_of(job, what)
	return string.match(job.network, "^e2e:" .. what .. ":(%d+)$")
end

function slurm_switch_job_start(job)
	local tag = tag_of(job, "slowstart") or tag_of(job, "slowend") or "0"
	local token = string.format("tok-%s-%d", tag, job.job_id)
	if tag_of(job, "slowstart") then
		if first_call(tag, "start") then
			slurm.log_info("e2e restart: JobId=%d job_start token=%s: first call, sleeping 30 s", job.job_id, token)
			os.execute("sleep 30." .. tag)
		else
			slurm.log_info("e2e restart: JobId=%d job_start token=%s: called again", job.job_id, token)
		end
	end
	return slurm.SUCCESS, { token = token }
end

function slurm_switch_job_complete(job, jobinfo)
	local token = jobinfo and jobinfo.token or "nil"
	local tag = tag_of(job, "slowend")
	if tag and first_call(tag, "end") then
		slurm.log_info("e2e restart: JobId=%d job_complete token=%s: first call, sleeping 30 s", job.job_id, token)
		os.execute("sleep 30." .. tag)
	else
		slurm.log_info("e2e restart: JobId=%d job_complete token=%s", job.job_id, token)
	end
	return slurm.SUCCESS
end

function slurm_switch_step_init(step, stepinfo)
	return slurm.SUCCESS, { E2E_TOKEN = stepinfo and stepinfo.token or "none" }
end
