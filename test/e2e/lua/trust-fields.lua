-- SPDX-License-Identifier: GPL-2.0-or-later
-- Fixture of t0821-trust-fields (issue 21): every hook logs the fields a
-- user could steer, so the test can compare them with what slurmctld
-- recorded.  Jobs whose --network starts with "trust:" are accepted; the
-- jobinfo keeps the job's network as job_start saw it.
function slurm_switch_job_start(job)
  if not (job.network or ""):match("^trust:") then
    return slurm.SUCCESS, nil
  end
  slurm.log_info("job fields: network=<%s> cluster_name=<%s> name=<%s> account=<%s>",
    job.network, tostring(job.cluster_name), tostring(job.name), tostring(job.account))
  return slurm.SUCCESS, { network = job.network }
end

function slurm_switch_job_complete(job, jobinfo)
  return slurm.SUCCESS
end

local function fields(hook, step, stepinfo)
  slurm.log_info("%s fields: network=<%s> job_network=<%s> num_nodes=%d num_tasks=%d node_id=%d " ..
    "nodes=<%s> cluster_name=<%s>", hook, tostring(step.network),
    tostring(stepinfo and stepinfo.network), step.num_nodes, step.num_tasks, step.node_id,
    tostring(step.nodes), tostring(step.cluster_name))
  return slurm.SUCCESS
end

function slurm_switch_step_preinit(step, stepinfo)
  return fields("step_preinit", step, stepinfo)
end

function slurm_switch_step_init(step, stepinfo)
  fields("step_init", step, stepinfo)
  return slurm.SUCCESS, nil
end

function slurm_switch_step_postfini(step, stepinfo)
  return fields("step_postfini", step, stepinfo)
end
