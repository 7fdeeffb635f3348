-- SPDX-License-Identifier: GPL-2.0-or-later
-- Fixture of t1001-status-provenance.  The job's --network picks the
-- behaviour:
--   prov       job_start accepts the job, job_complete succeeds, the step
--              hooks return 0
--   prov:fail  job_start fails: return slurm.ERROR
-- The tests append a comment to this file to make another version of it.
function slurm_switch_job_start(job)
  if job.network == "prov:fail" then
    return slurm.ERROR
  end
  return slurm.SUCCESS, {tag = "prov"}
end

function slurm_switch_job_complete(job, jobinfo)
  return slurm.SUCCESS
end

function slurm_switch_step_preinit(step, stepinfo)
  return slurm.SUCCESS
end

function slurm_switch_step_init(step, stepinfo)
  return slurm.SUCCESS
end

function slurm_switch_step_postfini(step, stepinfo)
  return slurm.SUCCESS
end
