// SPDX-License-Identifier: GPL-2.0-or-later
//
// The controller state machine's engine: `step()` reduces the event's
// Outcome to a Verdict, finds the row for (state, event, verdict) in the
// table of contract rules (job_fsm_table.cpp) and builds its actions, with
// the reasons and log lines they carry.
#include "ctld/job_fsm.hpp"
#include "ctld/job_fsm_table.hpp"
#include "ctld/node_attribution.hpp"

#include "common/hostlist.hpp"
#include "common/log_stamp.hpp"
#include "common/utf8.hpp"

#include <array>
#include <fmt/format.h>
#include <initializer_list>

namespace switchlua {

namespace fsm {

Verdict teardown_verdict_of(const Outcome &o, const JobSwitchState &s, const CtldConfig &cfg);

Verdict teardown_verdict(const Outcome &o, const JobSwitchState &s, const CtldConfig &cfg) {
  if (o.kind == OutcomeKind::SpawnFailed) // the script did not run (issue 20)
    return Verdict::HostFault;
  if (o.kind == OutcomeKind::Returned && o.ret.rc == kFabricDown)
    return Verdict::FabricDown; // the script says the whole fabric is down
  const Verdict v = teardown_verdict_of(o, s, cfg);
  // While the breaker is open, a teardown that would fail (and drain) is
  // kept instead (R_COMPLETE_FABRIC_DOWN).
  if (s.fabric_down &&
      (v == Verdict::Failure || v == Verdict::EagainExhausted || v == Verdict::EagainUnheld ||
       v == Verdict::KilledExhausted || v == Verdict::KilledUnheld))
    return Verdict::FabricDown;
  return v;
}

Verdict teardown_verdict_of(const Outcome &o, const JobSwitchState &s, const CtldConfig &cfg) {
  // A job still CONFIGURING (the undo of a killed job_start) keeps its
  // nodes: not in service, as if held.
  const bool held =
      s.nodes_held || s.state == JobState::SetupUndoing || s.state == JobState::SetupUndoingEnded;
  // Killed from outside (not the plugin's own timeout kill: TimedOut) or
  // lost with the supervisor: retried while the nodes are held
  // (R_COMPLETE_KILLED), then drained (R_COMPLETE_KILLED_EXHAUSTED).
  if (o.kind == OutcomeKind::Signaled || o.kind == OutcomeKind::Abandoned) {
    const bool left = s.retries < cfg.switch_retries;
    // Lost with a supervisor that died or that the watchdog replaced, the
    // nodes not held: the call may not have finished, so it runs again on
    // the new one, but as a retry, counted against switch_retries, and
    // drained as any failure once they are used up (issue 36:
    // R_COMPLETE_LOST; never re-run for ever with the nodes in service).
    if (!held && o.kind == OutcomeKind::Abandoned)
      return left ? Verdict::LostRetry : Verdict::KilledExhausted;
    // Killed from outside with the nodes in service: a failure
    // (R_COMPLETE_KILLED_UNHELD; a retry needs the nodes held).
    if (!held)
      return Verdict::KilledUnheld;
    return left ? Verdict::KilledRetry : Verdict::KilledExhausted;
  }
  if (o.kind != OutcomeKind::Returned)
    return Verdict::Failure;
  if (o.ret.rc == kSuccess)
    return Verdict::Success;
  if (o.ret.rc == kEagain) {
    if (!s.nodes_held)
      return Verdict::EagainUnheld;
    return s.retries < cfg.switch_retries ? Verdict::EagainRetry : Verdict::EagainExhausted;
  }
  return o.ret.rc > 0 ? Verdict::OtherPositive : Verdict::Failure;
}

} // namespace fsm

std::chrono::milliseconds fabric_backoff(std::uint32_t n) {
  constexpr std::chrono::milliseconds kFirst{5000}, kMax{60000};
  std::chrono::milliseconds d = kFirst;
  for (std::uint32_t i = 1; i < n && d < kMax; ++i)
    d *= 2;
  return std::min(d, kMax);
}

std::chrono::milliseconds host_fault_backoff(std::uint32_t n) {
  constexpr std::chrono::milliseconds kFirst{250}, kMax{30000};
  std::chrono::milliseconds d = kFirst;
  for (std::uint32_t i = 1; i < n && d < kMax; ++i)
    d *= 2;
  return std::min(d, kMax);
}

namespace {

using namespace fsm;

/// The "what happened" part of a job or drain reason is cut to this many
/// bytes, on a character boundary, "..." included.
constexpr std::size_t kMaxReasonWhatBytes = 160;

using S = JobState;
using E = EventKind;
using V = Verdict;

Verdict setup_verdict(const Outcome &o, const JobSwitchState &s, const CtldConfig &cfg) {
  switch (o.kind) {
  case OutcomeKind::Returned:
    if (o.ret.rc == kFabricDown || (o.ret.rc != kSuccess && s.fabric_down))
      return V::SetupFabricDown; // issue 20: the outage's, not the job's
    if (o.ret.rc != kSuccess)
      return V::Failed;
    if (!o.ret.jobinfo_error.empty())
      return V::Unsaveable;
    return o.ret.jobinfo ? V::Accepted : V::Declined;
  case OutcomeKind::LuaError:
  case OutcomeKind::BadReturn:
  case OutcomeKind::LoadFailed:
    return V::Failed;
  case OutcomeKind::SpawnFailed:     // the script did not run: the host's fault (issue 20)
    if (s.journal_down || o.refused) // issue 38: a pool short of IDs, the same
      return V::Failed; // issue 24: no setup without its record, none retried meanwhile
    return s.host_fault_age < cfg.switch_timeout ? V::HostFault : V::HostFaultExpired;
  case OutcomeKind::ExitedWithoutReturn:
    return V::Exited;
  case OutcomeKind::Signaled: // switch.lua contract: "dies on a signal is treated as timed out"
  case OutcomeKind::TimedOut:
    return V::TimedOut;
  case OutcomeKind::Abandoned: // the supervisor died or was replaced: as after a restart
    return s.lost < cfg.switch_retries ? V::Lost : V::TimedOut;
  }
  return V::Failed;
}

Verdict verdict_of(const JobSwitchState &s, const Event &e, const CtldConfig &cfg) {
  switch (e.kind) {
  case E::SetupResult:
    return e.outcome ? setup_verdict(*e.outcome, s, cfg) : V::TimedOut;
  case E::TeardownResult:
    return e.outcome ? teardown_verdict(*e.outcome, s, cfg) : V::Failure;
  case E::JobEnded:
    if (s.state == S::SetupWaitOrphan && s.held_by != 0 && !s.recovered)
      return V::NodesHeld; // issue 20: it waited for another job's teardown
    // After a restart, a call that was in flight is gone: the states that
    // waited for one re-run it; the others end as usual.
    if (s.recovered && (s.state == S::SetupRunning || s.state == S::SetupRunningEnded ||
                        s.state == S::TeardownRunning || s.state == S::TeardownRetryWait ||
                        s.state == S::SetupUndoing || s.state == S::SetupUndoingEnded))
      return V::Recovered;
    return s.block_job_complete ? V::Blocking : V::NonBlocking;
  case E::Recover:
    return V::Recovered;
  case E::SetupRequested: // the lost start (issue 24)
    if (s.orphan_pending)
      return V::OrphanPending;
    return s.held_by != 0 ? V::NodesHeld : V::None; // issue 20
  case E::OrphanGone:
    return s.held_by != 0 ? V::NodesHeld : V::None;
  case E::RetryTick:
    // Only a state that waits for one takes it: a teardown waiting to run
    // again, or a call waiting out a host-fault or fabric back-off.
    return s.state == S::TeardownRetryWait || s.host_faults > 0 || s.kept > 0 ? V::None : V::Stray;
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

/// The job as logs name it ("JobId=42"; common/log_stamp.hpp): the Log
/// actions' text follows kLogPrefix, which core.cpp adds.
std::string job_tag(const JobSwitchState &s) {
  return log_subject({.job_id = s.job.job_id});
}

/// The log line of a row's LogInfo / LogError: its rule's template
/// (rule_log_template(), job_fsm_table.cpp) with the job's facts.
std::string log_text(const Row &r, const JobSwitchState &s, const Event &e, const CtldConfig &cfg) {
  // A job_complete that did not return (Lua error, timeout, signal, lost
  // supervisor) has its outcome line from the controller already, with its
  // timings and a Lua error's traceback: one line per teardown outcome,
  // unless the rule has more to say (a retry).
  if (!rule_has_own_log(r.rule) && e.kind == E::TeardownResult && e.outcome &&
      e.outcome->kind != OutcomeKind::Returned && e.outcome->kind != OutcomeKind::SpawnFailed)
    return "";
  return fmt::format(fmt::runtime(rule_log_template(r.rule)), fmt::arg("job", job_tag(s)),
                     fmt::arg("hook", e.kind == E::SetupResult ? "job_start" : "job_complete"),
                     fmt::arg("what", e.outcome ? outcome_text(*e.outcome) : ""),
                     fmt::arg("attempt", s.job.attempt), fmt::arg("held_by", s.held_by),
                     fmt::arg("state", job_state_name(s.state)), fmt::arg("retry", s.retries + 1),
                     fmt::arg("retries", cfg.switch_retries), fmt::arg("fault", s.host_faults + 1),
                     fmt::arg("backoff", host_fault_backoff(s.host_faults + 1).count()),
                     fmt::arg("timeout", cfg.switch_timeout.count()),
                     fmt::arg("kept_backoff", fabric_backoff(s.kept + 1).count() / 1000),
                     fmt::arg("held", s.nodes_held ? ", its nodes held" : ""),
                     fmt::arg("teardown", r.next == S::Done ? "nothing to tear down"
                                                            : "tearing down with nil jobinfo"));
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
/// switch_max_setup_failures: requeue it held instead (and say so).  A
/// job_start the journal refused (SpawnFailed with journal_down: the
/// script never ran) is the host's fault: never held for it, and
/// count_setup_failures() does not count it.
void fail_setup(const JobSwitchState &s, const Event &e, Verdict v, const CtldConfig &cfg,
                std::string_view rule, std::vector<Action> &actions) {
  const bool never_ran = e.outcome && e.outcome->kind == OutcomeKind::SpawnFailed;
  if (never_ran || !setup_failures_reached(s, cfg)) {
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

/// FailSetupHostFault (R_START_HOST_FAULT_EXPIRED): requeue the job if it
/// may be, else cancel it; never held, never counted
/// (count_setup_failures() skips the rule).
void fail_setup_host_fault(const JobSwitchState &s, const Event &e, const CtldConfig &cfg,
                           std::string_view rule, std::vector<Action> &actions) {
  actions.push_back(
      {.kind = s.requeue_allowed ? ActionKind::Requeue : ActionKind::Cancel,
       .reason = fmt::format("{}: {} for switch_timeout={} s (a fault of the slurmctld host, "
                             "not of the job)",
                             kReasonSetupFailed, setup_what(e), cfg.switch_timeout.count()),
       .rule = rule});
}

/// FailSetupFabricDown (R_START_FABRIC_DOWN): requeue the job if it may be,
/// else cancel it, naming the outage; never held, never counted
/// (count_setup_failures() skips the rule).
void fail_setup_fabric_down(const JobSwitchState &s, const Event &e, std::string_view rule,
                            std::vector<Action> &actions) {
  actions.push_back(
      {.kind = s.requeue_allowed ? ActionKind::Requeue : ActionKind::Cancel,
       .reason = fmt::format("{}: the fabric is unavailable (switch/lua fabric breaker {}): {}",
                             kReasonSetupFailed, s.fabric_down ? "open" : "opening", setup_what(e)),
       .rule = rule});
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

/// R_LATE_RESULT (late_result_decision(), recovery_fsm.cpp): one line, in
/// any state (the job's own teardown may be over); the state is unchanged.
StepResult late_result(const JobSwitchState &s, const Event &e) {
  const TeardownDecision d = late_result_decision(e.outcome);
  StepResult out{.next = s, .actions = {}, .rule = d.rule};
  out.actions.push_back(
      {.kind = ActionKind::Log,
       .reason =
           fmt::format("{} job_complete for the late setup result {} (only logged{})", job_tag(s),
                       d.what, d.error ? "; nothing drained, nothing retried" : ""),
       .error = d.error,
       .rule = out.rule});
  return out;
}

} // namespace

namespace {

/// What step() knows while it carries out one row.
struct RowContext {
  const Row &row;
  const JobSwitchState &s; ///< the state before the event
  const Event &e;
  Verdict v;
  const CtldConfig &cfg;
  StepResult &out; ///< out.next: the state being built
  void add(Action a) {
    a.rule = row.rule;
    out.actions.push_back(std::move(a));
  }
};

/// DrainIfConfigured: the job's nodes, or only those job_complete named
/// among them (issue 20, per-node attribution; none for an empty list), are
/// drained, unless switch_drain_on_failure=no.
void drain_if_configured(RowContext &c) {
  const DrainTarget t =
      drain_target(c.s.job, c.e.kind == E::TeardownResult ? c.e.outcome : nullptr);
  const std::string reason = drain_reason(c.s, c.e, c.v, c.cfg);
  if (!t.foreign.empty())
    c.add({.kind = ActionKind::Log,
           .reason = fmt::format("{} job_complete named {} that {} not the job's ({}): never "
                                 "drained{}",
                                 job_tag(c.s), compress_hostlist(t.foreign),
                                 t.foreign.size() == 1 ? "is" : "are", c.s.job.nodes.value_or(""),
                                 t.nodes ? "" : "; draining the job's nodes instead"),
           .error = true});
  if (t.none)
    c.add({.kind = ActionKind::Log,
           .reason = fmt::format("{} job_complete named none of the job's nodes (an empty list): "
                                 "nothing drained ({})",
                                 job_tag(c.s), reason),
           .error = true});
  else if (c.cfg.drain_on_failure)
    c.add({.kind = ActionKind::DrainNodes, .reason = reason, .nodes = t.nodes.value_or("")});
  else
    c.add(
        {.kind = ActionKind::Log,
         .reason = fmt::format("{} not draining {} ({}): switch_drain_on_failure=no", job_tag(c.s),
                               t.nodes ? *t.nodes : std::string("the nodes"), reason),
         .error = true});
}

/// The Do's that only change the next state; false for the others.
bool change_state(Do d, RowContext &c) {
  JobSwitchState &n = c.out.next;
  switch (d) {
  case Do::CountRetry:
    n.retries++;
    return true;
  case Do::StoreJobinfo:
    n.jobinfo = c.e.outcome ? c.e.outcome->ret.jobinfo : std::nullopt;
    return true;
  case Do::ForgetJobinfo:
    if (c.row.next != S::TeardownRunning)
      n.jobinfo.reset();
    return true;
  case Do::CountHostFault:
    n.host_faults++;
    return true;
  case Do::CountLost:
    n.lost++;
    return true;
  case Do::CountKept:
    n.kept++;
    return true;
  default:
    return false;
  }
}

/// The Do's that start a hook call (a new generation: older results are stale).
bool run_call(Do d, RowContext &c) {
  JobSwitchState &n = c.out.next;
  switch (d) {
  case Do::RunJobStart: // a new attempt: the whole switch_retries budget again
    n.generation++, n.retries = 0;
    c.add({.kind = ActionKind::RunJobStart});
    return true;
  case Do::RunJobCompleteWithJobinfo:
    n.generation++;
    c.add({.kind = ActionKind::RunJobComplete, .jobinfo = n.jobinfo});
    return true;
  case Do::RunJobCompleteNil:
    n.generation++;
    c.add({.kind = ActionKind::RunJobComplete});
    return true;
  case Do::RunLateJobComplete:
    if (auto a = late_job_complete(c.e)) {
      Action late = *a;
      late.rule = "R_START_LATE";
      c.out.actions.push_back(std::move(late));
    }
    return true;
  default:
    return false;
  }
}

/// The Do's that act on the job and its nodes in Slurm, or log.
void act(Do d, RowContext &c) {
  JobSwitchState &n = c.out.next;
  switch (d) {
  case Do::EndConfiguring:
    c.add({.kind = ActionKind::EndConfiguring});
    break;
  case Do::FailSetup:
    fail_setup(c.s, c.e, c.v, c.cfg, c.row.rule, c.out.actions);
    break;
  case Do::FailSetupHostFault:
    fail_setup_host_fault(c.s, c.e, c.cfg, c.row.rule, c.out.actions);
    break;
  case Do::FailSetupFabricDown:
    fail_setup_fabric_down(c.s, c.e, c.row.rule, c.out.actions);
    break;
  case Do::ScheduleFabricRetry:
    c.add({.kind = ActionKind::ScheduleRetry, .delay = fabric_backoff(n.kept)});
    break;
  case Do::ScheduleBackoff:
    c.add({.kind = ActionKind::ScheduleRetry, .delay = host_fault_backoff(n.host_faults)});
    break;
  case Do::HoldJob:
    c.add({.kind = ActionKind::HoldNodes, .hold = HoldScope::Job});
    break;
  case Do::HoldJobAndNodes:
    n.nodes_held = true;
    c.add({.kind = ActionKind::HoldNodes, .hold = HoldScope::JobAndNodes});
    break;
  case Do::Release:
    c.add({.kind = ActionKind::ReleaseNodes,
           .hold = n.nodes_held ? HoldScope::JobAndNodes : HoldScope::Job});
    n.nodes_held = false;
    break;
  case Do::DrainIfConfigured:
    drain_if_configured(c);
    break;
  case Do::ScheduleRetry:
    c.add({.kind = ActionKind::ScheduleRetry});
    break;
  case Do::LogInfo:
  case Do::LogError:
    if (std::string text = log_text(c.row, c.s, c.e, c.cfg); !text.empty())
      c.add({.kind = ActionKind::Log, .reason = std::move(text), .error = d == Do::LogError});
    break;
  default: // HoldAsBlockSays is resolved by step(); the others by the functions above
    break;
  }
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
  out.pools = r->pools; // issue 38
  JobSwitchState &n = out.next;
  n.state = r->next;
  if (e.kind == E::SetupRequested) {
    n.retries = 0;
    n.nodes_held = false;
    n.jobinfo.reset();
  }
  n.recovered = false;
  if (e.kind == E::SetupRequested || (e.outcome && e.outcome->kind != OutcomeKind::SpawnFailed))
    n.host_faults = 0; // a runner started: the host is fine again
  RowContext c{.row = *r, .s = s, .e = e, .v = v, .cfg = cfg, .out = out};
  for (Do d : r->actions) {
    if (d == Do::HoldAsBlockSays)
      d = s.block_job_complete ? Do::HoldJobAndNodes : Do::HoldJob;
    if (!change_state(d, c) && !run_call(d, c))
      act(d, c);
  }
  return out;
}

std::vector<std::string_view> rule_ids() {
  std::vector<std::string_view> ids;
  for (const Row &r : rule_table())
    ids.push_back(r.rule);
  for (const RecoveryRow &r : recovery_table())
    ids.push_back(r.rule);
  for (const OutcomeRow &r : outcome_table())
    ids.push_back(r.rule);
  ids.push_back(kRuleSetupFailuresHeld); // an action rule of every FailSetup row
  ids.push_back("R_IGNORED");
  return ids;
}

} // namespace switchlua
