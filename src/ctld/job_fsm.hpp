// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: ctld/job_fsm.hpp
//
// The per-job state machine of the controller: what happens to a job and its
// nodes after each outcome of job_start and job_complete, after a timeout, a
// late result, a cancel, and a slurmctld restart.  Pure: `step()` takes the
// job's switch state, one event and the configuration, and returns the next
// state and the actions to take, as values.  The Slurm glue and the
// `switch-lua simulate` harness both execute those actions; nothing here
// calls Slurm, spawns or sleeps.
//
// The rules are rows of one table in job_fsm.cpp, each with a stable id
// (R_START_FAIL, ...) used in the row, in `Action::rule` (so logs say which
// rule fired) and in the test named after it.  Rule source: the comments above
// slurm_switch_job_start and slurm_switch_job_complete in the contract script
// (switch.lua(5)).
//
//   States (JobState)                      Events (EventKind)
//   None -> SetupRunning                   SetupRequested  (job allocated, --network set)
//   SetupRunning -> Running | Declined |   SetupResult     (job_start's Outcome)
//     SetupFailed | SetupAbandoned |       JobEnded        (slurmctld's job_complete)
//     SetupRunningEnded (job ended)        TeardownResult  (job_complete's Outcome)
//   Running -> TeardownRunning             RetryTick       (periodic check)
//   TeardownRunning -> Done |              Recover         (after a slurmctld restart)
//     TeardownRetryWait                    LateTeardownResult (only logged)
//   SetupFailed / SetupAbandoned -> Done | TeardownRunning on JobEnded
#pragma once

#include "ctld/config.hpp"
#include "lua/contract.hpp"
#include "supervisor/outcome.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace switchlua {

/// Where a job is in its switch life.  Terminal: None, Declined, Done.
enum class JobState : std::uint8_t {
  None,              ///< no switch state (never set up, or fully finished)
  SetupRunning,      ///< job_start in flight; the job waits in CONFIGURING
  SetupRunningEnded, ///< the job ended (cancel) while job_start ran; nodes held
  Running,           ///< set up; jobinfo stored; the job may launch
  Declined,          ///< job_start returned nil jobinfo: not managed
  SetupFailed,       ///< setup returned a failure; job requeued/cancelled; no teardown
  SetupAbandoned,    ///< setup timed out / died / exited; job failed; teardown(nil) at end
  TeardownRunning,   ///< job_complete in flight
  TeardownRetryWait, ///< job_complete said EAGAIN; nodes held; waiting for a tick
  Done,              ///< torn down (or failed and drained); nodes released
  /// job_complete(job, nil) runs for a job_start killed before it reported
  /// (restart, reconfigure); the job still waits in CONFIGURING; job_start
  /// runs again (a new attempt) once it succeeded.
  SetupUndoing,
  SetupUndoingEnded, ///< the same, after the job ended; job and nodes held
  /// Issue 24, the lost start: an earlier attempt of this job id was
  /// launched before a slurmctld crash and no job record carries it; its
  /// nodes may still run it, so it is not torn down yet, and this start
  /// waits in CONFIGURING (no job_start yet) until that teardown is over.
  SetupWaitOrphan,
};
std::string_view job_state_name(JobState s);
/// Whether nothing more can happen to this run of the job.
bool is_terminal(JobState s);

/// The inputs of the state machine.
enum class EventKind : std::uint8_t {
  SetupRequested,     ///< switch_p_job_start for a job with --network
  SetupResult,        ///< job_start finished: `outcome`
  JobEnded,           ///< switch_p_job_complete: the job ended / was cancelled / requeued
  TeardownResult,     ///< job_complete finished: `outcome`
  RetryTick,          ///< the periodic check (retries EAGAIN teardowns)
  Recover,            ///< first look at the job after a slurmctld restart
  LateTeardownResult, ///< the extra job_complete of a late setup finished: only logged
  OrphanGone,         ///< no earlier attempt of the job id waits for its teardown any more
};
std::string_view event_kind_name(EventKind e);

struct Event {
  EventKind kind = EventKind::SetupRequested;
  const Outcome *outcome = nullptr; ///< SetupResult, TeardownResult, LateTeardownResult
};

