// SPDX-License-Identifier: GPL-2.0-or-later
//
// The operator's view that `switch-lua simulate` prints after its timeline
// (cli/simulate_report.hpp).
#include "cli/simulate_report.hpp"

#include "common/log_stamp.hpp"

#include <fmt/format.h>
#include <iostream>
#include <nlohmann/json.hpp>

namespace switchlua {

using json = nlohmann::json;

void print_human(const SimulateOptions &, const JobArgs &job, bool bjc, SimCluster &sim,
                 const std::vector<StepReport> &steps) {
  fmt::print("\nWhat an operator sees (block_job_complete={})\n  job:   State={}{}\n",
             bjc ? "true" : "false", sim.job_state(),
             sim.job_reason().empty() ? "" : " Reason=" + sim.job_reason());
  for (const auto &[name, n] : sim.nodes())
    fmt::print("  {}: State={}{}\n", name, n.state, n.reason.empty() ? "" : " Reason=" + n.reason);
  for (const StepReport &s : steps) {
    fmt::print("  step {}: {}\n", step_id_text(job.job_id, s.step_id),
               !s.failed                   ? "ran"
               : s.step_id == kBatchStepId ? "FAILED (batch launch: Error configuring interconnect)"
                                           : "FAILED (srun: Error configuring interconnect)");
    for (const auto &[node, env] : s.env) {
      std::string line;
      for (const EnvOp &op : env)
        line += op.kind == EnvOp::Kind::Set ? fmt::format(" {}={}", op.name, op.value)
                                            : fmt::format(" -{}", op.name);
      fmt::print("    {} task environment:{}\n", node, line.empty() ? " (no changes)" : line);
    }
  }
  if (!steps.empty())
    fmt::print("  (NAME=VALUE: set for the tasks; -NAME: removed from their environment)\n");
}

void print_json(const SimulateOptions &o, const JobArgs &job, bool bjc, SimCluster &sim,
                const std::vector<StepReport> &steps) {
  json j;
  j["script"] = o.script;
  j["job"] = {
      {"job_id", job.job_id}, {"network", o.network}, {"nodes", *job.nodes}, {"sluid", *job.sluid}};
  j["slurm"] = o.slurm->name;
  j["config"] = {{"switch_timeout", o.config.switch_timeout.count()},
                 {"switch_kill_grace", o.config.switch_kill_grace.count()},
                 {"switch_retries", o.config.switch_retries},
                 {"switch_drain_on_failure", o.config.drain_on_failure},
                 {"block_job_complete", bjc}};
  for (const TimelineEntry &e : sim.timeline())
    j["timeline"].push_back({{"t_ms", e.t_ms},
                             {"source", e.source},
                             {"kind", e.kind},
                             {"text", e.text},
                             {"error", e.error}});
  j["result"]["job_state"] = sim.job_state();
  j["result"]["job_reason"] = sim.job_reason();
  for (const auto &[name, n] : sim.nodes())
    j["result"]["nodes"][name] = {{"state", n.state}, {"reason", n.reason}};
  j["result"]["steps"] = json::array();
  for (const StepReport &s : steps) {
    json sj{
        {"step_id", s.step_id}, {"id", step_id_text(job.job_id, s.step_id)}, {"failed", s.failed}};
    for (const auto &[node, env] : s.env) {
      json ej = json::object();
      for (const EnvOp &op : env)
        ej[op.name] = op.kind == EnvOp::Kind::Set ? json(op.value) : json(nullptr);
      sj["env"][node] = ej;
    }
    j["result"]["steps"].push_back(sj);
  }
  std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

} // namespace switchlua
