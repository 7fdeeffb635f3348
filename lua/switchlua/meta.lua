-- SPDX-License-Identifier: GPL-2.0-or-later
--
-- switchlua.meta: reads the LuaLS definitions of the switch.lua API
-- (lua-meta/slurm.lua, the file checked against the plugin's own tables by
-- the project's tests) and answers what the other tools need from them:
--   - the luacheck standard "switchlua" (the slurm table's fields, the hook
--     globals) and the hook arguments luacheck must not call unused
--     (switchlua.luacheckrc);
--   - the fields of the job and step tables with their Lua types, the
--     slurm constants, the hooks and their parameters (switchlua.testing).
-- So no list of names is kept here: a field, constant or hook added to the
-- definitions reaches luacheck and the test module as it is.
--
-- Runs on Lua 5.1 (luacheck's interpreter in Debian) to 5.4.
--
--   local meta = require("switchlua.meta").read()        -- the installed definitions
--   local meta = require("switchlua.meta").read(path)    -- another file
--   meta.classes["switchlua.Job"]  -- { {name=, type=, optional=, doc=}, ... } in file order
--   meta.slurm_functions           -- { "log_error", ..., "run" }
--   meta.constants                 -- { SUCCESS = 0, ERROR = -1, ... }
--   meta.hooks                     -- { {name = "job_start", global = "slurm_switch_job_start",
--                                  --    params = {"job"}}, ... }
local M = {}

-- The definitions next to this module: installed, <datadir>/lua/5.4/switchlua/
-- and <datadir>/slurm-switch-lua/lua-meta/; in the source tree,
-- lua/switchlua/ and lua/switch-lua-meta/.  $SWITCHLUA_META overrides.
local function default_path()
	local env = os.getenv("SWITCHLUA_META")
	if env and env ~= "" then
		return env
	end
	local src = debug.getinfo(1, "S").source
	local dir = src:sub(1, 1) == "@" and src:sub(2):match("^(.*)/[^/]*$") or "."
	local candidates = {
		dir .. "/../../../slurm-switch-lua/lua-meta/slurm.lua",
		dir .. "/../switch-lua-meta/slurm.lua",
	}
	for _, p in ipairs(candidates) do
		local f = io.open(p, "r")
		if f then
			f:close()
			return p
		end
	end
	error("switchlua.meta: the switch.lua API definitions are not at " ..
		table.concat(candidates, " nor ") .. " (set SWITCHLUA_META)", 2)
end

--- Reads the definitions at `path` (default: see default_path).  Raises
--- naming the file when it cannot be read or defines no slurm table.
function M.read(path)
	path = path or default_path()
	local f, err = io.open(path, "r")
	if not f then
		error("switchlua.meta: cannot read " .. tostring(err), 2)
	end
	local meta = { path = path, classes = {}, slurm_functions = {}, constants = {}, hooks = {} }
	local class -- the @class whose @field lines follow
	local params = {}
	for line in f:lines() do
		local cname = line:match("^%-%-%-@class ([%w_.]+)")
		local fname, optional, ftype, doc = line:match("^%-%-%-@field ([%w_]+)(%??) (%S+)%s*(.*)$")
		if cname then
			class = { name = cname, fields = {} }
			meta.classes[cname] = class.fields
		elseif fname and class then
			class.fields[#class.fields + 1] = {
				name = fname, type = ftype:gsub("%?$", ""), optional = optional == "?" or ftype:sub(-1) == "?", doc = doc,
			}
		elseif not line:match("^%-%-%-") then
			class = nil
		end
		local pname = line:match("^%-%-%-@param ([%w_]+)")
		if pname and pname ~= "..." then
			params[#params + 1] = pname
		end
		local sfn = line:match("^function slurm%.([%w_]+)%(")
		if sfn then
			meta.slurm_functions[#meta.slurm_functions + 1] = sfn
		end
		local hook = line:match("^function (slurm_switch_[%w_]+)%(")
		if hook then
			meta.hooks[#meta.hooks + 1] = { name = hook:sub(#"slurm_switch_" + 1), global = hook, params = params }
		end
		if line:match("^function ") then
			params = {}
		end
	end
	f:close()
	for _, field in ipairs(meta.classes["switchlua.slurm"] or {}) do
		local value = field.doc:match("^(%-?%d+):")
		if value then
			meta.constants[field.name] = tonumber(value)
		end
	end
	if not meta.classes["switchlua.slurm"] or #meta.hooks == 0 then
		error("switchlua.meta: " .. path .. " defines no switchlua.slurm class or no hook", 2)
	end
	return meta
end

--- The luacheck standard: `slurm` read-only with exactly the fields the
--- plugin defines (a misspelt slurm.log_inf is "accessing undefined field"),
--- the hooks writable globals (defining them is what a script is for).
function M.luacheck_std(meta)
	local fields = {}
	for _, field in ipairs(meta.classes["switchlua.slurm"]) do
		fields[field.name] = {}
	end
	for _, name in ipairs(meta.slurm_functions) do
		fields[name] = {}
	end
	local globals = {}
	for _, h in ipairs(meta.hooks) do
		globals[#globals + 1] = h.global
	end
	return { read_globals = { slurm = { fields = fields } }, globals = globals }
end

--- The unused-argument warnings (212) luacheck must not give for the
--- hooks' parameters ("212/job", ...): a hook's signature is the contract's,
--- so a hook that ignores its stepinfo is not a mistake.
function M.luacheck_ignore(meta)
	local seen, out = {}, {}
	for _, h in ipairs(meta.hooks) do
		for _, p in ipairs(h.params) do
			if not seen[p] then
				seen[p] = true
				out[#out + 1] = "212/" .. p
			end
		end
	end
	return out
end

return M
