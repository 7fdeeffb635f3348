// SPDX-License-Identifier: GPL-2.0-or-later
//
// CtldCore: the state machine's executor.  Layout:
//
//   slurmctld hook ──job_start/job_complete──▶ apply() ──▶ execute(actions)
//                                                 ▲              │ RunJob*: submit
//   worker thread ──lock──▶ pop event ────────────┘              ▼
//        ▲                                          SupervisorClient (own thread)
//        └──────────── queue ◀── on_outcome ◀──────────────────┘
//
// apply() runs with slurmctld's locks held and the core's recursive mutex;
// re-entry from an action (requeue → job_complete) is allowed.
#include "ctld/core.hpp"
#include "ctld/setup_failures.hpp"

#include "lua/runtime.hpp"

#include <condition_variable>
#include <csignal>
#include <deque>
#include <fmt/format.h>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

namespace switchlua {

namespace {
/// A queued input for the worker.
struct Queued {
  std::uint32_t job_id;
  std::uint64_t generation; // of the call that produced it (0: RetryTick)
  EventKind kind;
  Outcome outcome;
  std::int64_t orphan = 0; // the attempt of an orphan teardown, else 0
};

/// A setup attempt the journal says is not over and whose job record no
/// longer carries it: torn down on its own (R_ORPHAN-*).
struct Orphan {
  JobArgs job;
  std::optional<MsgpackBytes> jobinfo;
  std::uint32_t retries = 0;
  bool in_flight = false;
};

JournalRecord journal_record(JournalKind k, const JobArgs &job) {
  return JournalRecord{
      .kind = k, .attempt = job.attempt, .job_id = job.job_id, .submit_time = job.submit_time};
}

/// Whether a call's outcome is a failure for its hook (switch.lua contract):
/// anything but a return; job_start: rc ~= SUCCESS or a jobinfo that cannot
/// be saved; job_complete: rc < 0.
bool outcome_is_failure(Hook h, const Outcome &o) {
  if (o.kind != OutcomeKind::Returned)
    return true;
  if (h == Hook::JobStart)
    return o.ret.rc != kSuccess || !o.ret.jobinfo_error.empty();
  return o.ret.rc < 0;
}

} // namespace

struct CtldCore::Impl {
  CoreOptions opts;
  SlurmPort &port;
  SupervisorClient client;
  mutable std::recursive_mutex mu; // guards jobs, cfg, retry_wait, calls
  std::map<std::uint32_t, JobSwitchState> jobs;
  std::set<std::uint32_t> retry_wait;
  std::map<CallId, std::pair<std::uint32_t, Hook>> calls;
  CtldConfig cfg;
  /// Set by stop_children() (switch_p_save before a restart or reconfigure):
  /// outcomes of the calls it killed are dropped, not applied, so the saved
  /// state still says what was outstanding and the next slurmctld re-runs it.
  bool frozen = false;
  std::unique_ptr<Journal> journal;
  std::int64_t last_attempt = 0;           // without a journal
  std::map<std::uint32_t, Recovery> hints; // adopt() -> recover_job()
  std::map<std::int64_t, Orphan> orphans;
  std::set<std::int64_t> orphan_wait;
  SetupFailureCounts failures; // switch_max_setup_failures, also in the journal

  std::mutex qmu;
  std::condition_variable qcv;
  std::deque<Queued> queue;
  bool stopping = false;
  std::thread worker;

  CtldStats stats{std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count()};
  std::unique_ptr<StatusPublisher> publisher;

  /// The supervisor's size comes from SlurmctldParameters (switch_max_calls,
  /// switch_max_queue), fixed for the supervisor's life.
  static ClientOptions sized(ClientOptions c, const CtldConfig &cfg) {
    c.max_concurrent = cfg.max_calls;
    c.max_queue = cfg.max_queue;
    c.max_queued = cfg.max_calls + 3 * cfg.max_queue; // the lanes refuse first
    c.child_env.push_back(fmt::format("{}={}", kLuaMemoryEnv, cfg.lua_memory_mb));
    return c;
  }

