// SPDX-License-Identifier: GPL-2.0-or-later
//
// CtldCore's recovery (core_impl.hpp; switch.lua(5), Restart and Journal):
// what a restarted or taking-over slurmctld makes of the journal and of
// Slurm's saved job states (adopt, recover_job, reconcile_journal), and the
// teardown of attempts no job record carries any more (R_ORPHAN_*).  What
// the journal gets written: core_journal.cpp.
#include "ctld/adopt_results.hpp"
#include "ctld/core_impl.hpp"
#include "ctld/recovery_fsm.hpp"

#include "common/log_stamp.hpp"
#include "common/safe_file.hpp"
#include "lua/runtime.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

namespace switchlua {

using namespace core_detail;

namespace {
/// "2026-12-07 06:31:02.120" for Unix milliseconds.
std::string utc_ms(std::int64_t ms) {
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:03}", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms % 1000);
}
/// A supervisor results file: ours, a regular file, no link followed, at
/// most kResultsMaxFile bytes (common/safe_file.hpp).
Expected<std::string, FileError> read_results_file(const std::string &path) {
  auto fd = open_own_file(path, O_RDONLY);
  if (!fd)
    return Unexpected<FileError>{fd.error()};
  auto b = read_fd_bounded(*fd, kResultsMaxFile, path);
  ::close(*fd);
  return b;
}

/// The line of one result adopted from the supervisor's results file `path`.
std::string adopted_line(const ResultRecord &r, const std::string &path) {
  const bool start = r.hook == Hook::JobStart;
  return log_line({.job_id = r.job_id, .hook = hook_name(r.hook)},
                  "recovery: {} {} returned {} at {} UTC (control epoch {}), after its "
                  "slurmctld had stopped reading; the result never reached the journal, the "
                  "supervisor's record of it ({}) did: adopted, {} is not run again",
                  start ? "attempt" : "the teardown of attempt", r.attempt,
                  start ? "SUCCESS with a jobinfo" : "success", utc_ms(r.ended_unix_ms), r.epoch,
                  path, hook_name(r.hook));
}
} // namespace

void CtldCore::Impl::run_orphan(std::int64_t attempt) {
  auto it = orphans.find(attempt);
  if (it == orphans.end() || it->second.in_flight)
    return;
  Orphan &o = it->second;
  JournalRecord td = journal_record(JournalKind::TeardownStarted, o.job);
  td.jobinfo = o.jobinfo;
  const bool durable = journal_append({td});
  o.in_flight = true; // also while it waits for the journal: run_journal_waits() runs it
  std::uint32_t job_id = o.job.job_id;
  if (wait_for_journal(durable, {.job_id = job_id, .orphan = attempt}))
    return;
  port.log(LogLevel::Info, log_line({.job_id = job_id, .hook = "job_complete"},
                                    "started for attempt {} whose job "
                                    "record is gone, with {} (switch_timeout={} s)",
                                    attempt, o.jobinfo ? "its jobinfo" : "nil jobinfo",
                                    cfg.switch_timeout.count()));
  CallRequest req{.script = opts.script,
                  .hook = Hook::JobComplete,
                  .job = o.job,
                  .jobinfo = o.jobinfo,
                  .timeout = cfg.switch_timeout};
  const std::uint64_t seg = fence_request(req);
  auto id = client.submit(req, [this, job_id, attempt, seg](CallId cid, const Outcome &out) {
    {
      std::lock_guard g(mu);
      calls.erase(cid);
      stats.call_done(cid, out);
    }
    port.log(LogLevel::Verbose, log_line({.job_id = job_id, .hook = "job_complete"},
                                         "(attempt {}) {}", attempt, describe(out)));
    enqueue({job_id, 0, EventKind::TeardownResult, out, attempt, seg});
    std::lock_guard g(mu); // queued: its results file segment may go
    results_call_done(seg);
  });
  if (!id) {
    results_call_done(seg);
    Outcome out{.kind = OutcomeKind::SpawnFailed, .message = id.error().message};
    stats.call_refused(Hook::JobComplete, out);
    enqueue({job_id, 0, EventKind::TeardownResult, out, attempt});
    return;
  }
  calls[*id] = {job_id, Hook::JobComplete};
  stats.call_submitted(*id, Hook::JobComplete, lane_of(Hook::JobComplete, o.job.batch));
}

