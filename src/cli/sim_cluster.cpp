// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/sim_cluster.hpp"

#include "common/hostlist.hpp"

#include <fmt/format.h>

#include <set>

namespace switchlua {

SimCluster::SimCluster(const JobArgs &job) : job_(job), t0_(std::chrono::steady_clock::now()) {
  for (const std::string &n : job.node_names)
    nodes_[n].state = "ALLOCATED";
}

std::int64_t SimCluster::now_ms() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               t0_)
      .count();
}

void SimCluster::note(std::string source, std::string kind, std::string text, bool error) {
  std::lock_guard g(mu_);
  timeline_.push_back({now_ms(), std::move(source), std::move(kind), std::move(text), error});
  if (stream_)
    stream_(timeline_.back());
}

void SimCluster::user_cancel() {
  job_state_ = "CANCELLED";
  note("user", "action", fmt::format("scancel {}: the job is cancelled by its user", job_.job_id));
  end_job("cancel");
}

void SimCluster::mark_failed() {
  std::lock_guard g(mu_);
  if (job_state_ == "RUNNING")
    job_state_ = "FAILED";
}

void SimCluster::log(LogLevel level, const std::string &line) {
  if (level >= LogLevel::Verbose)
    return; // verbose/debug lines (full outcomes, transitions) are for slurmctld.log
  note("slurmctld", "log", line, level == LogLevel::Error);
}

void SimCluster::end_configuring(std::uint32_t) {
  if (!configuring_)
    return;
  configuring_ = false;
  if (!ended_) {
    job_state_ = "RUNNING";
    note("slurmctld", "action", "configuring done: the job launches (State=RUNNING)");
  } else {
    note("slurmctld", "action", "configuring done (prolog_running released) for the ended job");
  }
}

void SimCluster::end_job(const std::string &how) {
  if (ended_)
    return;
  ended_ = true;
  if (job_state_ == "RUNNING")
    job_state_ = "COMPLETED";
  for (auto &[name, n] : nodes_)
    if (n.state == "ALLOCATED")
      n.state = "IDLE";
  note("slurmctld", "action",
       fmt::format("{}: slurmctld deallocates the nodes (switch_p_job_complete)", how));
  if (core_) {
    if (!core_->state_of(job_.job_id))
      note("slurmctld", "log",
           "switch/lua has no switch state for the job (declined, or not ours): nothing to "
           "tear down");
    core_->job_complete(job_.job_id, end_);
  }
  // Without a switch/lua hold, the job's epilogs finish and its nodes go idle.
  for (auto &[name, n] : nodes_)
    if (n.holds == 0 && n.state == "COMPLETING")
      n.state = "IDLE";
}

void SimCluster::batch_launch_failed(const std::string &node, bool requeue) {
  std::lock_guard g(mu_);
  note("slurmd", "step",
       fmt::format("step {}.batch: batch launch failed on {}: Error configuring interconnect",
                   job_.job_id, node),
       true);
  nodes_[node] = {.state = "DRAINED", .reason = "batch job complete failure"};
  note("slurmctld", "action",
       fmt::format("node {} drained: Reason=batch job complete failure", node), true);
  job_state_ = requeue ? "PENDING (requeued)" : "FAILED";
  end_job(requeue ? "requeue of the job after its failed batch launch"
                  : "the job ends FAILED after its failed batch launch");
}

std::string SimCluster::fail_after_steps(const std::string &nodes) {
  auto names = expand_hostlist(nodes);
  if (!names)
    return names.error().message;
  for (const std::string &n : *names)
    if (!nodes_.count(n))
      return fmt::format("{} is not a node of the job ({})", n, job_.nodes.value_or(""));
  failing_ = *names;
  return "";
}

void SimCluster::end_after_steps(bool batch, bool requeue, bool step_failed) {
  std::lock_guard g(mu_);
  if (const std::vector<std::string> &failed = failing_; !failed.empty()) {
    const std::string down = compress_hostlist(failed);
    for (const std::string &n : failed)
      nodes_[n] = {.state = "DOWN", .reason = "simulate --fail-node"};
    note("slurmctld", "action", fmt::format("node {} DOWN (simulate --fail-node)", down), true);
    end_.failed = down; // switch_p_job_complete: the job's nodes that are DOWN
    job_state_ = requeue ? "PENDING (requeued: node failure)" : "NODE_FAIL";
    end_job((requeue ? "requeue of the job due to failure of node "
                     : "killing the job on failed node ") +
            down);
    return;
  }
  if (step_failed && !batch && job_state_ == "RUNNING")
    job_state_ = "FAILED";
  end_job(!step_failed ? "the job ends"
          : batch      ? "the batch script exits with 0: the job ends COMPLETED (a batch script "
                         "whose last command is the failed srun would end it FAILED)"
                       : "srun exits with status 1 (a step failed): the job ends FAILED");
}

