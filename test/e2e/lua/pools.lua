-- SPDX-License-Identifier: GPL-2.0-or-later
--
-- test/e2e/lua/pools.lua (t1701, fabric-ID pools): job_start logs the VNI
-- its job table carries (job.pools.vni[1]) and accepts; job_complete fails
-- for a job named fail_teardown (its ID is then quarantined) and succeeds
-- for every other job.
function slurm_switch_job_start(job)
	local vni = job.pools and job.pools.vni and job.pools.vni[1] or -1
	slurm.log_info("pools: job %d got vni %d", job.job_id, vni)
	return slurm.SUCCESS, { vni = vni }
end

function slurm_switch_job_complete(job, jobinfo)
	if job.name == "fail_teardown" then
		return slurm.ERROR, "the fabric manager refused to free the VNI"
	end
	return slurm.SUCCESS
end