void CtldCore::Impl::apply_orphan(std::int64_t attempt, const Outcome &out) {
  auto it = orphans.find(attempt);
  if (it == orphans.end())
    return;
  Orphan &o = it->second;
  o.in_flight = false;
  const std::uint32_t id = o.job.job_id;
  const TeardownDecision d = orphan_result(out); // R_ORPHAN_OK / R_ORPHAN_FAIL
  if (out.kind != OutcomeKind::SpawnFailed &&
      !(out.kind == OutcomeKind::Returned && out.ret.rc == kFabricDown))
    o.host_faults = 0;
  if (d.rule == "R_ORPHAN_FABRIC_DOWN") { // slurm.FABRIC_DOWN (issue 20)
    if (!breaker.open)
      open_breaker(fmt::format("JobId={} job_complete (attempt {}, job record gone) returned "
                               "slurm.FABRIC_DOWN",
                               id, attempt));
    const auto backoff = fabric_backoff(++o.host_faults);
    port.log(LogLevel::Info,
             log_line({.job_id = id, .hook = "job_complete"},
                      "for attempt {} (job record gone) {}: the fabric is unavailable (fabric "
                      "breaker): kept, nothing drained; running it again in {} s ({})",
                      attempt, d.what, backoff.count() / 1000, d.rule));
    arm_timer(backoff, {.job_id = id, .generation = 0, .orphan = attempt});
    return;
  }
  if (d.rule == "R_ORPHAN_HOST_FAULT") { // its runner could not be started (issue 20)
    const auto backoff = host_fault_backoff(++o.host_faults);
    std::string line =
        fmt::format("{} job_complete for attempt {} (job record gone) {}: a fault "
                    "of this host, running it again in {} ms ({})",
                    log_subject({.job_id = id}), attempt, d.what, backoff.count(), d.rule);
    stats.host_fault();
    if (host_fault_line(line))
      port.log(LogLevel::Error, log_line({}, line));
    arm_timer(backoff, {.job_id = id, .generation = 0, .orphan = attempt});
    return;
  }
  if (!d.drain) {
    port.log(d.error ? LogLevel::Error : LogLevel::Info,
             log_line({.job_id = id, .hook = "job_complete"},
                      "for attempt {} (job record gone) {}: torn down ({})", attempt, d.what,
                      d.rule));
  } else {
    std::string reason = fmt::format("{}: JobId={} switch/lua job_complete (job record gone) {}",
                                     kReasonTeardownFailed, id, d.what);
    const std::string nodes = drained_nodes(o.job, &out); // those it named (issue 20)
    if (cfg.drain_on_failure && !nodes.empty()) {
      port.log(LogLevel::Error,
               log_line({.job_id = id}, "draining {}: {} ({})", nodes, reason, d.rule));
      port.drain(nodes, reason);
      stats.action(ActionKind::DrainNodes);
    } else {
      port.log(LogLevel::Error,
               log_line({.job_id = id}, "not draining {}: {} ({})",
                        nodes.empty() ? "(no nodes)" : nodes,
                        cfg.drain_on_failure ? reason : reason + "; switch_drain_on_failure=no",
                        d.rule));
    }
  }
  if (d.forget) {
    forget_orphan(attempt, o.job, d.pools); // issue 38: its pool IDs as the row says
    orphans.erase(it);
    wake_orphan_waiters(); // the next start of this job id may set up now
  }
}

std::uint32_t CtldCore::Impl::held_teardown_of(std::uint32_t job_id, const JobArgs &job) const {
  auto holds = [&](std::uint32_t id, const JobSwitchState &s) {
    return id != job_id && s.nodes_held &&
           (s.state == JobState::TeardownRunning || s.state == JobState::TeardownRetryWait ||
            s.state == JobState::SetupUndoingEnded);
  };
  if (job.node_names.empty() || std::none_of(jobs.begin(), jobs.end(), [&](const auto &kv) {
        return holds(kv.first, kv.second);
      }))
    return 0; // the usual case: no held teardown, no set built
  const std::set<std::string_view> mine(job.node_names.begin(), job.node_names.end());
  for (const auto &[id, s] : jobs) {
    if (!holds(id, s))
      continue;
    for (const std::string &n : s.job.node_names)
      if (mine.contains(n))
        return id;
  }
  return 0;
}

bool CtldCore::Impl::has_orphan_of(std::uint32_t job_id) const {
  for (const auto &[a, o] : orphans)
    if (o.job.job_id == job_id)
      return true;
  if (reconciled || !journal)
    return false;
  auto carried = jobs.find(job_id);
  for (const auto &[a, e] : journal->table().live)
    if (e.job.job_id == job_id && orphan_may_still_run(e) &&
        (carried == jobs.end() || carried->second.job.attempt != a))
      return true;
  return false;
}

