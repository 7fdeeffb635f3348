// SPDX-License-Identifier: GPL-2.0-or-later
//
// CtldCore's worker thread (issue 22): the events the supervisor client
// queues, applied under slurmctld's locks in short holds; the effects that
// waited for their journal records' fdatasync, carried out in order; the
// interactive setup applied inline (switch_interactive_wait); the retry
// tick and the timers.  apply() and execute(): core.cpp.  The shared
// insides: core_impl.hpp.
#include "ctld/core_impl.hpp"

#include "common/log_stamp.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace switchlua {

using namespace core_detail;
void CtldCore::Impl::enqueue(Queued q) {
  {
    std::lock_guard g(qmu);
    queue.push_back(std::move(q));
  }
  qcv.notify_all();
}

void CtldCore::Impl::run_worker() {
  using SteadyClock = std::chrono::steady_clock;
  auto next_tick = SteadyClock::now() + opts.retry_interval;
  auto next_fence = SteadyClock::now() + kFenceCheck;
  std::unique_lock lk(qmu);
  while (!stopping) {
    auto wake = std::min(next_fence,
                         timers.empty() ? next_tick : std::min(next_tick, timers.begin()->first));
    qcv.wait_until(lk, wake, [&] {
      return stopping || !queue.empty() || (!ready_effects.empty() && !effects_parked) ||
             (!timers.empty() && timers.begin()->first < wake); // an earlier timer
    });
    if (stopping)
      break;
    if (SteadyClock::now() >= next_fence) // issue 40: a resumed controller learns it is stale
      next_fence = fence_tick(lk);
    const auto now = SteadyClock::now();
    bool tick = now >= next_tick;
    if (tick)
      effects_parked = false; // tried again once a tick: frozen only while slurmctld stops
    std::vector<Timer> due;
    while (!timers.empty() && timers.begin()->first <= now) {
      due.push_back(timers.begin()->second);
      timers.erase(timers.begin());
    }
    if (queue.empty() && ready_effects.empty() && !tick && due.empty())
      continue;
    lk.unlock();
    // Issue 22: an outcome's step writes its records without syncing them
    // and leaves its actions to the syncer's fdatasync (pending_effects),
    // so a hold of Slurm's locks is the state machine's steps and the
    // effects already durable, never a wait for the disk (which took up to
    // 300 ms a step in a 1,000-job burst); and Slurm's locks are given up
    // after kWorkerBatch steps or kWorkerHold, so Slurm's own threads
    // (job_complete, squeue, the scheduler) get them between two batches.
    lock_port();
    auto hold_start = SteadyClock::now();
    std::size_t in_hold = 0;
    for (;;) {
      const std::size_t n = run_ready_effects(1) + apply_queued(1, true);
      if (n == 0)
        break;
      in_hold += n;
      if (in_hold >= kWorkerBatch || SteadyClock::now() - hold_start >= kWorkerHold) {
        port.unlock();
        lock_port();
        hold_start = SteadyClock::now();
        in_hold = 0;
      }
    }
    if (tick)
      fire_retries();
    fire_timers(due);
    port.unlock();
    if (tick)
      next_tick = std::chrono::steady_clock::now() + opts.retry_interval;
    lk.lock();
  }
}

std::size_t CtldCore::Impl::apply_queued(std::size_t most, bool defer_effects) {
  std::size_t n = 0;
  for (;;) {
    Queued q;
    {
      std::lock_guard g(qmu);
      if (queue.empty() || n == most)
        return n;
      q = std::move(queue.front());
      queue.pop_front();
    }
    ++n;
    std::lock_guard g(mu);
    if (q.orphan && !frozen) {
      apply_orphan(q.orphan, q.outcome);
      continue;
    }
    if (frozen) {
      port.log(LogLevel::Verbose, log_line({.job_id = q.job_id},
                                           "{} not applied: slurmctld is stopping; the "
                                           "call runs again after the restart",
                                           event_kind_name(q.kind)));
      continue;
    }
    auto it = jobs.find(q.job_id);
    if (q.kind == EventKind::LateTeardownResult) {
      // Only logged (R_LATE_RESULT), also when the job's own teardown has
      // finished and its state is gone.
      JobSwitchState s = it != jobs.end() ? it->second : JobSwitchState{};
      s.job.job_id = q.job_id;
      Event e{.kind = q.kind, .outcome = &q.outcome};
      execute(s, step(s, e, cfg).actions);
      continue;
    }
    if (it == jobs.end() || it->second.generation != q.generation) {
      port.log(LogLevel::Verbose, log_line({.job_id = q.job_id}, "stale {} ignored ({})",
                                           event_kind_name(q.kind), describe(q.outcome)));
      continue;
    }
    apply(q.job_id, Event{.kind = q.kind, .outcome = &q.outcome}, defer_effects);
  }
}

