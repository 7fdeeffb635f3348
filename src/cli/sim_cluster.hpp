// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: cli/sim_cluster.hpp
//
// The simulated slurmctld of `switch-lua simulate`: one job and its nodes,
// with the SlurmPort the real plugin implements, so the controller engine
// (ctld/core.hpp) runs exactly as in slurmctld while this records what a
// Slurm administrator would see: job state and reason, node states and
// drain reasons, and a timeline of calls, outcomes and log lines.
#pragma once

#include "ctld/core.hpp"

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace switchlua {

/// One line of the timeline.
struct TimelineEntry {
  std::int64_t t_ms = 0; ///< since the simulation started
  std::string source;    ///< "slurmctld", "script", "node1", ...
  std::string kind;      ///< "log", "action", "step", "restart", ...
  std::string text;
  bool error = false;
};

/// A simulated node.
struct SimNode {
  std::string state = "IDLE"; ///< IDLE, ALLOCATED, COMPLETING, DRAINED, ...
  std::string reason;         ///< drain reason
  int holds = 0;              ///< switch/lua holds (COMPLETING)
};

class SimCluster final : public SlurmPort {
public:
  explicit SimCluster(const JobArgs &job);

  // SlurmPort
  void lock() override { mu_.lock(); }
  void unlock() override { mu_.unlock(); }
  void end_configuring(std::uint32_t job_id) override;
  void requeue(std::uint32_t job_id, const std::string &reason) override;
  void requeue_held(std::uint32_t job_id, const std::string &reason) override;
  void cancel(std::uint32_t job_id, const std::string &reason) override;
  void hold(std::uint32_t job_id, const std::string &nodes, bool hold_nodes) override;
  void release(std::uint32_t job_id, const std::string &nodes, bool release_nodes) override;
  void drain(const std::string &nodes, const std::string &reason) override;
  void forget(std::uint32_t job_id) override;
  void save_state() override {}
  void log(LogLevel level, const std::string &line) override;

  /// The engine to re-enter when the simulated Slurm ends the job itself
  /// (requeue and cancel call job_complete at once, as slurmctld does).
  void attach(CtldCore *core) { core_ = core; }
  /// Records a timeline line (thread-safe), and passes it to the stream
  /// callback, if any, as it happens.
  void note(std::string source, std::string kind, std::string text, bool error = false);
  /// Called with each timeline line as it is recorded (human output
  /// streams, so a hook that hangs still shows what it logged).
  void stream_to(std::function<void(const TimelineEntry &)> f) { stream_ = std::move(f); }
  /// scancel by the job's user: CANCELLED with no reason (not a failure).
  void user_cancel();
  /// A step failed: srun ends the job FAILED (srun's own exit code).
  void mark_failed();
  /// Ends the job as slurmctld does (deallocate_nodes → job_complete).
  void end_job(const std::string &how);
  /// The job's end after its steps (`step_failed`: one failed): srun (or
  /// salloc) completes its allocation with its exit status, so a failed
  /// step fails an interactive job; a batch job takes the exit status of
  /// its batch script, simulated as 0.  With failing nodes
  /// (fail_after_steps(); issue 20), those go DOWN and the job ends
  /// NODE_FAIL (a requeue-able batch job is requeued, as slurmctld does),
  /// job_complete told which (JobEnd).
  void end_after_steps(bool batch, bool requeue, bool step_failed);
  /// Slurm 25.11+: the batch step's step_init failed on `node`, the batch
  /// host (switch.lua(5), step_init): slurmctld drains the node with the
  /// reason "batch job complete failure" and requeues the job if it may be
  /// (`requeue`), else the job ends FAILED; job_complete follows.
  void batch_launch_failed(const std::string &node, bool requeue);
  /// --fail-node: the nodes of the job (a host list) that fail after its
  /// steps (end_after_steps).  Returns why not ("": they will), e.g. "node9
  /// is not a node of the job (node[1-2])".
  std::string fail_after_steps(const std::string &nodes);

  std::recursive_mutex &mutex() { return mu_; }
  std::vector<TimelineEntry> timeline() const;
  std::string job_state() const;
  std::string job_reason() const;
  bool job_configuring() const;
  bool job_ended() const;
  std::map<std::string, SimNode> nodes() const;
  void drain_node(const std::string &node, const std::string &reason);
  /// A slurmctld restart: node hold counts are not saved (Slurm rebuilds
  /// them from jobs), so the plugin's holds are forgotten until re-applied.
  void forget_holds();

private:
  std::int64_t now_ms() const;
  mutable std::recursive_mutex mu_;
  JobArgs job_;
  CtldCore *core_ = nullptr;
  std::chrono::steady_clock::time_point t0_;
  std::vector<TimelineEntry> timeline_;
  std::map<std::string, SimNode> nodes_;
  std::string job_state_ = "CONFIGURING";
  std::string reason_;
  bool configuring_ = true;
  bool ended_ = false;
  bool job_held_ = false;
  JobEnd end_;                       ///< what end_job() tells job_complete of the nodes
  std::vector<std::string> failing_; ///< fail_after_steps()
  std::function<void(const TimelineEntry &)> stream_;
};

/// The cluster id simulate gives its SLUIDs (Slurm draws one from 2 to 4095
/// per cluster, once, and keeps it in StateSaveLocation/clustername).
inline constexpr std::uint16_t kSimClusterId = 2;

/// A SLUID as Slurm 24.11 makes one (src/common/sluid.c: generate_sluid):
/// the cluster id in bits 52-63, the milliseconds since the epoch in bits
/// 10-51, a sequence number within the millisecond in bits 0-9.
std::uint64_t make_sluid(std::uint16_t cluster_id, std::uint64_t epoch_ms, std::uint16_t seq);

/// A SLUID's text as Slurm 24.11 prints it (sluid2str): "s" and 13 upper-case
/// Crockford base32 digits (0-9, A-Z without I, L, O, U), most significant
/// first, e.g. make_sluid(2, 1764556800000, 0) -> "s009KBBWG00000".
std::string sluid_text(std::uint64_t sluid);

} // namespace switchlua
