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
--
-- The state folder.  The hooks run as SlurmUser (job_start, job_complete)
-- and as root (the step hooks, `switch-lua simulate` run by root), so the
-- folder must be one no other user can create first or write: the package
-- creates /var/lib/slurm-switch-lua (root's, 0755) and in it this folder,
-- SlurmUser's, mode 0700 (its postinst).  The script refuses the folder,
-- and the setup fails with a line saying why, unless its parent is root's
-- and only root can write it, and the folder itself is a folder (not a
-- link), that no group or other user can write, owned by the user the hook
-- runs as or by root (root, who runs the step hooks, accepts the owner root
-- gave it in a folder only root writes).  Root creates both when they are
-- missing (simulate on a host without the package).  switch.lua(5),
-- SECURITY.
local STATE_PARENT = "/var/lib/slurm-switch-lua"
local STATE_DIR = STATE_PARENT .. "/example"
-- The VNIs handed out: VNI_FIRST .. VNI_FIRST + VNI_COUNT - 1.
local VNI_FIRST, VNI_COUNT = 1000, 3000

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

-- The claim of one VNI: a folder, created by one exclusive mkdir.
local function claim_dir(vni)
	return string.format("%s/vni-%d", STATE_DIR, vni)
end

-- One call of the "fabric manager" command: an argument vector, no shell
-- (slurm.run, see switch.lua(5)), so job.name or job.account in it are
-- data whatever they contain.  Never build a command string for
-- os.execute or io.popen from job fields: the user chose them.  A field
-- given as an argument goes after "--" (or is validated first), so that it
-- cannot be read as an option.
local function fabric(argv, input)
	local r, err = slurm.run(argv, { stdin = input, timeout = 5 })
	if not r then
		return nil, err -- not started, or could not be watched
	end
	if r.status ~= 0 then
		return nil, string.format("%s failed (%s): %s", argv[1],
			r.timed_out and "timed out" or ("exit " .. tostring(r.status or r.signal)), r.stderr)
	end
	return r.stdout
end

-- Owner uid, mode bits and kind ("directory", "symbolic link", ...) of
-- each path, as `stat` sees it without following a link; nil when missing.
local function inspect(...)
	local paths = { ... }
	local out = {}
	for i, path in ipairs(paths) do
		local r = slurm.run({ "stat", "-c", "%u %a %F", "--", path }, { timeout = 5 })
		if r and r.status == 0 then
			local uid, mode, kind = r.stdout:match("^(%d+) (%d+) ([^\n]+)")
			out[i] = uid and { uid = tonumber(uid), mode = tonumber(mode, 8), kind = kind }
		end
	end
	return table.unpack(out, 1, #paths)
end

local function describe(path, st)
	if not st then
		return path .. " is missing"
	end
	return string.format("%s is a %s owned by uid %d, mode %04o", path, st.kind, st.uid, st.mode)
end

local GROUP_OR_OTHER_WRITE = 18 -- 0022

-- The state folder, checked (see STATE_DIR above): true, or nil and why.
local function state_dir_ok()
	local id, id_err = fabric({ "id", "-u" })
	local me = tonumber((id or ""):match("%d+"))
	if not me then
		return nil, id_err or "cannot tell which user runs the hook (id -u)"
	end
	local parent, dir = inspect(STATE_PARENT, STATE_DIR)
	if me == 0 and (not parent or not dir) then
		-- Root, on a host without the package: create them as it would.
		local ok, err = fabric({ "install", "-d", "-m", "0755", "--", STATE_PARENT })
		if ok then
			ok, err = fabric({ "install", "-d", "-m", "0700", "--", STATE_DIR })
		end
		if not ok then
			return nil, err
		end
		parent, dir = inspect(STATE_PARENT, STATE_DIR)
	end
	if not parent or parent.uid ~= 0 or parent.kind ~= "directory"
		or parent.mode & GROUP_OR_OTHER_WRITE ~= 0 then
		return nil, describe(STATE_PARENT, parent) .. ": refused; it must be a folder of " ..
			"root's that only root can write (the package creates it)"
	end
	if not dir or dir.kind ~= "directory" or dir.mode & GROUP_OR_OTHER_WRITE ~= 0
		or (me ~= 0 and dir.uid ~= me and dir.uid ~= 0) then
		return nil, describe(STATE_DIR, dir) .. string.format(": refused; it must be a " ..
			"folder of uid %d (or root's) that no group or other user can write", me)
	end
	return true
end

-- The VNI of this attempt, if it has one.
local function recorded_vni(job)
	local f = io.open(vni_file(job), "r")
	if not f then
		return nil
	end
	local vni = tonumber(f:read("l"))
	f:close()
	return vni
end

-- Releases only what this attempt allocated, never another job's VNI.
local function fabric_release(job)
	local vni = recorded_vni(job)
	os.remove(vni_file(job)) -- nil, "No such file" when already gone: fine
	os.remove(vni_file(job) .. ".label")
	if vni then
		os.remove(claim_dir(vni)) -- an empty folder: removed like a file
	end
	return true
end

-- Idempotent by the key: asked twice for one attempt, it answers the same.
-- A VNI is taken by an exclusive mkdir of its claim folder, so two jobs
-- never get the same one, whatever their ids; the search starts at a VNI
-- of the job id, so that a job usually gets the same number in every run.
local function fabric_allocate(job)
	local ok, err = state_dir_ok()
	if not ok then
		return nil, err
	end
	local vni = recorded_vni(job)
	if vni then
		return vni
	end
	for i = 0, VNI_COUNT - 1 do
		local candidate = VNI_FIRST + (job.job_id + i) % VNI_COUNT
		local r = slurm.run({ "mkdir", "-m", "0700", "--", claim_dir(candidate) }, { timeout = 5 })
		if not r then
			return nil, "cannot claim a VNI"
		end
		if r.status == 0 then
			vni = candidate
			break
		end
	end
	if not vni then
		return nil, string.format("all %d VNIs are taken", VNI_COUNT)
	end
	-- Recorded at once, so that job_complete releases the claim even if
	-- this call is killed from here on.
	local f = assert(io.open(vni_file(job), "w"))
	f:write(tostring(vni), "\n")
	f:close()
	-- The allocation's label: the user's job name and account, handed to
	-- the command on its standard input (a site's fabric manager CLI would
	-- take them as arguments after "--": {"fabric-ctl", "alloc", "--label",
	-- "--", job.name}).
	ok, err = fabric({ "tee", "--", vni_file(job) .. ".label" },
		string.format("%s\n%s\n", job.name or "", job.account or ""))
	if not ok then
		fabric_release(job)
		return nil, err
	end
	return vni
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

-- Whether the fabric manager as a whole answers (here: its state folder
-- is there and passes its checks).  When it does not, job_complete says so
-- with slurm.FABRIC_DOWN: the controller keeps the teardown and runs it
-- again, drains nothing, and completes it when the fabric is back
-- (switch.lua(5), Fabric outages).
local function fabric_reachable()
	return state_dir_ok() == true
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
