// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: ctld/job_fsm_table.hpp
//
// The state machine's table of contract rules, as job_fsm.cpp reads it:
// one Row per rule (its id is what the log line, the test named after it
// and switch.lua(5) call it), matched on (state, event, verdict).  Internal
// to src/ctld; the machine's interface is job_fsm.hpp.
#pragma once

#include "ctld/job_fsm.hpp"
#include "ctld/recovery_fsm.hpp"

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>

namespace switchlua::fsm {

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
  KilledUnheld,    // job_complete: killed from outside, nodes not held: a failure
  LostRetry,       // job_complete: lost with the supervisor, nodes not held, retries left
  Blocking,        // JobEnded with block_job_complete true
  NonBlocking,     // JobEnded with block_job_complete false
  Recovered,       // JobEnded / Recover of a state loaded after a restart
  OrphanPending,   // SetupRequested while an earlier attempt of the job id awaits its teardown
  NodesMayRun,     // an orphan launched before the crash whose nodes may still run it
  // Issue 20: SetupRequested while another job's teardown still holds one
  // of the job's nodes (a node that went DOWN and came back lost its
  // COMPLETING hold to Slurm, which gave it to this job); also the
  // OrphanGone and JobEnded of such a wait (JobSwitchState::held_by).
  NodesHeld,
  // Issue 20, host faults are the host's: the runner could not be started
  // (SpawnFailed: fork/spawn EAGAIN or ENOMEM, a full lane, a missing
  // runner).  The script did not run: retried with back-off, never counted
  // against the job, never a drain ...
  HostFault,
  // ... until switch_timeout has passed since the first such failure of a
  // job_start: then the setup fails (requeue), not counted either.
  HostFaultExpired,
  // job_start lost with a supervisor the watchdog replaced (Abandoned), less
  // than switch_retries times in a row: undone and run again (restart rules).
  Lost,
  // Issue 20, the fabric breaker: job_complete returned slurm.FABRIC_DOWN,
  // or failed while the breaker is open: kept, retried, never drained.
  FabricDown,
  // job_start returned slurm.FABRIC_DOWN, or failed while the breaker is
  // open: requeued naming the outage, not counted.
  SetupFabricDown,
  // A RetryTick for a job that waits for none (no row: R_IGNORED).
  Stray,
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
  ForgetAttempt,       // sibling tables: the attempt is over (journal record Forgotten)
  CountHostFault,      // host_faults++ (the runner of this call could not be started)
  CountLost,           // lost++ (a job_start lost with its supervisor)
  ScheduleBackoff,     // RetryTick after the host-fault back-off (host_fault_backoff())
  FailSetupHostFault,  // Requeue if allowed, else Cancel; never counted, never held
  CountKept,           // kept++ (a teardown kept while the fabric is down)
  ScheduleFabricRetry, // RetryTick after the breaker's back-off (fabric_backoff())
  FailSetupFabricDown, // Requeue if allowed, else Cancel, naming the outage; never counted
};

struct Row {
  std::string_view rule;
  JobState state;
  EventKind event;
  Verdict verdict;
  JobState next;
  std::initializer_list<Do> actions;
  /// Issue 38: the pool IDs of the attempt the row ends (Keep: it ends none).
  PoolsFate pools = PoolsFate::Keep;
};

/// The rows, in table order (job_fsm_table.cpp).
std::span<const Row> rule_table();

/// What the journal says of the attempt of a job state loaded after a
/// restart (adopt_decision(), recovery_fsm.hpp), strongest fact first.
enum class JournalSays : std::uint8_t {
  Forgotten,        // the attempt is over (torn down, declined, failed)
  TeardownStarted,  // its teardown had started, with a jobinfo
  AcceptedLaunched, // job_start returned a jobinfo; the launch was released
  Accepted,         // job_start returned a jobinfo; the launch was not released
  Nothing,          // nothing newer than Slurm's saved state
};

/// Where a restart row takes the jobinfo of the state it keeps from.
enum class JobinfoFrom : std::uint8_t { Saved, Journal, Nowhere };

/// A row of the restart table: a saved state in `saved` whose attempt the
/// journal says `says` of becomes `next` (None: unchanged), with the
/// jobinfo `jobinfo` says, and recover_job()'s `hint` when `sets_hint`.
struct RecoveryRow {
  std::string_view rule;
  JournalSays says;
  std::initializer_list<JobState> saved; // empty: any state
  JobState next;
  JobinfoFrom jobinfo;
  bool sets_hint;
  Recovery hint;
  /// The line, a fmt template: {job} "JobId=42", {attempt}, {state} the
  /// saved state's name; empty: no line.
  std::string_view log;
};

/// The restart table, in table order; its last row matches anything.
std::span<const RecoveryRow> recovery_table();

/// Whose teardown an OutcomeRow is about.
enum class Teardown : std::uint8_t {
  Orphan, // an attempt no job record carries any more (R_ORPHAN_*)
  Late,   // the extra job_complete of a late setup result (R_LATE_RESULT)
};

/// A row of the table of teardowns outside a job's state: (whose, verdict)
/// -> actions, among LogInfo, LogError, DrainIfConfigured, ForgetAttempt,
/// RunJobCompleteWithJobinfo (the orphan's start: its jobinfo, or nil).
struct OutcomeRow {
  std::string_view rule;
  Teardown of;
  Verdict verdict;
  std::initializer_list<Do> actions;
  PoolsFate pools = PoolsFate::Keep; ///< issue 38: rows with ForgetAttempt name one
};

/// The table of teardowns outside a job's state, in table order.
std::span<const OutcomeRow> outcome_table();

/// The Verdict of job_complete's outcome `o` for a job in state `s`
/// (job_fsm.cpp), for the sibling tables too.
Verdict teardown_verdict(const Outcome &o, const JobSwitchState &s, const CtldConfig &cfg);

/// The log line of a rule's LogInfo / LogError, a fmt template with named
/// fields: {job} "JobId=42", {hook} "job_start" or "job_complete" (the call
/// that reported), {what} the outcome in words (outcome_text()), {attempt}
/// the setup attempt, {state} the state's name, {retry} the number of the
/// retry about to run, {retries} switch_retries, {teardown} what follows a
/// setup that reported after its job ended.  A rule without a line of its
/// own logs "{job} {hook} {what}".
std::string_view rule_log_template(std::string_view rule);

/// Whether `rule` has a log line of its own (not the generic one).
bool rule_has_own_log(std::string_view rule);

} // namespace switchlua::fsm
