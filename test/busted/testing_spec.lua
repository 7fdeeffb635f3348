-- SPDX-License-Identifier: GPL-2.0-or-later
--
-- switchlua.testing itself: its job and step tables have every field of
-- the API definitions with its type; its slurm table has every constant
-- and function they name, and is read-only; to_json follows the rules of
-- switch.lua(5); a run is fresh (globals do not leak between runs); the
-- return conventions give the outcome classes of switch-lua(1) STATUS.
local testing = require("switchlua.testing")
local meta = testing.meta

local function lua_type_ok(v, t, optional)
	if v == nil then
		return optional
	end
	if t == "integer" then
		return math.type(v) == "integer"
	elseif t == "string[]" then
		return type(v) == "table"
	end
	return type(v) == t
end

describe("switchlua.testing", function()
	it("builds job and step tables with every field of the definitions, of its type", function()
		for class, build in pairs({ ["switchlua.Job"] = testing.job, ["switchlua.Step"] = testing.step }) do
			local t = build()
			assert.is_true(#meta.classes[class] > 10, class)
			for _, f in ipairs(meta.classes[class]) do
				assert.is_true(lua_type_ok(t[f.name], f.type, f.optional), class .. "." .. f.name)
				if not f.optional then
					assert.is_not_nil(t[f.name], class .. "." .. f.name .. " may not be nil")
				end
			end
			for k in pairs(t) do
				local known = false
				for _, f in ipairs(meta.classes[class]) do
					known = known or f.name == k
				end
				assert.is_true(known, class .. " has no field " .. k)
			end
		end
	end)

	it("refuses a field the plugin does not have, and a value of the wrong type", function()
		assert.has_error(function() testing.job({ nmae = "x" }) end)
		assert.has_error(function() testing.job({ job_id = "42" }) end)
		assert.has_error(function() testing.job({ job_id = 4.5 }) end)
		assert.equal(2, testing.job({ node_names = { "a", "b" } }).num_nodes)
		assert.equal("5.3", testing.step({ job_id = 5, step_id = 3 }).id)
	end)

	it("gives the hooks every constant and function of the slurm table, read-only", function()
		local s = testing.slurm({})
		for _, f in ipairs(meta.classes["switchlua.slurm"]) do
			assert.is_not_nil(s[f.name], f.name)
		end
		for _, name in ipairs(meta.slurm_functions) do
			assert.equal("function", type(s[name]), name)
		end
		assert.same({ SUCCESS = 0, ERROR = -1, EAGAIN = 11, FABRIC_DOWN = -100 }, testing.constants)
		assert.has_error(function() s.SUCCESS = 1 end, "slurm: attempt to set read-only field 'SUCCESS'")
	end)

	it("converts to JSON as slurm.to_json does", function()
		assert.equal('{"a":[1,2.0,"x"],"b":true}', testing.to_json({ b = true, a = { 1, 2.0, "x" } }))
		assert.equal('{"a":1,"b":{}}', testing.to_json({ b = {}, a = 1 }))
		assert.equal("null", testing.to_json(nil))
		assert.equal('"a\\"b\\n"', testing.to_json('a"b\n'))
		assert.has_error(function() testing.to_json({ a = { print } }) end,
			"slurm.to_json: value.a[1]: a function cannot be converted")
		assert.has_error(function() testing.to_json({ x = 0 / 0 }) end)
	end)

	it("runs every hook fresh and classes the returns as the runner does", function()
		local path = os.tmpname()
		local f = assert(io.open(path, "w"))
		f:write([[
counter = (counter or 0) + 1
function slurm_switch_job_start(job)
	slurm.log_info("JobId=%d: run %d", job.job_id, counter)
	if job.network == "bad" then return "0" end
	if job.network == "err" then error("boom") end
	if job.network == "fn" then return slurm.SUCCESS, { f = print } end
	return slurm.SUCCESS, { n = counter }
end
function slurm_switch_job_complete(job, jobinfo)
	if job.network == "later" then return slurm.EAGAIN end
	if job.failed_nodes then return slurm.ERROR, "port stuck", job.failed_nodes end
	return jobinfo and slurm.SUCCESS or slurm.ERROR
end
]])
		f:close()
		local r1 = testing.run(path, "job_start", testing.job({ job_id = 7 }))
		local r2 = testing.run(path, "job_start", testing.job({ job_id = 7 }))
		assert.same({ n = 1 }, r1.jobinfo)
		assert.same({ n = 1 }, r2.jobinfo, "a fresh environment per run")
		assert.same({ { level = "info", message = "JobId=7: run 1" } }, r2.logs)
		assert.equal("bad_return", testing.run(path, "job_start", testing.job({ network = "bad" })).class)
		local e = testing.run(path, "job_start", testing.job({ network = "err" }))
		assert.equal("lua_error", e.class)
		assert.matches("boom", e.error)
		assert.equal("failed", testing.run(path, "job_start", testing.job({ network = "fn" })).class)
		assert.equal("eagain", testing.run(path, "job_complete", testing.job({ network = "later" }), {}).class)
		assert.equal("failed", testing.run(path, "job_complete", testing.job(), nil).class)
		-- Issue 20: job_complete -> rc, message, nodes.
		local n = testing.run(path, "job_complete",
			testing.job({ failed_nodes = "node2", failed_node_names = { "node2" } }), {})
		assert.equal("failed", n.class)
		assert.equal("port stuck", n.message)
		assert.equal("node2", n.nodes)
		local absent = testing.run(path, "step_init", testing.step(), nil)
		assert.is_false(absent.defined)
		assert.equal("ok", absent.class)
		os.remove(path)
	end)
end)