/// The switch state of one job; what persist.hpp saves in Slurm's job state.
struct JobSwitchState {
  JobState state = JobState::None;
  JobArgs job;                         ///< the job as it was when its setup started
  std::optional<MsgpackBytes> jobinfo; ///< what job_start returned (Running and after)
  bool requeue_allowed = false;        ///< the job may be requeued (batch, --requeue)
  bool block_job_complete = false;     ///< the script's answer, asked once per daemon
  bool nodes_held = false;             ///< we hold the job's nodes in COMPLETING
  std::uint32_t retries = 0;           ///< retries (EAGAIN, kill, loss) so far (<= switch_retries)
  std::uint64_t generation = 0;        ///< bumped per hook call; stale results are ignored
  bool recovered = false;              ///< loaded after a restart: no call is in flight
  /// content_hash() of the script whose job_start returned `jobinfo` (the
  /// stepinfo carries it to each slurmstepd); empty when unknown.
  std::string script_hash;
  /// Consecutive failed setups of this job before the current attempt, as
  /// the core's failure count says (switch_max_setup_failures); filled by
  /// the core before each step, never persisted with the state.
  std::uint32_t setup_failures = 0;
  /// An earlier attempt of this job id is an orphan not yet torn down (the
  /// lost start); filled by the core before each step, never persisted.
  bool orphan_pending = false;
  /// Issue 20, a node DOWN and back during a held teardown: the JobId of
  /// another job whose teardown holds one of this job's nodes and has not
  /// reported (0: none).  The core fills it at SetupRequested (when no
  /// orphan is pending) and it stays while the job waits in
  /// SetupWaitOrphan, so that the rule that ends the wait names that job;
  /// never persisted (after a restart the wait reads as an orphan wait).
  std::uint32_t held_by = 0;
  /// The journal cannot write (Journal::failure(); issue 24), filled by the
  /// core before each step, never persisted: a job_start it refused fails at
  /// once (R_START_FAIL, requeue) rather than being retried as a host fault
  /// (issue 20), since every retry would be refused the same way.
  bool journal_down = false;
  /// Consecutive calls of this job whose runner could not be started (issue
  /// 20: host faults); 0 once a runner started.  Not persisted.
  std::uint32_t host_faults = 0;
  /// How long ago the first of those failed (the core fills it before each
  /// step): a job_start is retried within switch_timeout of it.
  std::chrono::milliseconds host_fault_age{0};
  /// job_starts of this run lost with their supervisor (Abandoned) and run
  /// again (R_START_LOST); at switch_retries, a lost one fails as timed out.
  std::uint32_t lost = 0;
  /// The fabric breaker is open (the core fills it before each step; issue
  /// 20): failed teardowns are kept, failed setups name the outage.
  bool fabric_down = false;
  /// Times this teardown was kept for the fabric (R_COMPLETE_FABRIC_DOWN):
  /// its back-off.  Not persisted.
  std::uint32_t kept = 0;
  bool operator==(const JobSwitchState &) const = default;
};

/// What the glue must do.  Executed in order.
enum class ActionKind : std::uint8_t {
  RunJobStart,        ///< start job_start(job) in the supervisor
  RunJobComplete,     ///< start job_complete(job, jobinfo) (jobinfo field; nullopt = nil)
  RunLateJobComplete, ///< the extra job_complete of a late setup; its result only logged
  EndConfiguring,     ///< setup over: decrement prolog_running (launches if still runnable)
  Requeue,            ///< requeue the job with `reason` (fall back to Cancel if refused)
  /// R_SETUP_FAILURES_HELD: requeue the job held (admin hold, released by
  /// `scontrol release`) with `reason`; fall back to Cancel if refused.
  RequeueHeld,
  Cancel,        ///< cancel the job with `reason`
  HoldNodes,     ///< keep the job's nodes COMPLETING
  ReleaseNodes,  ///< undo HoldNodes
  DrainNodes,    ///< drain the job's nodes (or `nodes`) with `reason`
  ScheduleRetry, ///< run RetryTick at the next periodic check
  Log,           ///< log `reason` at `level`
};
std::string_view action_kind_name(ActionKind a);

