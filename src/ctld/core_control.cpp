// SPDX-License-Identifier: GPL-2.0-or-later
//
// CtldCore's control of the journal (core_impl.hpp; switch.lua(5), Journal
// and HA): taking it (the journal's lock, reading the journal back,
// dropping what a previous period of control left in memory), giving it up
// at switch_p_save or a reconfigure, and stopping the calls in flight.
#include "ctld/core_impl.hpp"

#include "common/log_stamp.hpp"

#include <algorithm>
#include <csignal>
#include <fmt/format.h>

namespace switchlua {

using namespace core_detail;

void CtldCore::Impl::drop_volatile_state() {
  {
    std::lock_guard q(qmu);
    queue.clear();  // outcomes of calls stop_children() killed
    timers.clear(); // back-offs of the jobs re-adopted (fired again by them)
  }
  retry_wait.clear();
  host_fault_since.clear();
  if (breaker.open)
    stats.breaker(false, unix_now(), ""); // a controller taking over starts closed, as at a start
  breaker.open = breaker.gate = false;
  breaker.failures.clear();
  orphans.clear();
  hints.clear();
  journal_waiting.clear(); // the journal as read now says what they were
  journal_timer_armed = false;
  drop_pending("control was taken again");
}

Expected<void> CtldCore::Impl::take_journal() {
  // Issue 40: the lock within lock_wait, else the holder is fenced out
  // (ctld/fence.hpp).  A retry while WAITING does not wait again, and
  // never fences out a controller that took control since the first try.
  const bool retry = !waiting.empty();
  const bool may_fence =
      !retry || ControlFence::read_epoch(opts.journal_path + ".epoch") == waiting_epoch;
  auto f =
      ControlFence::take(opts.journal_path, retry ? std::chrono::milliseconds(0) : opts.lock_wait,
                         opts.fence_step, may_fence);
  if (!f)
    return Unexpected<Error>{f.error()};
  fence = std::move(*f);
  if (!fence->fenced_holder().empty()) {
    stats.count_control(&StatsSnapshot::fenced_takeovers);
    port.log(LogLevel::Error,
             log_line({},
                      "journal {}: its lock was still held by {} after {} ms: fenced "
                      "takeover, epoch {}; that slurmctld writes nothing more and runs no "
                      "hook once it runs again (it checks the epoch before each), and hooks "
                      "get job.epoch={} (switch.lua(5), HIGH AVAILABILITY)",
                      opts.journal_path, fence->fenced_holder(), opts.lock_wait.count(),
                      fence->epoch(), fence->epoch()));
  }
  // Every attempt id the journal file (and its set-aside copies) may have
  // held (issue 20), read before the Journal may set it aside.
  attempt_floor = std::max(attempt_floor, attempt_floor_of(opts.journal_path));
  // Read now, as it is: what another controller wrote since this process
  // started (a takeover), or since it gave up control, is in it.  Its
  // compaction writes a fresh file (a new inode): a stale writer's
  // descriptor points at the old one, which no reader opens.
  journal = std::make_unique<Journal>(
      opts.journal_path,
      [this](bool error, const std::string &l) {
        port.log(error ? LogLevel::Error : LogLevel::Info, l);
      },
      opts.journal_io);
  journal->set_while_failing(journal_while_failing());
  // Issue 40: what the supervisors recorded of calls that ended while
  // their slurmctld was stopped, before Slurm's saved states are adopted
  // against the journal.  This period's own results start a new file.
  adopt_supervisor_results();
  // Never a segment number of an earlier period of this process: an
  // outcome of one of its calls may still come in, and must not count
  // against a segment of this one.
  ++results_seg;
  results_seg_since = std::chrono::steady_clock::now();
  results_calls.clear();
  return {};
}

Expected<void> CtldCore::Impl::take_control(bool keep_jobs) {
  if (in_control)
    return {};
  if (!opts.journal_path.empty()) {
    if (auto r = take_journal(); !r) {
      enter_waiting(keep_jobs, r.error().message);
      return r;
    }
  }
  if (!waiting.empty())
    port.log(LogLevel::Info, log_line({},
                                      "WAITING over: control taken at epoch {}; {} "
                                      "setup(s) that waited start once the jobs are "
                                      "recovered",
                                      fence ? fence->epoch() : 0, parked.size()));
  waiting.clear();
  stale = false;
  drop_volatile_state();
  if (!keep_jobs) {
    // Not port.forget(): Slurm has no job record now (start-up, or a
    // takeover, which freed them all and their jobinfo with them).
    jobs.clear();
  } else {
    std::vector<JobSwitchState> kept;
    for (auto &[id, st] : jobs)
      kept.push_back(st);
    jobs.clear();
    for (JobSwitchState &st : kept)
      adopt_locked(std::move(st));
  }
  failures = journal ? journal->table().failures : SetupFailureCounts{};
  rebuild_pools(true);
  publisher = std::make_shared<StatusPublisher>(
      stats, opts.status_path, opts.script, opts.journal_path,
      [this](LogLevel l, const std::string &line) { port.log(l, line); });
  publisher->set_settings(cfg.status_interval, cfg.metrics_file);
  stats.set_journal_failure(journal ? journal->failure() : std::string());
  stats.set_jobs(jobs.size());
  pools.publish(stats);
  stats.set_control("in control", "", fence ? fence->epoch() : 0);
  in_control = true;
  frozen = false;
  reconciled = opts.take_control_at_start;
  return {};
}

void CtldCore::halt() {
  std::lock_guard g(impl_->mu);
  impl_->frozen = true;
}

void CtldCore::stop_children() {
  {
    std::lock_guard g(impl_->mu);
    impl_->frozen = true;
    // No call survives: whatever was outstanding is recovered (re-run) by
    // the next slurmctld, or by this one after a failed reconfigure.
    for (auto &[id, s] : impl_->jobs)
      if (!is_terminal(s.state))
        s.recovered = true;
    impl_->retry_wait.clear();
    {
      std::lock_guard q(impl_->qmu);
      impl_->timers.clear(); // the recovery re-runs what they waited for
    }
    for (auto &[a, o] : impl_->orphans)
      o.in_flight = false;          // killed below; reconcile_journal() runs them again
    impl_->journal_waiting.clear(); // never started: the next slurmctld runs them
    impl_->drop_pending("slurmctld is stopping");
  }
  // SIGTERM: the supervisor kills every child process group and exits; the
  // client reports the calls abandoned and restarts it on the next submit.
  pid_t pid = impl_->client.supervisor_pid();
  if (pid > 0)
    ::kill(pid, SIGTERM);
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (calls_in_flight() > 0 && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

Expected<void> CtldCore::take_control(bool keep_jobs) {
  std::lock_guard g(impl_->mu);
  return impl_->take_control(keep_jobs);
}

void CtldCore::release_control() {
  {
    std::lock_guard g(impl_->mu);
    if (!impl_->waiting.empty()) { // Slurm gives up control before the plugin got it
      impl_->port.log(LogLevel::Info,
                      log_line({},
                               "WAITING over: control given up before it was taken; {} "
                               "setup(s) that waited not started",
                               impl_->parked.size()));
      impl_->waiting.clear();
      impl_->parked.clear();
      impl_->stats.set_control("standby", "", 0);
      impl_->publisher.reset();
    }
  }
  if (!in_control())
    return;
  impl_->flush_effects(); // what this controller decided is done before it lets go
  stop_children();
  std::unique_lock g(impl_->mu);
  if (impl_->journal)
    impl_->journal->sync_now(); // what the pending calls' records left unsynced
  impl_->flush_journal_for_handover();
  impl_->in_control = false;
  // Its last write is done below, after the core's lock: a file that cannot
  // be written quickly must not hold the core (issue 35).  The control lock
  // is let go after that write, so the status file is never written by a
  // controller that no longer holds it.
  std::shared_ptr<StatusPublisher> publisher = std::move(impl_->publisher);
  impl_->journal.reset(); // every record is on disk already (fdatasync'ed)
  impl_->stats.set_control("standby", "", impl_->fence ? impl_->fence->epoch() : 0);
  std::unique_ptr<ControlFence> fence = std::move(impl_->fence);
  impl_->port.log(LogLevel::Info,
                  log_line({},
                           "control given up: journal closed and its lock released; {} job "
                           "state(s) kept for a resumption after a failed reconfigure",
                           impl_->jobs.size()));
  g.unlock();
  publisher.reset();
  fence.reset(); // the lock goes last
}

bool CtldCore::in_control() const {
  std::lock_guard g(impl_->mu);
  return impl_->in_control;
}

} // namespace switchlua