std::size_t CtldCore::Impl::run_ready_effects(std::size_t most) {
  std::size_t n = 0;
  while (n < most) {
    std::lock_guard g(mu); // mu before qmu
    PendingEffects p;
    {
      std::lock_guard q(qmu);
      effects_parked = frozen; // slurmctld stops: kept for a failed reconfigure's resume
      if (ready_effects.empty() || frozen)
        break;
      p = std::move(ready_effects.front());
      ready_effects.pop_front();
      ++effects_running;
    }
    ++n;
    struct Done { // at the end of this body, under mu
      std::atomic<std::size_t> &running;
      ~Done() { --running; }
    } done{effects_running};
    const std::uint32_t id = p.state.job.job_id;
    // Issue 40: the fence is checked again before the effects, not only
    // before their records: another slurmctld may have taken control
    // while the syncer's fdatasync ran (outside every lock), and a stale
    // controller must not launch, requeue or drain what the controller in
    // control recovers from the journal.
    if (!fence_ok()) {
      port.log(LogLevel::Verbose, log_line({.job_id = id},
                                           "{} action(s) not carried out: this slurmctld does "
                                           "not hold control (any more); the controller that "
                                           "holds it recovers the job from the journal",
                                           p.actions.size()));
      continue;
    }
    // The job moved on while the records were synced: its run ended (or it
    // runs again) and Slurm has done with that run what a requeue or a
    // cancel would have done.
    auto it = jobs.find(id);
    const bool moved_on = it == jobs.end() ? !is_terminal(p.state.state)
                                           : it->second.generation != p.state.generation ||
                                                 it->second.state != p.state.state;
    if (moved_on) {
      auto stale = [](const Action &a) {
        return a.kind == ActionKind::Requeue || a.kind == ActionKind::RequeueHeld ||
               a.kind == ActionKind::Cancel;
      };
      for (const Action &a : p.actions)
        if (stale(a))
          port.log(LogLevel::Info,
                   log_line({.job_id = id},
                            "{} not asked: the job ended or ran again while the decision's "
                            "journal record was synced (its state now {})",
                            a.kind == ActionKind::Cancel ? "cancel" : "requeue",
                            it == jobs.end() ? "forgotten" : job_state_name(it->second.state)));
      std::erase_if(p.actions, stale);
    }
    execute(p.state, p.actions, p.durable ? std::string() : journal_refusal());
    port.save_state();
  }
  return n;
}

void CtldCore::Impl::flush_effects() {
  {
    // Their records synced before Slurm's locks are taken (issue 40: the
    // disk may stall); under them only what was written meanwhile.
    std::lock_guard g(mu);
    if (journal && !pending_effects.empty())
      journal->sync_now();
  }
  lock_port();
  {
    std::lock_guard g(mu);
    if (journal && !pending_effects.empty() && !journal->all_durable())
      journal->sync_now(); // or it fails: then they run as records that could not be written
    ready_pending_effects();
  }
  run_ready_effects();
  {
    // Nothing is decided from here on: an outcome the worker would apply
    // between this hold of Slurm's locks and stop_children() would write
    // its records (a teardown's "forgotten") and leave its effects (the
    // drain) to a sync that stop_children() then drops: the next slurmctld
    // would read the attempt as over and never drain.  Dropped instead, the
    // call runs again there (switch.lua(5): a teardown killed from outside
    // is retried).
    std::lock_guard g(mu);
    frozen = true;
  }
  port.unlock();
}

bool CtldCore::Impl::is_setup_result(const Queued &q, std::uint32_t job_id,
                                     std::uint64_t generation) {
  return q.orphan == 0 && q.job_id == job_id && q.kind == EventKind::SetupResult &&
         q.generation == generation;
}

std::optional<CtldCore::Impl::Queued>
CtldCore::Impl::await_setup_result(std::uint32_t job_id, std::uint64_t generation,
                                   std::chrono::milliseconds wait) {
  // The result of this run only: a stale one of an earlier run is the
  // worker's to drop.  Only the worker and drain_events() pop, both under
  // Slurm's locks, which settle_setup()'s caller holds: what is found here
  // stays queued.
  auto mine = [&](const Queued &q) { return is_setup_result(q, job_id, generation); };
  {
    std::unique_lock lk(qmu);
    if (qcv.wait_until(lk, std::chrono::steady_clock::now() + wait,
                       [&] { return std::any_of(queue.begin(), queue.end(), mine); }))
      return *std::find_if(queue.begin(), queue.end(), mine);
  }
  std::lock_guard g(mu);
  inline_skip = kInlineSkip;
  port.log(LogLevel::Debug, log_line({.job_id = job_id, .hook = "job_start"},
                                     "not over within switch_interactive_wait={} ms: the launch "
                                     "is delayed, and the next {} interactive jobs do not wait",
                                     wait.count(), kInlineSkip));
  return std::nullopt;
}

