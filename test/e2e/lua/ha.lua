-- SPDX-License-Identifier: GPL-2.0-or-later
--
-- test/e2e/lua/ha.lua: hooks for the high-availability tests
-- (t0911-takeover.sh, a cluster with a backup controller).  Holds the nodes
-- while job_complete runs (block_job_complete true).
--
-- --network=e2e:sNeM:TAG: job_start sleeps N seconds, job_complete M
-- seconds (`sleep N.TAG`, so that a killed call's sleep can be told apart).
--
-- Every call appends lines to the ledger /tmp/switch-lua-e2e.TAG.ledger (in
-- the chroot), the allocation record a site's fabric would keep:
--   start JOB_ID ATTEMPT              job_start began
--   started JOB_ID ATTEMPT TOKEN      job_start returned: the allocation
--   complete JOB_ID ATTEMPT TOKEN|nil job_complete began
--   completed JOB_ID ATTEMPT TOKEN|nil job_complete returned: the release
-- A call killed in flight (its controller gave up control) has its first
-- line only.  An accepted job gets the jobinfo { token = "tok-TAG-JOB_ID-ATTEMPT" }.
function slurm_switch_block_job_complete()
	return true
end

local function parse(job)
	local s, e, tag = string.match(job.network or "", "^e2e:s(%d+)e(%d+):(%d+)$")
	return tonumber(s or "0"), tonumber(e or "0"), tag or "0"
end

local function append(tag, line)
	local f = assert(io.open(string.format("/tmp/switch-lua-e2e.%s.ledger", tag), "a"))
	f:write(line, "\n")
	f:close()
end

local function pause(secs, tag)
	if secs > 0 then
		os.execute(string.format("sleep %d.%s", secs, tag))
	end
end

function slurm_switch_job_start(job)
	local s, _, tag = parse(job)
	local attempt = job.attempt or 0
	append(tag, string.format("start %d %d", job.job_id, attempt))
	pause(s, tag)
	local token = string.format("tok-%s-%d-%d", tag, job.job_id, attempt)
	append(tag, string.format("started %d %d %s", job.job_id, attempt, token))
	return slurm.SUCCESS, { token = token }
end

function slurm_switch_job_complete(job, jobinfo)
	local _, e, tag = parse(job)
	local token = jobinfo and jobinfo.token or "nil"
	append(tag, string.format("complete %d %d %s", job.job_id, job.attempt or 0, token))
	pause(e, tag)
	append(tag, string.format("completed %d %d %s", job.job_id, job.attempt or 0, token))
	return slurm.SUCCESS
end
