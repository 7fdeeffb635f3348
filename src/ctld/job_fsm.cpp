// SPDX-License-Identifier: GPL-2.0-or-later
//
// The controller state machine as a table of contract rules.  `step()`
// reduces the event's Outcome to a Verdict, finds the row for (state, event,
// verdict) and builds its actions.  One row per rule; the id is what tests,
// logs and switch.lua(5) call it.
#include "ctld/job_fsm.hpp"

#include "common/utf8.hpp"

#include <array>
#include <fmt/format.h>
#include <initializer_list>

namespace switchlua {
namespace {

/// The "what happened" part of a job or drain reason is cut to this many
/// bytes, on a character boundary, "..." included.
constexpr std::size_t kMaxReasonWhatBytes = 160;

/// What an event means for the table: outcomes reduced per hook.
enum class Verdict : std::uint8_t {
  None,            // events without an outcome
  Accepted,        // job_start: SUCCESS with a jobinfo table
  Declined,        // job_start: SUCCESS with nil
  Failed,          // job_start: rc != SUCCESS, Lua error, bad return, load/spawn failure
  Unsaveable,      // job_start: SUCCESS with a table that cannot be saved
  Exited,          // job_start: exited without returning
  TimedOut,        // job_start: timed out, died on a signal, or abandoned
  Success,         // job_complete: SUCCESS
  EagainRetry,     // job_complete: EAGAIN, nodes held, retries left
  EagainExhausted, // job_complete: EAGAIN, nodes held, switch_retries used up
  EagainUnheld,    // job_complete: EAGAIN but nodes not held: a failure
  OtherPositive,   // job_complete: positive rc other than EAGAIN: logged
  Failure,         // job_complete: negative rc, error, the plugin's own timeout kill
  KilledRetry,     // job_complete: killed from outside or lost with the supervisor, retries left
  KilledExhausted, // job_complete: the same, switch_retries used up
  Blocking,        // JobEnded with block_job_complete true
  NonBlocking,     // JobEnded with block_job_complete false
  Recovered,       // JobEnded / Recover of a state loaded after a restart
};

/// Actions of a row, before parameters are filled in.
enum class Do : std::uint8_t {
  RunJobStart,
  RunJobCompleteWithJobinfo, // the stored jobinfo
  RunJobCompleteNil,         // nil: the controller cannot say what the setup left
  RunLateJobComplete,        // only if the timed-out setup reported late
  EndConfiguring,
  FailSetup,         // Requeue if allowed, else Cancel; reason per verdict
  HoldJob,           // keep the job COMPLETING; nodes stay in service
  HoldJobAndNodes,   // keep the job and its nodes COMPLETING
  HoldAsBlockSays,   // HoldJobAndNodes if block_job_complete is true, else HoldJob
  Release,           // undo HoldJob / HoldJobAndNodes
  DrainIfConfigured, // drain unless switch_drain_on_failure=no
  ScheduleRetry,
  CountRetry,
  StoreJobinfo,
  ForgetJobinfo,
  LogInfo,
  LogError,
};

struct Row {
  std::string_view rule;
  JobState state;
  EventKind event;
  Verdict verdict;
  JobState next;
  std::initializer_list<Do> actions;
};

using S = JobState;
using E = EventKind;
using V = Verdict;

// clang-format off
const Row kRules[] = {
  // A job with --network was allocated: run job_start; it waits in CONFIGURING.
  {"R_SETUP",                 S::None,              E::SetupRequested, V::None,       S::SetupRunning,
     {Do::RunJobStart}},
  // switch.lua contract: job_start rc == SUCCESS with a table: store it, launch.
  {"R_START_OK",              S::SetupRunning,      E::SetupResult, V::Accepted,      S::Running,
     {Do::StoreJobinfo, Do::LogInfo, Do::EndConfiguring}},
  // jobinfo == nil: not managed; no stepinfo, no job_complete, no step hooks.
  {"R_START_DECLINE",         S::SetupRunning,      E::SetupResult, V::Declined,      S::Declined,
     {Do::ForgetJobinfo, Do::LogInfo, Do::EndConfiguring}},
  // rc ~= SUCCESS, an error, or a non-number rc: requeue, else cancel with
  // "switch setup failed"; no drain; no job_complete (job_start undid its work).
  {"R_START_FAIL",            S::SetupRunning,      E::SetupResult, V::Failed,        S::SetupFailed,
     {Do::ForgetJobinfo, Do::LogError, Do::FailSetup, Do::EndConfiguring}},
  // SUCCESS with a table that cannot be saved: the fabric is set up but the
  // controller cannot keep what describes it: fail, then job_complete(nil).
  {"R_START_UNSAVEABLE",      S::SetupRunning,      E::SetupResult, V::Unsaveable,    S::SetupAbandoned,
     {Do::ForgetJobinfo, Do::LogError, Do::FailSetup, Do::EndConfiguring}},
  // Exited without returning: failed as a returned failure, but job_complete(nil) runs.
  {"R_START_EXIT",            S::SetupRunning,      E::SetupResult, V::Exited,        S::SetupAbandoned,
     {Do::ForgetJobinfo, Do::LogError, Do::FailSetup, Do::EndConfiguring}},
  // Timed out (or died on a signal): "switch setup timed out", job_complete(nil)
  // at the job's end; a late SUCCESS+table or exit gets one more job_complete.
  {"R_START_TIMEOUT",         S::SetupRunning,      E::SetupResult, V::TimedOut,      S::SetupAbandoned,
     {Do::ForgetJobinfo, Do::LogError, Do::FailSetup, Do::EndConfiguring, Do::RunLateJobComplete}},

  // The job ended (cancel, time limit) while job_start ran: not a failure, no
  // requeue, no drain; hold the job and its nodes until the setup reports.
  {"R_CANCEL_DURING_SETUP",   S::SetupRunning,      E::JobEnded,    V::Blocking,      S::SetupRunningEnded,
     {Do::HoldJobAndNodes, Do::LogInfo}},
  {"R_CANCEL_DURING_SETUP",   S::SetupRunning,      E::JobEnded,    V::NonBlocking,   S::SetupRunningEnded,
     {Do::HoldJobAndNodes, Do::LogInfo}},
  // ... then the teardown runs once, with what the setup returned ...
  {"R_CANCELLED_SETUP_OK",    S::SetupRunningEnded, E::SetupResult, V::Accepted,      S::TeardownRunning,
     {Do::StoreJobinfo, Do::EndConfiguring, Do::RunJobCompleteWithJobinfo}},
  // ... or not at all when there is nothing to tear down ...
  {"R_CANCELLED_SETUP_NONE",  S::SetupRunningEnded, E::SetupResult, V::Declined,      S::Done,
     {Do::ForgetJobinfo, Do::LogInfo, Do::EndConfiguring, Do::Release}},
  {"R_CANCELLED_SETUP_NONE",  S::SetupRunningEnded, E::SetupResult, V::Failed,        S::Done,
     {Do::ForgetJobinfo, Do::LogInfo, Do::EndConfiguring, Do::Release}},
  // ... or with nil when the setup's result is unknown.
  {"R_CANCELLED_SETUP_UNKNOWN", S::SetupRunningEnded, E::SetupResult, V::Unsaveable,  S::TeardownRunning,
     {Do::ForgetJobinfo, Do::LogInfo, Do::EndConfiguring, Do::RunJobCompleteNil}},
  {"R_CANCELLED_SETUP_UNKNOWN", S::SetupRunningEnded, E::SetupResult, V::Exited,      S::TeardownRunning,
     {Do::ForgetJobinfo, Do::LogInfo, Do::EndConfiguring, Do::RunJobCompleteNil}},
  {"R_CANCELLED_SETUP_UNKNOWN", S::SetupRunningEnded, E::SetupResult, V::TimedOut,    S::TeardownRunning,
     {Do::ForgetJobinfo, Do::LogInfo, Do::EndConfiguring, Do::RunJobCompleteNil,
      Do::RunLateJobComplete}},

  // The job ended after a successful setup: job_complete(job, jobinfo).
  // block_job_complete true keeps the nodes COMPLETING until it reports.
  {"R_END_HOLD",              S::Running,           E::JobEnded,    V::Blocking,      S::TeardownRunning,
     {Do::HoldJobAndNodes, Do::RunJobCompleteWithJobinfo}},
  {"R_END",                   S::Running,           E::JobEnded,    V::NonBlocking,   S::TeardownRunning,
     {Do::HoldJob, Do::RunJobCompleteWithJobinfo}},
  // A failed setup is not torn down.
  {"R_END_AFTER_FAIL",        S::SetupFailed,       E::JobEnded,    V::Blocking,      S::Done, {Do::LogInfo}},
  {"R_END_AFTER_FAIL",        S::SetupFailed,       E::JobEnded,    V::NonBlocking,   S::Done, {Do::LogInfo}},
  // An abandoned setup (timeout, exit, death) is torn down with nil jobinfo.
  // Its job ended after the setup did, so the nodes are held only when
  // block_job_complete is true (switch.lua contract: job_complete EAGAIN is
  // a failure otherwise).
  {"R_END_AFTER_ABANDON",     S::SetupAbandoned,    E::JobEnded,    V::Blocking,      S::TeardownRunning,
     {Do::HoldJobAndNodes, Do::RunJobCompleteNil}},
  {"R_END_AFTER_ABANDON",     S::SetupAbandoned,    E::JobEnded,    V::NonBlocking,   S::TeardownRunning,
     {Do::HoldJob, Do::RunJobCompleteNil}},

  // switch.lua contract: job_complete rc == SUCCESS: the nodes go back to service.
  {"R_COMPLETE_OK",           S::TeardownRunning,   E::TeardownResult, V::Success,    S::Done,
     {Do::LogInfo, Do::Release, Do::ForgetJobinfo}},
  // Any other positive value is only logged.
  {"R_COMPLETE_POSITIVE",     S::TeardownRunning,   E::TeardownResult, V::OtherPositive, S::Done,
     {Do::LogError, Do::Release, Do::ForgetJobinfo}},
  // EAGAIN with the nodes held: called again at the next periodic check ...
  {"R_COMPLETE_EAGAIN",       S::TeardownRunning,   E::TeardownResult, V::EagainRetry, S::TeardownRetryWait,
     {Do::CountRetry, Do::LogInfo, Do::ScheduleRetry}},
  // ... up to switch_retries times, then drained like any failure.
  {"R_COMPLETE_EAGAIN_EXHAUSTED", S::TeardownRunning, E::TeardownResult, V::EagainExhausted, S::Done,
     {Do::LogError, Do::DrainIfConfigured, Do::Release, Do::ForgetJobinfo}},
  // EAGAIN without held nodes is a failure.
  {"R_COMPLETE_EAGAIN_UNHELD", S::TeardownRunning,  E::TeardownResult, V::EagainUnheld, S::Done,
     {Do::LogError, Do::DrainIfConfigured, Do::Release, Do::ForgetJobinfo}},
  // rc < 0 or an error: drain the job's nodes unless switch_drain_on_failure=no.
  {"R_COMPLETE_FAIL",         S::TeardownRunning,   E::TeardownResult, V::Failure,    S::Done,
     {Do::LogError, Do::DrainIfConfigured, Do::Release, Do::ForgetJobinfo}},
  // Killed by a signal that was not the plugin's timeout kill (the OOM
  // killer), or lost with the supervisor: job_complete is safe to repeat, so
  // it runs again at the next periodic check, the job (and its nodes, if
  // they were held) kept as they are ...
  {"R_COMPLETE_KILLED",       S::TeardownRunning,   E::TeardownResult, V::KilledRetry, S::TeardownRetryWait,
     {Do::CountRetry, Do::LogInfo, Do::ScheduleRetry}},
  // ... up to switch_retries times, then drained like any failure.
  {"R_COMPLETE_KILLED_EXHAUSTED", S::TeardownRunning, E::TeardownResult, V::KilledExhausted, S::Done,
     {Do::LogError, Do::DrainIfConfigured, Do::Release, Do::ForgetJobinfo}},
  {"R_RETRY",                 S::TeardownRetryWait, E::RetryTick,   V::None,          S::TeardownRunning,
     {Do::RunJobCompleteWithJobinfo}},

  // A job_start killed before it reported (slurmctld restart or reconfigure)
  // is abandoned: job_complete(job, nil) for that attempt runs first, the
  // job still waiting in CONFIGURING ...
  {"R_RESTART_SETUP",         S::SetupRunning,      E::Recover,     V::Recovered,     S::SetupUndoing,
     {Do::LogInfo, Do::RunJobCompleteNil}},
  // ... then job_start runs again, as a new attempt, if it succeeded (any
  // rc >= 0 but EAGAIN) ...
  {"R_UNDO_OK",               S::SetupUndoing,      E::TeardownResult, V::Success,    S::SetupRunning,
     {Do::LogInfo, Do::RunJobStart}},
  {"R_UNDO_OK",               S::SetupUndoing,      E::TeardownResult, V::OtherPositive, S::SetupRunning,
     {Do::LogInfo, Do::RunJobStart}},
  // That job_complete killed from outside or lost with the supervisor (as
  // R_COMPLETE_KILLED): safe to repeat, so it runs again at once, up to
  // switch_retries times; the job keeps waiting (and its holds stay).
  {"R_UNDO_KILLED",           S::SetupUndoing,      E::TeardownResult, V::KilledRetry, S::SetupUndoing,
     {Do::CountRetry, Do::LogInfo, Do::RunJobCompleteNil}},
  {"R_UNDO_KILLED",           S::SetupUndoingEnded, E::TeardownResult, V::KilledRetry, S::SetupUndoingEnded,
     {Do::CountRetry, Do::LogInfo, Do::RunJobCompleteNil}},
  // ... else the job fails as a failed setup and its nodes are drained as
  // after a failed teardown.
  {"R_UNDO_FAIL",             S::SetupUndoing,      E::TeardownResult, V::Failure,    S::SetupFailed,
     {Do::LogError, Do::FailSetup, Do::EndConfiguring, Do::DrainIfConfigured}},
  {"R_UNDO_FAIL",             S::SetupUndoing,      E::TeardownResult, V::EagainRetry, S::SetupFailed,
     {Do::LogError, Do::FailSetup, Do::EndConfiguring, Do::DrainIfConfigured}},
  {"R_UNDO_FAIL",             S::SetupUndoing,      E::TeardownResult, V::EagainExhausted, S::SetupFailed,
     {Do::LogError, Do::FailSetup, Do::EndConfiguring, Do::DrainIfConfigured}},
  {"R_UNDO_FAIL",             S::SetupUndoing,      E::TeardownResult, V::EagainUnheld, S::SetupFailed,
     {Do::LogError, Do::FailSetup, Do::EndConfiguring, Do::DrainIfConfigured}},
  {"R_UNDO_FAIL",             S::SetupUndoing,      E::TeardownResult, V::KilledExhausted, S::SetupFailed,
     {Do::LogError, Do::FailSetup, Do::EndConfiguring, Do::DrainIfConfigured}},
  // The job ended while that job_complete ran: hold the job and its nodes
  // until it reports; no job_start then.
  {"R_UNDO_ENDED",            S::SetupUndoing,      E::JobEnded,    V::Blocking,      S::SetupUndoingEnded,
     {Do::HoldJobAndNodes, Do::LogInfo}},
  {"R_UNDO_ENDED",            S::SetupUndoing,      E::JobEnded,    V::NonBlocking,   S::SetupUndoingEnded,
     {Do::HoldJobAndNodes, Do::LogInfo}},
  {"R_UNDO_ENDED_OK",         S::SetupUndoingEnded, E::TeardownResult, V::Success,    S::Done,
     {Do::LogInfo, Do::EndConfiguring, Do::Release}},
  {"R_UNDO_ENDED_OK",         S::SetupUndoingEnded, E::TeardownResult, V::OtherPositive, S::Done,
     {Do::LogInfo, Do::EndConfiguring, Do::Release}},
  {"R_UNDO_ENDED_FAIL",       S::SetupUndoingEnded, E::TeardownResult, V::Failure,    S::Done,
     {Do::LogError, Do::EndConfiguring, Do::DrainIfConfigured, Do::Release}},
  {"R_UNDO_ENDED_FAIL",       S::SetupUndoingEnded, E::TeardownResult, V::EagainRetry, S::Done,
     {Do::LogError, Do::EndConfiguring, Do::DrainIfConfigured, Do::Release}},
  {"R_UNDO_ENDED_FAIL",       S::SetupUndoingEnded, E::TeardownResult, V::EagainExhausted, S::Done,
     {Do::LogError, Do::EndConfiguring, Do::DrainIfConfigured, Do::Release}},
  {"R_UNDO_ENDED_FAIL",       S::SetupUndoingEnded, E::TeardownResult, V::KilledExhausted, S::Done,
     {Do::LogError, Do::EndConfiguring, Do::DrainIfConfigured, Do::Release}},
  // Restart during that job_complete: it runs again (still with nil).
  {"R_RESTART_UNDO",          S::SetupUndoing,      E::Recover,     V::Recovered,     S::SetupUndoing,
     {Do::LogInfo, Do::RunJobCompleteNil}},
  {"R_RESTART_UNDO",          S::SetupUndoing,      E::JobEnded,    V::Recovered,     S::SetupUndoingEnded,
     {Do::HoldJobAndNodes, Do::LogInfo, Do::RunJobCompleteNil}},
  {"R_RESTART_UNDO",          S::SetupUndoingEnded, E::Recover,     V::Recovered,     S::SetupUndoingEnded,
     {Do::HoldJobAndNodes, Do::LogInfo, Do::RunJobCompleteNil}},
  {"R_RESTART_UNDO",          S::SetupUndoingEnded, E::JobEnded,    V::Recovered,     S::SetupUndoingEnded,
     {Do::HoldJobAndNodes, Do::LogInfo, Do::RunJobCompleteNil}},

  // Restart: a teardown that was running or waiting runs job_complete again
  // with the same jobinfo, the nodes held whatever block_job_complete says.
  {"R_RESTART_TEARDOWN",      S::TeardownRunning,   E::JobEnded,    V::Recovered,     S::TeardownRunning,
     {Do::HoldJobAndNodes, Do::LogInfo, Do::RunJobCompleteWithJobinfo}},
  {"R_RESTART_TEARDOWN",      S::TeardownRunning,   E::Recover,     V::Recovered,     S::TeardownRunning,
     {Do::HoldJobAndNodes, Do::LogInfo, Do::RunJobCompleteWithJobinfo}},
  {"R_RESTART_TEARDOWN",      S::TeardownRetryWait, E::JobEnded,    V::Recovered,     S::TeardownRunning,
     {Do::HoldJobAndNodes, Do::LogInfo, Do::RunJobCompleteWithJobinfo}},
  {"R_RESTART_TEARDOWN",      S::TeardownRetryWait, E::Recover,     V::Recovered,     S::TeardownRunning,
     {Do::HoldJobAndNodes, Do::LogInfo, Do::RunJobCompleteWithJobinfo}},
  // Restart: a setup whose job had ended, or that was abandoned, is torn down with nil.
  {"R_RESTART_UNKNOWN",       S::SetupRunning,      E::JobEnded,    V::Recovered,     S::TeardownRunning,
     {Do::HoldJobAndNodes, Do::LogInfo, Do::RunJobCompleteNil}},
  {"R_RESTART_UNKNOWN",       S::SetupRunningEnded, E::JobEnded,    V::Recovered,     S::TeardownRunning,
     {Do::HoldJobAndNodes, Do::LogInfo, Do::RunJobCompleteNil}},
  {"R_RESTART_UNKNOWN",       S::SetupRunningEnded, E::Recover,     V::Recovered,     S::TeardownRunning,
     {Do::HoldJobAndNodes, Do::LogInfo, Do::RunJobCompleteNil}},
  // An abandoned setup's teardown that had not started: as at the job's end.
  {"R_RESTART_UNKNOWN",       S::SetupAbandoned,    E::Recover,     V::Recovered,     S::TeardownRunning,
     {Do::HoldAsBlockSays, Do::LogInfo, Do::RunJobCompleteNil}},
  // Restart: a running job or a failed setup needs nothing now.
  {"R_RESTART_NOTHING",       S::Running,           E::Recover,     V::Recovered,     S::Running, {}},
  {"R_RESTART_NOTHING",       S::SetupFailed,       E::Recover,     V::Recovered,     S::SetupFailed, {}},
};
// clang-format on

/// The rc of a job_start / job_complete return, in words.
std::string rc_text(std::int64_t rc) {
  if (rc == kSuccess)
    return "rc=0 (slurm.SUCCESS)";
  if (rc == kEagain)
    return "rc=11 (slurm.EAGAIN)";
  return fmt::format("rc={}", rc);
}

/// What a call ended with, for reasons and logs ("returned rc=-1",
/// "raised: switch.lua:12: boom", "timed out after 10 s").
std::string what_happened(const Outcome &o) {
  // Reasons and log lines carry the first line; the traceback is logged
  // once, with the outcome, by the engine.
  std::string first = o.message.substr(0, o.message.find('\n'));
  switch (o.kind) {
  case OutcomeKind::Returned:
    if (!o.ret.jobinfo_error.empty())
      return fmt::format("returned a jobinfo that cannot be saved: {}",
                         o.ret.jobinfo_error.substr(0, o.ret.jobinfo_error.find('\n')));
    return "returned " + rc_text(o.ret.rc);
  case OutcomeKind::LuaError:
    return "raised an error: " + first;
  case OutcomeKind::BadReturn:
    return "broke the return convention: " + first;
  case OutcomeKind::LoadFailed:
    return "could not load the script: " + first;
  case OutcomeKind::SpawnFailed:
    return "could not be started: " + first;
  case OutcomeKind::ExitedWithoutReturn:
    return fmt::format("exited with status {} without returning", o.exit_status);
  case OutcomeKind::Signaled:
    return fmt::format("died on signal {}", o.signal);
  case OutcomeKind::TimedOut:
    return fmt::format("timed out after {} ms and was killed with its process group",
                       o.elapsed.count());
  case OutcomeKind::Abandoned:
    return "was abandoned: " + first;
  }
  return "ended";
}

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
  for (const Row &r : kRules)
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
  std::string what = e.outcome ? what_happened(*e.outcome) : "";
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
  if (rule == "R_COMPLETE_KILLED" || rule == "R_UNDO_KILLED")
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
  // A job_complete that did not return (Lua error, timeout, signal, lost
  // supervisor) has its outcome line from the controller already, with its
  // timings and a Lua error's traceback: one line per teardown outcome.
  if (e.kind == E::TeardownResult && e.outcome && e.outcome->kind != OutcomeKind::Returned &&
      e.outcome->kind != OutcomeKind::SpawnFailed)
    return "";
  return fmt::format("{} {} {}", job_tag(s), hook, what);
}

std::string setup_reason(const Event &e, Verdict v) {
  std::string_view head = v == V::TimedOut ? kReasonSetupTimedOut : kReasonSetupFailed;
  std::string what = e.outcome ? what_happened(*e.outcome) : "no result";
  what = utf8_truncate_marked(what, kMaxReasonWhatBytes); // never half a character
  if (e.kind == E::TeardownResult)                        // R_UNDO_FAIL
    return fmt::format("{}: switch/lua job_complete for a killed job_start {}", kReasonSetupFailed,
                       what);
  return fmt::format("{}: switch/lua job_start {}", head, what);
}

std::string drain_reason(const JobSwitchState &s, const Event &e, Verdict v,
                         const CtldConfig &cfg) {
  std::string what;
  if (v == V::EagainExhausted)
    what = fmt::format("still returned slurm.EAGAIN after switch_retries={}", cfg.switch_retries);
  else if (v == V::EagainUnheld)
    what = "returned slurm.EAGAIN but block_job_complete is false";
  else
    what = e.outcome ? what_happened(*e.outcome) : "failed";
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
  std::string what = e.outcome ? what_happened(*e.outcome) : "ended";
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

std::string outcome_text(const Outcome &o) {
  return what_happened(o);
}

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
      add({.kind = s.requeue_allowed ? ActionKind::Requeue : ActionKind::Cancel,
           .reason = setup_reason(e, v)});
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
      if (std::string text = log_text(*r, s, e, cfg); !text.empty())
        add({.kind = ActionKind::Log, .reason = std::move(text), .error = d == Do::LogError});
      break;
    }
  }
  return out;
}

std::vector<std::string_view> rule_ids() {
  std::vector<std::string_view> ids;
  for (const Row &r : kRules)
    ids.push_back(r.rule);
  ids.push_back("R_IGNORED");
  return ids;
}

} // namespace switchlua