void CtldCore::Impl::check_waiting_orphans() {
  std::vector<std::int64_t> start;
  const auto now = std::chrono::steady_clock::now();
  for (auto &[attempt, o] : orphans) {
    if (!o.waiting)
      continue;
    const std::string nodes = o.job.nodes.value_or("");
    const bool timed_out = now - o.since >= kOrphanNodeWaitMax;
    if (!timed_out && port.job_may_run_on_nodes(o.job.job_id, nodes))
      continue;
    o.waiting = false;
    if (timed_out)
      port.log(LogLevel::Error,
               log_line({.job_id = o.job.job_id},
                        "recovery: attempt {}'s nodes {} may still run it after {} minutes: "
                        "tearing it down anyway (R_ORPHAN_TEARDOWN)",
                        attempt, nodes, kOrphanNodeWaitMax.count()));
    else
      port.log(LogLevel::Info, log_line({.job_id = o.job.job_id},
                                        "recovery: attempt {}'s nodes {} no longer run it: "
                                        "tearing it down now (R_ORPHAN_TEARDOWN)",
                                        attempt, nodes));
    start.push_back(attempt);
  }
  for (std::int64_t a : start)
    run_orphan(a);
}

void CtldCore::Impl::wake_orphan_waiters() {
  std::vector<std::uint32_t> ready;
  for (auto &[id, s] : jobs) {
    if (s.state != JobState::SetupWaitOrphan || has_orphan_of(id))
      continue;
    const std::uint32_t holder = held_teardown_of(id, s.job);
    if (holder == 0) {
      ready.push_back(id);
    } else if (s.held_by != holder) {
      // What it waits for now is another job's held teardown (its orphan
      // is over, or it was recovered after a restart, where held_by is not
      // saved): that teardown's report wakes it (R_SETUP_AFTER_HELD).
      s.held_by = holder;
      port.log(LogLevel::Info,
               log_line({.job_id = id, .hook = "job_start"},
                        "still waits: the teardown of JobId={} holds one of its nodes; the job "
                        "stays CONFIGURING until that teardown has reported (R_SETUP_WAIT_HELD)",
                        holder));
    }
  }
  for (std::uint32_t id : ready)
    apply(id, Event{.kind = EventKind::OrphanGone});
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
  bool delay = s.state == JobState::SetupRunning || s.state == JobState::SetupUndoing ||
               s.state == JobState::SetupWaitOrphan;
  if (hint == Recovery::LaunchNow) // written before the glue launches it
    impl_->journal_append({journal_record(JournalKind::LaunchReleased, s.job)});
  impl_->apply(job_id, Event{.kind = EventKind::Recover});
  return delay ? Recovery::DelayLaunch : hint;
}

void CtldCore::adopt(JobSwitchState s) {
  std::lock_guard g(impl_->mu);
  impl_->adopt_locked(std::move(s));
}

void CtldCore::Impl::adopt_locked(JobSwitchState s) {
  s.recovered = true;
  const std::uint32_t id = s.job.job_id;
  // Slurm's saved attempts are a source of ids too: a journal set aside
  // does not know them (Impl::attempt_floor).
  attempt_floor = std::max(attempt_floor, s.job.attempt);
  const Journal *j = journal.get();
  if (j && s.job.attempt != 0) {
    // The journal's word on this attempt: the restart table (R_RECOVER_*).
    const JournalTable &t = j->table();
    auto e = t.live.find(s.job.attempt);
    const bool same_job = e != t.live.end() && e->second.job.job_id == id &&
                          e->second.job.submit_time == s.job.submit_time;
    AdoptDecision d =
        adopt_decision(s, t.forgotten.count(s.job.attempt) > 0, same_job ? &e->second : nullptr);
    if (!d.log.empty())
      port.log(LogLevel::Info, log_line({}, d.log));
    if (d.hint)
      hints[id] = *d.hint;
    s = std::move(d.next);
  }
  pools.adopt(s, j && j->table().forgotten.count(s.job.attempt) > 0); // a journal lost: its IDs
  jobs[id] = std::move(s);
}

