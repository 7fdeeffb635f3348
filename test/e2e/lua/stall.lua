-- SPDX-License-Identifier: GPL-2.0-or-later
--
-- test/e2e/lua/stall.lua: hooks for t0912-stall.sh (a primary stopped with
-- setups in flight, a backup taking control; issue 40).  Holds the nodes
-- while job_complete runs (block_job_complete true).
--
-- --network=e2e:gate:TAG: job_start waits until the file
-- /tmp/switch-lua-e2e.TAG.gate exists (in the chroot; polled, at most about
-- 110 s), so the test decides when a setup returns.
-- --network=e2e:cgate:TAG: job_start returns at once; job_complete waits
-- in the same way for /tmp/switch-lua-e2e.TAG.cgate (t0913).
--
-- Every call appends to the ledger /tmp/switch-lua-e2e.TAG.ledger the lines
-- of test/e2e/lua/ha.lua (lib.sh: ha_ledger_check), each ending with the
-- controller's epoch (job.epoch) as e=N:
--   start JOB_ID ATTEMPT e=N
--   started JOB_ID ATTEMPT TOKEN e=N
--   complete JOB_ID ATTEMPT TOKEN|nil e=N
--   completed JOB_ID ATTEMPT TOKEN|nil e=N
function slurm_switch_block_job_complete()
	return true
end

local function tag_of(job)
	local kind, tag = string.match(job.network or "", "^e2e:(c?gate):(%d+)$")
	return tag or "0", kind
end

local function append(tag, line, job)
	local f = assert(io.open(string.format("/tmp/switch-lua-e2e.%s.ledger", tag), "a"))
	f:write(line, " e=", tostring(job.epoch), "\n")
	f:close()
end

local function wait_gate(tag, suffix)
	local path = string.format("/tmp/switch-lua-e2e.%s.%s", tag, suffix)
	for _ = 1, 550 do
		local f = io.open(path, "r")
		if f then
			f:close()
			return
		end
		os.execute("sleep 0.2")
	end
end

function slurm_switch_job_start(job)
	local tag, kind = tag_of(job)
	local attempt = job.attempt or 0
	append(tag, string.format("start %d %d", job.job_id, attempt), job)
	if kind == "gate" then
		wait_gate(tag, "gate")
	end
	local token = string.format("tok-%s-%d-%d", tag, job.job_id, attempt)
	append(tag, string.format("started %d %d %s", job.job_id, attempt, token), job)
	return slurm.SUCCESS, { token = token }
end

function slurm_switch_job_complete(job, jobinfo)
	local tag, kind = tag_of(job)
	local token = jobinfo and jobinfo.token or "nil"
	append(tag, string.format("complete %d %d %s", job.job_id, job.attempt or 0, token), job)
	if kind == "cgate" then
		wait_gate(tag, "cgate")
	end
	append(tag, string.format("completed %d %d %s", job.job_id, job.attempt or 0, token), job)
	return slurm.SUCCESS
end
