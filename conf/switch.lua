-- SPDX-License-Identifier: GPL-2.0-or-later
--
-- Example switch.lua for SwitchType=switch/lua: a per-job fabric partition.
-- See switch.lua(5) for every hook and its return convention.
--
-- Install as <SlurmConfDir>/switch.lua (next to slurm.conf).  Try it first:
--   switch-lua check /etc/slurm/switch.lua
--   switch-lua simulate /etc/slurm/switch.lua --network vni --nodes 3 --steps 2
--
-- This example pretends to talk to a fabric manager: it allocates a VNI per
-- job in job_start, hands it to every step (stepinfo) as FABRIC_VNI, and
-- releases it in job_complete.  The "fabric manager" is a state directory,
-- so the example runs anywhere; replace fabric_* with your site's calls.

-- The controller hooks run with a clean environment (see switch.lua(5)), so
-- site settings belong in this file, not in environment variables.
local STATE_DIR = "/var/tmp/switch-lua-example"

-- Hold nodes in COMPLETING until job_complete reports; lets it return EAGAIN.
function slurm_switch_block_job_complete()
	return true
end

function slurm_switch_setup_special_steps()
	return false
end

-- The allocation's key.  job_id alone is not safe: after a slurmctld crash
-- Slurm can give a lost job's id to the next job.  (job_id, submit_time)
-- names the job record, attempt the setup: job_complete gets the same
-- attempt as the job_start whose work it undoes.  cluster_name (ClusterName
-- of slurm.conf) keeps two clusters on one fabric manager apart: their job
-- ids collide.
local function vni_file(job)
	return string.format("%s/%s-job-%d-%d-%d.vni", STATE_DIR, job.cluster_name or "cluster",
		job.job_id, job.submit_time or 0, job.attempt or 0)
end

-- One call of the "fabric manager" command: an argument vector, no shell
-- (slurm.run, see switch.lua(5)), so job.name or job.account in it are
-- data whatever they contain.  Never build a command string for
-- os.execute or io.popen from job fields: the user chose them.
local function fabric(argv, input)
	local r, err = slurm.run(argv, { stdin = input, timeout = 5 })
	if not r then
		return nil, err -- not started, e.g. a missing binary
	end
	if r.status ~= 0 then
		return nil, string.format("%s failed (%s): %s", argv[1],
			r.timed_out and "timed out" or ("exit " .. tostring(r.status or r.signal)), r.stderr)
	end
	return r.stdout
end

-- Idempotent by the key: asked twice for one attempt, it answers the same.
local function fabric_allocate(job)
	-- job_start and job_complete run as SlurmUser, `switch-lua simulate` as
	-- whoever runs it: a sticky, world-writable directory serves both.
	local ok, err = fabric({ "mkdir", "-p", "-m", "1777", STATE_DIR })
	if not ok then
		return nil, err
	end
	local f = io.open(vni_file(job), "r")
	if f then
		local vni = tonumber(f:read("l"))
		f:close()
		return vni
	end
	local vni = 1000 + job.job_id % 3000
	-- The allocation's label: the user's job name and account, handed to
	-- the command on its standard input (a site's fabric manager CLI would
	-- take them as arguments: {"fabric-ctl", "alloc", "--label", job.name}).
	ok, err = fabric({ "tee", vni_file(job) .. ".label" },
		string.format("%s\n%s\n", job.name or "", job.account or ""))
	if not ok then
		return nil, err
	end
	f = assert(io.open(vni_file(job), "w"))
	f:write(tostring(vni), "\n")
	f:close()
	return vni
end

-- Releases only what this attempt allocated, never another job's VNI.
local function fabric_release(job)
	os.remove(vni_file(job)) -- nil, "No such file" when already gone: fine
	os.remove(vni_file(job) .. ".label")
	return true
end

-- slurmctld, in a supervised child: set the fabric up.
function slurm_switch_job_start(job)
	if job.network ~= "vni" then
		return slurm.SUCCESS, nil -- not for us: no jobinfo, no teardown, no step hooks
	end
	local vni, err = fabric_allocate(job)
	if not vni then
		return slurm.ERROR, err -- requeued (or cancelled), with err as the reason
	end
	-- The job name is the user's: slurm.log_* shows its control characters
	-- escaped, so it cannot start a line of its own.
	slurm.log_info("JobId=%d: VNI %d on %s, Name=%s", job.job_id, vni, job.nodes,
		job.name or "")
	-- No node list in the jobinfo: it is copied into every step's stepinfo
	-- and bounded (switch.lua(5), Bounds); the step hooks have step.nodes,
	-- job_complete has job.nodes.  A long list goes to a command on its
	-- stdin or in a file, never as one argument.
	return slurm.SUCCESS, { vni = vni }
end

-- Whether the fabric manager as a whole answers (here: its state directory
-- exists).  When it does not, job_complete says so with slurm.FABRIC_DOWN:
-- the controller keeps the teardown and runs it again, drains nothing, and
-- completes it when the fabric is back (switch.lua(5), Fabric outages).
local function fabric_reachable()
	local f = io.open(STATE_DIR, "r")
	if f then
		f:close()
		return true
	end
	return false
end

-- slurmctld, in a supervised child: tear it down.  jobinfo is nil after a
-- setup that timed out or was killed: the key still names what it made.
function slurm_switch_job_complete(job, jobinfo)
	if not fabric_reachable() then
		return slurm.FABRIC_DOWN -- the whole fabric, not this job's part of it
	end
	if not fabric_release(job) then
		return slurm.EAGAIN -- the fabric manager is busy: try again later
	end
	-- job.failed_nodes: nodes that failed (DOWN, not responding) or left the
	-- job; their part is released here, from the controller, without them.
	-- A failure that concerns only some nodes names them as the third value
	-- (return slurm.ERROR, "why", nodes): only those are drained.
	slurm.log_info("JobId=%d: VNI %s released%s", job.job_id, jobinfo and jobinfo.vni or "?",
		job.failed_nodes and (", failed nodes " .. job.failed_nodes) or "")
	return slurm.SUCCESS
end

-- slurmstepd, per step and node.
function slurm_switch_step_preinit(step, stepinfo)
	return slurm.SUCCESS
end

function slurm_switch_step_init(step, stepinfo)
	if stepinfo == nil then
		return slurm.SUCCESS, nil
	end
	return slurm.SUCCESS, { FABRIC_VNI = stepinfo.vni, FABRIC_ENABLED = true }
end

function slurm_switch_step_postfini(step, stepinfo)
	return slurm.SUCCESS
end
