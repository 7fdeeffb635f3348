-- SPDX-License-Identifier: GPL-2.0-or-later
--
-- test/chaos/ledger.lua: the switch.lua of the chaos test (scripts/chaos).
--
-- It stands for a fabric manager: job_start takes an "allocation" and
-- job_complete gives it back.  An allocation is a marker file
-- <ledger>/alloc/<id> (one line: its owner), and every event is one line
-- appended (io.open "a", that is O_APPEND, flushed and closed at once) to
-- <ledger>/ledger.log, so that scripts/chaos can replay who took and who gave
-- back what:
--
--   START    -      job=J key=K name=N attempt=A pid=P t=T  job_start called
--   ALLOC    <id>   job=J key=K name=N attempt=A pid=P t=T  a new allocation
--   ADOPT    <id>   job=J key=K name=N owner_job=.. owner_name=.. pid=P t=T
--                                                          (idempotent only)
--   COMPLETE -      job=J key=K name=N jobinfo=<id|nil> pid=P t=T
--   FREE     <id>   job=J key=K name=N owner_job=.. owner_name=..
--                   first=yes|no via=jobinfo|scan pid=P t=T
--
-- T is /proc/uptime (the clock scripts/chaos uses for its own events), P the
-- pid of the call's process (the switch-lua-runner), so a fault can be
-- matched with the call it hit.  "first=no" means the marker was already
-- gone: a release asked for an allocation that had been released before.
--
-- The key is what a site script can use to find "its" allocation: a unique
-- key if the plugin gives one (job.unique_key, job.key, or job_id with
-- job.submit_time and job.attempt as switch.lua(5) says, or job.sluid),
-- else job_id alone.  The attempt belongs in it: after a slurmctld crash the
-- same job record (same job_id and submit_time) can be set up again while
-- the teardown of its lost attempt, with nil jobinfo, still runs; a key
-- without the attempt makes that teardown release the new attempt's
-- allocation.  The name (sbatch -J,
-- unique per submission in the chaos workload) is the ground truth of who
-- owns an allocation; the script never uses it to decide anything.
--
-- Variants (CONFIG.variant):
--   idempotent  job_start adopts an existing allocation with the same key
--               (with the attempt in the key, only a job_start run twice
--               for one attempt, which the plugin must never do, adopts)
--   naive       job_start allocates on every call
-- Each call first sleeps a random 0..CONFIG.max_sleep seconds, so that the
-- faults of scripts/chaos land in the middle of calls.  The script never
-- fails on purpose, unless CONFIG.sabotage asks for it (the self-test of
-- scripts/chaos: a ledger that leaks, releases twice, releases another
-- job's allocation, fails a teardown without a word, or hangs).
--
-- scripts/chaos rewrites the CONFIG line below when it installs this file.
local CONFIG = { variant = "idempotent", ledger = "/var/tmp/switch-lua-cluster/ledger", max_sleep = 3.0, sabotage = "", key = "auto" } -- chaos:config

-- Hold the nodes while job_complete runs: a teardown is part of the job.
function slurm_switch_block_job_complete()
	return true
end

local function uptime()
	local f = io.open("/proc/uptime", "r")
	if not f then
		return "0"
	end
	local t = f:read("n")
	f:close()
	return string.format("%.2f", t or 0)
end

local function my_pid()
	local f = io.open("/proc/self/stat", "r")
	if not f then
		return 0
	end
	local pid = f:read("n")
	f:close()
	return pid or 0
end

-- random_hex(N): N random bytes as hex, from /dev/urandom (every call runs in
-- a fresh process, so math.random would repeat itself).
local function random_hex(n)
	local f = assert(io.open("/dev/urandom", "rb"))
	local bytes = f:read(n)
	f:close()
	return (bytes:gsub(".", function(c)
		return string.format("%02x", c:byte())
	end))
end

local function random_seconds(max)
	return tonumber(random_hex(2), 16) / 65535 * max
end

-- A value safe inside one "key=value" word.
local function word(v)
	return (tostring(v):gsub("[%s=]", "_"))
end

local function record(kind, id, fields)
	local parts = { kind, id or "-" }
	for _, kv in ipairs(fields) do
		parts[#parts + 1] = kv[1] .. "=" .. word(kv[2])
	end
	parts[#parts + 1] = "pid=" .. my_pid()
	parts[#parts + 1] = "t=" .. uptime()
	local f = assert(io.open(CONFIG.ledger .. "/ledger.log", "a"))
	f:write(table.concat(parts, " "), "\n")
	f:flush()
	f:close()
end

-- The key a site script would look its allocation up by (see the header).
local function key_of(job)
	if CONFIG.key == "job_id" then
		return tostring(job.job_id)
	elseif job.unique_key ~= nil then
		return tostring(job.unique_key)
	elseif job.key ~= nil then
		return tostring(job.key)
	elseif job.submit_time ~= nil and job.attempt ~= nil then
		return tostring(job.job_id) .. "@" .. tostring(job.submit_time) .. "#" .. tostring(job.attempt)
	elseif job.submit_time ~= nil then
		return tostring(job.job_id) .. "@" .. tostring(job.submit_time)
	elseif job.sluid ~= nil then
		return tostring(job.sluid)
	end
	return tostring(job.job_id)
end

local function attempt_of(job)
	return job.attempt or job.attempt_id or job.restart_count or "-"
end

local function marker_path(id)
	return CONFIG.ledger .. "/alloc/" .. id
end

-- read_marker(ID): the owner fields of allocation ID, nil if released.
local function read_marker(id)
	local f = io.open(marker_path(id), "r")
	if not f then
		return nil
	end
	local line = f:read("l") or ""
	f:close()
	local owner = {}
	for k, v in string.gmatch(line, "(%w+)=(%S+)") do
		owner[k] = v
	end
	return owner
end

-- The allocations that exist now: { id = owner, ... }.
local function list_allocations()
	local found = {}
	local p = io.popen("ls -1 " .. CONFIG.ledger .. "/alloc 2>/dev/null")
	if p then
		for id in p:lines() do
			local owner = read_marker(id)
			if owner then
				found[id] = owner
			end
		end
		p:close()
	end
	return found
end

local function pause()
	local s = random_seconds(CONFIG.max_sleep)
	if s > 0.01 then
		os.execute(string.format("sleep %.2f", s))
	end
end

function slurm_switch_job_start(job)
	local key, name, attempt = key_of(job), job.name or "-", attempt_of(job)
	local me = { { "job", job.job_id }, { "key", key }, { "name", name }, { "attempt", attempt } }
	record("START", nil, me)
	pause()
	if CONFIG.variant == "idempotent" then
		for id, owner in pairs(list_allocations()) do
			if owner.key == word(key) then
				record("ADOPT", id, {
					{ "job", job.job_id }, { "key", key }, { "name", name },
					{ "owner_job", owner.job or "-" }, { "owner_name", owner.name or "-" },
				})
				return slurm.SUCCESS, { alloc = id, key = key }
			end
		end
	end
	local id = random_hex(6)
	record("ALLOC", id, me)
	local f = assert(io.open(marker_path(id), "w"))
	f:write(string.format("job=%s key=%s name=%s attempt=%s\n", word(job.job_id), word(key), word(name), word(attempt)))
	f:close()
	if CONFIG.sabotage == "hang" and job.job_id == 3 then
		os.execute("sleep 100000")
	end
	return slurm.SUCCESS, { alloc = id, key = key }
end

-- release(ID, JOB, KEY, VIA): give allocation ID back on behalf of JOB.
local function release(id, job, key, via)
	local owner = read_marker(id) or {}
	local first = os.remove(marker_path(id)) and "yes" or "no"
	record("FREE", id, {
		{ "job", job.job_id }, { "key", key }, { "name", job.name or "-" },
		{ "owner_job", owner.job or "-" }, { "owner_name", owner.name or "-" },
		{ "first", first }, { "via", via },
	})
end

function slurm_switch_job_complete(job, jobinfo)
	local key = key_of(job)
	local named = type(jobinfo) == "table" and jobinfo.alloc or nil
	record("COMPLETE", nil, {
		{ "job", job.job_id }, { "key", key }, { "name", job.name or "-" },
		{ "jobinfo", named or "nil" },
	})
	pause()
	if CONFIG.sabotage == "leak" then
		return slurm.SUCCESS
	elseif CONFIG.sabotage == "drain" then
		error("chaos sabotage: a teardown that fails")
	end
	if named then
		release(named, job, key, "jobinfo")
		if CONFIG.sabotage == "double" then
			release(named, job, key, "jobinfo")
		elseif CONFIG.sabotage == "wrong-owner" then
			for id in pairs(list_allocations()) do
				release(id, job, key, "jobinfo")
				break
			end
		end
	else
		-- An abandoned setup: find what it may have left, by key.
		for id, owner in pairs(list_allocations()) do
			if owner.key == word(key) then
				release(id, job, key, "scan")
			end
		end
	end
	return slurm.SUCCESS
end