  Impl(CoreOptions o, SlurmPort &p)
      : opts(std::move(o)), port(p), client(sized(opts.client, opts.config),
                                            [this](CallId id, LogLevel l, std::string_view text) {
                                              on_script_log(id, l, text);
                                            }),
        cfg(opts.config) {
    if (!opts.journal_path.empty())
      journal =
          std::make_unique<Journal>(opts.journal_path, [this](bool error, const std::string &l) {
            port.log(error ? LogLevel::Error : LogLevel::Info, l);
          });
    publisher = std::make_unique<StatusPublisher>(
        stats, opts.status_path, opts.script, opts.journal_path,
        [this](LogLevel l, const std::string &line) { port.log(l, line); });
    publisher->set_interval(cfg.status_interval);
    if (journal)
      failures = journal->table().failures;
    worker = std::thread([this] { run_worker(); });
  }

  ~Impl() {
    {
      std::lock_guard g(qmu);
      stopping = true;
    }
    qcv.notify_all();
    worker.join();
    client.shutdown();
    publisher.reset(); // a last write, with the calls shutdown() abandoned
  }

  void on_script_log(CallId id, LogLevel l, std::string_view text) {
    std::uint32_t job_id = 0;
    Hook h = Hook::JobStart;
    {
      std::lock_guard g(mu);
      auto it = calls.find(id);
      if (it != calls.end())
        std::tie(job_id, h) = it->second;
    }
    port.log(l, fmt::format("switch/lua: JobId={} {}: {}", job_id, hook_name(h), text));
  }

  void enqueue(Queued q) {
    {
      std::lock_guard g(qmu);
      queue.push_back(std::move(q));
    }
    qcv.notify_all();
  }

  void run_worker() {
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

  /// Applies every queued event; slurmctld's locks held.
  std::size_t apply_queued() {
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
        port.log(LogLevel::Verbose,
                 fmt::format("switch/lua: JobId={} {} not applied: slurmctld is stopping; the "
                             "call runs again after the restart",
                             q.job_id, event_kind_name(q.kind)));
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
        port.log(LogLevel::Verbose,
                 fmt::format("switch/lua: JobId={} stale {} ignored ({})", q.job_id,
                             event_kind_name(q.kind), describe(q.outcome)));
        continue;
      }
      apply(q.job_id, Event{.kind = q.kind, .outcome = &q.outcome});
    }
  }

  void fire_retries() {
    std::lock_guard g(mu);
    std::set<std::uint32_t> due;
    due.swap(retry_wait);
    for (std::uint32_t id : due)
      apply(id, Event{.kind = EventKind::RetryTick});
    std::set<std::int64_t> odue;
    odue.swap(orphan_wait);
    for (std::int64_t a : odue)
      run_orphan(a);
  }

  std::int64_t next_attempt() {
    if (journal)
      return journal->next_attempt();
    std::int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
    last_attempt = std::max(now, last_attempt + 1);
    return last_attempt;
  }

  void journal_append(const std::vector<JournalRecord> &recs) {
    if (journal)
      journal->append(recs);
  }

