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
// but the recovery ones.  Hook calls: core_calls.cpp; the journal and the
// recovery: core_recovery.cpp; the shared insides: core_impl.hpp.
#include "ctld/core_impl.hpp"

#include "common/log_stamp.hpp"
#include "lua/runtime.hpp"

#include <csignal>
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
}

Expected<void> CtldCore::Impl::take_control(bool keep_jobs) {
  if (in_control)
    return {};
  if (!opts.journal_path.empty()) {
    // One writer: the journal (and the status file beside it) belongs to
    // the controller holding its lock; the one that had control releases
    // it in its switch_p_save.
    auto lock = JournalLock::acquire(opts.journal_path, opts.lock_wait);
    if (!lock) {
      port.log(LogLevel::Error, lock.error().message);
      return Unexpected<Error>{lock.error()};
    }
    journal_lock = std::move(*lock);
    // Read now, as it is: what another controller wrote since this process
    // started (a takeover), or since it gave up control, is in it.
    journal = std::make_unique<Journal>(
        opts.journal_path,
        [this](bool error, const std::string &l) {
          port.log(error ? LogLevel::Error : LogLevel::Info, l);
        },
        opts.journal_io);
  }
  {
    std::lock_guard q(qmu);
    queue.clear(); // outcomes of calls stop_children() killed
  }
  retry_wait.clear();
  orphans.clear();
  hints.clear();
  if (!keep_jobs) {
    for (const auto &[id, st] : jobs)
      port.forget(id);
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
  publisher = std::make_unique<StatusPublisher>(
      stats, opts.status_path, opts.script, opts.journal_path,
      [this](LogLevel l, const std::string &line) { port.log(l, line); });
  publisher->set_interval(cfg.status_interval);
  stats.set_journal_failure(journal ? journal->failure() : std::string());
  stats.set_jobs(jobs.size());
  in_control = true;
  frozen = false;
  reconciled = opts.take_control_at_start;
  return {};
}

std::string CtldCore::Impl::journal_refusal() const {
  if (!journal || journal->failure().empty())
    return {};
  return fmt::format("journal {}: {}: no setup starts without its record", journal->path(),
                     journal->failure());
}

CtldCore::Impl::~Impl() {
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
  auto next_tick = std::chrono::steady_clock::now() + opts.retry_interval;
  std::unique_lock lk(qmu);
  while (!stopping) {
    qcv.wait_until(lk, next_tick, [&] { return stopping || !queue.empty(); });
    if (stopping)
      break;
    bool tick = std::chrono::steady_clock::now() >= next_tick;
    if (queue.empty() && !tick)
      continue;
    lk.unlock();
    port.lock();
    apply_queued();
    if (tick)
      fire_retries();
    port.unlock();
    if (tick)
      next_tick = std::chrono::steady_clock::now() + opts.retry_interval;
    lk.lock();
  }
}

std::size_t CtldCore::Impl::apply_queued() {
  std::size_t n = 0;
  for (;;) {
    Queued q;
    {
      std::lock_guard g(qmu);
      if (queue.empty())
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
    apply(q.job_id, Event{.kind = q.kind, .outcome = &q.outcome});
  }
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
  check_waiting_orphans();
  std::set<std::uint32_t> due;
  due.swap(retry_wait);
  for (std::uint32_t id : due)
    apply(id, Event{.kind = EventKind::RetryTick});
}

std::int64_t CtldCore::Impl::next_attempt() {
  if (journal)
    return journal->next_attempt();
  std::int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  last_attempt = std::max(now, last_attempt + 1);
  return last_attempt;
}

bool CtldCore::Impl::journal_append(const std::vector<JournalRecord> &recs) {
  if (!journal)
    return true;
  const bool ok = journal->append(recs);
  stats.set_journal_failure(journal->failure());
  return ok;
}

void CtldCore::Impl::apply(std::uint32_t job_id, const Event &e) {
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
  StepResult r = step(it->second, e, cfg);
  for (const Action &a : r.actions)
    if (a.kind == ActionKind::RunJobStart)
      r.next.job.attempt = next_attempt(); // a new setup attempt
  if (e.kind == EventKind::SetupResult && e.outcome && r.next.jobinfo && !it->second.jobinfo)
    r.next.script_hash = e.outcome->script_hash; // the stepinfo carries it
  if (e.kind == EventKind::TeardownResult && e.outcome && e.outcome->kind == OutcomeKind::Returned)
    for (Action &a : r.actions) // the rule's line is the outcome line of job_complete
      if (a.kind == ActionKind::Log)
        a.reason += fmt::format(" ({})", script_ref(e.outcome->script_hash));
  const bool durable = journal_step(it->second, e, r);
  if (auto rec = count_setup_failures(failures, cfg, e, r))
    journal_append({*rec});
  it->second = r.next;
  port.log(LogLevel::Debug, log_line({.job_id = job_id}, "{} -> {} ({})", event_kind_name(e.kind),
                                     job_state_name(r.next.state), r.rule));
  // Issue 24: a setup whose "setup started" record is not on disk does not
  // run (after a crash nobody would know to tear it down); it fails at once
  // naming the journal, and its job is requeued (or cancelled) as for any
  // failed setup.  Teardowns run without their record: they are safe to
  // repeat.
  std::string refuse;
  if (!durable)
    refuse = journal_refusal();
  execute(r.next, r.actions, refuse);
  auto again = jobs.find(job_id); // execute() may have re-entered
  if (again != jobs.end() && is_terminal(again->second.state) &&
      again->second.generation == r.next.generation) {
    jobs.erase(again);
    retry_wait.erase(job_id);
    port.forget(job_id);
  }
  stats.set_jobs(jobs.size());
  port.save_state();
}

void CtldCore::Impl::execute(const JobSwitchState &s, const std::vector<Action> &actions,
                             const std::string &refuse_start) {
  std::uint32_t id = s.job.job_id;
  const std::string nodes = s.job.nodes.value_or("");
  for (const Action &a : actions) {
    stats.action(a.kind);
    switch (a.kind) {
    case ActionKind::RunJobStart:
      if (!refuse_start.empty()) {
        // The failure's own line (R_START_FAIL) says it: "JobId=N job_start
        // could not be started: journal ...".
        Outcome o{.kind = OutcomeKind::SpawnFailed, .message = refuse_start};
        stats.call_refused(Hook::JobStart, o);
        enqueue({id, s.generation, EventKind::SetupResult, o});
        break;
      }
      submit(s, Hook::JobStart, std::nullopt, EventKind::SetupResult);
      break;
    case ActionKind::RunJobComplete:
      submit(s, Hook::JobComplete, a.jobinfo, EventKind::TeardownResult);
      break;
    case ActionKind::RunLateJobComplete:
      submit(s, Hook::JobComplete, a.jobinfo, EventKind::LateTeardownResult);
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
    case ActionKind::DrainNodes:
      // The JobId first, so grepping a job finds which nodes it drained.
      port.log(LogLevel::Error, log_line({.job_id = id}, "draining {}: {}", nodes, a.reason));
      port.drain(nodes, a.reason);
      break;
    case ActionKind::ScheduleRetry:
      retry_wait.insert(id);
      break;
    case ActionKind::Log:
      port.log(a.error ? LogLevel::Error : LogLevel::Info, log_line({}, a.reason));
      break;
    }
  }
}

CtldCore::CtldCore(CoreOptions opts, SlurmPort &port)
    : impl_(std::make_unique<Impl>(std::move(opts), port)) {}
CtldCore::~CtldCore() = default;

bool CtldCore::job_start(const JobArgs &job, bool requeue_allowed) {
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
  s.job = job;
  s.requeue_allowed = requeue_allowed;
  s.block_job_complete = impl_->opts.block_job_complete;
  s.generation = gen; // keeps growing across runs: old results stay stale
  impl_->apply(job.job_id, Event{.kind = EventKind::SetupRequested});
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

void CtldCore::job_complete(std::uint32_t job_id) {
  impl_->apply(job_id, Event{.kind = EventKind::JobEnded});
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
  if (impl_->publisher)
    impl_->publisher->set_interval(c.status_interval);
}

CtldConfig CtldCore::config() const {
  std::lock_guard g(impl_->mu);
  return impl_->cfg;
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
    for (auto &[a, o] : impl_->orphans)
      o.in_flight = false; // killed below; reconcile_journal() runs them again
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
  if (!in_control())
    return;
  stop_children();
  std::lock_guard g(impl_->mu);
  impl_->in_control = false;
  impl_->publisher.reset(); // its last write, while the lock is still ours
  impl_->journal.reset();   // every record is on disk already (fdatasync'ed)
  impl_->journal_lock.reset();
  impl_->port.log(LogLevel::Info,
                  log_line({},
                           "control given up: journal closed and its lock released; {} job "
                           "state(s) kept for a resumption after a failed reconfigure",
                           impl_->jobs.size()));
}

bool CtldCore::in_control() const {
  std::lock_guard g(impl_->mu);
  return impl_->in_control;
}

std::size_t CtldCore::drain_events() {
  impl_->port.lock();
  std::size_t n = impl_->apply_queued();
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
  return impl_->calls.size();
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
