-- SPDX-License-Identifier: GPL-2.0-or-later
--
-- A busted spec of the example conf/switch.lua, written as a site writes
-- one for its own switch.lua with switchlua.testing (switch-lua(1), UNIT
-- TESTS).  test/busted/run.sh runs it on the example, and on a copy whose
-- job_start is broken on purpose, where it must fail.
-- $SWITCHLUA_EXAMPLE: the script (default conf/switch.lua).
local testing = require("switchlua.testing")
local script = os.getenv("SWITCHLUA_EXAMPLE") or "conf/switch.lua"
local SUCCESS, ERROR = testing.constants.SUCCESS, testing.constants.ERROR

describe("conf/switch.lua", function()
	it("asks to hold the nodes during job_complete, and no special steps", function()
		assert.is_true(testing.run(script, "block_job_complete").answer)
		assert.is_false(testing.run(script, "setup_special_steps").answer)
	end)

	it("declines a job whose --network is not vni", function()
		local r = testing.run(script, "job_start", testing.job({ network = "ib" }))
		assert.equal("declined", r.class)
		assert.equal(SUCCESS, r.rc)
		assert.is_nil(r.jobinfo)
	end)

	it("gives a --network=vni job a VNI, again the same for the same attempt, and releases it", function()
		local job = testing.job({
			job_id = 42, network = "vni", nodes = "node[1-2]", node_names = { "node1", "node2" },
			submit_time = os.time(), attempt = 7, name = "train\nstep",
		})
		local r = testing.run(script, "job_start", job)
		-- The claim goes whatever an assertion below says (a broken copy).
		finally(function() testing.run(script, "job_complete", job, r.jobinfo) end)
		assert.equal("ok", r.class, r.error)
		-- Claimed by an exclusive mkdir: 1042 unless another job holds it.
		local vni = r.jobinfo and r.jobinfo.vni
		assert.is_true(type(vni) == "number" and vni >= 1000 and vni < 4000, tostring(vni))
		assert.same({ { level = "info", message = "JobId=42: VNI " .. vni .. " on node[1-2], Name=train\\nstep" } }, r.logs)
		local again = testing.run(script, "job_start", job)
		assert.same(r.jobinfo, again.jobinfo)
		local done = testing.run(script, "job_complete", job, r.jobinfo)
		assert.equal("ok", done.class, done.error)
		assert.equal("JobId=42: VNI " .. vni .. " released", done.logs[1].message)
	end)

	it("fails the setup with the fabric manager's message when its command cannot run", function()
		local real = testing.run_command
		testing.run_command = function(argv)
			return nil, "slurm.run: cannot run " .. argv[1] .. ": No such file or directory"
		end
		local r = testing.run(script, "job_start", testing.job({ job_id = 43 }))
		testing.run_command = real
		assert.equal("failed", r.class)
		assert.equal(ERROR, r.rc)
		assert.equal("slurm.run: cannot run id: No such file or directory", r.message)
	end)

	it("hands the VNI to the step's tasks in step_init, and nothing without a stepinfo", function()
		local step = testing.step({ job_id = 42, step_id = 0 })
		local r = testing.run(script, "step_init", step, { vni = 1042 })
		assert.equal("ok", r.class, r.error)
		assert.same({ FABRIC_VNI = 1042, FABRIC_ENABLED = true }, r.env)
		assert.is_nil(testing.run(script, "step_init", step, nil).env)
	end)
end)