  /// The journal records of one transition, written (fsync'ed) before its
  /// actions run: the durable record comes before the effect.
  void journal_step(const JobSwitchState &old, const Event &e, const StepResult &r) {
    if (!journal)
      return;
    const JobSwitchState &n = r.next;
    std::vector<JournalRecord> recs;
    bool starts = false;
    for (const Action &a : r.actions)
      starts = starts || a.kind == ActionKind::RunJobStart;
    if (starts && old.job.attempt != 0 && old.job.attempt != n.job.attempt &&
        !is_terminal(old.state) && old.state != JobState::SetupFailed)
      recs.push_back(journal_record(JournalKind::Forgotten, old.job)); // R_UNDO_OK
    if (n.job.attempt == 0) { // a state saved by an older plugin: no key to journal
      journal_append(recs);
      return;
    }
    if (starts) {
      JournalRecord st = journal_record(JournalKind::SetupStarted, n.job);
      st.job = n.job;
      recs.push_back(std::move(st));
    }
    if (e.kind == EventKind::SetupResult && n.jobinfo && !old.jobinfo) {
      JournalRecord acc = journal_record(JournalKind::SetupAccepted, n.job);
      acc.jobinfo = n.jobinfo;
      recs.push_back(std::move(acc));
    }
    for (const Action &a : r.actions) {
      if (a.kind == ActionKind::EndConfiguring &&
          (n.state == JobState::Running || n.state == JobState::Declined))
        recs.push_back(journal_record(JournalKind::LaunchReleased, n.job));
      if (a.kind == ActionKind::RunJobComplete) {
        JournalRecord td = journal_record(JournalKind::TeardownStarted, n.job);
        td.jobinfo = a.jobinfo;
        recs.push_back(std::move(td));
      }
    }
    bool over = is_terminal(n.state) || n.state == JobState::SetupFailed;
    bool was_over = is_terminal(old.state) || old.state == JobState::SetupFailed;
    if (over && (!was_over || e.kind == EventKind::SetupRequested))
      recs.push_back(journal_record(JournalKind::Forgotten, n.job));
    journal_append(recs);
  }

  /// Starts (again) the teardown of an orphaned attempt.
  void run_orphan(std::int64_t attempt) {
    auto it = orphans.find(attempt);
    if (it == orphans.end() || it->second.in_flight)
      return;
    Orphan &o = it->second;
    JournalRecord td = journal_record(JournalKind::TeardownStarted, o.job);
    td.jobinfo = o.jobinfo;
    journal_append({td});
    o.in_flight = true;
    std::uint32_t job_id = o.job.job_id;
    port.log(LogLevel::Info,
             fmt::format("switch/lua: JobId={} job_complete started for attempt {} whose job "
                         "record is gone, with {} (switch_timeout={} s)",
                         job_id, attempt, o.jobinfo ? "its jobinfo" : "nil jobinfo",
                         cfg.switch_timeout.count()));
    CallRequest req{.script = opts.script,
                    .hook = Hook::JobComplete,
                    .job = o.job,
                    .jobinfo = o.jobinfo,
                    .timeout = cfg.switch_timeout};
    auto id = client.submit(req, [this, job_id, attempt](CallId cid, const Outcome &out) {
      {
        std::lock_guard g(mu);
        calls.erase(cid);
        stats.call_done(cid, out);
      }
      port.log(LogLevel::Verbose, fmt::format("switch/lua: JobId={} job_complete (attempt {}) {}",
                                              job_id, attempt, describe(out)));
      enqueue({job_id, 0, EventKind::TeardownResult, out, attempt});
    });
    if (!id) {
      Outcome out{.kind = OutcomeKind::SpawnFailed, .message = id.error().message};
      stats.call_refused(Hook::JobComplete, out);
      enqueue({job_id, 0, EventKind::TeardownResult, out, attempt});
      return;
    }
    calls[*id] = {job_id, Hook::JobComplete};
    stats.call_submitted(*id, Hook::JobComplete, lane_of(Hook::JobComplete, o.job.batch));
  }

