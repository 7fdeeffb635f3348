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
// This file: apply() and execute(), and CtldCore's public calls but the
// recovery and control ones.  The worker thread, its queue and timers:
// core_worker.cpp; hook calls: core_calls.cpp; the journal's writer and
// its syncer: core_journal.cpp; taking and giving up control:
// core_control.cpp; the recovery: core_recovery.cpp; the fabric breaker:
// core_breaker.cpp; the shared insides: core_impl.hpp.
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

void CtldCore::Impl::not_applied(std::uint32_t job_id, const Event &e) {
  port.log(LogLevel::Error,
           log_line({.job_id = job_id}, "{} not applied: this slurmctld does not hold control",
                    event_kind_name(e.kind)));
}

void CtldCore::Impl::apply(std::uint32_t job_id, const Event &e, bool defer_effects) {
  std::lock_guard g(mu);
  if (!in_control)
    return not_applied(job_id, e);
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
  const bool closes = breaker_step(job_id, e, it->second, r);
  annotate(e, it->second, r);
  const bool calls_only = deferrable(r.actions);
  const JournalStep js = journal_step(it->second, e, r, journal && (calls_only || defer_effects));
  // Issue 40: stale before its records or while they synced here: no effect.
  if (!in_control || (js.synced_here && !fence_ok()))
    return;
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
    close_breaker(job_id, event_hook(e));
  if (!journal_waiting.empty()) // this step's records may have made it trusted again
    run_journal_waits();
  // Issue 20: a held teardown that has reported frees the jobs that wait
  // for its nodes (R_SETUP_AFTER_HELD), whatever they waited for first.
  if (e.kind == EventKind::TeardownResult || e.kind == EventKind::LateTeardownResult)
    wake_orphan_waiters();
  stats.set_jobs(jobs.size());
  if (pools.publish_woken(stats))
    port.schedule(); // IDs came free for jobs the gate keeps PENDING
  port.save_state();
}

void CtldCore::Impl::annotate(const Event &e, const JobSwitchState &old, StepResult &r) {
  for (const Action &a : r.actions)
    if (a.kind == ActionKind::RunJobStart)
      r.next.job.attempt = next_attempt(); // a new setup attempt
  // Issue 38: the new attempt's pool IDs, in its "setup started" record.
  pools.step(old, e, r,
             std::chrono::duration_cast<std::chrono::seconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count());
  if (e.kind == EventKind::SetupResult && e.outcome && r.next.jobinfo && !old.jobinfo)
    r.next.script_hash = e.outcome->script_hash; // the stepinfo carries it
  if (e.kind == EventKind::TeardownResult && e.outcome && e.outcome->kind == OutcomeKind::Returned)
    for (Action &a : r.actions) // the rule's line is the outcome line of job_complete
      if (a.kind == ActionKind::Log)
        a.reason += fmt::format(" ({})", script_ref(e.outcome->script_hash));
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
  if (!impl_->in_control && !impl_->waiting.empty()) {
    // Issue 40, WAITING: the job waits CONFIGURING; its setup starts once
    // control is taken (reconcile_journal()).
    impl_->port.log(LogLevel::Info,
                    log_line({.job_id = job.job_id, .hook = "job_start"},
                             "waits: switch/lua is WAITING for control ({})", impl_->waiting));
    const std::uint32_t id = job.job_id;
    impl_->parked.insert_or_assign(id, std::make_pair(std::move(job), requeue_allowed));
    return true;
  }
  if (!impl_->in_control && impl_->stale) {
    // Issue 40: a stale controller that Slurm still lets schedule (its own
    // split brain after a stopped primary runs again) never launches a
    // managed job without its setup: the job waits CONFIGURING here, where
    // nothing sets it up, while the controller in control runs the job.
    impl_->port.log(LogLevel::Error,
                    log_line({.job_id = job.job_id, .hook = "job_start"},
                             "not run: this slurmctld is no longer in control (another "
                             "slurmctld took control since); the job waits CONFIGURING here "
                             "and is never launched from this slurmctld without its setup "
                             "(switch.lua(5), HIGH AVAILABILITY)"));
    return true;
  }
  if (!impl_->in_control) {
    impl_->port.log(LogLevel::Error,
                    log_line({.job_id = job.job_id, .hook = "job_start"},
                             "not run: this slurmctld does not hold control (standby, or "
                             "stopping); the job is not managed by switch/lua"));
    return false;
  }
  impl_->frozen = false;
  impl_->hints.erase(job.job_id);
  impl_->pools.admitted(job.job_id);
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
  return found && im.apply_setup_inline(*found, wait);
}

void CtldCore::job_complete(std::uint32_t job_id, const JobEnd &end) {
  std::lock_guard g(impl_->mu);
  if (impl_->parked.erase(job_id)) { // its setup never started: nothing to tear down
    impl_->port.log(LogLevel::Info,
                    log_line({.job_id = job_id, .hook = "job_complete"},
                             "not needed: the job ended while its setup waited for control"));
    return;
  }
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
  const bool pools_changed = impl_->cfg.pools != c.pools;
  impl_->cfg = c;
  if (pools_changed && impl_->in_control) {
    impl_->rebuild_pools(false);
    impl_->pools.publish(impl_->stats);
  }
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
  impl_->lock_port();
  std::size_t n = impl_->run_ready_effects() + impl_->apply_queued();
  impl_->port.unlock();
  return n;
}

void CtldCore::retry_now() {
  impl_->lock_port();
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
  return impl_->pending_effects.size() + impl_->ready_effects.size() +
         impl_->effects_running.load();
}

StatsSnapshot CtldCore::stats() const {
  return impl_->stats.snapshot();
}

void CtldCore::publish_status() {
  std::shared_ptr<StatusPublisher> p;
  {
    std::lock_guard g(impl_->mu);
    p = impl_->publisher;
  }
  if (p) // the write, outside the core's lock (issue 35)
    p->publish();
}

} // namespace switchlua
