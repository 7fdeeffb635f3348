// SPDX-License-Identifier: GPL-2.0-or-later
//
// CtldCore's side of the control fence (issue 40; core_impl.hpp,
// ctld/fence.hpp; switch.lua(5), HIGH AVAILABILITY): WAITING when control
// cannot be taken, and the stale controller that finds another one took
// control since.
#include "ctld/core_impl.hpp"

#include "common/log_stamp.hpp"

#include <csignal>
#include <fmt/format.h>

namespace switchlua {

using namespace core_detail;

void CtldCore::Impl::enter_waiting(bool keep_jobs, const std::string &why) {
  const bool first = waiting.empty();
  waiting = why;
  waiting_keep_jobs = waiting_keep_jobs || keep_jobs;
  if (!first)
    return;
  waiting_epoch = ControlFence::read_epoch(opts.journal_path + ".epoch");
  if (!keep_jobs)
    jobs.clear(); // as take_control(false): Slurm holds no job record now
  stats.count_control(&StatsSnapshot::control_waits);
  stats.set_control("WAITING", why, 0);
  port.log(LogLevel::Error,
           log_line({},
                    "WAITING: this slurmctld is the controller but cannot take control of "
                    "the journal ({}); no hook runs here, new setups wait (their jobs stay "
                    "CONFIGURING) and teardowns wait; tried again every {} ms "
                    "(switch.lua(5), HIGH AVAILABILITY)",
                    why, kControlRetry.count()));
  if (!publisher && !opts.status_path.empty()) {
    publisher = std::make_unique<StatusPublisher>(
        stats, opts.status_path, opts.script, opts.journal_path,
        [this](LogLevel l, const std::string &line) { port.log(l, line); });
    publisher->set_settings(cfg.status_interval, cfg.metrics_file);
  }
}

bool CtldCore::Impl::fence_ok() {
  if (!in_control)
    return false;
  if (!fence)
    return true; // no journal: nothing shared to fence
  auto st = fence->check();
  if (!st)
    return true;
  become_stale(*st);
  return false;
}

void CtldCore::Impl::become_stale(const FenceStale &why) {
  if (stale)
    return;
  stale = true;
  in_control = false;
  frozen = true; // the outcomes of the calls stopped below are dropped
  std::size_t dropped = pending_calls.size() + pending_effects.size() + journal_waiting.size() +
                        retry_wait.size() + orphans.size();
  {
    std::lock_guard q(qmu);
    dropped += queue.size() + ready_effects.size() + timers.size();
    queue.clear();
    ready_effects.clear();
    timers.clear();
  }
  pending_calls.clear();
  pending_effects.clear();
  journal_waiting.clear();
  retry_wait.clear();
  orphans.clear();
  parked.clear();
  const std::size_t calls_now = calls.size();
  journal.reset(); // closed, nothing written: not even a pending fdatasync's record
  fence.reset();
  if (publisher) {
    publisher->silence(); // the status file is the new controller's now
    publisher.reset();
  }
  // The supervisor kills every call's process group and exits; a new one
  // starts only for a call, and none is submitted any more.
  if (pid_t pid = client.supervisor_pid(); pid > 0)
    ::kill(pid, SIGTERM);
  stats.count_control(&StatsSnapshot::stale_periods);
  stats.set_control("stale", why.why, why.epoch);
  port.log(LogLevel::Error,
           log_line({},
                    "this slurmctld is no longer in control (epoch {}, now {}): {}; it runs no "
                    "hook and writes nothing more to the journal: {} buffered outcome(s), "
                    "decision(s) and timer(s) dropped, its {} call(s) in flight stopped; the "
                    "controller in control recovers those jobs from the journal "
                    "(switch.lua(5), HIGH AVAILABILITY)",
                    why.epoch, why.now, why.why, dropped, calls_now));
}

bool CtldCore::retry_control() {
  std::lock_guard g(impl_->mu);
  if (impl_->in_control)
    return true;
  if (impl_->waiting.empty())
    return false;
  return static_cast<bool>(impl_->take_control(true));
}

bool CtldCore::waiting_for_control() const {
  std::lock_guard g(impl_->mu);
  return !impl_->waiting.empty();
}

std::uint64_t CtldCore::epoch() const {
  std::lock_guard g(impl_->mu);
  return impl_->fence ? impl_->fence->epoch() : impl_->stats.snapshot().epoch;
}

bool CtldCore::check_control() {
  std::lock_guard g(impl_->mu);
  return impl_->fence_ok();
}

} // namespace switchlua
