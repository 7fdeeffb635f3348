-- SPDX-License-Identifier: GPL-2.0-or-later
--
-- test/e2e/lua/pools.lua (t1701, t1702: fabric-ID pools): job_start logs
-- the VNI its job table carries (job.pools.vni[1]) and accepts; job_complete
-- fails for a job named fail_teardown (its ID is then quarantined) and
-- succeeds for every other job.  While /tmp/switch-lua-e2e-pools/fabric
-- says "down" (the test writes it), both return slurm.FABRIC_DOWN.
local function fabric_down()
	local f = io.open("/tmp/switch-lua-e2e-pools/fabric", "r")
	if not f then
		return false
	end
	local s = f:read("l")
	f:close()
	return s == "down"
end

function slurm_switch_job_start(job)
	if fabric_down() then
		return slurm.FABRIC_DOWN
	end
	local vni = job.pools and job.pools.vni and job.pools.vni[1] or -1
	slurm.log_info("pools: job %d got vni %d", job.job_id, vni)
	return slurm.SUCCESS, { vni = vni }
end

function slurm_switch_job_complete(job, jobinfo)
	if fabric_down() then
		return slurm.FABRIC_DOWN
	end
	if job.name == "fail_teardown" then
		return slurm.ERROR, "the fabric manager refused to free the VNI"
	end
	return slurm.SUCCESS
end
