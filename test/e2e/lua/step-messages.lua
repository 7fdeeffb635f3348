-- SPDX-License-Identifier: GPL-2.0-or-later
--
-- test/e2e/lua/step-messages.lua: step hooks that return a message with
-- their rc, change the locale, and return awkward environment names
-- (t0511-step-messages.sh).
--
-- --network=e2e:postfini_msg   step_postfini returns -1, "fabric port down é"
-- --network=e2e:locale         step_init switches to de_DE.UTF-8 and returns
--                              HALF = 0.5, and names with a space and a
--                              newline next to a good one
-- --network=e2e:init_msg       step_init returns -1, "no VNI left"
function slurm_switch_job_start(job)
	return slurm.SUCCESS, { mode = job.network }
end

function slurm_switch_job_complete(job, jobinfo)
	return slurm.SUCCESS
end

function slurm_switch_step_init(step, stepinfo)
	if stepinfo.mode == "e2e:init_msg" then
		return -1, "no VNI left"
	end
	if stepinfo.mode == "e2e:locale" then
		local got = os.setlocale("de_DE.UTF-8")
		slurm.log_info("e2e locale: os.setlocale gave %s", tostring(got))
		return 0, { HALF = 0.5, ["BAD NAME"] = "x", ["BAD\nNL"] = "y", GOOD_NAME = "z" }
	end
	return 0
end

function slurm_switch_step_postfini(step, stepinfo)
	if stepinfo.mode == "e2e:postfini_msg" then
		return -1, "fabric port down é"
	end
	return 0
end
