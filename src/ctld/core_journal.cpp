// SPDX-License-Identifier: GPL-2.0-or-later
//
// CtldCore's journal writer (core_impl.hpp; issue 24, switch_lua.conf(5)
// STATESAVELOCATION): the records each transition writes before its actions
// run, fresh attempt ids, and what happens while the journal cannot be
// written: setups refused, teardowns waiting for their record
// (switch_journal_failure), the retry every kJournalRetry, and the flush
// before control is given up.  The reading side (what a restarted or
// taking-over slurmctld makes of it): core_recovery.cpp.
#include "ctld/core_impl.hpp"

#include "common/log_stamp.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

namespace switchlua {

using namespace core_detail;

std::string CtldCore::Impl::journal_refusal() const {
  if (!journal || journal->failure().empty())
    return {};
  return fmt::format("journal {}: {}: no setup starts without its record", journal->path(),
                     journal->failure());
}

std::int64_t CtldCore::Impl::attempt_floor_of(const std::string &path) {
  namespace fs = std::filesystem;
  std::int64_t floor = 0;
  auto consider = [&](const std::string &p) {
    struct stat st{};
    if (::stat(p.c_str(), &st) == 0)
      floor = std::max<std::int64_t>(floor, static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000 +
                                                st.st_mtim.tv_nsec / 1000);
  };
  consider(path);
  const fs::path jp(path);
  const std::string prefix = jp.filename().string() + ".corrupt-";
  std::error_code ec;
  for (fs::directory_iterator it(jp.has_parent_path() ? jp.parent_path() : fs::path("."), ec), end;
       !ec && it != end; it.increment(ec))
    if (it->path().filename().string().starts_with(prefix))
      consider(it->path().string());
  return floor;
}

std::int64_t CtldCore::Impl::next_attempt() {
  std::int64_t a;
  if (journal) {
    a = journal->next_attempt();
  } else {
    std::int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
    a = std::max(now, last_attempt + 1);
  }
  a = std::max(a, attempt_floor + 1); // the sources the journal's records miss
  attempt_floor = last_attempt = a;
  return a;
}

bool CtldCore::Impl::journal_append(const std::vector<JournalRecord> &recs, std::uint64_t *seq) {
  if (!journal)
    return true;
  if (!fence_ok()) // issue 40: another slurmctld took control; this one writes nothing
    return false;
  // The writer never writes a record its reader refuses (issue 20): one
  // past kJournalMaxRecord would make the next start set the whole journal
  // aside.  Such a record goes without the job's expanded node_names (its
  // job.nodes stays: an orphan teardown of it gets that), else not at all.
  std::vector<JournalRecord> fit;
  fit.reserve(recs.size());
  for (const JournalRecord &r : recs) {
    const std::size_t bytes = encode_journal_body(r).size();
    if (bytes <= kJournalMaxRecord) {
      fit.push_back(r);
      continue;
    }
    JournalRecord slim = r;
    if (slim.job)
      slim.job->node_names.clear();
    const bool fits = encode_journal_body(slim).size() <= kJournalMaxRecord;
    port.log(LogLevel::Error,
             log_line({.job_id = r.job_id},
                      "journal record '{}' of attempt {} is {} bytes, past the journal's limit "
                      "of {}: {}",
                      journal_kind_name(r.kind), r.attempt, bytes, kJournalMaxRecord,
                      fits ? "written without the job's node_names (job.nodes kept)"
                           : "not written; after a crash, Slurm's saved job state alone "
                             "recovers this job"));
    if (fits)
      fit.push_back(std::move(slim));
  }
  bool ok;
  if (seq) {
    *seq = 0;
    const Journal::Write w = journal->write(fit, seq);
    ok = w != Journal::Write::Failed;
    if (w != Journal::Write::Written)
      *seq = 0;
  } else {
    ok = journal->append(fit);
  }
  stats.set_journal_failure(journal->failure());
  if (!ok)
    arm_journal_timer(); // tried again soon, not only at the periodic check
  return ok;
}

bool CtldCore::Impl::deferrable(const std::vector<Action> &actions) {
  bool calls = false;
  for (const Action &a : actions) {
    if (is_call(a.kind))
      calls = true;
    else if (a.kind != ActionKind::Log && a.kind != ActionKind::HoldNodes)
      return false;
  }
  return calls;
}

CtldCore::Impl::JournalStep CtldCore::Impl::journal_step(const JobSwitchState &old, const Event &e,
                                                         const StepResult &r, bool defer) {
  JournalStep js;
  if (!journal)
    return js;
  auto append = [&](const std::vector<JournalRecord> &recs) {
    js.durable = journal_append(recs, defer ? &js.seq : nullptr);
    js.synced_here = !defer && !recs.empty();
    return js;
  };
  const JobSwitchState &n = r.next;
  std::vector<JournalRecord> recs = std::exchange(pools.records, {}); // issue 38: first
  bool starts = false;
  for (const Action &a : r.actions)
    starts = starts || a.kind == ActionKind::RunJobStart;
  if (starts && old.job.attempt != 0 && old.job.attempt != n.job.attempt &&
      !is_terminal(old.state) && old.state != JobState::SetupFailed)
    recs.push_back(journal_record(JournalKind::Forgotten, old.job)); // R_UNDO_OK
  if (n.job.attempt == 0) // a state saved by an older plugin: no key to journal
    return append(recs);
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
  return append(recs);
}

void CtldCore::Impl::flush_journal_for_handover() {
  if (!journal || journal->failure().empty() || !fence_ok() || journal->retry())
    return;
  port.log(LogLevel::Error,
           log_line({},
                    "control given up with the journal not written since '{}': the "
                    "controller that takes over reads it as it is and may run again the "
                    "teardowns that ended since (safe to repeat)",
                    journal->failure()));
}

std::string CtldCore::Impl::journal_while_failing() const {
  return cfg.journal_failure_waits
             ? "no new setup starts (each fails naming the journal) and no teardown starts "
               "(each waits for it, its job COMPLETING: switch_journal_failure=wait)"
             : "no new setup starts (each fails naming the journal); teardowns still run "
               "(switch_journal_failure=run: after a crash before it is written again, "
               "they run again)";
}

void CtldCore::Impl::arm_journal_timer() {
  if (journal_timer_armed || !journal || journal->failure().empty())
    return;
  journal_timer_armed = true;
  arm_timer(kJournalRetry, {.job_id = 0, .generation = 0, .journal = true});
}

void CtldCore::Impl::journal_tick() {
  journal_timer_armed = false;
  if (!journal || frozen || !fence_ok())
    return;
  if (!journal->failure().empty() && !journal->retry()) {
    arm_journal_timer();
    return;
  }
  stats.set_journal_failure(journal->failure());
  run_journal_waits();
}

bool CtldCore::Impl::wait_for_journal(bool durable, JournalWait w) {
  if (durable || !cfg.journal_failure_waits || !journal || journal->failure().empty())
    return false;
  w.since = std::chrono::steady_clock::now();
  port.log(LogLevel::Info,
           log_line({.job_id = w.job_id, .hook = "job_complete"},
                    "waits for the journal ({}): its 'teardown started' record is not on "
                    "disk; the job stays COMPLETING until it is written "
                    "(switch_journal_failure=wait)",
                    journal->failure()));
  journal_waiting.push_back(std::move(w));
  stats.set_journal_waiting(journal_waiting.size());
  arm_journal_timer();
  return true;
}

void CtldCore::Impl::submit_teardown(const JobSwitchState &s, const Action &a, bool durable,
                                     std::chrono::milliseconds waited) {
  const EventKind k = a.kind == ActionKind::RunJobComplete ? EventKind::TeardownResult
                                                           : EventKind::LateTeardownResult;
  if (!wait_for_journal(
          durable, {.job_id = s.job.job_id, .state = s, .result_kind = k, .jobinfo = a.jobinfo}))
    submit(s, Hook::JobComplete, a.jobinfo, k, waited);
}

void CtldCore::Impl::run_journal_waits() {
  if (journal_waiting.empty() || frozen || !in_control || !journal || !journal->failure().empty())
    return;
  std::vector<JournalWait> due;
  due.swap(journal_waiting);
  stats.set_journal_waiting(0);
  const auto longest = std::chrono::duration_cast<std::chrono::seconds>(
      std::chrono::steady_clock::now() - due.front().since);
  port.log(LogLevel::Info,
           log_line({},
                    "journal {}: written again: running the {} teardown{} that waited for it "
                    "(the longest {} s)",
                    journal->path(), due.size(), due.size() == 1 ? "" : "s", longest.count()));
  for (JournalWait &w : due) {
    if (w.orphan) {
      auto o = orphans.find(w.orphan);
      if (o != orphans.end()) {
        o->second.in_flight = false;
        run_orphan(w.orphan);
      }
      continue;
    }
    if (w.result_kind == EventKind::LateTeardownResult) { // only logged: its state may be gone
      submit(w.state, Hook::JobComplete, std::move(w.jobinfo), w.result_kind);
      continue;
    }
    auto it = jobs.find(w.job_id);
    if (it == jobs.end() || it->second.generation != w.state.generation)
      continue; // its state moved on (restored, forgotten): nothing waits for this call
    submit(it->second, Hook::JobComplete, std::move(w.jobinfo), w.result_kind);
  }
}

void CtldCore::Impl::defer_call(const JobSwitchState &s, const Action &a, std::uint64_t seq) {
  pending_calls.push_back(
      {.seq = seq, .state = s, .action = a, .decided = std::chrono::steady_clock::now()});
  wake_syncer();
}

void CtldCore::Impl::wake_syncer() {
  {
    std::lock_guard l(smu);
    sync_wanted = true;
  }
  scv.notify_one();
}

void CtldCore::Impl::run_syncer() {
  for (;;) {
    {
      std::unique_lock l(smu);
      const auto woken = [&] { return sync_stop || sync_wanted; };
      if (pools.declared) // issue 38: switch-lua pool release is served every second
        scv.wait_for(l, std::chrono::seconds(1), woken);
      else
        scv.wait(l, woken);
      if (sync_stop)
        return;
      sync_wanted = false;
    }
    Journal::SyncTicket t;
    std::vector<std::string> remove;
    bool sync = false;
    {
      std::lock_guard g(mu);
      remove.swap(results_unlink);
      sync = !pending_calls.empty() || !pending_effects.empty();
      if (sync && journal)
        t = journal->sync_ticket(); // records written from now on wait for the next round
    }
    // Results files whose every record the journal holds (rotate_results()):
    // removed here, outside every lock, as the fdatasync below.
    for (const std::string &p : remove)
      ::unlink(p.c_str());
    if (sync) {
      const int err = timed_sync(t); // no lock held: Slurm's threads go on
      std::lock_guard g(mu);
      if (journal && t.journal != 0) {
        journal->sync_done(t, err);
        stats.set_journal_failure(journal->failure());
        if (!journal->failure().empty())
          arm_journal_timer();
      }
      dispatch_pending();
      ready_pending_effects();
    }
    compact_outside();
    if (pools.declared)
      serve_pool_release();
  }
}

void CtldCore::Impl::compact_outside() {
  Journal::CompactionTicket t;
  {
    std::lock_guard g(mu);
    if (!journal || frozen || !in_control) // the fence: at the rename
      return;
    t = journal->compaction_ticket();
  }
  if (!t.due)
    return;
  // The snapshot's write and fsync, then (once renamed under mu) its
  // folder's fsync: no lock held, timed as a stalled fdatasync is.
  timed_io([&] {
    Journal::stage_compaction(t);
    return 0;
  });
  bool renamed = false;
  {
    std::lock_guard g(mu);
    // The fence first: a lost one closes the journal (become_stale()).
    const bool may_write = in_control && !frozen && fence_ok();
    if (journal && journal->id() == t.journal)
      renamed = journal->finish_compaction(t, may_write);
    else
      abandon_staged(t.staged);
  }
  if (!renamed)
    return;
  timed_io([&] {
    Journal::sync_compaction_folder(t);
    return t.folder_err;
  });
  std::lock_guard g(mu);
  if (!journal || journal->id() != t.journal)
    return;
  journal->compaction_settled(t);
  dispatch_pending(); // what the snapshot made durable
  ready_pending_effects();
  if (!journal->all_durable()) // the records appended meanwhile: another round
    wake_syncer();
}

int CtldCore::Impl::timed_sync(Journal::SyncTicket &t) {
  return timed_io([&] { return Journal::sync_outside(t); });
}

int CtldCore::Impl::timed_io(const std::function<int()> &io) {
  const auto began = std::chrono::steady_clock::now();
  {
    std::lock_guard s(stall_mu);
    sync_began = began;
  }
  const int err = io();
  bool reported;
  {
    std::lock_guard s(stall_mu);
    sync_began = {};
    reported = std::exchange(sync_stall_reported, false);
  }
  if (reported) {
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - began);
    stats.set_journal_stall(0);
    port.log(LogLevel::Info, log_line({},
                                      "journal {}: the fdatasync that stalled returned after "
                                      "{} ms{}; job starts go on",
                                      opts.journal_path, took.count(),
                                      err == 0 ? "" : fmt::format(" ({})", std::strerror(err))));
  }
  return err;
}