void SimCluster::requeue(std::uint32_t, const std::string &reason) {
  job_state_ = "PENDING (requeued)";
  reason_ = reason;
  note("slurmctld", "action", fmt::format("job requeued: Reason={}", reason), true);
  end_job("requeue");
}

void SimCluster::requeue_held(std::uint32_t, const std::string &reason) {
  job_state_ = "PENDING (requeued held: scontrol release)";
  reason_ = reason;
  note("slurmctld", "action", fmt::format("job requeued held: Reason={}", reason), true);
  end_job("requeue");
}

void SimCluster::cancel(std::uint32_t, const std::string &reason) {
  job_state_ = "CANCELLED";
  reason_ = reason;
  note("slurmctld", "action", fmt::format("job cancelled: Reason={}", reason), true);
  end_job("cancel");
}

void SimCluster::hold(std::uint32_t, const std::string &nodes, bool hold_nodes) {
  job_held_ = true;
  if (hold_nodes)
    for (auto &[name, n] : nodes_) {
      n.holds++;
      if (n.state != "DRAINED" && n.state != "DOWN") // no COMPLETING flag on a DOWN node
        n.state = "COMPLETING";
    }
  note("slurmctld", "action",
       hold_nodes ? fmt::format("job and nodes {} held in COMPLETING", nodes)
                  : "job held in COMPLETING; nodes back in service");
}

void SimCluster::release(std::uint32_t, const std::string &nodes, bool release_nodes) {
  job_held_ = false;
  if (release_nodes)
    for (auto &[name, n] : nodes_) {
      if (n.holds > 0)
        n.holds--;
      if (n.holds == 0 && n.state == "COMPLETING")
        n.state = "IDLE";
    }
  note("slurmctld", "action",
       release_nodes ? fmt::format("job and nodes {} released", nodes) : "job released");
}

void SimCluster::drain(const std::string &nodes, const std::string &reason) {
  // drain_nodes(): only the nodes named (issue 20: job_complete may name
  // some); one that is drained or down already keeps its reason.
  auto names = expand_hostlist(nodes);
  const std::set<std::string> named =
      names ? std::set<std::string>(names->begin(), names->end()) : std::set<std::string>{};
  for (auto &[name, n] : nodes_)
    if (named.count(name) && n.state != "DRAINED" && n.state != "DOWN")
      n = {.state = "DRAINED", .reason = reason, .holds = n.holds};
  note("slurmctld", "action", fmt::format("nodes {} drained: Reason={}", nodes, reason), true);
}

void SimCluster::drain_node(const std::string &node, const std::string &reason) {
  std::lock_guard g(mu_);
  nodes_[node].state = "DRAINED";
  nodes_[node].reason = reason;
  note(node, "action", fmt::format("node {} drained: Reason={}", node, reason), true);
}

void SimCluster::forget(std::uint32_t) {}

void SimCluster::forget_holds() {
  std::lock_guard g(mu_);
  for (auto &[name, n] : nodes_)
    n.holds = 0;
  job_held_ = false;
}

std::vector<TimelineEntry> SimCluster::timeline() const {
  std::lock_guard g(mu_);
  return timeline_;
}
std::string SimCluster::job_state() const {
  std::lock_guard g(mu_);
  return job_state_;
}
std::string SimCluster::job_reason() const {
  std::lock_guard g(mu_);
  return reason_;
}
bool SimCluster::job_configuring() const {
  std::lock_guard g(mu_);
  return configuring_;
}
bool SimCluster::job_ended() const {
  std::lock_guard g(mu_);
  return ended_;
}
std::map<std::string, SimNode> SimCluster::nodes() const {
  std::lock_guard g(mu_);
  return nodes_;
}

std::uint64_t make_sluid(std::uint16_t cluster_id, std::uint64_t epoch_ms, std::uint16_t seq) {
  return (static_cast<std::uint64_t>(cluster_id) << 52) | (epoch_ms << 10) | (seq & 0x3ffU);
}

std::string sluid_text(std::uint64_t sluid) {
  static constexpr char kCrockford[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
  std::string s(14, 's');
  for (int i = 0; i < 13; ++i)
    s[13 - i] = kCrockford[(sluid >> (5 * i)) & 0x1f];
  return s;
}

} // namespace switchlua
