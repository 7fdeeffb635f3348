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

Expected<bool> ask_boolean_hook(SupervisorClient &client, const std::string &script, Hook h,
                                std::chrono::seconds timeout) {
  // Shared with the completion callback, which may run after a timed-out wait.
  struct Answer {
    std::mutex m;
    std::condition_variable cv;
    std::optional<Outcome> got;
  };
  auto answer = std::make_shared<Answer>();
  CallRequest req{
      .script = script, .hook = h, .job = {}, .jobinfo = std::nullopt, .timeout = timeout};
  auto id = client.submit(req, [answer](CallId, const Outcome &o) {
    std::lock_guard g(answer->m);
    answer->got = o;
    answer->cv.notify_all();
  });
  if (!id)
    return fail(fmt::format("{}: {}: {}", script, hook_name(h), id.error().message));
  std::unique_lock lk(answer->m);
  if (!answer->cv.wait_for(lk, timeout + std::chrono::seconds(5),
                           [&] { return answer->got.has_value(); }))
    return fail(fmt::format("{}: {}: no answer from the supervisor", script, hook_name(h)));
  if (answer->got->kind != OutcomeKind::Returned)
    return fail(fmt::format("{} {}", hook_name(h), describe(*answer->got)));
  return answer->got->ret.flag;
}

bool ask_boolean_hook_or_false(SupervisorClient &client, const std::string &script, Hook h,
                               std::chrono::seconds timeout,
                               const std::function<void(const std::string &)> &log_error) {
  auto answer = ask_boolean_hook(client, script, h, timeout);
  if (answer)
    return *answer;
  log_error(fmt::format("switch/lua: {}; {} taken as false", answer.error().message, hook_name(h)));
  return false;
}

namespace {
/// A queued input for the worker.
struct Queued {
  std::uint32_t job_id;
  std::uint64_t generation; // of the call that produced it (0: RetryTick)
  EventKind kind;
  Outcome outcome;
};
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

  std::mutex qmu;
  std::condition_variable qcv;
  std::deque<Queued> queue;
  bool stopping = false;
  std::thread worker;

  Impl(CoreOptions o, SlurmPort &p)
      : opts(std::move(o)), port(p),
        client(opts.client, [this](CallId id, LogLevel l,
                                   std::string_view text) { on_script_log(id, l, text); }),
        cfg(opts.config) {
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
      if (frozen) {
        port.log(LogLevel::Verbose,
                 fmt::format("switch/lua: JobId={} {} not applied: slurmctld is stopping; the "
                             "call runs again after the restart",
                             q.job_id, event_kind_name(q.kind)));
        continue;
      }
      auto it = jobs.find(q.job_id);
      if (q.kind != EventKind::LateTeardownResult &&
          (it == jobs.end() || it->second.generation != q.generation)) {
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
  }

  /// One event for one job; locks held.
  void apply(std::uint32_t job_id, const Event &e) {
    std::lock_guard g(mu);
    auto it = jobs.find(job_id);
    if (it == jobs.end())
      return;
    StepResult r = step(it->second, e, cfg);
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
    port.save_state();
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
    port.log(
        LogLevel::Info,
        fmt::format("switch/lua: JobId={} {} started{} (switch_timeout={} s)", job_id, hook_name(h),
                    result_kind == EventKind::LateTeardownResult ? " for a late setup result" : "",
                    cfg.switch_timeout.count()));
    auto id = client.submit(req, [this, job_id, gen, result_kind, h](CallId cid, const Outcome &o) {
      {
        std::lock_guard g(mu);
        calls.erase(cid);
      }
      // The full outcome (a Lua traceback included) at verbose level; the
      // state machine's own line says what it means, once, at info/error.
      port.log(LogLevel::Verbose,
               fmt::format("switch/lua: JobId={} {} {}", job_id, hook_name(h), describe(o)));
      enqueue({job_id, gen, result_kind, o});
    });
    if (!id) {
      Outcome o{.kind = OutcomeKind::SpawnFailed, .message = id.error().message};
      enqueue({job_id, gen, result_kind, o});
      return;
    }
    calls[*id] = {job_id, h};
  }

  void execute(const JobSwitchState &s, const std::vector<Action> &actions) {
    std::uint32_t id = s.job.job_id;
    const std::string nodes = s.job.nodes.value_or("");
    for (const Action &a : actions) {
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

bool CtldCore::recover_job(std::uint32_t job_id, bool configuring) {
  std::lock_guard g(impl_->mu);
  impl_->frozen = false; // the restore sweep after a failed reconfigure
  auto it = impl_->jobs.find(job_id);
  if (it == impl_->jobs.end() || !it->second.recovered)
    return false;
  if (it->second.state == JobState::SetupRunning && !configuring) {
    // The setup was outstanding but Slurm no longer waits for it (the job
    // ended meanwhile): treat as a job that ended during its setup.
    it->second.state = JobState::SetupRunningEnded;
  }
  bool rerun_setup = it->second.state == JobState::SetupRunning;
  impl_->apply(job_id, Event{.kind = EventKind::Recover});
  return rerun_setup;
}

void CtldCore::adopt(JobSwitchState s) {
  std::lock_guard g(impl_->mu);
  s.recovered = true;
  std::uint32_t id = s.job.job_id;
  impl_->jobs[id] = std::move(s);
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

} // namespace switchlua