void CtldCore::Impl::check_sync_stall() {
  std::lock_guard s(stall_mu);
  if (sync_began == std::chrono::steady_clock::time_point{} || sync_stall_reported)
    return;
  const auto running = std::chrono::steady_clock::now() - sync_began;
  if (running < opts.journal_stall_after)
    return;
  sync_stall_reported = true;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(running).count();
  const std::int64_t since = std::chrono::duration_cast<std::chrono::seconds>(
                                 (std::chrono::system_clock::now() - running).time_since_epoch())
                                 .count();
  stats.set_journal_stall(since);
  port.log(LogLevel::Error,
           log_line({},
                    "journal {}: fdatasync has not returned for {} ms (StateSaveLocation's "
                    "storage stalls): setups wait for their records, so jobs with a network "
                    "stay CONFIGURING until it returns; one more line when it does "
                    "(switch_lua.conf(5), STATESAVELOCATION)",
                    opts.journal_path, ms));
}

std::optional<bool> CtldCore::Impl::record_durable(std::uint64_t seq) const {
  if (!journal || seq <= journal->durable_seq())
    return true;
  if (journal->failure().empty())
    return std::nullopt; // written after the last sync: the next round's
  return false;
}

void CtldCore::Impl::ready_pending_effects() {
  std::deque<PendingEffects> ready;
  while (!pending_effects.empty()) {
    PendingEffects &p = pending_effects.front();
    const std::optional<bool> durable = record_durable(p.seq);
    if (!durable)
      break;
    p.durable = *durable;
    ready.push_back(std::move(p));
    pending_effects.pop_front();
  }
  if (!ready.empty()) {
    {
      std::lock_guard q(qmu);
      for (PendingEffects &p : ready)
        ready_effects.push_back(std::move(p));
    }
    qcv.notify_all();
  }
  if (!pending_effects.empty())
    wake_syncer();
}

