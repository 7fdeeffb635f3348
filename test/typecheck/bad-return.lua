-- SPDX-License-Identifier: GPL-2.0-or-later
--
-- A switch.lua with one broken return convention: job_complete returns the
-- string "0" as its rc on line 16 (switch.lua(5): an rc must be an integer
-- number; strings are never converted).  switch-lua-typecheck must report
-- exactly that line, hook and type, and nothing else.
function slurm_switch_job_start(job)
	return slurm.SUCCESS, { vni = job.job_id, nodes = job.node_names }
end

function slurm_switch_job_complete(job, jobinfo)
	if jobinfo == nil then
		return slurm.SUCCESS
	end
	slurm.log_info("releasing %s", tostring(jobinfo.vni))
	return "0"
end
