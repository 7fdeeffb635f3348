-- SPDX-License-Identifier: GPL-2.0-or-later
--
-- test/e2e/lua/guard.lua: issue 11 on the live cluster (t1101-guard.sh).
--
-- --network=guard:fail        job_start always fails, with its message as
--                             the second value ("fabric manager
--                             unreachable"): the requeue-loop guard.
-- --network=guard:dump:TAG    job_start writes slurm.to_json(job) to
--                             /tmp/switch-lua-e2e-args.TAG.job.json and
--                             accepts; step_init writes slurm.to_json(step)
--                             to /tmp/switch-lua-e2e-args.TAG.step.<step.id>.<node>.json.
local function write(path, text)
	local f = assert(io.open(path, "w"))
	f:write(text, "\n")
	f:close()
end

function slurm_switch_job_start(job)
	local net = job.network or ""
	if net == "guard:fail" then
		return slurm.ERROR, "fabric manager unreachable"
	end
	local tag = net:match("^guard:dump:([%w_-]+)$")
	if tag then
		write(string.format("/tmp/switch-lua-e2e-args.%s.job.json", tag), slurm.to_json(job))
		return slurm.SUCCESS, { tag = tag }
	end
	return slurm.SUCCESS, nil
end

function slurm_switch_job_complete(job, jobinfo)
	return slurm.SUCCESS
end

function slurm_switch_step_init(step, stepinfo)
	if stepinfo and stepinfo.tag then
		write(string.format("/tmp/switch-lua-e2e-args.%s.step.%s.%s.json", stepinfo.tag,
			step.id, step.node_name), slurm.to_json(step))
	end
	return slurm.SUCCESS
end