void CtldCore::Impl::dispatch_pending() {
  if (pending_calls.empty())
    return;
  if (frozen || !in_control) {
    drop_pending(frozen ? "slurmctld is stopping" : "this slurmctld gave up control");
    return;
  }
  while (!pending_calls.empty()) {
    const std::optional<bool> settled = record_durable(pending_calls.front().seq);
    if (!settled)
      break;
    const bool durable = *settled;
    PendingCall c = std::move(pending_calls.front());
    pending_calls.pop_front();
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - c.decided);
    // Not durable: the fdatasync failed.  A teardown then waits for the
    // journal or runs (switch_journal_failure), a setup is refused as one
    // whose record could not be written.
    if (c.action.kind != ActionKind::RunJobStart)
      submit_teardown(c.state, c.action, durable, waited);
    else
      start_setup(c.state, durable ? std::string() : journal_refusal(), waited);
  }
  if (!pending_calls.empty())
    wake_syncer();
}

void CtldCore::Impl::drop_pending(std::string_view why) {
  for (const PendingCall &c : pending_calls)
    port.log(
        LogLevel::Verbose,
        log_line({.job_id = c.state.job.job_id,
                  .hook = c.action.kind == ActionKind::RunJobStart ? "job_start" : "job_complete"},
                 "not started ({}) while its journal record waited for its fdatasync: "
                 "recovered like a killed call by the slurmctld that next holds control",
                 why));
  pending_calls.clear();
  std::size_t effects = pending_effects.size();
  pending_effects.clear();
  {
    std::lock_guard q(qmu);
    effects += ready_effects.size();
    ready_effects.clear();
  }
  if (effects > 0)
    port.log(LogLevel::Verbose,
             log_line({},
                      "{} decision(s) not carried out ({}) while their journal records "
                      "waited for the fdatasync: recovered from the journal by the "
                      "slurmctld that next holds control",
                      effects, why));
}

} // namespace switchlua
