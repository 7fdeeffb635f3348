-- SPDX-License-Identifier: GPL-2.0-or-later
--
-- test/e2e/lua/outage.lua: a ledger fabric for the outage tests (t1501).
-- It stands for a fabric manager that can go away: job_start takes an
-- "allocation", job_complete gives it back, and the test switches the
-- fabric off and on by writing one word into <dir>/fabric:
--
--   up           (or no file) the hooks work
--   down         every hook returns slurm.FABRIC_DOWN and changes nothing
--                (a script that can tell the fabric manager is gone)
--   unreachable  every hook raises the error "fabric manager unreachable"
--                and changes nothing (a script that cannot tell)
--   eagain       job_complete returns slurm.EAGAIN (the nodes stay held and
--                it is retried), job_start works
--   portfail     job_complete gives the allocation back but fails naming
--                the job's last node: slurm.ERROR, "port 7 did not clear",
--                that node (issue 20: only it is drained), job_start works
--
-- The ledger is one line per event appended to <dir>/ledger.log (O_APPEND,
-- closed at once; each call runs in a fresh runner process):
--
--   ALLOC <id> job=J attempt=A        a new allocation, marker <dir>/alloc/<id>
--   FREE  <id> job=J first=yes|no     given back; first=no: it was gone already
--   NOFREE - job=J why=W              job_complete had nothing to release
--   COMPLETE - job=J nodes=N failed_nodes=F   job_complete called (F: the
--                                     job.failed_nodes it was told, or -)
--   DOWN  - job=J hook=H state=S      a call refused while the fabric is off
--
--   PORT   J-A@N job=J attempt=A step=S     step_preinit took a port of the
--                                     job's fabric on node N, marker
--                                     <dir>/ports/J-A@N
--   UNPORT J-A@N job=J attempt=A first=yes|no   step_postfini gave it back
--
-- so that the test can check that every allocation is released exactly
-- once, and none is left.  The allocation id is job_id, submit_time and
-- attempt (switch.lua(5): release only what carries this attempt).
--
-- --network=outage:fork makes each hook start a process (os.execute), as
-- a site script that calls its fabric manager's command line does; a
-- failed start is written down (FORKFAIL - job=J hook=H), not returned.
-- Holds the nodes while job_complete runs (block_job_complete true).
local DIR = "/tmp/switch-lua-e2e-outage"

function slurm_switch_block_job_complete()
	return true
end

local function fabric()
	local f = io.open(DIR .. "/fabric", "r")
	if not f then
		return "up"
	end
	local s = f:read("l") or "up"
	f:close()
	return s
end

local function word(v)
	return (tostring(v):gsub("[%s=]", "_"))
end

local function record(kind, id, fields)
	local parts = { kind, id or "-" }
	for _, kv in ipairs(fields) do
		parts[#parts + 1] = kv[1] .. "=" .. word(kv[2])
	end
	local f = assert(io.open(DIR .. "/ledger.log", "a"))
	f:write(table.concat(parts, " "), "\n")
	f:close()
end

local function forks(job, hook)
	if job.network == "outage:fork" and not os.execute("true") then
		record("FORKFAIL", nil, { { "job", job.job_id }, { "hook", hook } })
	end
end

-- refused(JOB, HOOK): nil while the fabric is up, else the hook's return.
local function refused(job, hook)
	local s = fabric()
	if s == "up" or s == "portfail" or (s == "eagain" and hook == "job_start") then
		return nil
	end
	record("DOWN", nil, { { "job", job.job_id }, { "hook", hook }, { "state", s } })
	if s == "down" then
		return slurm.FABRIC_DOWN
	elseif s == "eagain" then
		return slurm.EAGAIN
	end
	error("fabric manager unreachable", 0)
end

function slurm_switch_job_start(job)
	local r = refused(job, "job_start")
	if r then
		return r, nil
	end
	forks(job, "job_start")
	local id = string.format("%d-%d-%d", job.job_id, job.submit_time or 0, job.attempt or 0)
	local f = assert(io.open(DIR .. "/alloc/" .. id, "w"))
	f:write("job=", tostring(job.job_id), "\n")
	f:close()
	record("ALLOC", id, { { "job", job.job_id }, { "attempt", job.attempt or 0 } })
	return slurm.SUCCESS, { alloc = id }
end

function slurm_switch_job_complete(job, jobinfo)
	record("COMPLETE", nil, {
		{ "job", job.job_id }, { "nodes", job.nodes or "-" }, { "failed_nodes", job.failed_nodes or "-" },
	})
	forks(job, "job_complete")
	local r = refused(job, "job_complete")
	if r then
		return r
	end
	if not jobinfo or not jobinfo.alloc then
		record("NOFREE", nil, { { "job", job.job_id }, { "why", "no_jobinfo" } })
		return slurm.SUCCESS
	end
	local first = os.remove(DIR .. "/alloc/" .. jobinfo.alloc) and "yes" or "no"
	record("FREE", jobinfo.alloc, { { "job", job.job_id }, { "first", first } })
	if fabric() == "portfail" then
		return slurm.ERROR, "port 7 did not clear", job.node_names[#job.node_names]
	end
	return slurm.SUCCESS
end

-- The step hooks: a port of the job's fabric on each node of a step, keyed
-- by the step's attempt (step.attempt, the plugin's: switch.lua(5) "release
-- only what carries this attempt").  <dir>/ports/J.index lists the ports
-- of job J: a postfini told no attempt (0: a plugin that does not carry
-- it) can only release by job id, every port of J, those of a later run
-- included (t1501 (d) fails then).
local function port_id(step, node)
	return string.format("%d-%d@%s", step.job_id, step.attempt or 0, node)
end

function slurm_switch_step_preinit(step, stepinfo)
	local node = step.node_name or "?"
	local id = port_id(step, node)
	local f = io.open(DIR .. "/ports/" .. id, "w")
	if not f then
		return slurm.SUCCESS -- no ledger (another test's fixture dir)
	end
	f:close()
	f = assert(io.open(DIR .. "/ports/" .. step.job_id .. ".index", "a"))
	f:write(id, "\n")
	f:close()
	record("PORT", id, { { "job", step.job_id }, { "attempt", step.attempt or 0 }, { "step", step.id } })
	return slurm.SUCCESS
end

local function unport(step, id)
	local first = os.remove(DIR .. "/ports/" .. id) and "yes" or "no"
	record("UNPORT", id, { { "job", step.job_id }, { "attempt", step.attempt or 0 }, { "first", first } })
end

function slurm_switch_step_postfini(step, stepinfo)
	local f = io.open(DIR .. "/ports/" .. step.job_id .. ".index", "r")
	if not f then
		return slurm.SUCCESS -- no port was taken for the job
	end
	if (step.attempt or 0) ~= 0 then
		unport(step, port_id(step, step.node_name or "?"))
	else
		for id in f:lines() do
			unport(step, id)
		end
	end
	f:close()
	return slurm.SUCCESS
end