  /// The result of an orphan teardown (R_ORPHAN_OK / -RETRY / -FAIL).
  void apply_orphan(std::int64_t attempt, const Outcome &out) {
    auto it = orphans.find(attempt);
    if (it == orphans.end())
      return;
    Orphan &o = it->second;
    o.in_flight = false;
    const std::uint32_t id = o.job.job_id;
    const std::string what = outcome_text(out);
    const bool ok = out.kind == OutcomeKind::Returned && out.ret.rc >= 0 && out.ret.rc != kEagain;
    const bool again = (out.kind == OutcomeKind::Returned && out.ret.rc == kEagain) ||
                       out.kind == OutcomeKind::Signaled || out.kind == OutcomeKind::Abandoned;
    if (ok) {
      port.log(LogLevel::Info,
               fmt::format("switch/lua: JobId={} job_complete for attempt {} (job record gone) "
                           "{}: torn down (R_ORPHAN_OK)",
                           id, attempt, what));
    } else if (again && o.retries < cfg.switch_retries) {
      o.retries++;
      orphan_wait.insert(attempt);
      stats.action(ActionKind::ScheduleRetry);
      port.log(LogLevel::Info,
               fmt::format("switch/lua: JobId={} job_complete for attempt {} (job record gone) "
                           "{}: running it again at the next periodic check (retry {} of {}) "
                           "(R_ORPHAN_RETRY)",
                           id, attempt, what, o.retries, cfg.switch_retries));
      return;
    } else {
      std::string reason = fmt::format("{}: JobId={} switch/lua job_complete (job record gone) {}",
                                       kReasonTeardownFailed, id, what);
      const std::string nodes = o.job.nodes.value_or("");
      if (cfg.drain_on_failure && !nodes.empty()) {
        port.log(
            LogLevel::Error,
            fmt::format("switch/lua: JobId={} draining {}: {} (R_ORPHAN_FAIL)", id, nodes, reason));
        port.drain(nodes, reason);
        stats.action(ActionKind::DrainNodes);
      } else {
        port.log(
            LogLevel::Error,
            fmt::format("switch/lua: JobId={} not draining {}: {} (R_ORPHAN_FAIL)", id,
                        nodes.empty() ? "(no nodes)" : nodes,
                        cfg.drain_on_failure ? reason : reason + "; switch_drain_on_failure=no"));
      }
    }
    journal_append({journal_record(JournalKind::Forgotten, o.job)});
    orphans.erase(it);
  }

