-- SPDX-License-Identifier: GPL-2.0-or-later
--
-- test/e2e/lua/simonly.lua: the rules that only `switch-lua simulate` had
-- shown, run on the live cluster (t1201-simonly-timeouts.sh,
-- t1202-simonly-ctld.sh, t1203-simonly-steps.sh).  block_job_complete is false (no hook for it).
--
-- --network=e2e:MODE:TAG, MODE one of
--   plain      job_start accepts with { token = "tok-TAG" }; job_complete
--              succeeds; step_init sets SWL_STEP to the step's id
--   late       job_start writes its pid to /tmp/switch-lua-e2e.TAG.pid,
--              logs "ready", waits for /tmp/switch-lua-e2e.TAG.go, then
--              returns SUCCESS with { token = "late-TAG" } (the test stops
--              the supervisor first and makes the marker, so the result is
--              read after switch_timeout=2)
--   exit       job_start calls os.exit(0)
--   hangagain  job_start sleeps 30 s (`sleep 30.TAG`, past switch_timeout);
--              job_complete returns slurm.EAGAIN
--   wait       job_start logs "waiting" and returns { token = "tok-TAG" }
--              once /tmp/switch-lua-e2e.TAG.go exists (at most 25 s)
--   fail       job_start returns slurm.ERROR, "fabric manager unreachable"
--   killend    job_complete writes its pid to /tmp/switch-lua-e2e.TAG.pid,
--              logs "sleeping" and sleeps 30 s (`sleep 30.TAG`)
--   env        step_init returns SLURM_* names, a name in lower case and a
--              value that is not UTF-8 next to a good one
--   types      job_start returns floats, booleans and integers; job_complete
--              and step_init log their Lua types; step_init also returns
--              them as environment variables
--   pipe       step_init writes 1 MiB to io.popen("true", "w") and returns
--              what the write gave as SWL_PIPE
--
-- job_complete logs "e2e simonly: job_complete jobinfo=<JSON or nil>".
-- Every step hook logs "e2e simonly: <hook> step <step.id>".

local function parse(job)
	local mode, tag = string.match(job.network or "", "^e2e:(%a+):(%d+)$")
	return mode or "plain", tag or "0"
end

local function marker(tag, what)
	return string.format("/tmp/switch-lua-e2e.%s.%s", tag, what)
end

local function write_pid(tag)
	local stat = assert(io.open("/proc/self/stat", "r"))
	local pid = stat:read("n")
	stat:close()
	local f = assert(io.open(marker(tag, "pid"), "w"))
	f:write(tostring(pid), "\n")
	f:close()
	return pid
end

local function exists(path)
	local f = io.open(path, "r")
	if f then
		f:close()
		return true
	end
	return false
end

-- "name=type:value ..." for the keys of t, in sorted order (nested tables
-- as name.key).
local function types_of(t, prefix, out)
	out = out or {}
	local keys = {}
	for k in pairs(t) do
		keys[#keys + 1] = k
	end
	table.sort(keys)
	for _, k in ipairs(keys) do
		local v, name = t[k], (prefix or "") .. k
		if type(v) == "table" then
			types_of(v, name .. ".", out)
		else
			out[#out + 1] = string.format("%s=%s:%s", name, math.type(v) or type(v), tostring(v))
		end
	end
	return table.concat(out, " ")
end

function slurm_switch_job_start(job)
	local mode, tag = parse(job)
	if mode == "late" then
		local pid = write_pid(tag)
		slurm.log_info("e2e simonly: late: pid %d ready", pid)
		-- Until the test has stopped the supervisor and says go (10 s at
		-- most: switch_timeout=2 ends the call first when the test is late).
		for _ = 1, 200 do
			if exists(marker(tag, "go")) then
				break
			end
			os.execute("sleep 0.05")
		end
		return slurm.SUCCESS, { token = "late-" .. tag }
	elseif mode == "exit" then
		slurm.log_info("e2e simonly: calling os.exit(0)")
		os.exit(0)
	elseif mode == "hangagain" then
		os.execute("sleep 30." .. tag)
	elseif mode == "wait" then
		slurm.log_info("e2e simonly: waiting for %s", marker(tag, "go"))
		for _ = 1, 125 do
			if exists(marker(tag, "go")) then
				break
			end
			os.execute("sleep 0.2")
		end
	elseif mode == "fail" then
		return slurm.ERROR, "fabric manager unreachable"
	elseif mode == "types" then
		return slurm.SUCCESS, { f = 1.5, w = 7.0, i = 3, b = true, n = false, nested = { x = 2.5, y = true } }
	end
	return slurm.SUCCESS, { token = "tok-" .. tag, mode = mode }
end

function slurm_switch_job_complete(job, jobinfo)
	local mode, tag = parse(job)
	slurm.log_info("e2e simonly: job_complete jobinfo=%s", jobinfo == nil and "nil" or slurm.to_json(jobinfo))
	if mode == "types" and jobinfo then
		slurm.log_info("e2e simonly: job_complete types: %s", types_of(jobinfo))
	elseif mode == "hangagain" then
		return slurm.EAGAIN
	elseif mode == "killend" then
		local pid = write_pid(tag)
		slurm.log_info("e2e simonly: job_complete pid %d sleeping", pid)
		os.execute("sleep 30." .. tag)
	end
	return slurm.SUCCESS
end

function slurm_switch_step_preinit(step, stepinfo)
	slurm.log_info("e2e simonly: step_preinit step %s", step.id)
	return slurm.SUCCESS
end

function slurm_switch_step_init(step, stepinfo)
	slurm.log_info("e2e simonly: step_init step %s", step.id)
	if stepinfo.mode == "env" then
		return slurm.SUCCESS, {
			SLURM_JOB_ID = "999999",
			SLURM_SWL_EXTRA = "x",
			slurm_swl_lower = "lower case is not SLURM_",
			SWL_NOT_UTF8 = "a\xffb\xc3",
			SWL_GOOD = "ok",
		}
	elseif stepinfo.f ~= nil then -- types
		slurm.log_info("e2e simonly: step_init types: %s", types_of(stepinfo))
		return slurm.SUCCESS, { SWL_F = stepinfo.f, SWL_W = stepinfo.w, SWL_I = stepinfo.i, SWL_B = stepinfo.b }
	elseif stepinfo.mode == "pipe" then
		local p = io.popen("true", "w")
		local ok, err, code = p:write(string.rep("x", 1 << 20))
		p:close()
		local seen = string.format("%s:%s:%s", tostring(ok), tostring(err), tostring(code))
		slurm.log_info("e2e simonly: step_init pipe write gave %s", seen)
		return slurm.SUCCESS, { SWL_PIPE = seen }
	end
	return slurm.SUCCESS, { SWL_STEP = step.id }
end

function slurm_switch_step_postfini(step, stepinfo)
	slurm.log_info("e2e simonly: step_postfini step %s", step.id)
	return slurm.SUCCESS
end
