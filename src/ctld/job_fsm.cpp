// SPDX-License-Identifier: GPL-2.0-or-later
//
// The controller state machine's engine: `step()` reduces the event's
// Outcome to a Verdict, finds the row for (state, event, verdict) in the
// table of contract rules (job_fsm_table.cpp) and builds its actions, with
// the reasons and log lines they carry.
#include "ctld/job_fsm.hpp"
#include "ctld/job_fsm_table.hpp"

#include "common/utf8.hpp"

#include <array>
#include <fmt/format.h>
#include <initializer_list>

namespace switchlua {
namespace {

using namespace fsm;

/// The "what happened" part of a job or drain reason is cut to this many
/// bytes, on a character boundary, "..." included.
constexpr std::size_t kMaxReasonWhatBytes = 160;

using S = JobState;
using E = EventKind;
using V = Verdict;

Verdict setup_verdict(const Outcome &o) {
  switch (o.kind) {
  case OutcomeKind::Returned:
    if (o.ret.rc != kSuccess)
      return V::Failed;
    if (!o.ret.jobinfo_error.empty())
      return V::Unsaveable;
    return o.ret.jobinfo ? V::Accepted : V::Declined;
  case OutcomeKind::LuaError:
  case OutcomeKind::BadReturn:
  case OutcomeKind::LoadFailed:
  case OutcomeKind::SpawnFailed:
    return V::Failed;
  case OutcomeKind::ExitedWithoutReturn:
    return V::Exited;
  case OutcomeKind::Signaled: // switch.lua contract: "dies on a signal is treated as timed out"
  case OutcomeKind::TimedOut:
  case OutcomeKind::Abandoned: // the supervisor died: as unknown as a timeout
    return V::TimedOut;
  }
  return V::Failed;
}

Verdict teardown_verdict(const Outcome &o, const JobSwitchState &s, const CtldConfig &cfg) {
  // Killed from outside (not the plugin's own timeout kill: TimedOut) or
  // lost with the supervisor: retried (R_COMPLETE_KILLED).
  if (o.kind == OutcomeKind::Signaled || o.kind == OutcomeKind::Abandoned)
    return s.retries < cfg.switch_retries ? V::KilledRetry : V::KilledExhausted;
  if (o.kind != OutcomeKind::Returned)
    return V::Failure;
  if (o.ret.rc == kSuccess)
    return V::Success;
  if (o.ret.rc == kEagain) {
    if (!s.nodes_held)
      return V::EagainUnheld;
    return s.retries < cfg.switch_retries ? V::EagainRetry : V::EagainExhausted;
  }
  return o.ret.rc > 0 ? V::OtherPositive : V::Failure;
}

Verdict verdict_of(const JobSwitchState &s, const Event &e, const CtldConfig &cfg) {
  switch (e.kind) {
  case E::SetupResult:
    return e.outcome ? setup_verdict(*e.outcome) : V::TimedOut;
  case E::TeardownResult:
    return e.outcome ? teardown_verdict(*e.outcome, s, cfg) : V::Failure;
  case E::JobEnded:
    // After a restart, a call that was in flight is gone: the states that
    // waited for one re-run it; the others end as usual.
    if (s.recovered && (s.state == S::SetupRunning || s.state == S::SetupRunningEnded ||
                        s.state == S::TeardownRunning || s.state == S::TeardownRetryWait ||
                        s.state == S::SetupUndoing || s.state == S::SetupUndoingEnded))
      return V::Recovered;
    return s.block_job_complete ? V::Blocking : V::NonBlocking;
  case E::Recover:
    return V::Recovered;
  default:
    return V::None;
  }
}

const Row *find_row(JobState s, EventKind e, Verdict v) {
  for (const Row &r : rule_table())
    if (r.state == s && r.event == e && r.verdict == v)
      return &r;
  return nullptr;
}

/// The job as logs name it.
std::string job_tag(const JobSwitchState &s) {
  return fmt::format("JobId={}", s.job.job_id);
}

/// The log line of R_COMPLETE_KILLED and R_UNDO_KILLED: a job_complete
/// killed from outside (or lost with the supervisor) runs again.
std::string killed_text(std::string_view rule, const JobSwitchState &s, const std::string &what,
                        const CtldConfig &cfg) {
  if (rule == "R_UNDO_KILLED")
    return fmt::format("{} job_complete for the killed job_start of attempt {} {}: running it "
                       "again (retry {} of {})",
                       job_tag(s), s.job.attempt, what, s.retries + 1, cfg.switch_retries);
  return fmt::format("{} job_complete {}: nodes held, running it again at the next periodic "
                     "check (retry {} of {})",
                     job_tag(s), what, s.retries + 1, cfg.switch_retries);
}

/// The log line of a row's LogInfo / LogError.
std::string log_text(const Row &r, const JobSwitchState &s, const Event &e, const CtldConfig &cfg) {
  std::string hook = e.kind == E::SetupResult ? "job_start" : "job_complete";
  std::string what = e.outcome ? outcome_text(*e.outcome) : "";
  std::string_view rule = r.rule;
  if (rule == "R_START_OK")
    return fmt::format("{} job_start accepted the job: jobinfo stored, job may launch", job_tag(s));
  if (rule == "R_START_DECLINE")
    return fmt::format("{} job_start declined the job (nil jobinfo): not managed by switch/lua",
                       job_tag(s));
  if (rule == "R_CANCEL_DURING_SETUP")
    return fmt::format("{} ended while job_start runs: holding its nodes until the setup reports; "
                       "not a setup failure",
                       job_tag(s));
  if (rule == "R_COMPLETE_EAGAIN")
    return fmt::format("{} job_complete returned slurm.EAGAIN: nodes stay held, retry {} of {} at "
                       "the next periodic check",
                       job_tag(s), s.retries + 1, cfg.switch_retries);
  if (rule == "R_END_AFTER_FAIL")
    return fmt::format("{} ended after a failed setup: job_complete is not called (job_start "
                       "undoes its own work before it returns a failure)",
                       job_tag(s));
  if (rule == "R_RESTART_SETUP")
    return fmt::format("{} recovered after a slurmctld restart in state SetupRunning: the "
                       "job_start of attempt {} was killed before it reported; running "
                       "job_complete with nil jobinfo for it, then job_start again (the job has "
                       "not launched)",
                       job_tag(s), s.job.attempt);
  if (rule == "R_RESTART_UNDO")
    return fmt::format("{} recovered after a slurmctld restart in state {}: running "
                       "job_complete with nil jobinfo for the killed job_start of attempt {} "
                       "again",
                       job_tag(s), job_state_name(s.state), s.job.attempt);
  if (rule.starts_with("R_RESTART"))
    return fmt::format("{} recovered after a slurmctld restart in state {}: running "
                       "job_complete again",
                       job_tag(s), job_state_name(s.state));
  if (rule.ends_with("_KILLED"))
    return killed_text(rule, s, what, cfg);
  if (rule == "R_UNDO_OK")
    return fmt::format("{} job_complete for the killed job_start of attempt {} {}: running "
                       "job_start again",
                       job_tag(s), s.job.attempt, what);
  if (rule == "R_UNDO_FAIL" || rule == "R_UNDO_ENDED_FAIL")
    return fmt::format("{} job_complete for the killed job_start of attempt {} {}", job_tag(s),
                       s.job.attempt, what);
  if (rule == "R_UNDO_ENDED")
    return fmt::format("{} ended while job_complete for its killed job_start runs: holding its "
                       "nodes until it reports; job_start is not run again",
                       job_tag(s));
  if (rule == "R_UNDO_ENDED_OK")
    return fmt::format("{} job_complete for the killed job_start of attempt {} {} after the job "
                       "had ended: nothing more to do",
                       job_tag(s), s.job.attempt, what);
  if (rule.starts_with("R_CANCELLED_SETUP"))
    return fmt::format("{} job_start {} after the job had ended: {}", job_tag(s), what,
                       r.next == S::Done ? "nothing to tear down"
                                         : "tearing down with nil jobinfo");
  return fmt::format("{} {} {}", job_tag(s), hook, what);
}

/// What failed, for a setup reason: "switch/lua job_start returned rc=-1".
std::string setup_what(const Event &e) {
  std::string what = e.outcome ? outcome_text(*e.outcome) : "no result";
  what = utf8_truncate_marked(what, kMaxReasonWhatBytes); // never half a character
  if (e.kind == E::TeardownResult)                        // R_UNDO_FAIL
    return "switch/lua job_complete for a killed job_start " + what;
  return "switch/lua job_start " + what;
}

std::string setup_reason(const Event &e, Verdict v) {
  if (e.kind == E::TeardownResult)
    return fmt::format("{}: {}", kReasonSetupFailed, setup_what(e));
  std::string_view head = v == V::TimedOut ? kReasonSetupTimedOut : kReasonSetupFailed;
  return fmt::format("{}: {}", head, setup_what(e));
}

/// Whether this failure of a requeueable job reaches switch_max_setup_failures.
bool setup_failures_reached(const JobSwitchState &s, const CtldConfig &cfg) {
  return s.requeue_allowed && cfg.max_setup_failures > 0 &&
         s.setup_failures + 1 >= cfg.max_setup_failures;
}

/// FailSetup: requeue the job if it may be, else cancel it, with the
/// rule's reason; R_SETUP_FAILURES_HELD when this failure reaches
/// switch_max_setup_failures: requeue it held instead (and say so).
void fail_setup(const JobSwitchState &s, const Event &e, Verdict v, const CtldConfig &cfg,
                std::string_view rule, std::vector<Action> &actions) {
  if (!setup_failures_reached(s, cfg)) {
    actions.push_back({.kind = s.requeue_allowed ? ActionKind::Requeue : ActionKind::Cancel,
                       .reason = setup_reason(e, v),
                       .rule = rule});
    return;
  }
  const std::uint32_t n = s.setup_failures + 1;
  std::string reason =
      fmt::format("{} {} time{} (switch_max_setup_failures={}): {}", kReasonSetupFailed, n,
                  n == 1 ? "" : "s", cfg.max_setup_failures, setup_what(e));
  actions.push_back({.kind = ActionKind::Log,
                     .reason = fmt::format("{} not requeued again: {}; held until `scontrol "
                                           "release`",
                                           job_tag(s), reason),
                     .error = true,
                     .rule = kRuleSetupFailuresHeld});
  actions.push_back({.kind = ActionKind::RequeueHeld,
                     .reason = std::move(reason),
                     .rule = kRuleSetupFailuresHeld});
}

std::string drain_reason(const JobSwitchState &s, const Event &e, Verdict v,
                         const CtldConfig &cfg) {
  std::string what;
  if (v == V::EagainExhausted)
    what = fmt::format("still returned slurm.EAGAIN after switch_retries={}", cfg.switch_retries);
  else if (v == V::EagainUnheld)
    what = "returned slurm.EAGAIN but block_job_complete is false";
  else
    what = e.outcome ? outcome_text(*e.outcome) : "failed";
  what = utf8_truncate_marked(what, kMaxReasonWhatBytes); // never half a character
  // sinfo -R shows 20 characters: they say what failed.
  return fmt::format("{}: JobId={} switch/lua job_complete {}", kReasonTeardownFailed, s.job.job_id,
                     what);
}

/// The late job_complete of a timed-out setup (switch.lua contract: job_start
/// timeout, "job_complete is called once more"), if one is due.
std::optional<Action> late_job_complete(const Event &e) {
  if (!e.outcome || e.outcome->kind != OutcomeKind::TimedOut)
    return std::nullopt;
  const Outcome &o = *e.outcome;
  Action a{.kind = ActionKind::RunLateJobComplete, .rule = "R_START_LATE"};
  if (o.late_return && o.late_return->rc == kSuccess && o.late_return->jobinfo) {
    a.jobinfo = o.late_return->jobinfo; // with that table
    return a;
  }
  if (o.late_return && o.late_return->rc == kSuccess && !o.late_return->jobinfo_error.empty())
    return a; // nil: the table could not be saved
  if (o.late_exit)
    return a; // nil: exited without returning
  return std::nullopt;
}

/// R_LATE_RESULT.  switch.lua contract, job_start timeout: the extra
/// call's "result is only logged": one line, in any state (the job's own
/// teardown may be over), at error level unless it returned SUCCESS or a
/// positive rc other than EAGAIN.  The state is unchanged.
StepResult late_result(const JobSwitchState &s, const Event &e) {
  StepResult out{.next = s, .actions = {}, .rule = "R_LATE_RESULT"};
  std::string what = e.outcome ? outcome_text(*e.outcome) : "ended";
  bool ok = e.outcome && e.outcome->kind == OutcomeKind::Returned && e.outcome->ret.rc >= 0 &&
            e.outcome->ret.rc != kEagain;
  out.actions.push_back(
      {.kind = ActionKind::Log,
       .reason = fmt::format("{} job_complete for the late setup result {} (only logged{})",
                             job_tag(s), what, ok ? "" : "; nothing drained, nothing retried"),
       .error = !ok,
       .rule = out.rule});
  return out;
}

} // namespace

StepResult step(const JobSwitchState &s, const Event &e, const CtldConfig &cfg) {
  StepResult out{.next = s, .actions = {}, .rule = "R_IGNORED"};
  if (e.kind == E::LateTeardownResult)
    return late_result(s, e);
  // A new run of the job (first start, or after a requeue) starts afresh.
  JobState from = (e.kind == E::SetupRequested && is_terminal(s.state)) ? S::None : s.state;
  Verdict v = verdict_of(s, e, cfg);
  const Row *r = find_row(from, e.kind, v);
  if (!r) {
    out.actions.push_back({.kind = ActionKind::Log,
                           .reason = fmt::format("{} {} ignored in state {}", job_tag(s),
                                                 event_kind_name(e.kind), job_state_name(s.state)),
                           .rule = out.rule});
    return out;
  }
  out.rule = r->rule;
  JobSwitchState &n = out.next;
  n.state = r->next;
  if (e.kind == E::SetupRequested) {
    n.retries = 0;
    n.nodes_held = false;
    n.jobinfo.reset();
  }
  n.recovered = false;
  auto add = [&](Action a) {
    a.rule = r->rule;
    out.actions.push_back(std::move(a));
  };
  for (Do d : r->actions) {
    if (d == Do::HoldAsBlockSays)
      d = s.block_job_complete ? Do::HoldJobAndNodes : Do::HoldJob;
    switch (d) {
    case Do::RunJobStart: // a new attempt: the whole switch_retries budget again
      n.generation++, n.retries = 0;
      add({.kind = ActionKind::RunJobStart});
      break;
    case Do::RunJobCompleteWithJobinfo:
      n.generation++;
      add({.kind = ActionKind::RunJobComplete, .jobinfo = n.jobinfo});
      break;
    case Do::RunJobCompleteNil:
      n.generation++;
      add({.kind = ActionKind::RunJobComplete});
      break;
    case Do::RunLateJobComplete:
      if (auto a = late_job_complete(e)) {
        Action late = *a;
        late.rule = "R_START_LATE";
        out.actions.push_back(std::move(late));
      }
      break;
    case Do::EndConfiguring:
      add({.kind = ActionKind::EndConfiguring});
      break;
    case Do::FailSetup:
      fail_setup(s, e, v, cfg, r->rule, out.actions);
      break;
    case Do::HoldJob:
    case Do::HoldAsBlockSays: // resolved above
      add({.kind = ActionKind::HoldNodes, .reason = "job"});
      break;
    case Do::HoldJobAndNodes:
      n.nodes_held = true;
      add({.kind = ActionKind::HoldNodes, .reason = "job+nodes"});
      break;
    case Do::Release:
      add({.kind = ActionKind::ReleaseNodes, .reason = n.nodes_held ? "job+nodes" : "job"});
      n.nodes_held = false;
      break;
    case Do::DrainIfConfigured:
      if (cfg.drain_on_failure)
        add({.kind = ActionKind::DrainNodes, .reason = drain_reason(s, e, v, cfg)});
      else
        add({.kind = ActionKind::Log,
             .reason = fmt::format("{} not draining the nodes ({}): switch_drain_on_failure=no",
                                   job_tag(s), drain_reason(s, e, v, cfg)),
             .error = true});
      break;
    case Do::ScheduleRetry:
      add({.kind = ActionKind::ScheduleRetry});
      break;
    case Do::CountRetry:
      n.retries++;
      break;
    case Do::StoreJobinfo:
      n.jobinfo = e.outcome ? e.outcome->ret.jobinfo : std::nullopt;
      break;
    case Do::ForgetJobinfo:
      if (r->next != S::TeardownRunning)
        n.jobinfo.reset();
      break;
    case Do::LogInfo:
    case Do::LogError:
      add({.kind = ActionKind::Log, .reason = log_text(*r, s, e, cfg), .error = d == Do::LogError});
      break;
    }
  }
  return out;
}

std::vector<std::string_view> rule_ids() {
  std::vector<std::string_view> ids;
  for (const Row &r : rule_table())
    ids.push_back(r.rule);
  ids.push_back(kRuleSetupFailuresHeld); // an action rule of every FailSetup row
  ids.push_back("R_IGNORED");
  return ids;
}

} // namespace switchlua