  /// One event for one job; locks held.
  void apply(std::uint32_t job_id, const Event &e) {
    std::lock_guard g(mu);
    auto it = jobs.find(job_id);
    if (it == jobs.end())
      return;
    it->second.setup_failures = prior_setup_failures(failures, it->second.job);
    StepResult r = step(it->second, e, cfg);
    for (const Action &a : r.actions)
      if (a.kind == ActionKind::RunJobStart)
        r.next.job.attempt = next_attempt(); // a new setup attempt
    if (e.kind == EventKind::SetupResult && e.outcome && r.next.jobinfo && !it->second.jobinfo)
      r.next.script_hash = e.outcome->script_hash; // the stepinfo carries it
    if (e.kind == EventKind::TeardownResult && e.outcome &&
        e.outcome->kind == OutcomeKind::Returned)
      for (Action &a : r.actions) // the rule's line is the outcome line of job_complete
        if (a.kind == ActionKind::Log)
          a.reason += fmt::format(" ({})", script_ref(e.outcome->script_hash));
    journal_step(it->second, e, r);
    if (auto rec = count_setup_failures(failures, cfg, e, r))
      journal_append({*rec});
    it->second = r.next;
    port.log(LogLevel::Debug,
             fmt::format("switch/lua: JobId={} {} -> {} ({})", job_id, event_kind_name(e.kind),
                         job_state_name(r.next.state), r.rule));
    execute(r.next, r.actions);
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

  /// "script /etc/slurm/switch.lua content fnv1a64:..." (switch.lua(5),
  /// PROVENANCE); without a hash when no version of the script had passed.
  std::string script_ref(const std::string &hash) const {
    if (hash.empty())
      return fmt::format("script {}", opts.script);
    return fmt::format("script {} content {}", opts.script, hash);
  }

  void submit(const JobSwitchState &s, Hook h, std::optional<MsgpackBytes> jobinfo,
              EventKind result_kind) {
    CallRequest req{.script = opts.script,
                    .hook = h,
                    .job = s.job,
                    .jobinfo = std::move(jobinfo),
                    .timeout = cfg.switch_timeout,
                    .kill_grace = cfg.switch_kill_grace};
    std::uint32_t job_id = s.job.job_id;
    std::uint64_t gen = s.generation;
    const std::string late =
        result_kind == EventKind::LateTeardownResult ? " for a late setup result" : "";
    const auto timeout = cfg.switch_timeout.count();
    // "started" when the call's process gets the request, not when queued.
    auto on_started = [this, job_id, h, late, timeout](CallId cid,
                                                       std::chrono::milliseconds queued) {
      {
        std::lock_guard g(mu); // after call_submitted()
        stats.call_started(cid, queued);
      }
      port.log(LogLevel::Info,
               fmt::format("switch/lua: JobId={} {} started{} (queued {} ms, switch_timeout={} s)",
                           job_id, hook_name(h), late, queued.count(), timeout));
    };
    auto id = client.submit(
        req,
        [this, job_id, gen, result_kind, h](CallId cid, const Outcome &o) {
          bool stopping_now;
          {
            std::lock_guard g(mu);
            calls.erase(cid);
            stats.call_done(cid, o);
            stopping_now = frozen;
          }
          if (stopping_now && o.kind == OutcomeKind::Abandoned)
            port.log(LogLevel::Verbose,
                     fmt::format("switch/lua: JobId={} {} stopped with the supervisor: slurmctld "
                                 "is stopping or reconfiguring; the next slurmctld recovers the "
                                 "call",
                                 job_id, hook_name(h)));
          else if (h != Hook::JobComplete || o.kind != OutcomeKind::Returned) // the rule says it
            log_outcome(job_id, h, o);
          enqueue({job_id, gen, result_kind, o});
        },
        on_started);
    if (!id) {
      Outcome o{.kind = OutcomeKind::SpawnFailed, .message = id.error().message};
      stats.call_refused(h, o);
      enqueue({job_id, gen, result_kind, o});
      return;
    }
    calls[*id] = {job_id, h};
    stats.call_submitted(*id, h, lane_of(h, s.job.batch));
  }

  /// The outcome line of a call (switch_lua.conf(5), FOLLOWING A JOB IN THE
  /// LOGS) at info level for a return the contract accepts, else at error
  /// level, followed by the Lua stack traceback of an error, one line each at
  /// the same level.  The state machine's own line then says what it means.
  void log_outcome(std::uint32_t job_id, Hook h, const Outcome &o) {
    const LogLevel level = outcome_is_failure(h, o) ? LogLevel::Error : LogLevel::Info;
    port.log(level, fmt::format("switch/lua: JobId={} {} {} (queued {} ms, ran {} ms; {})", job_id,
                                hook_name(h), describe(o), o.queued.count(), o.elapsed.count(),
                                script_ref(o.script_hash)));
    if (o.kind != OutcomeKind::LuaError && o.kind != OutcomeKind::LoadFailed)
      return;
    std::string_view rest(o.message);
    const auto nl = rest.find('\n');
    if (nl == std::string_view::npos)
      return;
    rest.remove_prefix(nl + 1);
    while (!rest.empty()) {
      const auto end = rest.find('\n');
      std::string_view line = rest.substr(0, end);
      if (!line.empty())
        port.log(level,
                 fmt::format("switch/lua: JobId={} {} traceback: {}", job_id, hook_name(h), line));
      rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
    }
  }

  void execute(const JobSwitchState &s, const std::vector<Action> &actions) {
    std::uint32_t id = s.job.job_id;
    const std::string nodes = s.job.nodes.value_or("");
    for (const Action &a : actions) {
      stats.action(a.kind);
      switch (a.kind) {
      case ActionKind::RunJobStart:
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
        port.hold(id, nodes, a.reason == "job+nodes");
        break;
      case ActionKind::ReleaseNodes:
        port.release(id, nodes, a.reason == "job+nodes");
        break;
      case ActionKind::DrainNodes:
        // The JobId first, so grepping a job finds which nodes it drained.
        port.log(LogLevel::Error,
                 fmt::format("switch/lua: JobId={} draining {}: {}", id, nodes, a.reason));
        port.drain(nodes, a.reason);
        break;
      case ActionKind::ScheduleRetry:
        retry_wait.insert(id);
        break;
      case ActionKind::Log:
        port.log(a.error ? LogLevel::Error : LogLevel::Info, "switch/lua: " + a.reason);
        break;
      }
    }
  }
};

CtldCore::CtldCore(CoreOptions opts, SlurmPort &port)
    : impl_(std::make_unique<Impl>(std::move(opts), port)) {}
CtldCore::~CtldCore() = default;

bool CtldCore::job_start(const JobArgs &job, bool requeue_allowed) {
  if (!job.network || job.network->empty())
    return false; // switch.lua contract: only jobs with a non-empty --network
  std::lock_guard g(impl_->mu);
  impl_->frozen = false;
  impl_->hints.erase(job.job_id);
  JobSwitchState &s = impl_->jobs[job.job_id];
  if (!is_terminal(s.state))
    impl_->port.log(LogLevel::Error,
                    fmt::format("switch/lua: JobId={} job_start while in state {}: starting afresh",
                                job.job_id, job_state_name(s.state)));
  std::uint64_t gen = s.generation;
  s = JobSwitchState{};
  s.job = job;
  s.requeue_allowed = requeue_allowed;
  s.block_job_complete = impl_->opts.block_job_complete;
  s.generation = gen; // keeps growing across runs: old results stay stale
  impl_->apply(job.job_id, Event{.kind = EventKind::SetupRequested});
  return true;
}

void CtldCore::job_complete(std::uint32_t job_id) {
  impl_->apply(job_id, Event{.kind = EventKind::JobEnded});
}

Recovery CtldCore::recover_job(std::uint32_t job_id, bool configuring) {
  std::lock_guard g(impl_->mu);
  impl_->frozen = false; // the restore sweep after a failed reconfigure
  Recovery hint = Recovery::Nothing;
  if (auto h = impl_->hints.find(job_id); h != impl_->hints.end()) {
    hint = configuring ? h->second : Recovery::Nothing;
    impl_->hints.erase(h);
  }
  auto it = impl_->jobs.find(job_id);
  if (it == impl_->jobs.end() || !it->second.recovered)
    return Recovery::Nothing;
  JobSwitchState &s = it->second;
  if (is_terminal(s.state)) { // the journal says the attempt is over
    impl_->jobs.erase(it);
    impl_->port.forget(job_id);
    return hint;
  }
  if (s.state == JobState::SetupRunning && !configuring) {
    // The setup was outstanding but Slurm no longer waits for it (the job
    // ended meanwhile): treat as a job that ended during its setup.
    s.state = JobState::SetupRunningEnded;
  }
  if (s.state == JobState::SetupUndoing && !configuring)
    s.state = JobState::SetupUndoingEnded;
  bool delay = s.state == JobState::SetupRunning || s.state == JobState::SetupUndoing;
  if (hint == Recovery::LaunchNow) // written before the glue launches it
    impl_->journal_append({journal_record(JournalKind::LaunchReleased, s.job)});
  impl_->apply(job_id, Event{.kind = EventKind::Recover});
  return delay ? Recovery::DelayLaunch : hint;
}

void CtldCore::adopt(JobSwitchState s) {
  std::lock_guard g(impl_->mu);
  s.recovered = true;
  std::uint32_t id = s.job.job_id;
  Journal *j = impl_->journal.get();
  const std::int64_t attempt = s.job.attempt;
  if (j && attempt != 0) {
    const JournalTable &t = j->table();
    auto e = t.live.find(attempt);
    if (t.forgotten.count(attempt) && !is_terminal(s.state)) {
      impl_->port.log(LogLevel::Info,
                      fmt::format("switch/lua: JobId={} recovery: the journal says attempt {} "
                                  "needs nothing more (Slurm's saved state {} is older): "
                                  "forgotten; not launched again",
                                  id, attempt, job_state_name(s.state)));
      s.state = JobState::Done;
      s.jobinfo.reset();
      impl_->hints[id] = Recovery::ClearConfiguring;
    } else if (e != t.live.end() && e->second.job.job_id == id &&
               e->second.job.submit_time == s.job.submit_time) {
      const JournalEntry &je = e->second;
      bool setup_state = s.state == JobState::SetupRunning ||
                         s.state == JobState::SetupRunningEnded ||
                         s.state == JobState::SetupAbandoned;
      if (je.teardown_started && setup_state && je.jobinfo) {
        impl_->port.log(LogLevel::Info,
                        fmt::format("switch/lua: JobId={} recovery: the journal says the "
                                    "teardown of attempt {} had started with its jobinfo (Slurm's "
                                    "saved state {} is older): job_start is not run again",
                                    id, attempt, job_state_name(s.state)));
        s.state = JobState::TeardownRunning;
        s.jobinfo = je.jobinfo;
        impl_->hints[id] = Recovery::ClearConfiguring;
      } else if (je.accepted && s.state == JobState::SetupRunning) {
        impl_->port.log(
            LogLevel::Info,
            fmt::format("switch/lua: JobId={} recovery: the journal says job_start of attempt {} "
                        "returned SUCCESS with a jobinfo before the crash (Slurm's saved state "
                        "SetupRunning is older): restored with it, job_start is not run again; {}",
                        id, attempt,
                        je.launch_released ? "the launch was released before the crash: not "
                                             "launched again"
                                           : "the launch was not released: launching it now"));
        s.state = JobState::Running;
        s.jobinfo = je.jobinfo;
        impl_->hints[id] = je.launch_released ? Recovery::ClearConfiguring : Recovery::LaunchNow;
      }
    }
  }
  impl_->jobs[id] = std::move(s);
}

void CtldCore::reconcile_journal() {
  std::lock_guard g(impl_->mu);
  impl_->frozen = false;
  if (!impl_->journal)
    return;
  std::set<std::int64_t> carried;
  for (const auto &[id, s] : impl_->jobs)
    if (!is_terminal(s.state))
      carried.insert(s.job.attempt);
  std::vector<std::int64_t> start;
  for (const auto &[attempt, e] : impl_->journal->table().live) {
    if (carried.count(attempt))
      continue;
    auto [it, fresh] = impl_->orphans.try_emplace(attempt);
    if (fresh) {
      it->second.job = e.job;
      // The jobinfo its job_start returned, or that its teardown was given;
      // nil when job_start never reported (an abandoned attempt).
      it->second.jobinfo = (e.accepted || e.teardown_started) ? e.jobinfo : std::nullopt;
      impl_->port.log(
          LogLevel::Info,
          fmt::format("switch/lua: JobId={} recovery: the journal has attempt {} (submitted at "
                      "{}) {}, and no job record carries it (the record was lost, or its job id "
                      "now belongs to a newer job): tearing it down with {} (R_ORPHAN_TEARDOWN)",
                      e.job.job_id, attempt, e.job.submit_time,
                      e.teardown_started ? "with its teardown started"
                      : e.accepted       ? "set up (job_start returned a jobinfo)"
                                         : "with job_start started but not reported",
                      it->second.jobinfo ? "its jobinfo" : "nil jobinfo"));
    }
    if (!it->second.in_flight)
      start.push_back(attempt);
  }
  for (std::int64_t a : start)
    impl_->run_orphan(a);
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
  impl_->publisher->set_interval(c.status_interval);
}

CtldConfig CtldCore::config() const {
  std::lock_guard g(impl_->mu);
  return impl_->cfg;
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
    impl_->orphan_wait.clear();
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
  impl_->publisher->publish();
}

} // namespace switchlua
