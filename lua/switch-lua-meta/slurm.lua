---@meta switch-lua
-- SPDX-License-Identifier: GPL-2.0-or-later
--
-- Definitions of the switch.lua API of SwitchType=switch/lua, for the Lua
-- language server (LuaLS, lua-language-server) and for switch-lua-typecheck,
-- which reads the @class/@field, @param and @return lines below.  This file
-- is never run: it only describes what the plugin gives a script.  The
-- contract is switch.lua(5); the rules quoted here are its rules.
--
-- Point an editor at it with a .luarc.json next to the script:
--   { "runtime.version": "Lua 5.4",
--     "workspace.library": ["/usr/share/slurm-switch-lua/lua-meta"] }
--
-- Hover on a hook or on job./step. fields then shows these descriptions.
-- LuaLS applies the parameter and return types of a hook to the script's
-- own definition when the script annotates it, e.g.
--   ---@param job switchlua.Job
--   ---@return integer rc
--   ---@return switchlua.Jobinfo? jobinfo
--   function slurm_switch_job_start(job) ... end
-- (or `---@type switchlua.JobStartHook` above `slurm_switch_job_start =
-- function(job) ... end`).  switch-lua-typecheck checks the returns of the
-- hooks whatever the script annotates.

-- ---------------------------------------------------------------- values

---A value that can be stored in jobinfo or converted by slurm.to_json:
---nil (only as the whole value), booleans, integers, finite floats,
---strings, and tables that are either an array (keys exactly 1..n) or a map
---(string keys only), without metatables or cycles, at most 32 tables deep
---and 65536 bytes encoded.  Functions, userdata, threads, NaN and
---infinities are refused (switch.lua(5): JOBINFO AND STEPINFO).
---@alias switchlua.Storable nil|boolean|integer|number|string|table<string, switchlua.Storable>|switchlua.Storable[]

