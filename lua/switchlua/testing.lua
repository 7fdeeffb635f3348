-- SPDX-License-Identifier: GPL-2.0-or-later
--
-- switchlua.testing: unit tests of a site's switch.lua hooks, without a
-- cluster, e.g. with busted (Debian: lua-busted; run it with Lua 5.4, the
-- plugin's Lua: `lua5.4 /usr/bin/busted spec/`).  switch.lua(5) is the
-- contract; switch-lua(1), UNIT TESTS, shows a spec.
--
--   local testing = require("switchlua.testing")
--   local job = testing.job({ job_id = 42, network = "vni", nodes = "node[1-2]",
--                             node_names = { "node1", "node2" } })
--   local r = testing.run("/etc/slurm/switch.lua", "job_start", job)
--   assert.equal("ok", r.class)          -- ok, declined, failed, eagain, lua_error, bad_return, ...
--   assert.equal(slurm_success, r.rc)    -- r.values: every value returned (r.values.n of them)
--   assert.same({ vni = 1042 }, r.jobinfo)
--   assert.equal("info", r.logs[1].level) -- every slurm.log_* and print line, escaped as the plugin does
--
-- What comes from where:
--   - the fields of the job and step tables, their Lua types and whether
--     they may be nil, the slurm constants, the slurm functions and the
--     hooks with their parameters: the API definitions the package installs
--     (lua-meta/slurm.lua, read by switchlua.meta), the file the project's
--     tests check against the plugin's own tables;
--   - the return conventions and the outcome classes: switch.lua(5) and
--     switch-lua(1) STATUS, as the plugin's runner applies them.
-- testing.run runs the hook as the runner does: the script loaded into a
-- fresh global environment (its own copies of the standard libraries, its
-- own module cache for require, a fresh read-only slurm table, print
-- replaced) and its main chunk run, then the one hook called; nothing a run
-- leaves in globals reaches the next.  What differs from the plugin: it is
-- the test's Lua state, not a new process (no switch_timeout, no memory
-- limit, no process group); slurm.run runs its command through
-- testing.run_command (below: /bin/sh with every argument quoted, so still
-- no word of a job field is code), which a spec may replace by a stub.
local meta = require("switchlua.meta").read()

local M = {}

M.meta = meta
--- The slurm constants (SUCCESS, ERROR, EAGAIN, FABRIC_DOWN, ...).
M.constants = {}
for k, v in pairs(meta.constants) do
	M.constants[k] = v
end

-- ------------------------------------------------------------ job and step

-- Values of a plain job (one node, a batch job) for the fields that may not
-- be nil; a field the definitions add gets the zero value of its type.
local job_defaults = {
	job_id = 1, user_id = 1000, group_id = 1000, node_names = { "node1" }, num_nodes = 1,
	restart_count = 0, batch = true, submit_time = 1700000000, attempt = 1, num_tasks = 1,
	num_cpus = 1, user_name = "user", name = "job", nodes = "node1", partition = "debug",
	network = "vni",
}
local step_defaults = {
	job_id = 1, step_id = 0, id = "1.0", node_id = 0, num_nodes = 1, num_tasks = 1,
	user_id = 1000, batch = false, attempt = 1, user_name = "user", node_name = "node1",
	nodes = "node1", network = "vni",
}

local function zero_of(t)
	if t == "integer" or t == "number" then
		return 0
	elseif t == "string" then
		return ""
	elseif t == "boolean" then
		return false
	elseif t:sub(-2) == "[]" then
		return {}
	end
	return nil
end

local function has_type(v, t)
	if t == "integer" then
		return math.type(v) == "integer"
	elseif t == "number" then
		return type(v) == "number"
	elseif t == "string" or t == "boolean" then
		return type(v) == t
	elseif t:sub(-2) == "[]" then
		if type(v) ~= "table" then
			return false
		end
		for i, x in pairs(v) do
			if math.type(i) ~= "integer" or i < 1 or i > #v or not has_type(x, t:sub(1, -3)) then
				return false
			end
		end
		return true
	end
	return true
end

-- A deep copy of a plain value (the tables of a test: no cycles but shared
-- ones copied once).
local function copy(v, seen)
	if type(v) ~= "table" then
		return v
	end
	seen = seen or {}
	if seen[v] then
		return seen[v]
	end
	local out = {}
	seen[v] = out
	for k, x in pairs(v) do
		out[copy(k, seen)] = copy(x, seen)
	end
	return out
