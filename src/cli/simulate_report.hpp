// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: cli/simulate_report.hpp
//
// What `switch-lua simulate` reports at the end of its timeline (the
// operator's view, human or JSON: simulate_report.cpp), and the script
// checks `switch-lua check` and `simulate` share (check.cpp).
#pragma once

#include "cli/sim_cluster.hpp"
#include "cli/simulate.hpp"
#include "common/expected.hpp"
#include "lua/runtime.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace switchlua {

/// Slurm's step id of the batch step (slurm.h: SLURM_BATCH_SCRIPT).
inline constexpr std::uint32_t kBatchStepId = 0xFFFFFFFB;

/// What one simulated step did: its id, whether it failed, and each
/// node's task environment changes (step_init's env table).
struct StepReport {
  std::uint32_t step_id = 0; ///< kBatchStepId for the batch step
  bool failed = false;
  std::map<std::string, std::vector<EnvOp>> env; // per node
};

/// The operator's view after the timeline: the job's and nodes' states and
/// reasons, and each step's result and task environment (`bjc`: the
/// block_job_complete in force).
void print_human(const SimulateOptions &o, const JobArgs &job, bool bjc, SimCluster &sim,
                 const std::vector<StepReport> &steps);
/// The same, and the timeline and settings, as one JSON document on stdout.
void print_json(const SimulateOptions &o, const JobArgs &job, bool bjc, SimCluster &sim,
                const std::vector<StepReport> &steps);

/// content_hash() of the file (bounded, non-blocking: "" read if not a regular file).
std::string file_content_hash(const std::string &path);
/// Why the controller refuses this script (supervisor/script_guard.hpp:
/// load, chunk return, hook types), one message each; empty: it passes.
std::vector<std::string> controller_errors(const Expected<Script> &s);
/// The messages joined as the controller logs them ("; ").
std::string join(const std::vector<std::string> &errors);

} // namespace switchlua
