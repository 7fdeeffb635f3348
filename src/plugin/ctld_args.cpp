// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: plugin/ctld_args.cpp
//
// The glue's C structs as the core's types (ctld_args.hpp).
#include "plugin/ctld_args.hpp"

#include "plugin/abi_guard.hpp"

namespace switchlua {

using cabi::opt;

namespace {
/// Slurm's NO_VAL and INFINITE (slurm.h), which the core does not include.
constexpr std::uint32_t kSlurmNoVal = 0xfffffffe;
constexpr std::uint32_t kSlurmInfinite = 0xffffffff;
} // namespace

JobArgs job_args(const slc_job_t &j) {
  JobArgs a;
  a.job_id = j.job_id;
  a.user_id = j.user_id;
  a.group_id = j.group_id;
  a.num_nodes = j.num_nodes;
  a.restart_count = j.restart_count;
  a.user_name = opt(j.user_name);
  a.name = opt(j.name);
  a.nodes = opt(j.nodes);
  a.node_names =
      NodeNames(std::vector<std::string>(j.node_names, j.node_names + j.node_names_count));
  a.partition = opt(j.partition);
  a.network = opt(j.network);
  a.account = opt(j.account);
  a.sluid = opt(j.sluid);
  a.batch = j.batch;
  a.submit_time = j.submit_time;
  a.qos = opt(j.qos);
  if (j.time_limit != kSlurmNoVal && j.time_limit != kSlurmInfinite)
    a.time_limit = j.time_limit;
  a.num_tasks = j.num_tasks;
  a.num_cpus = j.num_cpus;
  a.tres_per_node = opt(j.tres_per_node);
  a.tres_per_task = opt(j.tres_per_task);
  if (j.has_array) {
    a.array_job_id = j.array_job_id;
    a.array_task_id = j.array_task_id;
  }
  if (j.has_het) {
    a.het_job_id = j.het_job_id;
    a.het_job_offset = j.het_job_offset;
  }
  a.cluster_name = opt(j.cluster_name);
  return a;
}

JobEnd job_end(const slc_job_end_t *end) {
  JobEnd e;
  if (!end)
    return e;
  e.nodes_now = opt(end->nodes_now);
  e.failed = end->failed_nodes ? end->failed_nodes : "";
  return e;
}

} // namespace switchlua
