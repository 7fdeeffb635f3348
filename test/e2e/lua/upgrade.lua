-- SPDX-License-Identifier: GPL-2.0-or-later
--
-- test/e2e/lua/upgrade.lua: a fabric ledger for the Slurm upgrade test
-- (t1401), run with block_job_complete true and a long switch_timeout and
-- switch_retries, so that calls can be in flight across the upgrade.
--
-- --network=e2e:up:KIND:TAG, KIND one of
--   run   job_start allocates at once
--   slow  job_start waits (at most 110 s) for /tmp/switch-lua-e2e.TAG.setupgo,
--         then allocates: a setup still running when the daemons stop
--   held  job_complete returns slurm.EAGAIN until
--         /tmp/switch-lua-e2e.TAG.release exists: a teardown held in
--         COMPLETING across the upgrade
-- Every event is one line appended to /tmp/switch-lua-e2e.TAG.ledger:
--   ALLOC a=<alloc> job=J attempt=A      job_start allocated <alloc>
--   FREE a=<alloc> job=J attempt=A       job_complete released it (from
--                                        its own jobinfo)
--   NIL job=J attempt=A                  job_complete with nil jobinfo
--   EAGAIN a=<alloc> job=J               job_complete kept it, for now
-- <alloc> is TAG-J-A: an allocation names the attempt that took it.
function slurm_switch_block_job_complete()
	return true
end

local function parse(job)
	return string.match(job.network or "", "^e2e:up:(%a+):(%d+)$")
end

local function exists(path)
	local f = io.open(path, "r")
	if f then
		f:close()
		return true
	end
	return false
end

local function ledger(tag, line)
	local f = assert(io.open(string.format("/tmp/switch-lua-e2e.%s.ledger", tag), "a"))
	f:write(line, "\n")
	f:close()
end

function slurm_switch_job_start(job)
	local kind, tag = parse(job)
	if not kind then
		return slurm.SUCCESS
	end
	if kind == "slow" then
		local go = string.format("/tmp/switch-lua-e2e.%s.setupgo", tag)
		for _ = 1, 550 do
			if exists(go) then
				break
			end
			os.execute("sleep 0.2")
		end
	end
	local alloc = string.format("%s-%d-%d", tag, job.job_id, job.attempt)
	ledger(tag, string.format("ALLOC a=%s job=%d attempt=%d", alloc, job.job_id, job.attempt))
	slurm.log_info("e2e upgrade: JobId=%d job_start allocated %s", job.job_id, alloc)
	return slurm.SUCCESS, { alloc = alloc, tag = tag }
end

function slurm_switch_job_complete(job, jobinfo)
	local kind, tag = parse(job)
	if not kind then
		return slurm.SUCCESS
	end
	if not jobinfo then
		ledger(tag, string.format("NIL job=%d attempt=%d", job.job_id, job.attempt))
		return slurm.SUCCESS
	end
	if kind == "held" and not exists(string.format("/tmp/switch-lua-e2e.%s.release", tag)) then
		ledger(tag, string.format("EAGAIN a=%s job=%d", jobinfo.alloc, job.job_id))
		return slurm.EAGAIN
	end
	ledger(tag, string.format("FREE a=%s job=%d attempt=%d", jobinfo.alloc, job.job_id, job.attempt))
	slurm.log_info("e2e upgrade: JobId=%d job_complete released %s", job.job_id, jobinfo.alloc)
	return slurm.SUCCESS
end
