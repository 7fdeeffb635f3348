// SPDX-License-Identifier: GPL-2.0-or-later
//
// The engine of the sibling tables of the rule table (job_fsm_table.cpp):
// the restart table (adopt_decision) and the table of teardowns outside a
// job's state (orphan_result, late_result_decision).  Each reduces its
// facts to one value, finds the first row that matches, and says what the
// row does.
#include "ctld/recovery_fsm.hpp"
#include "ctld/job_fsm_table.hpp"

#include "common/log_stamp.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace switchlua {
namespace {

using namespace fsm;

/// The strongest fact the journal holds of the saved state's attempt.
JournalSays journal_says(bool forgotten, const JournalEntry *live) {
  if (forgotten)
    return JournalSays::Forgotten;
  if (live == nullptr)
    return JournalSays::Nothing;
  if (live->teardown_started && live->jobinfo)
    return JournalSays::TeardownStarted;
  if (live->accepted)
    return live->launch_released ? JournalSays::AcceptedLaunched : JournalSays::Accepted;
  return JournalSays::Nothing;
}

bool row_matches(const RecoveryRow &r, JournalSays says, JobState saved) {
  if (r.saved.size() == 0)
    return true; // the last row: as saved
  return r.says == says && std::find(r.saved.begin(), r.saved.end(), saved) != r.saved.end();
}

/// The row of (whose, verdict) in the table of teardowns outside a job's state.
const OutcomeRow &outcome_row(Teardown of, Verdict v) {
  for (const OutcomeRow &r : outcome_table())
    if (r.of == of && r.verdict == v)
      return r;
  // The rows cover every verdict of an unheld teardown (a test checks it);
  // for any other, the failure row, the most cautious one.
  for (const OutcomeRow &r : outcome_table())
    if (r.of == of && r.verdict == Verdict::Failure)
      return r;
  return outcome_table().back();
}

/// A teardown outside a job's state holds no node.
Verdict unheld_verdict(const Outcome &o) {
  JobSwitchState s;
  s.state = JobState::TeardownRunning;
  return teardown_verdict(o, s, CtldConfig{});
}

TeardownDecision decide(const OutcomeRow &r, Verdict v, std::string what) {
  TeardownDecision d{.rule = r.rule, .what = std::move(what), .pools = r.pools};
  for (Do a : r.actions) {
    d.error = d.error || a == Do::LogError;
    d.drain = d.drain || a == Do::DrainIfConfigured;
    d.forget = d.forget || a == Do::ForgetAttempt;
  }
  if (v == Verdict::EagainUnheld && r.of == Teardown::Orphan)
    d.what = "returned slurm.EAGAIN but its nodes cannot be held (job record gone)";
  return d;
}

} // namespace

AdoptDecision adopt_decision(const JobSwitchState &saved, bool forgotten,
                             const JournalEntry *live) {
  const JournalSays says = journal_says(forgotten, live);
  const auto rows = recovery_table();
  const RecoveryRow *row = &rows.back();
  for (const RecoveryRow &r : rows)
    if (row_matches(r, says, saved.state)) {
      row = &r;
      break;
    }
  AdoptDecision d{.rule = row->rule, .next = saved, .hint = std::nullopt, .log = ""};
  if (row->next != JobState::None)
    d.next.state = row->next;
  if (row->jobinfo == JobinfoFrom::Journal && live)
    d.next.jobinfo = live->jobinfo;
  else if (row->jobinfo == JobinfoFrom::Nowhere)
    d.next.jobinfo.reset();
  if (row->sets_hint)
    d.hint = row->hint;
  if (!row->log.empty())
    d.log = fmt::format(
        fmt::runtime(row->log), fmt::arg("job", log_subject({.job_id = saved.job.job_id})),
        fmt::arg("attempt", saved.job.attempt), fmt::arg("state", job_state_name(saved.state)));
  return d;
}

std::string orphan_teardown_line(std::int64_t attempt, const JournalEntry &e, bool with_jobinfo) {
  return fmt::format("{} recovery: the journal has attempt {} (submitted at {}) {}, and no job "
                     "record carries it (the record was lost, or its job id now belongs to a "
                     "newer job): tearing it down with {} ({})",
                     log_subject({.job_id = e.job.job_id}), attempt, e.job.submit_time,
                     e.teardown_started ? "with its teardown started"
                     : e.accepted       ? "set up (job_start returned a jobinfo)"
                                        : "with job_start started but not reported",
                     with_jobinfo ? "its jobinfo" : "nil jobinfo",
                     outcome_row(Teardown::Orphan, Verdict::Recovered).rule);
}

bool orphan_may_still_run(const JournalEntry &e) {
  return e.launch_released && !e.teardown_started;
}

OrphanStart orphan_start(std::int64_t attempt, const JournalEntry &e, bool nodes_may_run,
                         bool with_jobinfo) {
  const Verdict v =
      orphan_may_still_run(e) && nodes_may_run ? Verdict::NodesMayRun : Verdict::Recovered;
  const OutcomeRow &r = outcome_row(Teardown::Orphan, v);
  OrphanStart out{.rule = r.rule, .wait = v == Verdict::NodesMayRun, .line = {}};
  if (!out.wait) {
    out.line = orphan_teardown_line(attempt, e, with_jobinfo);
    return out;
  }
  out.line = fmt::format(
      "{} recovery: the journal has attempt {} (submitted at {}) launched before the restart, "
      "and no job record carries it (Slurm lost the job's start): its nodes {} may still run "
      "it, so it is not torn down yet; its teardown runs once they no longer may, and the next "
      "start of this job id waits in CONFIGURING until then ({})",
      log_subject({.job_id = e.job.job_id}), attempt, e.job.submit_time,
      e.job.nodes.value_or("(none)"), r.rule);
  return out;
}

TeardownDecision orphan_result(const Outcome &out) {
  const Verdict v = unheld_verdict(out);
  return decide(outcome_row(Teardown::Orphan, v), v, outcome_text(out));
}

TeardownDecision late_result_decision(const Outcome *out) {
  if (out == nullptr)
    return decide(outcome_row(Teardown::Late, Verdict::Failure), Verdict::Failure, "ended");
  const Verdict v = unheld_verdict(*out);
  return decide(outcome_row(Teardown::Late, v), v, outcome_text(*out));
}

} // namespace switchlua
