// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: ctld/node_attribution.hpp
//
// Issue 20, per-node attribution: which of a job's nodes failed or were
// removed when it ended (told to job_complete as job.failed_nodes and
// job.failed_node_names), and which nodes a failed teardown drains (the
// ones job_complete named, among the job's).  Pure: the core and the state
// machine call these; the glue says what slurmctld knows (JobEnd).  Rule
// source: switch.lua(5), "The job table" (failed_nodes) and
// slurm_switch_job_complete (Returns, What the controller does).
#pragma once

#include "lua/contract.hpp"
#include "supervisor/outcome.hpp"

#include <optional>
#include <string>
#include <vector>

namespace switchlua {

/// What slurmctld says of a job's nodes when the job ends
/// (switch_p_job_complete, from the job record and the node table).
struct JobEnd {
  /// The job's nodes now (job_ptr->nodes), a host list expression: a
  /// --no-kill job that lost a node no longer has it (Slurm's
  /// excise_node_from_job()).  nullopt: not known (nothing was removed).
  std::optional<std::string> nodes_now;
  /// The nodes of the allocation that are DOWN, NOT_RESPONDING or FAIL,
  /// and the node Slurm names as the job's failed_node: a host list
  /// expression, "" for none.
  std::string failed;
};

/// The job's nodes, expanded: job.node_names, else job.nodes expanded (a
/// journal record written without node_names), else none.
std::vector<std::string> job_node_list(const JobArgs &job);

/// The nodes of `job` that failed or were removed, in the job's order,
/// each once: those of end.failed that are the job's, and the job's nodes
/// that end.nodes_now does not have.  A host list that does not parse
/// counts as none; `note` (if given) then says so, else it is cleared.
std::vector<std::string> failed_nodes_of(const JobArgs &job, const JobEnd &end,
                                         std::string *note = nullptr);

/// What a failed teardown drains (issue 20): job_complete's third value.
struct DrainTarget {
  /// The host list to drain; nullopt: the job's nodes (job.nodes), when the
  /// call named none (no third value, not job_complete, no return at all)
  /// or named only nodes that are not the job's.
  std::optional<std::string> nodes;
  /// It named an empty list: its failure concerns none of the job's nodes,
  /// nothing is drained.
  bool none = false;
  /// Names it gave that are not the job's nodes: never drained.
  std::vector<std::string> foreign;
};

/// The drain of a failed teardown whose outcome is `o` (nullptr: none).
DrainTarget drain_target(const JobArgs &job, const Outcome *o);

/// drain_target() as one host list: the nodes named, else job.nodes; ""
/// when it named an empty list (or the job has no nodes).
std::string drained_nodes(const JobArgs &job, const Outcome *o);

} // namespace switchlua