end

local function shallow(t)
	local out = {}
	for k, x in pairs(t) do
		out[k] = x
	end
	return out
end

local function build(class, defaults, given, what)
	local fields = meta.classes[class]
	local known = {}
	local out = {}
	for _, f in ipairs(fields) do
		known[f.name] = f
	end
	for k, v in pairs(given or {}) do
		local f = known[k]
		if not f then
			error(string.format("switchlua.testing.%s: %s has no field %q (%s)", what, class,
				tostring(k), meta.path), 3)
		end
		if not has_type(v, f.type) then
			error(string.format("switchlua.testing.%s: field %s must be %s, not %s (%s)", what, k,
				f.type, math.type(v) or type(v), meta.path), 3)
		end
		out[k] = copy(v)
	end
	for _, f in ipairs(fields) do
		if out[f.name] == nil and (given == nil or given[f.name] == nil) then
			local d = defaults[f.name]
			if d == nil and not f.optional then
				d = zero_of(f.type)
			end
			out[f.name] = copy(d)
		end
	end
	return out
end

--- A job table as job_start and job_complete get it: every field of
--- switchlua.Job, those given (checked: a field the plugin does not have, or
--- a value of the wrong Lua type, raises), the others those of a plain
--- one-node batch job (optional ones nil unless listed in the defaults).
--- node_names given without num_nodes or nodes: those follow from it.
function M.job(given)
	local job = build("switchlua.Job", job_defaults, given, "job")
	if given and given.node_names then
		if given.num_nodes == nil then
			job.num_nodes = #given.node_names
		end
		if given.nodes == nil then
			job.nodes = table.concat(given.node_names, ",")
		end
	end
	return job
end

--- A step table as the step hooks get it (switchlua.Step), as M.job does;
--- id follows from job_id and step_id unless given.
function M.step(given)
	local step = build("switchlua.Step", step_defaults, given, "step")
	if given and given.id == nil then
		step.id = string.format("%d.%d", step.job_id, step.step_id)
	end
	return step
end

-- ------------------------------------------------------------ slurm.to_json

local function utf8_valid(s)
	return utf8.len(s) ~= nil
end

