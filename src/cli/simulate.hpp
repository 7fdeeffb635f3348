// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: cli/simulate.hpp
//
// `switch-lua simulate`: one job through a switch.lua as slurmctld and
// slurmstepd would run it: job_start in a supervised child (the real
// supervisor), each step's preinit / init / postfini on each node
// (in-process, as slurmstepd does; on a series with special steps, the
// batch step's init too), then job_complete in a supervised child,
// with the controller's decisions taken by the same engine and state machine
// as the plugin (ctld/core.hpp).  Prints a timeline and what an operator
// would see; --json for machines.
#pragma once

#include "common/slurm_series.hpp"
#include "ctld/config.hpp"

#include <optional>
#include <string>

namespace switchlua {

struct SimulateOptions {
  std::string script;
  std::string network; ///< the job's --network (empty: not ours)
  std::uint32_t job_id = 1001;
  std::uint32_t nodes = 2; ///< node1..nodeN
  std::uint32_t steps = 1;
  bool batch = false; ///< sbatch job (requeue-able unless no_requeue)
  bool no_requeue = false;
  std::string user = "alice";
  std::string partition = "debug";
  // The job table's read-only facts (issue 11); defaults look like a small
  // real job.  nullopt: nil in the job table.
  std::string account = "sim";
  std::optional<std::string> qos = "normal";
  std::string time_limit = "60";      ///< minutes, or "UNLIMITED" (nil)
  std::optional<std::uint32_t> tasks; ///< num_tasks; default: one per node
  std::optional<std::uint32_t> cpus;  ///< num_cpus; default: one per task
  std::optional<std::string> tres_per_node;
  std::optional<std::string> tres_per_task;
  std::string cluster_name = "sim";           ///< job.cluster_name (ClusterName)
  std::optional<std::uint32_t> array_job_id;  ///< with array_task_id
  std::optional<std::uint32_t> array_task_id; ///< an array job when set
  std::optional<std::uint32_t> het_job_id;    ///< with het_job_offset
  std::optional<std::uint32_t> het_job_offset;
  CtldConfig config; ///< switch_timeout, switch_kill_grace, switch_retries, drain
  std::optional<bool> block_job_complete; ///< nullopt: ask the script
  std::string restart_during;             ///< "", "setup" or "teardown"
  bool cancel_during_setup = false;
  /// --fail-node: nodes of the job (a host list) that fail after its
  /// steps: DOWN, the job ends NODE_FAIL, job_complete told which (issue
  /// 20, job.failed_nodes); "": none.
  std::string fail_nodes;
  bool json = false;
  /// --slurm: the series whose behaviour is simulated (common/slurm_series.hpp:
  /// special steps, who asks the start-up questions); default the newest.
  const SlurmSeries *slurm = &newest_slurm_series();
  std::string supervisor; ///< paths of the helper executables
  std::string runner;
};

/// Runs the simulation, prints it to stdout.  Returns the exit status: 0
/// whenever it ran, whatever the job's fate; 1 without running anything when
/// the controller would refuse the script (it does not load, or a hook
/// global is not a function: the message of `switch-lua check` on stderr)
/// or --fail-node names what is not a node of the job (the message on
/// stderr).
int run_simulate(const SimulateOptions &o);

/// `switch-lua check FILE`: exit status 0 when the script passes the
/// controller's check (it loads, and every hook global set is a function),
/// else 1; with `json`, "loaded" is true exactly when the status is 0.
int run_check(const std::string &script, bool json);

} // namespace switchlua
