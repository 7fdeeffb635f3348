-- SPDX-License-Identifier: GPL-2.0-or-later
-- Fixture of t0701-failsafe.  The job's --network picks the behaviour:
--   fs:ok              job_start accepts the job, job_complete succeeds
--   fs:hugelog         both hooks log one line of 2 MiB, then succeed
--   fs:flood           job_start logs 5,000 lines of 10 kB, then accepts
--   fs:trap:<path>     job_start starts a shell that writes "cleaned up" to
--                      <path> on SIGTERM, and hangs: the setup times out
--   fs:hang            job_start logs "hanging", then sleeps 30 s
local function mode(job)
  return (job.network or ""):match("^fs:([^:]+)") or "ok", (job.network or ""):match("^fs:[^:]+:(.*)$")
end

function slurm_switch_job_start(job)
  local m, arg = mode(job)
  if m == "hugelog" then
    slurm.log_info("hugelog start %s", string.rep("x", 2 * 1048576))
  elseif m == "flood" then
    local line = string.rep("f", 10000)
    for i = 1, 5000 do slurm.log_info("flood %d %s", i, line) end
  elseif m == "hang" then
    slurm.log_info("hanging")
    os.execute("sleep 30")
  elseif m == "trap" then
    os.execute("exec sh -c 'trap \"echo cleaned up > " .. arg .. "; exit 0\" TERM; " ..
               "while :; do sleep 0.1; done'")
    while true do end
  end
  return slurm.SUCCESS, {mode = m}
end

function slurm_switch_job_complete(job, jobinfo)
  local m = mode(job)
  if m == "hugelog" then
    slurm.log_info("hugelog complete %s", string.rep("y", 2 * 1048576))
  end
  return slurm.SUCCESS
end
