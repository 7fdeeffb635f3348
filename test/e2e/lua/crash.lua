-- SPDX-License-Identifier: GPL-2.0-or-later
--
-- test/e2e/lua/crash.lua: hooks for the crash, reconfigure and journal
-- tests (t0402-crash.sh, t0403-operator.sh, t0901-lost-jobs.sh,
-- t0902-id-reuse.sh; run with
-- SlurmctldParameters=switch_timeout=60).  Holds the nodes while
-- job_complete runs (block_job_complete true).
--
-- --network=e2e:MODE:TAG, MODE one of
--   plain      job_start and job_complete return at once
--   slow4      every job_start sleeps 4 s (`sleep 4.TAG`)
--   slowfirst  the first job_start for TAG sleeps 30 s (`sleep 30.TAG`), a
--              later one returns at once
--   killend    the first job_complete for TAG writes its process id to
--              /tmp/switch-lua-e2e.TAG.pid and sleeps 30 s; a later one
--              returns at once
--   slowend    every job_complete sleeps 6 s (`sleep 6.TAG`)
--   failend    job_complete raises an error (a teardown that fails)
--
-- Every call appends one line to the ledger /tmp/switch-lua-e2e.TAG.ledger
-- (in the chroot), the allocation record a site's fabric would keep:
--   start JOB_ID ATTEMPT SUBMIT_TIME
--   complete JOB_ID ATTEMPT TOKEN|nil
-- An accepted job gets the jobinfo { token = "tok-TAG-ATTEMPT" }.
function slurm_switch_block_job_complete()
	return true
end

local function parse(job)
	local mode, tag = string.match(job.network or "", "^e2e:(%a+%d*):(%d+)$")
	return mode or "plain", tag or "0"
end

local function append(tag, line)
	local f = assert(io.open(string.format("/tmp/switch-lua-e2e.%s.ledger", tag), "a"))
	f:write(line, "\n")
	f:close()
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

function slurm_switch_job_start(job)
	local mode, tag = parse(job)
	append(tag, string.format("start %d %d %d", job.job_id, job.attempt or 0, job.submit_time or 0))
	if mode == "slow4" then
		os.execute("sleep 4." .. tag)
	elseif mode == "slowfirst" and first_call(tag, "start") then
		slurm.log_info("e2e crash: JobId=%d job_start attempt=%d: first call, sleeping 30 s", job.job_id, job.attempt or 0)
		os.execute("sleep 30." .. tag)
	end
	return slurm.SUCCESS, { token = string.format("tok-%s-%d", tag, job.attempt or 0) }
end

function slurm_switch_job_complete(job, jobinfo)
	local mode, tag = parse(job)
	append(tag, string.format("complete %d %d %s", job.job_id, job.attempt or 0, jobinfo and jobinfo.token or "nil"))
	if mode == "killend" and first_call(tag, "end") then
		local stat = assert(io.open("/proc/self/stat", "r"))
		local pid = stat:read("n")
		stat:close()
		local f = assert(io.open(string.format("/tmp/switch-lua-e2e.%s.pid", tag), "w"))
		f:write(tostring(pid), "\n")
		f:close()
		slurm.log_info("e2e crash: JobId=%d job_complete pid=%d: first call, sleeping 30 s", job.job_id, pid)
		os.execute("sleep 30." .. tag)
	elseif mode == "slowend" then
		os.execute("sleep 6." .. tag)
	elseif mode == "failend" then
		error("e2e crash: the fabric refused the teardown")
	end
	return slurm.SUCCESS
end