bool CtldCore::Impl::apply_setup_inline(const Queued &found, std::chrono::milliseconds wait) {
  const std::uint32_t job_id = found.job_id;
  std::uint64_t seq = 0;
  {
    // mu before qmu, the order submit() (under mu) -> enqueue() takes them in.
    std::lock_guard g(mu);
    auto it = jobs.find(job_id);
    if (frozen || it == jobs.end() || it->second.generation != found.generation)
      return false; // slurmctld is stopping (stop_children), or the job moved on
    const Event e{.kind = EventKind::SetupResult, .outcome = &found.outcome};
    JobSwitchState s = it->second; // as apply() will step it
    s.setup_failures = prior_setup_failures(failures, s.job);
    const StepResult r = step(s, e, cfg);
    if (r.next.state != JobState::Running && r.next.state != JobState::Declined)
      return false; // a failure: its requeue, cancel or hold is the worker's
    for (const Action &a : r.actions)
      if (a.kind != ActionKind::EndConfiguring && a.kind != ActionKind::Log)
        return false;
    {
      std::lock_guard q(qmu);
      auto at = std::find_if(queue.begin(), queue.end(), [&](const Queued &x) {
        return is_setup_result(x, job_id, found.generation);
      });
      if (at == queue.end())
        return false;
      queue.erase(at);
    }
    // Taken from the queue: from here on the step is applied, whatever
    // happens (an exception would otherwise leave the job CONFIGURING with
    // nobody to end it).  Issue 40 item 5: its records are only written
    // here; the syncer makes them durable outside every lock, and the
    // launch is released here only if that is over within `wait`.
    try {
      apply(job_id, e, /*defer_effects=*/true);
    } catch (const std::exception &ex) {
      port.log(LogLevel::Error, log_line({.job_id = job_id, .hook = "job_start"},
                                         "applying the setup's result failed: {}", ex.what()));
    }
    if (!in_control)
      return false; // found stale: the controller in control recovers the job
    if (pending_effects.empty() || pending_effects.back().state.job.job_id != job_id ||
        pending_effects.back().state.generation != found.generation)
      return true; // carried out in apply(): no journal, or its write failed
    seq = pending_effects.back().seq;
  }
  return await_inline_effects(job_id, seq, wait);
}

bool CtldCore::Impl::await_inline_effects(std::uint32_t job_id, std::uint64_t seq,
                                          std::chrono::milliseconds w) {
  auto mine = [&](const PendingEffects &p) { return p.seq == seq && p.state.job.job_id == job_id; };
  bool synced;
  {
    std::unique_lock lk(qmu);
    synced = qcv.wait_until(lk, std::chrono::steady_clock::now() + w, [&] {
      return std::any_of(ready_effects.begin(), ready_effects.end(), mine);
    });
  }
  std::lock_guard g(mu); // mu before qmu, never after
  if (!synced) {
    inline_skip = kInlineSkip;
    port.log(LogLevel::Debug,
             log_line({.job_id = job_id, .hook = "job_start"},
                      "its journal record not synced within switch_interactive_wait={} ms: the "
                      "launch is delayed until it is, and the next {} interactive jobs do not "
                      "wait",
                      w.count(), kInlineSkip));
    return false; // the worker carries the effects out once it is synced
  }
  PendingEffects p;
  {
    std::lock_guard q(qmu);
    auto at = std::find_if(ready_effects.begin(), ready_effects.end(), mine);
    // A failed sync, or slurmctld stopping meanwhile: the worker's, as any
    // such decision (run_ready_effects() keeps them while frozen).
    if (at == ready_effects.end() || !at->durable || frozen)
      return false;
    p = std::move(*at);
    ready_effects.erase(at);
  }
  if (!fence_ok()) // issue 40: as run_ready_effects()
    return false;
  execute(p.state, p.actions, std::string());
  port.save_state();
  return true;
}

void CtldCore::Impl::fire_retries() {
  std::lock_guard g(mu);
  if (frozen || !fence_ok())
    return;
  if (journal && !journal->failure().empty()) {
    journal->retry(); // recovers without waiting for the next record
    stats.set_journal_failure(journal->failure());
  }
  run_journal_waits();
  check_waiting_orphans();
  wake_orphan_waiters(); // a waiting start is never left CONFIGURING for good
  std::set<std::uint32_t> due;
  due.swap(retry_wait);
  for (std::uint32_t id : due)
    apply(id, Event{.kind = EventKind::RetryTick});
}

void CtldCore::Impl::lock_port() {
  port.lock();
  if (!port.stopping())
    return;
  std::lock_guard g(mu);
  if (frozen)
    return;
  frozen = true;
  port.log(LogLevel::Info,
           log_line({}, "slurmctld is stopping: no call's result and no decided action is "
                        "carried out from now on; the next slurmctld (or this one, after a "
                        "failed reconfigure) recovers them"));
}

void CtldCore::Impl::arm_timer(std::chrono::milliseconds delay, Timer t) {
  {
    std::lock_guard g(qmu);
    timers.emplace(std::chrono::steady_clock::now() + delay, t);
  }
  qcv.notify_all();
}

void CtldCore::Impl::fire_timers(const std::vector<Timer> &due) {
  std::lock_guard g(mu);
  for (const Timer &t : due) {
    if (frozen)
      return;
    if (t.journal) {
      journal_tick();
      continue;
    }
    if (t.orphan) {
      run_orphan(t.orphan);
      continue;
    }
    auto it = jobs.find(t.job_id);
    if (it != jobs.end() && it->second.generation == t.generation)
      apply(t.job_id, Event{.kind = EventKind::RetryTick});
  }
}
} // namespace switchlua
