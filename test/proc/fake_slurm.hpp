// SPDX-License-Identifier: GPL-2.0-or-later
//
// A fake of the controller engine's Slurm port (ctld/core.hpp SlurmPort) for
// the engine's process tests: it records every action the core asks of
// slurmctld ("requeue 7", with its reason) and every log line, thread-safe.
#pragma once

#include "ctld/core.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace switchlua::test {

/// Records what the core asks of Slurm.
class FakeSlurm final : public SlurmPort {
public:
  /// Slurm's locks: a test that holds them (as select_nodes() does around
  /// switch_p_job_start) keeps the worker from applying anything.
  void lock() override {
    slurm_locks.lock();
    holds.fetch_add(1);
  }
  void unlock() override {
    slurm_locks.unlock();
    std::function<void()> f;
    {
      std::lock_guard g(hook_mu);
      if (after_unlock_ && std::this_thread::get_id() == hook_thread_)
        f = std::exchange(after_unlock_, nullptr);
    }
    if (f)
      f(); // the locks are free: the core's worker may take them meanwhile
  }
  /// Runs `f` once, right after the next unlock() made by the calling
  /// thread (not by the core's worker): e.g. between the last hold of
  /// Slurm's locks of a release_control() and what follows it.
  void after_next_unlock_here(std::function<void()> f) {
    std::lock_guard g(hook_mu);
    hook_thread_ = std::this_thread::get_id();
    after_unlock_ = std::move(f);
  }
  void end_configuring(std::uint32_t id) override { add(fmt("end_configuring", id)); }
  void requeue(std::uint32_t id, const std::string &r) override { add(fmt("requeue", id), r); }
  void requeue_held(std::uint32_t id, const std::string &r) override {
    add(fmt("requeue_held", id) + ": " + r, r);
  }
  void cancel(std::uint32_t id, const std::string &r) override { add(fmt("cancel", id), r); }
  void hold(std::uint32_t id, const std::string &n, bool held) override {
    add(fmt("hold", id), n + (held ? " nodes held" : " job only"));
  }
  void release(std::uint32_t id, const std::string &n, bool released) override {
    add(fmt("release", id), n + (released ? " nodes released" : " job only"));
  }
  void drain(const std::string &n, const std::string &r) override { add("drain " + n + ": " + r); }
  void forget(std::uint32_t id) override { add(fmt("forget", id)); }
  void save_state() override {}
  /// How many times Slurm's locks were taken: the number of the current
  /// hold, which every action records (hold_of()).
  std::atomic<int> holds{0};
  /// The hold of Slurm's locks in which `action` was last done (0: never).
  int hold_of(const std::string &action) {
    std::lock_guard g(mu);
    int h = 0;
    for (std::size_t i = 0; i < actions.size(); ++i)
      if (actions[i] == action)
        h = action_holds[i];
    return h;
  }
  /// The lost start: what job_may_run_on_nodes() answers (default false).
  std::atomic<bool> nodes_may_run{false};
  bool job_may_run_on_nodes(std::uint32_t, const std::string &) override {
    return nodes_may_run.load();
  }
  /// What stopping() answers: slurmctld has begun to stop (default false).
  std::atomic<bool> is_stopping{false};
  bool stopping() override { return is_stopping.load(); }
  /// How many times the core asked Slurm to schedule (pool IDs came free
  /// while jobs waited for them).
  std::atomic<int> schedules{0};
  void schedule() override { schedules.fetch_add(1); }
  void log(LogLevel l, const std::string &line) override {
    std::lock_guard g(mu);
    logs.push_back(line);
    levels.push_back(l);
  }
  /// The level of the first line equal to `line` (Debug if none).
  LogLevel level_of(const std::string &line) {
    std::lock_guard g(mu);
    for (std::size_t i = 0; i < logs.size(); ++i)
      if (logs[i] == line)
        return levels[i];
    return LogLevel::Debug;
  }
  /// Number of log lines containing `text`.
  int count_logged(const std::string &text) {
    std::lock_guard g(mu);
    int n = 0;
    for (const auto &l : logs)
      n += l.find(text) != std::string::npos;
    return n;
  }
  bool logged(const std::string &text) {
    std::lock_guard g(mu);
    for (const auto &l : logs)
      if (l.find(text) != std::string::npos)
        return true;
    return false;
  }
  bool did(const std::string &action) {
    std::lock_guard g(mu);
    for (const auto &a : actions)
      if (a == action)
        return true;
    return false;
  }
  bool did_starting(const std::string &prefix) {
    std::lock_guard g(mu);
    for (const auto &a : actions)
      if (a.rfind(prefix, 0) == 0)
        return true;
    return false;
  }
  /// The first action starting with `prefix`, or "".
  std::string first_starting(const std::string &prefix) {
    std::lock_guard g(mu);
    for (const auto &a : actions)
      if (a.rfind(prefix, 0) == 0)
        return a;
    return "";
  }
  /// The reason (or node list) that went with the last `action`, e.g.
  /// reason_of("requeue 7"); empty when the action was not done.
  std::string reason_of(const std::string &action) {
    std::lock_guard g(mu);
    std::string r;
    for (std::size_t i = 0; i < actions.size(); ++i)
      if (actions[i] == action)
        r = reasons[i];
    return r;
  }
  /// Every action so far, in order ("end_configuring 7", "hold 7", ...).
  std::vector<std::string> all_actions() {
    std::lock_guard g(mu);
    return actions;
  }
  std::string all_logs() {
    std::lock_guard g(mu);
    std::string out;
    for (const auto &l : logs)
      out += l + "\n";
    return out;
  }

private:
  static std::string fmt(const char *what, std::uint32_t id) {
    return std::string(what) + " " + std::to_string(id);
  }
  void add(std::string a, std::string reason = {}) {
    std::lock_guard g(mu);
    actions.push_back(std::move(a));
    reasons.push_back(std::move(reason));
    action_holds.push_back(holds.load());
  }
  std::mutex mu;
  std::mutex slurm_locks;
  std::mutex hook_mu;
  std::function<void()> after_unlock_;
  std::thread::id hook_thread_;
  std::vector<std::string> logs;
  std::vector<LogLevel> levels;
  std::vector<std::string> actions;
  std::vector<std::string> reasons;
  std::vector<int> action_holds;
};

/// Runs `core`'s queued events (CtldCore::drain_events) until `done()`
/// holds and no decision of the worker waits to be carried out (its
/// effects follow its state once its records are synced, issue 22); false
/// when that still is not so after 10 s.
template <class F> bool settle(CtldCore &core, F done) {
  for (int i = 0; i < 1000; ++i) {
    core.drain_events();
    if (done() && core.decisions_pending() == 0)
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

/// The admission gate's question (Slurm 25.11+'s test_only call) as
/// select_nodes() asks it: with Slurm's locks held.
inline bool admit_locked(CtldCore &core, FakeSlurm &slurm, std::uint32_t id) {
  slurm.lock();
  const bool ok = core.admit(id);
  slurm.unlock();
  return ok;
}

} // namespace switchlua::test