void CtldCore::reconcile_journal() {
  std::lock_guard g(impl_->mu);
  if (!impl_->in_control)
    return; // WAITING (the restore thread reconciles once control is taken) or stale
  impl_->frozen = false;
  impl_->reconciled = true;
  reconcile_orphans();
  // Issue 40: the setups asked for while WAITING, in job id order, after
  // the orphans (a start waits for its job id's orphan, as ever).
  auto parked = std::move(impl_->parked);
  impl_->parked.clear();
  for (auto &[id, p] : parked)
    job_start(std::move(p.first), p.second);
}

void CtldCore::reconcile_orphans() {
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
      // The lost start: launched before the crash, its nodes may still run
      // it (R_ORPHAN_WAIT_NODES).
      const bool may_run = orphan_may_still_run(e) &&
                           impl_->port.job_may_run_on_nodes(e.job.job_id, e.job.nodes.value_or(""));
      const OrphanStart st = orphan_start(attempt, e, may_run, it->second.jobinfo.has_value());
      impl_->port.log(LogLevel::Info, log_line({}, st.line));
      it->second.waiting = st.wait;
      it->second.since = std::chrono::steady_clock::now();
    }
    if (!it->second.in_flight && !it->second.waiting)
      start.push_back(attempt);
  }
  for (std::int64_t a : start)
    impl_->run_orphan(a);
  impl_->wake_orphan_waiters(); // after a restart: a waiting start whose orphan is gone
}

void CtldCore::Impl::adopt_supervisor_results() {
  if (!journal || !journal->active())
    return;
  const std::vector<std::string> files = list_results_files(opts.journal_path);
  if (files.empty())
    return;
  JournalTable t = journal->table(); // as the records found so far change it
  std::vector<JournalRecord> recs;
  std::vector<std::string> lines, read; // adopted results' lines, files read
  std::size_t results = 0;
  for (const std::string &path : files) {
    auto bytes = read_results_file(path);
    if (!bytes) {
      port.log(LogLevel::Error,
               log_line({},
                        "recovery: supervisor results file not read, left in place: {}; the "
                        "calls it recorded run again if the journal says they are not over",
                        bytes.error().message));
      continue;
    }
    read.push_back(path);
    const ResultsScan scan = scan_results(*bytes);
    if (!scan.error.empty()) // a supervisor that died during an append
      port.log(LogLevel::Info,
               log_line({},
                        "recovery: supervisor results file {}: {}; the {} record(s) before "
                        "it are read",
                        path, scan.error, scan.records.size()));
    results += scan.records.size();
    for (const ResultRecord &r : scan.records) {
      auto rec = adopt_result(t, r);
      if (!rec)
        continue;
      t.apply(*rec);
      recs.push_back(*rec);
      lines.push_back(adopted_line(r, path));
    }
  }
  const bool durable = recs.empty() || journal->append(recs);
  for (const std::string &l : lines)
    port.log(LogLevel::Info, l);
  if (!durable) {
    port.log(LogLevel::Error,
             log_line({},
                      "recovery: {} adopted supervisor result(s) not written to the journal "
                      "({}): the results files are kept for the next controller",
                      recs.size(), journal->failure()));
    return;
  }
  for (const std::string &path : read)
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      port.log(LogLevel::Error,
               log_line({}, "recovery: cannot remove {}: {}", path, std::strerror(errno)));
  port.log(LogLevel::Info,
           log_line({},
                    "recovery: {} supervisor results file(s), {} result(s): {} adopted into "
                    "the journal, the others were already in it or are of attempts it no "
                    "longer holds (switch.lua(5), HIGH AVAILABILITY)",
                    read.size(), results, recs.size()));
}

void CtldCore::Impl::rotate_results() {
  if (!in_control || frozen || stale || !journal || !fence)
    return;
  const auto now = std::chrono::steady_clock::now();
  if (now - results_seg_since >= opts.results_segment) {
    ++results_seg;
    results_seg_since = now;
  }
  if (!journal->all_durable() || !journal->failure().empty())
    return;
  std::set<std::uint64_t> queued;
  {
    std::lock_guard q(qmu);
    for (const Queued &x : queue)
      if (x.results_seg != 0)
        queued.insert(x.results_seg);
  }
  bool removed = false;
  for (auto it = results_calls.begin(); it != results_calls.end() && it->first < results_seg;) {
    if (it->second > 0 || queued.contains(it->first)) {
      ++it;
      continue;
    }
    results_unlink.push_back(results_file_path(opts.journal_path, fence->epoch(), it->first));
    it = results_calls.erase(it);
    removed = true;
  }
  if (removed)
    wake_syncer();
}

} // namespace switchlua