---The table job_start returns to manage a job.  It is stored with the job
---(and in Slurm's job state file), copied into every step's stepinfo and
---passed back to job_complete.  Only storable values (switchlua.Storable).
---@alias switchlua.Jobinfo table<string, switchlua.Storable>|switchlua.Storable[]

---The table step_init returns to change the step's environment:
---NAME = "text" sets NAME, NAME = 42 sets "42", NAME = 0.5 sets "0.5"
---(%.14g), NAME = true sets "1", NAME = false unsets NAME.  SLURM_* names,
---names with '=' and other value types are skipped with a log line.
---@alias switchlua.Env table<string, string|integer|number|boolean>

-- ---------------------------------------------------------------- slurm

---The read-only table the plugin defines before the script runs.
---Assigning to a field raises "slurm: attempt to set read-only field".
---@class switchlua.slurm
---@field SUCCESS integer 0: success (every hook's rc).
---@field ERROR integer -1: failure.  job_start: the setup failed (requeue or cancel, no drain); job_complete: drain the nodes; step_preinit/step_init: the step fails; step_postfini: the node is drained.
---@field EAGAIN integer 11: job_complete only: not yet, keep the nodes held and call again (up to switch_retries times; only honored when slurm_switch_block_job_complete() returns true).
---@field FABRIC_DOWN integer -100: job_start / job_complete: the fabric as a whole is unavailable, not this job's part: opens the fabric breaker (teardown kept and run again, nothing drained; a failed setup is requeued naming the outage).  See switch.lua(5), Fabric outages.
slurm = {}

---string.format(fmt, ...) written to the daemon's log at level error
---(slurmctld.log for job_start/job_complete, the node's slurmd log for the
---step hooks).  A format error raises "slurm.log_error: bad argument ...".
---@param fmt string
---@param ... any
function slurm.log_error(fmt, ...) end

---string.format(fmt, ...) written to the daemon's log at level info.
---@param fmt string
---@param ... any
function slurm.log_info(fmt, ...) end

---string.format(fmt, ...) at level verbose (kept with SlurmctldDebug or
---SlurmdDebug verbose or above).
---@param fmt string
---@param ... any
function slurm.log_verbose(fmt, ...) end

---string.format(fmt, ...) at level debug.
---@param fmt string
---@param ... any
function slurm.log_debug(fmt, ...) end

---string.format(fmt, ...) at level debug2.
---@param fmt string
---@param ... any
function slurm.log_debug2(fmt, ...) end

---string.format(fmt, ...) at level debug3.
---@param fmt string
---@param ... any
function slurm.log_debug3(fmt, ...) end

---string.format(fmt, ...) at level debug4.
---@param fmt string
---@param ... any
function slurm.log_debug4(fmt, ...) end

---string.format(fmt, ...) at level debug5.
---@param fmt string
---@param ... any
function slurm.log_debug5(fmt, ...) end

---Compact JSON text of value: map keys sorted, integral floats with a
---fraction (2.0), an empty table as {}, nil as null.  The value must be
---storable (switchlua.Storable) and its strings valid UTF-8, otherwise it
---raises an error naming the path, e.g.
---"slurm.to_json: value.a[1]: a function cannot be converted".
---@param value switchlua.Storable
---@return string json
function slurm.to_json(value) end

---Options of slurm.run.
---@class switchlua.RunOptions
---@field stdin? string Written to the command's standard input (else /dev/null).
---@field timeout? number Seconds; at most what is left of the call's switch_timeout (the default).

---What slurm.run returns for a command that ran.
---@class switchlua.RunResult
---@field status? integer The exit status; nil when a signal ended the command.
---@field signal? integer The signal that ended it.
---@field stdout string What it wrote (at most 8 MiB).
---@field stderr string
---@field truncated boolean More than 8 MiB of output was dropped.
---@field timed_out boolean Killed (SIGKILL) at the timeout.
---@field elapsed number Seconds.

---Runs a command without a shell: argv[1] is the program (PATH lookup
---unless it has a slash), every other element one argument as it is, so
---job and step fields in it are never code.  nil and a message when the
---command cannot be started ("slurm.run: cannot run X: No such file or
---directory"); bad arguments raise.  Use it instead of os.execute and
---io.popen, which hand a string to /bin/sh.
---@param argv string[]
---@param opts? switchlua.RunOptions
---@return switchlua.RunResult|nil result
---@return string? err
function slurm.run(argv, opts) end

---Replaced by the plugin: the arguments through tostring, tab-separated,
---one line at info level in the daemon's log (a hook's stdout is
---/dev/null), control characters shown escaped (\n, \t, \x1b).
---@param ... any
function print(...) end

-- ---------------------------------------------------------------- arguments

---The job table of job_start and job_complete.  Fields Slurm does not have
---are nil.  job_complete gets the table as it was when the setup started.
---@class switchlua.Job
---@field job_id integer The job id.
---@field user_id integer
---@field group_id integer
---@field user_name? string From Slurm's user lookup.
---@field name? string The job name (-J).
---@field nodes? string The allocated nodes as a host list expression, e.g. "node[1-3]".
---@field node_names string[] The same nodes expanded, in Slurm's order.
---@field num_nodes integer
---@field partition? string
---@field network? string The job's --network value (never empty: other jobs do not reach the hooks).
---@field account? string
---@field sluid? string Slurm's SLUID for the job as text; nil when Slurm has none.
---@field restart_count integer How many times the job has been requeued.
---@field batch boolean true for a batch job (sbatch).
---@field submit_time integer The job record's submit time (Unix seconds); 0 if Slurm has none.
---@field attempt integer Unique per setup attempt; job_complete gets its job_start's value.
---@field qos? string The job's QOS, e.g. "normal"; nil without an accounting database.
---@field time_limit? integer Minutes, e.g. 90; nil when the job has no time limit.
---@field num_tasks integer The job's task count (NumTasks), e.g. 4.
---@field num_cpus integer CPUs allocated (NumCPUs), e.g. 8.
---@field tres_per_node? string As Slurm keeps it (TresPerNode), e.g. "gres/gpu:2".
---@field tres_per_task? string As Slurm keeps it (TresPerTask), e.g. "cpu=2".
---@field array_job_id? integer A task of a job array: the array's job id.
---@field array_task_id? integer A task of a job array: its index, e.g. 3.
---@field het_job_id? integer A heterogeneous job's component: the leader's job id.
---@field het_job_offset? integer A heterogeneous job's component: its offset, from 0.
---@field cluster_name? string ClusterName of slurm.conf (admin-set); key fabric allocations with it when clusters share a fabric.
---@field failed_nodes? string job_complete only: the job's nodes that failed or were removed when it ended (DOWN, NOT_RESPONDING or FAIL, or excised from a --no-kill job), a host list expression, e.g. "node2"; nil when none (and in job_start).
---@field failed_node_names string[] The same nodes expanded, in node_names' order; empty when none.
---@field epoch? integer The epoch of the controller's control period (grows by one at each takeover); a fabric manager may refuse a call whose epoch is below one it has seen. nil without a journal.
---@field pools? table<string,integer[]> job_start and job_complete: the IDs of each declared pool (switch_pool_NAME) this setup attempt holds, e.g. job.pools.vni = {1024}; nil when no pool is declared (switch.lua(5), POOLS).

---The step table of step_preinit, step_init and step_postfini.
---@class switchlua.Step
---@field job_id integer
---@field step_id integer
---@field id string The step as Slurm names it, "JobId.StepId", e.g. "1234.0".
---@field sluid? string The job's SLUID as the controller saw it at job_start; nil when there was none.
---@field partition? string From the step's launch credential; may be nil (always on a batch step).
---@field node_name? string The node this slurmstepd runs on.
---@field node_id integer This node's rank within the step, from 0 (SLURM_NODEID).
---@field num_nodes integer Nodes of the whole step.
---@field num_tasks integer Tasks of the whole step.
---@field user_id integer
---@field user_name? string
---@field nodes? string The step's nodes as a host list expression.
---@field network? string The step's --network as slurmctld recorded it (else the job's), from the signed stepinfo, never the task environment; nil from an older controller.
---@field batch boolean Always false: the hooks run for normal steps.
---@field attempt integer The setup attempt (job.attempt of job_start) whose stepinfo this step got; set by the plugin. A step hook can run after the controller tore that attempt down (a requeued job keeps its id): release only what this attempt made. 0: unknown (an older controller).
---@field cluster_name? string ClusterName of the controller that set the job up (job.cluster_name at job_start).

-- ---------------------------------------------------------------- hooks
-- Every hook is optional: a missing one answers false (the two questions),
-- or slurm.SUCCESS (job_start then declines every job).  A returned rc must
-- be an integer number (0.0 counts as 0; 0.5, NaN and strings such as "0"
-- break the convention); extra nils are ignored, any other extra value or
-- no value at all breaks the convention.

---slurmctld, asked once when the plugin loads: hold a job's nodes in
---COMPLETING until job_complete has reported?  true is what lets
---job_complete return slurm.EAGAIN.  nil is refused: return true or false.
---@return boolean hold true: hold the nodes during job_complete.
function slurm_switch_block_job_complete() end

---Asked once by slurmctld and by each slurmstepd: also run step_init for
---the batch and interactive steps?  nil is refused: return true or false.
---@return boolean special true: step_init also runs for batch and interactive steps.
function slurm_switch_setup_special_steps() end

---slurmctld, in a supervised child process (fresh Lua state, stdio on
---/dev/null, killed at switch_timeout): set the fabric up for a job that
---requested --network.  Called again after a requeue or a restart: make it
---safe to repeat.
---@param job switchlua.Job
---@return integer rc slurm.SUCCESS: proceed.  Anything else (or a Lua error, or a non-number): the setup failed; the job is requeued if it can be, else cancelled with "switch setup failed"; no drain, job_complete is not called, so undo your own work first.
---@return switchlua.Jobinfo|string|nil jobinfo nil: the plugin does not manage this job (no stepinfo, no job_complete, no step hooks).  A table: stored with the job, given to every step as stepinfo and to job_complete.  With a failed rc, a string is the failure's message: it reaches the job's reason (return slurm.ERROR, "fabric manager unreachable").
function slurm_switch_job_start(job) end

---slurmctld, in a supervised child process: tear the fabric down when a job
---that job_start managed ends (also with jobinfo nil after an abandoned
---setup: work out from the fabric what to undo).  Make it safe to repeat.
---@param job switchlua.Job The job as it was when the setup started.
---@param jobinfo switchlua.Jobinfo|nil A copy of what job_start returned; nil after an abandoned setup.
---@return integer rc slurm.SUCCESS: torn down, the nodes return to service.  slurm.EAGAIN: not yet, called again (up to switch_retries; only when block_job_complete is true, else a failure).  Negative (or a Lua error): the nodes are drained unless switch_drain_on_failure=no.  Other positive values: only logged.
---@return string? message Joins the outcome line and, for a failure, the drain reason (return slurm.ERROR, "port 7 stuck", "node2").
---@return string|string[]|nil nodes The nodes the failure concerns (a host list expression or an array of names, e.g. job.failed_nodes): only those of the job's nodes are drained; {} drains none; nil: all of the job's nodes.
function slurm_switch_job_complete(job, jobinfo) end

---slurmstepd, as root, per step and node, before the step's container
---exists.  Paired with step_postfini.
---@param step switchlua.Step
---@param stepinfo switchlua.Jobinfo|nil The jobinfo job_start returned for the job.
---@return integer rc 0: success.  Negative: the step fails (ESLURM_INTERCONNECT_FAILURE, srun: "Error configuring interconnect").  Positive: logged only.  A Lua error is logged and the step proceeds (fail-open).
function slurm_switch_step_preinit(step, stepinfo) end

---slurmstepd, as root, inside the step's container, before the tasks fork;
---the only hook that can set the step's environment.
---@param step switchlua.Step
---@param stepinfo switchlua.Jobinfo|nil The jobinfo job_start returned for the job.
---@return integer rc 0: success.  Negative: the step fails.  Positive: logged only.  A Lua error is logged and the step proceeds.
---@return switchlua.Env|nil env Environment changes for the step's tasks; nil: none.
function slurm_switch_step_init(step, stepinfo) end

---slurmstepd, as root, after every task of the step is dead: release what
---step_preinit took.  Not called for batch, interactive or extern steps.
---@param step switchlua.Step
---@param stepinfo switchlua.Jobinfo|nil The jobinfo job_start returned for the job.
---@return integer rc 0: success.  Negative: the node is DRAINED.  Positive: logged only.  A Lua error is logged only.
function slurm_switch_step_postfini(step, stepinfo) end

-- ---------------------------------------------------------------- hook types
-- For `---@type` on a hook assigned as `slurm_switch_x = function(...) end`.

---@alias switchlua.JobStartHook fun(job: switchlua.Job): integer, switchlua.Jobinfo|nil
---@alias switchlua.JobCompleteHook fun(job: switchlua.Job, jobinfo: switchlua.Jobinfo|nil): integer
---@alias switchlua.StepHook fun(step: switchlua.Step, stepinfo: switchlua.Jobinfo|nil): integer
---@alias switchlua.StepInitHook fun(step: switchlua.Step, stepinfo: switchlua.Jobinfo|nil): integer, switchlua.Env|nil
---@alias switchlua.QuestionHook fun(): boolean

---The value of the main chunk: nothing or slurm.SUCCESS loads the script;
---any other number refuses it (every --network job then fails its setup).
---@alias switchlua.ChunkResult integer|nil
