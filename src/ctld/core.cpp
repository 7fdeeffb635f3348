// SPDX-License-Identifier: GPL-2.0-or-later
//
// CtldCore: the state machine's executor.  Layout:
//
//   slurmctld hook ──job_start/job_complete──▶ apply() ──▶ execute(actions)
//                                                 ▲              │ RunJob*: submit
//   worker thread ──lock──▶ pop event ────────────┘              ▼
//        ▲                                          SupervisorClient (own thread)
//        └──────────── queue ◀── enqueue ◀─────────────────────┘
//
// This file: the worker, apply() and execute(), and CtldCore's public calls
// but the recovery and control ones.  Hook calls: core_calls.cpp; the
// journal's writer and its syncer: core_journal.cpp; taking and giving up
// control: core_control.cpp; the recovery: core_recovery.cpp; the fabric
// breaker: core_breaker.cpp; the shared insides: core_impl.hpp.
#include "ctld/core_impl.hpp"

#include "common/hostlist.hpp"
#include "common/log_stamp.hpp"
#include "lua/runtime.hpp"

#include <fmt/format.h>

namespace switchlua {

using namespace core_detail;

ClientOptions CtldCore::Impl::sized(ClientOptions c, const CtldConfig &cfg) {
  c.max_concurrent = cfg.max_calls;
  c.max_queue = cfg.max_queue;
  c.max_queued = cfg.max_calls + 3 * cfg.max_queue; // the lanes refuse first
  c.child_env.push_back(fmt::format("{}={}", kLuaMemoryEnv, cfg.lua_memory_mb));
  return c;
}

CtldCore::Impl::Impl(CoreOptions o, SlurmPort &p)
    : opts(std::move(o)), port(p),
      client(sized(opts.client, opts.config),
             [this](CallId id, LogLevel l, std::string_view text) { on_script_log(id, l, text); }),
      cfg(opts.config) {
  if (opts.take_control_at_start) {
    std::lock_guard g(mu);
    (void)take_control(false); // logged
  }
  worker = std::thread([this] { run_worker(); });
  syncer = std::thread([this] { run_syncer(); });
}

CtldCore::Impl::~Impl() {
  {
    std::lock_guard l(smu);
    sync_stop = true;
  }
  scv.notify_all();
  syncer.join();
  {
    std::lock_guard g(qmu);
    stopping = true;
  }
  qcv.notify_all();
  worker.join();
  client.shutdown();
  publisher.reset(); // a last write, with the calls shutdown() abandoned
}

void CtldCore::Impl::on_script_log(CallId id, LogLevel l, std::string_view text) {
  std::uint32_t job_id = 0;
  Hook h = Hook::JobStart;
  {
    std::lock_guard g(mu);
    auto it = calls.find(id);
    if (it != calls.end())
      std::tie(job_id, h) = it->second;
  }
  port.log(l, log_line({.job_id = job_id, .hook = hook_name(h)}, ": {}", text));
}

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
  std::unique_lock lk(qmu);
  while (!stopping) {
    auto wake = timers.empty() ? next_tick : std::min(next_tick, timers.begin()->first);
    qcv.wait_until(lk, wake, [&] {
      return stopping || !queue.empty() || !ready_effects.empty() ||
             (!timers.empty() && timers.begin()->first < wake); // an earlier timer
    });
    if (stopping)
      break;
    const auto now = SteadyClock::now();
    bool tick = now >= next_tick;
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
    port.lock();
    auto hold_start = SteadyClock::now();
    std::size_t in_hold = 0;
    for (;;) {
      const std::size_t n = run_ready_effects(1) + apply_queued(1, true);
      if (n == 0)
        break;
      in_hold += n;
      if (in_hold >= kWorkerBatch || SteadyClock::now() - hold_start >= kWorkerHold) {
        port.unlock();
        port.lock();
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
    PendingEffects p;
    {
      std::lock_guard q(qmu);
      if (ready_effects.empty())
        break;
      p = std::move(ready_effects.front());
      ready_effects.pop_front();
    }
    ++n;
    std::lock_guard g(mu);
    const std::uint32_t id = p.state.job.job_id;
    if (!in_control) {
      port.log(LogLevel::Verbose, log_line({.job_id = id},
                                           "{} action(s) not carried out: this slurmctld gave "
                                           "up control; the controller that holds it recovers "
                                           "the job from the journal",
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
  port.lock();
  {
    std::lock_guard g(mu);
    if (journal && !pending_effects.empty())
      journal->sync_now(); // or it fails: then they run as records that could not be written
    ready_pending_effects();
  }
  run_ready_effects();
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

bool CtldCore::Impl::apply_setup_inline(const Queued &found) {
  // mu before qmu, the order submit() (under mu) -> enqueue() takes them in.
  std::lock_guard g(mu);
  const std::uint32_t job_id = found.job_id;
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
  // Taken from the queue: from here on the launch is not delayed, whatever
  // happens (an exception would otherwise leave the job CONFIGURING with
  // nobody to end it).
  try {
    apply(job_id, e);
  } catch (const std::exception &ex) {
    port.log(LogLevel::Error, log_line({.job_id = job_id, .hook = "job_start"},
                                       "applying the setup's result failed: {}", ex.what()));
  }
  return true;
}

void CtldCore::Impl::fire_retries() {
  std::lock_guard g(mu);
  if (!in_control)
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

std::chrono::milliseconds CtldCore::Impl::host_fault_age(std::uint32_t job_id, const Event &e) {
  const auto now = std::chrono::steady_clock::now();
  auto since = host_fault_since.find(job_id);
  const bool spawn_failed = e.outcome && e.outcome->kind == OutcomeKind::SpawnFailed;
  if (spawn_failed && since == host_fault_since.end())
    since = host_fault_since.emplace(job_id, now).first;
  const auto age = since == host_fault_since.end()
                       ? std::chrono::milliseconds(0)
                       : std::chrono::duration_cast<std::chrono::milliseconds>(now - since->second);
  if (e.kind == EventKind::SetupRequested || (e.outcome && !spawn_failed))
    host_fault_since.erase(job_id);
  return age;
}

void CtldCore::Impl::apply(std::uint32_t job_id, const Event &e, bool defer_effects) {
  std::lock_guard g(mu);
  if (!in_control) {
    port.log(LogLevel::Error,
             log_line({.job_id = job_id}, "{} not applied: this slurmctld does not hold control",
                      event_kind_name(e.kind)));
    return;
  }
  auto it = jobs.find(job_id);
  if (it == jobs.end())
    return;
  it->second.setup_failures = prior_setup_failures(failures, it->second.job);
  it->second.orphan_pending = has_orphan_of(job_id);
  if (e.kind == EventKind::SetupRequested)
    it->second.held_by =
        it->second.orphan_pending ? 0 : held_teardown_of(job_id, it->second.job); // issue 20
  it->second.journal_down = journal && !journal->failure().empty();
  it->second.host_fault_age = host_fault_age(job_id, e);
  it->second.fabric_down = breaker.open;
  StepResult r = step(it->second, e, cfg);
  // The fabric breaker (issue 20): this failed teardown is the
  // switch_breaker_failures-th of different jobs within the window, or a
  // hook says the fabric is down: open it (this teardown is kept too) ...
  const bool returned = e.outcome && e.outcome->kind == OutcomeKind::Returned;
  const std::string_view hook = e.kind == EventKind::SetupResult ? "job_start" : "job_complete";
  if (!breaker.open && e.kind == EventKind::TeardownResult && is_failed_teardown(r.rule) &&
      breaker_counts(job_id)) {
    open_breaker(fmt::format("{} teardowns of different jobs failed within {} s "
                             "(switch_breaker_failures={}, switch_breaker_window={}), the last "
                             "JobId={}",
                             cfg.breaker_failures, cfg.breaker_window_s, cfg.breaker_failures,
                             cfg.breaker_window_s, job_id));
    it->second.fabric_down = true;
    r = step(it->second, e, cfg);
  } else if (!breaker.open && returned && e.outcome->ret.rc == kFabricDown) {
    open_breaker(fmt::format("JobId={} {} returned slurm.FABRIC_DOWN", job_id, hook));
  }
  // ... and a hook that succeeds closes it.
  const bool closes = breaker.open && returned && e.outcome->ret.rc == kSuccess &&
                      (e.kind == EventKind::SetupResult || e.kind == EventKind::TeardownResult);
  for (const Action &a : r.actions)
    if (a.kind == ActionKind::RunJobStart)
      r.next.job.attempt = next_attempt(); // a new setup attempt
  if (e.kind == EventKind::SetupResult && e.outcome && r.next.jobinfo && !it->second.jobinfo)
    r.next.script_hash = e.outcome->script_hash; // the stepinfo carries it
  if (e.kind == EventKind::TeardownResult && e.outcome && e.outcome->kind == OutcomeKind::Returned)
    for (Action &a : r.actions) // the rule's line is the outcome line of job_complete
      if (a.kind == ActionKind::Log)
        a.reason += fmt::format(" ({})", script_ref(e.outcome->script_hash));
  const bool calls_only = deferrable(r.actions);
  const JournalStep js = journal_step(it->second, e, r, journal && (calls_only || defer_effects));
  if (auto rec = count_setup_failures(failures, cfg, e, r))
    journal_append({*rec});
  it->second = r.next;
  port.log(LogLevel::Debug, log_line({.job_id = job_id}, "{} -> {} ({})", event_kind_name(e.kind),
                                     job_state_name(r.next.state), r.rule));
  // Issue 24: a setup whose "setup started" record is not on disk does not
  // run (after a crash nobody would know to tear it down); it fails at once
  // naming the journal, and its job is requeued (or cancelled) as for any
  // failed setup.  A teardown without its record waits for the journal
  // (switch_journal_failure=wait) or runs (=run: safe to repeat).
  if (js.seq != 0 && !calls_only) { // the worker's: carried out once the syncer synced
    pending_effects.push_back({.seq = js.seq, .state = r.next, .actions = r.actions});
    wake_syncer();
  } else {
    execute(r.next, r.actions, js.durable ? std::string() : journal_refusal(), js.seq);
  }
  auto again = jobs.find(job_id); // execute() may have re-entered
  if (again != jobs.end() && is_terminal(again->second.state) &&
      again->second.generation == r.next.generation) {
    jobs.erase(again);
    retry_wait.erase(job_id);
    host_fault_since.erase(job_id);
    port.forget(job_id);
  }
  if (closes)
    close_breaker(job_id, hook);
  if (!journal_waiting.empty()) // this step's records may have made it trusted again
    run_journal_waits();
  // Issue 20: a held teardown that has reported frees the jobs that wait
  // for its nodes (R_SETUP_AFTER_HELD), whatever they waited for first.
  if (e.kind == EventKind::TeardownResult || e.kind == EventKind::LateTeardownResult)
    wake_orphan_waiters();
  stats.set_jobs(jobs.size());
  port.save_state();
}

void CtldCore::Impl::execute(const JobSwitchState &s, const std::vector<Action> &actions,
                             const std::string &refuse_start, std::uint64_t pending_seq) {
  std::uint32_t id = s.job.job_id;
  const std::string nodes = s.job.nodes.value_or("");
  for (const Action &a : actions) {
    stats.action(a.kind);
    if (pending_seq != 0 && is_call(a.kind)) { // not synced yet: the syncer submits it
      defer_call(s, a, pending_seq);
      continue;
    }
    switch (a.kind) {
    case ActionKind::RunJobStart:
      start_setup(s, refuse_start);
      break;
    case ActionKind::RunJobComplete:
    case ActionKind::RunLateJobComplete:
      submit_teardown(s, a, refuse_start.empty());
      break;
    case ActionKind::EndConfiguring:
      port.end_configuring(id);
      break;
    case ActionKind::Requeue: // the port logs what Slurm did
      port.requeue(id, a.reason);
      break;
    case ActionKind::RequeueHeld:
      port.requeue_held(id, a.reason);
      break;
    case ActionKind::Cancel:
      port.cancel(id, a.reason);
      break;
    case ActionKind::HoldNodes:
      port.hold(id, nodes, a.hold == HoldScope::JobAndNodes);
      break;
    case ActionKind::ReleaseNodes:
      port.release(id, nodes, a.hold == HoldScope::JobAndNodes);
      break;
    case ActionKind::DrainNodes: // the JobId first: grepping a job finds what it drained
      port.log(LogLevel::Error, log_line({.job_id = id}, "draining {}: {}",
                                         a.nodes.empty() ? nodes : a.nodes, a.reason));
      port.drain(a.nodes.empty() ? nodes : a.nodes, a.reason);
      break;
    case ActionKind::ScheduleRetry:
      if (a.delay.count() > 0) // a host fault's back-off
        arm_timer(a.delay, {.job_id = id, .generation = s.generation});
      else
        retry_wait.insert(id);
      break;
    case ActionKind::Log:
      if (a.rule.ends_with("_HOST_FAULT")) { // R_START/R_COMPLETE/R_UNDO_HOST_FAULT
        stats.host_fault();
        std::string line = a.reason;
        if (host_fault_line(line))
          port.log(LogLevel::Error, log_line({}, line));
        break;
      }
      port.log(a.error ? LogLevel::Error : LogLevel::Info, log_line({}, a.reason));
      break;
    }
  }
}

CtldCore::CtldCore(CoreOptions opts, SlurmPort &port)
    : impl_(std::make_unique<Impl>(std::move(opts), port)) {}
CtldCore::~CtldCore() = default;

bool CtldCore::job_start(JobArgs job, bool requeue_allowed) {
  if (!job.network || job.network->empty())
    return false; // switch.lua contract: only jobs with a non-empty --network
  std::lock_guard g(impl_->mu);
  if (!impl_->in_control) {
    impl_->port.log(LogLevel::Error,
                    log_line({.job_id = job.job_id, .hook = "job_start"},
                             "not run: this slurmctld does not hold control (standby, or "
                             "stopping); the job is not managed by switch/lua"));
    return false;
  }
  impl_->frozen = false;
  impl_->hints.erase(job.job_id);
  JobSwitchState &s = impl_->jobs[job.job_id];
  if (!is_terminal(s.state))
    impl_->port.log(LogLevel::Error,
                    log_line({.job_id = job.job_id, .hook = "job_start"},
                             "while in state {}: starting afresh", job_state_name(s.state)));
  std::uint64_t gen = s.generation;
  s = JobSwitchState{};
  s.job = std::move(job); // a 10,000-node table is not copied under Slurm's locks
  s.requeue_allowed = requeue_allowed;
  s.block_job_complete = impl_->opts.block_job_complete;
  s.generation = gen; // keeps growing across runs: old results stay stale
  impl_->apply(s.job.job_id, Event{.kind = EventKind::SetupRequested});
  return true;
}

bool CtldCore::settle_setup(std::uint32_t job_id) {
  Impl &im = *impl_;
  std::chrono::milliseconds wait;
  std::uint64_t generation;
  {
    std::lock_guard g(im.mu);
    auto it = im.jobs.find(job_id);
    if (it == im.jobs.end() || it->second.state != JobState::SetupRunning ||
        im.cfg.interactive_wait_ms == 0)
      return false;
    if (im.inline_skip > 0) {
      --im.inline_skip;
      return false;
    }
    wait = std::chrono::milliseconds(im.cfg.interactive_wait_ms);
    generation = it->second.generation;
  }
  auto found = im.await_setup_result(job_id, generation, wait);
  return found && im.apply_setup_inline(*found);
}

void CtldCore::job_complete(std::uint32_t job_id, const JobEnd &end) {
  std::lock_guard g(impl_->mu);
  if (auto it = impl_->jobs.find(job_id); it != impl_->jobs.end() && !is_terminal(it->second.state))
    impl_->note_failed_nodes(it->second, end);
  impl_->apply(job_id, Event{.kind = EventKind::JobEnded});
}

void CtldCore::Impl::note_failed_nodes(JobSwitchState &s, const JobEnd &end) {
  std::string note;
  std::vector<std::string> failed = failed_nodes_of(s.job, end, &note);
  if (!note.empty())
    port.log(LogLevel::Error, log_line({.job_id = s.job.job_id},
                                       "the failed nodes slurmctld gave cannot be read ({}): "
                                       "job_complete is told only those it can",
                                       note));
  s.job.failed_nodes.reset();
  s.job.failed_node_names.clear();
  if (failed.empty())
    return;
  s.job.failed_nodes = compress_hostlist(failed);
  s.job.failed_node_names = NodeNames(std::move(failed));
  port.log(LogLevel::Info,
           log_line({.job_id = s.job.job_id},
                    "ended with failed nodes {} (DOWN, NOT_RESPONDING or FAIL, or removed from "
                    "the job): job_complete is told (job.failed_nodes)",
                    *s.job.failed_nodes));
}

std::optional<JobSwitchState> CtldCore::state_of(std::uint32_t job_id) const {
  std::lock_guard g(impl_->mu);
  auto it = impl_->jobs.find(job_id);
  if (it == impl_->jobs.end())
    return std::nullopt;
  return it->second;
}

void CtldCore::set_config(const CtldConfig &c) {
  std::lock_guard g(impl_->mu);
  impl_->cfg = c;
  if (impl_->journal)
    impl_->journal->set_while_failing(impl_->journal_while_failing());
  if (impl_->publisher)
    impl_->publisher->set_settings(c.status_interval, c.metrics_file);
}

CtldConfig CtldCore::config() const {
  std::lock_guard g(impl_->mu);
  return impl_->cfg;
}

std::size_t CtldCore::drain_events() {
  impl_->port.lock();
  std::size_t n = impl_->run_ready_effects() + impl_->apply_queued();
  impl_->port.unlock();
  return n;
}

void CtldCore::retry_now() {
  impl_->port.lock();
  impl_->fire_retries();
  impl_->port.unlock();
}

std::size_t CtldCore::calls_in_flight() const {
  std::lock_guard g(impl_->mu);
  return impl_->calls.size() + impl_->pending_calls.size();
}

std::size_t CtldCore::decisions_pending() const {
  std::lock_guard g(impl_->mu);
  std::lock_guard q(impl_->qmu);
  return impl_->pending_effects.size() + impl_->ready_effects.size();
}

StatsSnapshot CtldCore::stats() const {
  return impl_->stats.snapshot();
}

void CtldCore::publish_status() {
  std::lock_guard g(impl_->mu);
  if (impl_->publisher)
    impl_->publisher->publish();
}

} // namespace switchlua