/// What a HoldNodes / ReleaseNodes action keeps COMPLETING (switch.lua
/// contract, block_job_complete): the job only, or the job and its nodes.
enum class HoldScope : std::uint8_t { Job, JobAndNodes };

struct Action {
  ActionKind kind = ActionKind::Log;
  std::string reason;                  ///< Requeue/Cancel/Drain reason, or the Log text
  HoldScope hold = HoldScope::Job;     ///< HoldNodes / ReleaseNodes
  bool error = false;                  ///< Log: at error level (else info)
  std::optional<MsgpackBytes> jobinfo; ///< RunJobComplete / RunLateJobComplete
  std::string_view rule;               ///< id of the rule that produced it
  /// ScheduleRetry: 0 = at the next periodic check; else RetryTick after
  /// this long (the host-fault back-off, host_fault_backoff()).
  std::chrono::milliseconds delay{0};
  /// DrainNodes (issue 20, per-node attribution): the host list of the
  /// nodes to drain, those job_complete named among the job's; empty: the
  /// job's nodes.
  std::string nodes;
  bool operator==(const Action &) const = default;
};

/// The wait before running a kept teardown again for the `n`th time (n >=
/// 1) while the fabric is down: 5 s doubled each time, at most 60 s.  A
/// success of any hook closes the breaker and runs every kept one at once.
std::chrono::milliseconds fabric_backoff(std::uint32_t n);

/// The wait before retrying a call whose runner could not be started for
/// the `n`th time in a row (n >= 1): 250 ms doubled each time, at most 30 s.
std::chrono::milliseconds host_fault_backoff(std::uint32_t n);

/// What the rule that ends a setup attempt does with the fabric-ID pool IDs
/// the attempt holds (issue 38; switch.lua(5), POOLS): a column of the rule
/// table.  Keep: the row ends no attempt.
enum class PoolsFate : std::uint8_t {
  Keep,
  Release,    ///< a clean end: a teardown that succeeded, a setup that failed or declined
  Quarantine, ///< any other end (a failed teardown): the IDs stay out of use
};

struct StepResult {
  JobSwitchState next;
  std::vector<Action> actions;
  std::string_view rule; ///< the row that matched ("R_IGNORED" when none)
  /// The row's pools column: what becomes of the IDs of the attempt this
  /// step forgets (the one that is over, or the one a new start replaces).
  PoolsFate pools = PoolsFate::Keep;
};

/// Applies one event.  Pure and total: an event that no rule expects in a
/// state (e.g. a stray RetryTick) yields the same state, no action but a
/// Log, and rule "R_IGNORED".
StepResult step(const JobSwitchState &s, const Event &e, const CtldConfig &cfg);

/// The ids of every row of the rule table, in table order (a rule with
/// several rows appears once per row), plus "R_IGNORED".  For tests and
/// documentation checks: each id has its test and its man-page entry.
std::vector<std::string_view> rule_ids();

/// What a call ended with, in words, for reasons and logs ("returned
/// rc=-1", "raised an error: switch.lua:12: boom", "died on signal 9"); the
/// first line of a message only.
std::string outcome_text(const Outcome &o);

/// Reasons, fixed by the contract ("switch setup failed", "switch setup
/// timed out"), followed by what happened, e.g.
/// "switch setup failed: switch/lua job_start returned rc=-1".
inline constexpr std::string_view kReasonSetupFailed = "switch setup failed";
inline constexpr std::string_view kReasonSetupTimedOut = "switch setup timed out";
/// The drain reason of a failed teardown: "switch teardown failed: JobId=N
/// switch/lua job_complete returned rc=-1" (sinfo -R shows 20 characters).
inline constexpr std::string_view kReasonTeardownFailed = "switch teardown failed";
/// The rule of a failed setup that reached switch_max_setup_failures: the
/// job is requeued held instead of requeued (an action rule of FailSetup,
/// like R_START_LATE; listed by rule_ids()).  Its reason: "switch setup
/// failed 3 times (switch_max_setup_failures=3): switch/lua job_start
/// returned rc=-1: fabric manager unreachable".
inline constexpr std::string_view kRuleSetupFailuresHeld = "R_SETUP_FAILURES_HELD";

} // namespace switchlua