local function json_string(s)
	return '"' .. s:gsub('[%c"\\]', function(c)
		local named = { ['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f",
			["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" }
		return named[c] or string.format("\\u%04x", c:byte())
	end) .. '"'
end

local function json_number(n)
	if n ~= n or n == math.huge or n == -math.huge then
		return nil
	end
	if math.type(n) == "integer" then
		return tostring(n)
	end
	if n == math.floor(n) and math.abs(n) < 1e15 then
		return string.format("%.1f", n)
	end
	for digits = 15, 17 do
		local s = string.format("%." .. digits .. "g", n)
		if tonumber(s) == n then
			return s
		end
	end
	return string.format("%.17g", n)
end

local MAX_DEPTH, MAX_BYTES = 32, 65536

local function storable_error(fn, path, what)
	error(string.format("%s: %s: %s", fn, path, what), 0)
end

-- Encodes v (a storable value, switch.lua(5) JOBINFO AND STEPINFO) or
-- raises "<fn>: <path>: <why>".
local function encode(fn, v, path, depth, seen)
	local t = type(v)
	if v == nil then
		return "null"
	elseif t == "boolean" then
		return tostring(v)
	elseif t == "number" then
		return json_number(v) or storable_error(fn, path, "a NaN or infinite number cannot be converted")
	elseif t == "string" then
		if not utf8_valid(v) then
			storable_error(fn, path, "a string that is not valid UTF-8 cannot be converted")
		end
		return json_string(v)
	elseif t ~= "table" then
		storable_error(fn, path, "a " .. t .. " cannot be converted")
	end
	if getmetatable(v) ~= nil then
		storable_error(fn, path, "a table with a metatable cannot be converted")
	end
	if seen[v] then
		storable_error(fn, path, "a table that contains itself cannot be converted")
	end
	if depth > MAX_DEPTH then
		storable_error(fn, path, "more than " .. MAX_DEPTH .. " tables deep")
	end
	seen[v] = true
	local n, strings, ints = 0, {}, 0
	for k in pairs(v) do
		n = n + 1
		if type(k) == "string" then
			strings[#strings + 1] = k
		elseif math.type(k) == "integer" and k >= 1 then
			ints = ints + 1
		else
			storable_error(fn, path, "a key that is neither a string nor an array index cannot be converted")
		end
	end
	local out
	if n == 0 then
		out = "{}"
	elseif #strings == n then
		table.sort(strings)
		local parts = {}
		for _, k in ipairs(strings) do
			if not utf8_valid(k) then
				storable_error(fn, path, "a key that is not valid UTF-8 cannot be converted")
			end
			parts[#parts + 1] = json_string(k) .. ":" .. encode(fn, v[k], path .. "." .. k, depth + 1, seen)
		end
		out = "{" .. table.concat(parts, ",") .. "}"
	elseif ints == n and #v == n then
		local parts = {}
		for i = 1, n do
			parts[i] = encode(fn, v[i], string.format("%s[%d]", path, i), depth + 1, seen)
		end
		out = "[" .. table.concat(parts, ",") .. "]"
	else
		storable_error(fn, path, "a table that mixes array and map keys, or an array with holes, cannot be converted")
	end
	seen[v] = nil
	return out
end

--- slurm.to_json as the plugin defines it (compact, map keys sorted,
--- integral floats with a fraction, {} for an empty table, null for nil;
--- raises naming the path of a value that is not storable).
function M.to_json(value)
	local s = encode("slurm.to_json", value, "value", 1, {})
	if #s > MAX_BYTES then
		error(string.format("slurm.to_json: value: more than %d bytes encoded", MAX_BYTES), 2)
	end
	return s
end

-- ------------------------------------------------------------ slurm.run

local function shell_quote(s)
	return "'" .. s:gsub("'", "'\\''") .. "'"
end

--- The command runner slurm.run uses in a test: argv as slurm.run takes it,
--- opts.stdin, opts.timeout (ignored here); returns the slurm.run result
--- table, or nil and the plugin's message when the command cannot be
--- started.  This default runs the command through /bin/sh, every argument
--- single-quoted; replace it (`testing.run_command = function(argv, opts)
--- ... end`, or busted's stub) to answer for a fabric manager.
function M.run_command(argv, opts)
	local words = {}
	for i, a in ipairs(argv) do
		words[i] = shell_quote(a)
	end
	local input = "/dev/null"
	local tmp_in
	if opts and opts.stdin then
		tmp_in = os.tmpname()
		local f = assert(io.open(tmp_in, "w"))
		f:write(opts.stdin)
		f:close()
		input = tmp_in
	end
	local tmp_err = os.tmpname()
	local cmd = string.format("command -v %s >/dev/null 2>&1 || exit 127; exec %s <%s 2>%s",
		words[1], table.concat(words, " "), shell_quote(input), shell_quote(tmp_err))
	local started = os.clock()
	local p = io.popen(cmd, "r")
	local out = p:read("a")
	local _, how, code = p:close()
	local ef = io.open(tmp_err, "r")
	local err = ef and ef:read("a") or ""
	if ef then
		ef:close()
	end
	os.remove(tmp_err)
	if tmp_in then
		os.remove(tmp_in)
	end
	if how == "exit" and code == 127 then
		return nil, string.format("slurm.run: cannot run %s: No such file or directory", argv[1])
	end
	return {
		status = how == "exit" and code or nil, signal = how == "signal" and code or nil,
		stdout = out, stderr = err, truncated = false, timed_out = false,
		elapsed = os.clock() - started,
	}
end

-- ------------------------------------------------------------ the slurm table

local LEVELS = { "error", "info", "verbose", "debug", "debug2", "debug3", "debug4", "debug5" }

-- A log line as the plugin writes it: control characters escaped.
local function escape_line(s)
	return (s:gsub("[%c\127]", function(c)
		local named = { ["\n"] = "\\n", ["\t"] = "\\t", ["\r"] = "\\r" }
		return named[c] or string.format("\\x%02x", c:byte())
	end))
end

--- A fresh slurm table as the hooks see it: the constants, slurm.log_<level>
--- appending {level =, message =} to `logs`, slurm.to_json, slurm.run
--- (through M.run_command); read-only ("slurm: attempt to set read-only
--- field 'x'").  Every function the definitions name must be here: a test
--- of this module checks it.
function M.slurm(logs)
	local t = {}
	for k, v in pairs(M.constants) do
		t[k] = v
	end
	for _, level in ipairs(LEVELS) do
		t["log_" .. level] = function(fmt, ...)
			local ok, s = pcall(string.format, fmt, ...)
			if not ok then
				error("slurm.log_" .. level .. ": " .. tostring(s), 2)
			end
			logs[#logs + 1] = { level = level, message = escape_line(s) }
		end
	end
	t.to_json = M.to_json
	t.run = function(argv, opts)
		if type(argv) ~= "table" or #argv == 0 then
			error("slurm.run: argv must be a non-empty array of strings", 2)
		end
		for _, a in ipairs(argv) do
			if type(a) ~= "string" then
				error("slurm.run: argv must be a non-empty array of strings", 2)
			end
		end
		return M.run_command(argv, opts)
	end
	return setmetatable({}, {
		__index = t,
		__newindex = function(_, k)
			error(string.format("slurm: attempt to set read-only field '%s'", tostring(k)), 2)
		end,
		__metatable = false,
	})
end

-- ------------------------------------------------------------ running a hook

local LIBS = { "string", "table", "math", "os", "io", "utf8", "coroutine", "debug", "package" }
local BASE = { "assert", "collectgarbage", "error", "getmetatable", "ipairs", "load", "loadfile",
	"dofile", "next", "pairs", "pcall", "rawequal", "rawget", "rawlen", "rawset", "select",
	"setmetatable", "tonumber", "tostring", "type", "xpcall", "warn", "_VERSION" }

local function fresh_env(logs)
	local env = {}
	for _, name in ipairs(BASE) do
		env[name] = _G[name]
	end
	for _, name in ipairs(LIBS) do
		env[name] = shallow(_G[name])
	end
	env._G = env
	env.slurm = M.slurm(logs)
	env.print = function(...)
		local parts = {}
		for i = 1, select("#", ...) do
			parts[i] = tostring((select(i, ...)))
		end
		logs[#logs + 1] = { level = "info", message = escape_line(table.concat(parts, "\t")) }
	end
	-- Lua modules load into this environment, once per run.
	local loaded = {}
	env.require = function(name)
		if loaded[name] ~= nil then
			return loaded[name]
		end
		local path = package.searchpath(name, package.path)
		if not path then
			return require(name) -- a C module or one of the standard libraries
		end
		local chunk = assert(loadfile(path, "t", env))
		local v = chunk(name, path)
		if v == nil then
			v = true
		end
		loaded[name] = v
		return v
	end
	env.loadfile = function(path, mode, e)
		return loadfile(path, mode, e or env)
	end
	env.load = function(chunk, name, mode, e)
		return load(chunk, name, mode, e or env)
	end
	return env
end

local function is_integral(v)
	return type(v) == "number" and v == v and math.floor(v) == v and v ~= math.huge and v ~= -math.huge
end

local function hook_of(name)
	for _, h in ipairs(meta.hooks) do
		if h.name == name or h.global == name then
			return h
		end
	end
	error(string.format("switchlua.testing.run: no hook %q (the hooks: %s)", tostring(name),
		(function()
			local names = {}
			for _, h in ipairs(meta.hooks) do
				names[#names + 1] = h.name
			end
			return table.concat(names, ", ")
		end)()), 3)
end

-- The outcome of a returned call, by the hook's convention (switch.lua(5)).
local function classify(hook, r)
	local v = r.values
	local questions = { block_job_complete = true, setup_special_steps = true }
	if questions[hook] then
		if type(v[1]) ~= "boolean" then
			return "bad_return", "returned " .. (v.n == 0 and "nothing" or type(v[1])) .. ", not true or false"
		end
		r.answer = v[1]
		return "ok"
	end
	if v.n == 0 then
		return "bad_return", "returned no value"
	end
	if not is_integral(v[1]) then
		return "bad_return", "returned " .. (math.type(v[1]) or type(v[1])) .. " as rc, not an integer"
	end
	r.rc = math.tointeger(v[1])
	local max = (hook == "job_start" or hook == "step_init") and 2 or hook == "job_complete" and 3 or 1
	for i = max + 1, v.n do
		if v[i] ~= nil then
			return "bad_return", "returned an extra value " .. i
		end
	end
	if hook == "job_start" then
		local info = v[2]
		if r.rc ~= M.constants.SUCCESS then
			if info ~= nil and type(info) ~= "table" and type(info) ~= "string" then
				return "bad_return", "returned a " .. type(info) .. " as jobinfo"
			end
			r.message = type(info) == "string" and info or nil
			return "failed"
		end
		if info == nil then
			return "declined"
		end
		if type(info) ~= "table" then
			return "failed", "jobinfo: a " .. type(info) .. " is not a table"
		end
		local ok, err = pcall(encode, "jobinfo", info, "jobinfo", 1, {})
		if not ok then
			return "failed", err
		end
		r.jobinfo = copy(info)
		return "ok"
	elseif hook == "job_complete" then
		-- rc[, message[, nodes]] (switch.lua(5)): nodes, a host list or an
		-- array of names, are the nodes a failure concerns.
		if v[2] ~= nil and type(v[2]) ~= "string" then
			return "bad_return", "returned a " .. type(v[2]) .. " as the message"
		end
		r.message = v[2]
		if v[3] ~= nil and type(v[3]) ~= "string" and type(v[3]) ~= "table" then
			return "bad_return", "returned a " .. type(v[3]) .. " as the nodes"
		end
		r.nodes = type(v[3]) == "table" and copy(v[3]) or v[3]
		if r.rc == M.constants.EAGAIN then
			return "eagain"
		end
		return r.rc < 0 and "failed" or "ok"
	elseif hook == "step_init" then
		if v[2] ~= nil and type(v[2]) ~= "table" then
			return "bad_return", "returned a " .. type(v[2]) .. " as the environment"
		end
		r.env = copy(v[2])
	end
	return r.rc < 0 and "failed" or "ok"
end

--- Runs hook `hook` ("job_start" or "slurm_switch_job_start", ...) of the
--- script at `path` with the arguments given (copies: the hook cannot change
--- the caller's tables), in a fresh environment (see the top of this file).
--- Returns a table:
---   class    the outcome class of switch-lua(1) STATUS: ok, declined (job_start,
---            nil jobinfo), eagain, failed, lua_error, bad_return, load_failed
---   rc       the integer rc (nil unless the hook returned one)
---   jobinfo  job_start: a copy of the table returned with rc 0 (as stored)
---   message  job_start: the string returned with a failed rc; job_complete: its
---            second value
---   nodes    job_complete: its third value (a host list or an array of names)
---   env      step_init: the environment table returned
---   answer   the two questions: the boolean returned
---   values   every value returned, with n
---   error    lua_error/load_failed/bad_return/failed: why
---   logs     { {level =, message =}, ... } every slurm.log_* and print line
---   defined  false when the script does not define the hook (its default applies)
function M.run(path, hook, ...)
	local h = hook_of(hook)
	local logs = {}
	local r = { logs = logs, values = { n = 0 }, defined = true }
	local env = fresh_env(logs)
	local chunk, err = loadfile(path, "t", env)
	if not chunk then
		r.class, r.error = "load_failed", err
		return r
	end
	local ok, res = pcall(chunk)
	if not ok then
		r.class, r.error = "load_failed", tostring(res)
		return r
	end
	if res ~= nil and res ~= M.constants.SUCCESS then
		r.class, r.error = "load_failed", "the script's main chunk returned " .. tostring(res)
		return r
	end
	local fn = rawget(env, h.global)
	local args = table.pack(...)
	for i = 1, args.n do
		args[i] = copy(args[i])
	end
	if fn == nil then
		r.defined = false
		local questions = { block_job_complete = true, setup_special_steps = true }
		r.values = questions[h.name] and table.pack(false) or table.pack(M.constants.SUCCESS)
	elseif type(fn) ~= "function" then
		r.class, r.error = "load_failed", h.global .. " is a " .. type(fn) .. ", not a function"
		return r
	else
		local out = table.pack(pcall(fn, table.unpack(args, 1, args.n)))
		if not out[1] then
			r.class, r.error = "lua_error", tostring(out[2])
			return r
		end
		r.values = table.pack(table.unpack(out, 2, out.n))
	end
	r.class, r.error = classify(h.name, r)
	return r
end

return M
