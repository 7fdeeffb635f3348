// SPDX-License-Identifier: GPL-2.0-or-later
//
// The controller state machine as a table of contract rules (switch.lua:
// the comments on job_start, job_complete, block_job_complete, timeouts,
// retries, requeue, drain and restart).  One row per rule and case; the
// engine that reads it is job_fsm.cpp.
#include "ctld/job_fsm_table.hpp"

#include <utility>

namespace switchlua::fsm {
namespace {

using S = JobState;
using E = EventKind;
using V = Verdict;
using P = PoolsFate;

// clang-format off
const Row kRules[] = {
  // A job with --network was allocated: run job_start; it waits in CONFIGURING.
  {"R_SETUP",                 S::None,              E::SetupRequested, V::None,       S::SetupRunning,
     {Do::RunJobStart}},
  // The lost start (issue 24): an earlier attempt of this job id, launched
  // before a slurmctld crash, is not torn down yet because its nodes may
  // still run it: wait in CONFIGURING without job_start, so that Slurm's
  // launch finds no duplicate on the nodes ...
  {"R_SETUP_WAIT_ORPHAN",     S::None,              E::SetupRequested, V::OrphanPending, S::SetupWaitOrphan,
     {Do::LogInfo}},
  // Issue 20: another job's teardown still holds one of its nodes (a node
  // that went DOWN and came back, or was resumed, lost the COMPLETING hold
  // to Slurm, whose scheduler gave it to this job before the plugin
  // re-asserted it): wait in CONFIGURING without job_start, as above, until
  // that teardown has reported ...
  {"R_SETUP_WAIT_HELD",       S::None,              E::SetupRequested, V::NodesHeld, S::SetupWaitOrphan,
     {Do::LogInfo}},
  {"R_SETUP_AFTER_HELD",      S::SetupWaitOrphan,   E::OrphanGone,  V::NodesHeld,     S::SetupRunning,
     {Do::LogInfo, Do::RunJobStart}},
  {"R_WAIT_HELD_ENDED",       S::SetupWaitOrphan,   E::JobEnded,    V::NodesHeld,     S::Done,
     {Do::LogInfo, Do::EndConfiguring}, P::Release},
  // ... then set up as usual once that teardown is over ...
  {"R_SETUP_AFTER_ORPHAN",    S::SetupWaitOrphan,   E::OrphanGone,  V::None,          S::SetupRunning,
     {Do::LogInfo, Do::RunJobStart}},
  // ... or end with nothing to tear down when the job ends first.
  {"R_WAIT_ORPHAN_ENDED",     S::SetupWaitOrphan,   E::JobEnded,    V::NonBlocking,   S::Done,
     {Do::LogInfo, Do::EndConfiguring}, P::Release},
  {"R_WAIT_ORPHAN_ENDED",     S::SetupWaitOrphan,   E::JobEnded,    V::Blocking,      S::Done,
     {Do::LogInfo, Do::EndConfiguring}, P::Release},
  {"R_WAIT_ORPHAN_ENDED",     S::SetupWaitOrphan,   E::JobEnded,    V::Recovered,     S::Done,
     {Do::LogInfo, Do::EndConfiguring}, P::Release},
  // After a restart it waits on: the core sends OrphanGone once no orphan
  // of the job id is left.
  {"R_RESTART_WAIT_ORPHAN",   S::SetupWaitOrphan,   E::Recover,     V::Recovered,     S::SetupWaitOrphan, {}},
  // switch.lua contract: job_start rc == SUCCESS with a table: store it, launch.
  {"R_START_OK",              S::SetupRunning,      E::SetupResult, V::Accepted,      S::Running,
     {Do::StoreJobinfo, Do::LogInfo, Do::EndConfiguring}},
  // jobinfo == nil: not managed; no stepinfo, no job_complete, no step hooks.
  {"R_START_DECLINE",         S::SetupRunning,      E::SetupResult, V::Declined,      S::Declined,
     {Do::ForgetJobinfo, Do::LogInfo, Do::EndConfiguring}, P::Release},
  // rc ~= SUCCESS, an error, or a non-number rc: requeue, else cancel with
  // "switch setup failed"; no drain; no job_complete (job_start undid its work).
  {"R_START_FAIL",            S::SetupRunning,      E::SetupResult, V::Failed,        S::SetupFailed,
     {Do::ForgetJobinfo, Do::LogError, Do::FailSetup, Do::EndConfiguring}, P::Release},
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

  // Issue 20: job_start lost with a supervisor that died or that the
  // watchdog replaced: as after a restart (R_RESTART_SETUP), job_complete
  // with nil for that attempt, then job_start again (R_UNDO_OK); not the
  // job's failure, up to switch_retries times in a row (then R_START_TIMEOUT).
  {"R_START_LOST",            S::SetupRunning,      E::SetupResult, V::Lost,          S::SetupUndoing,
     {Do::CountLost, Do::LogInfo, Do::RunJobCompleteNil}},
  {"R_CANCELLED_SETUP_UNKNOWN", S::SetupRunningEnded, E::SetupResult, V::Lost,        S::TeardownRunning,
     {Do::ForgetJobinfo, Do::LogInfo, Do::EndConfiguring, Do::RunJobCompleteNil}},
  // Issue 20, the fabric breaker: job_start returned slurm.FABRIC_DOWN, or
  // failed while the breaker is open: requeue (else cancel) with a reason
  // naming the outage; not counted toward switch_max_setup_failures; no
  // teardown (a failed job_start undid its own work).
  {"R_START_FABRIC_DOWN",     S::SetupRunning,      E::SetupResult, V::SetupFabricDown, S::SetupFailed,
     {Do::ForgetJobinfo, Do::LogInfo, Do::FailSetupFabricDown, Do::EndConfiguring}, P::Release},
  {"R_CANCELLED_SETUP_NONE",  S::SetupRunningEnded, E::SetupResult, V::SetupFabricDown, S::Done,
     {Do::ForgetJobinfo, Do::LogInfo, Do::EndConfiguring, Do::Release}, P::Release},
  // Issue 20, host faults are the host's: job_start's runner could not be
  // started (fork/spawn EAGAIN or ENOMEM, a full lane): the script did not
  // run, so nothing is to undo: job_start runs again after a back-off, the
  // job waiting in CONFIGURING; never counted toward switch_max_setup_failures ...
  {"R_START_HOST_FAULT",      S::SetupRunning,      E::SetupResult, V::HostFault,     S::SetupRunning,
     {Do::CountHostFault, Do::LogError, Do::ScheduleBackoff}},
  {"R_START_HOST_RETRY",      S::SetupRunning,      E::RetryTick,   V::None,          S::SetupRunning,
     {Do::RunJobStart}, P::Release},
  // ... until switch_timeout has passed since the first failure: then the
  // setup fails (requeue, else cancel) with a reason naming the host fault,
  // still not counted and never held for it.
  {"R_START_HOST_FAULT_EXPIRED", S::SetupRunning,   E::SetupResult, V::HostFaultExpired, S::SetupFailed,
     {Do::ForgetJobinfo, Do::LogError, Do::FailSetupHostFault, Do::EndConfiguring}, P::Release},

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
     {Do::ForgetJobinfo, Do::LogInfo, Do::EndConfiguring, Do::Release}, P::Release},
  {"R_CANCELLED_SETUP_NONE",  S::SetupRunningEnded, E::SetupResult, V::Failed,        S::Done,
     {Do::ForgetJobinfo, Do::LogInfo, Do::EndConfiguring, Do::Release}, P::Release},
  {"R_CANCELLED_SETUP_NONE",  S::SetupRunningEnded, E::SetupResult, V::HostFault,     S::Done,
     {Do::ForgetJobinfo, Do::LogInfo, Do::EndConfiguring, Do::Release}, P::Release},
  {"R_CANCELLED_SETUP_NONE",  S::SetupRunningEnded, E::SetupResult, V::HostFaultExpired, S::Done,
     {Do::ForgetJobinfo, Do::LogInfo, Do::EndConfiguring, Do::Release}, P::Release},
  // ... or when the job ended while job_start waited for its host-fault
  // retry (R_START_HOST_FAULT): it never ran, nothing to tear down ...
  {"R_CANCELLED_SETUP_NEVER_RAN", S::SetupRunningEnded, E::RetryTick, V::None,        S::Done,
     {Do::ForgetJobinfo, Do::LogInfo, Do::EndConfiguring, Do::Release}, P::Release},
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
     {Do::LogInfo, Do::Release, Do::ForgetJobinfo}, P::Release},
  // Any other positive value is only logged.
  {"R_COMPLETE_POSITIVE",     S::TeardownRunning,   E::TeardownResult, V::OtherPositive, S::Done,
     {Do::LogError, Do::Release, Do::ForgetJobinfo}, P::Release},
  // EAGAIN with the nodes held: called again at the next periodic check ...
  {"R_COMPLETE_EAGAIN",       S::TeardownRunning,   E::TeardownResult, V::EagainRetry, S::TeardownRetryWait,
     {Do::CountRetry, Do::LogInfo, Do::ScheduleRetry}},
  // ... up to switch_retries times, then drained like any failure.
  {"R_COMPLETE_EAGAIN_EXHAUSTED", S::TeardownRunning, E::TeardownResult, V::EagainExhausted, S::Done,
     {Do::LogError, Do::DrainIfConfigured, Do::Release, Do::ForgetJobinfo}, P::Quarantine},
  // EAGAIN without held nodes is a failure.
  {"R_COMPLETE_EAGAIN_UNHELD", S::TeardownRunning,  E::TeardownResult, V::EagainUnheld, S::Done,
     {Do::LogError, Do::DrainIfConfigured, Do::Release, Do::ForgetJobinfo}, P::Quarantine},
  // rc < 0 or an error: drain the job's nodes unless switch_drain_on_failure=no.
  {"R_COMPLETE_FAIL",         S::TeardownRunning,   E::TeardownResult, V::Failure,    S::Done,
     {Do::LogError, Do::DrainIfConfigured, Do::Release, Do::ForgetJobinfo}, P::Quarantine},
  // Killed by a signal that was not the plugin's timeout kill (the OOM
  // killer), or lost with the supervisor: job_complete is safe to repeat, so
  // it runs again at the next periodic check, the job (and its nodes, if
  // they were held) kept as they are ...
  {"R_COMPLETE_KILLED",       S::TeardownRunning,   E::TeardownResult, V::KilledRetry, S::TeardownRetryWait,
     {Do::CountRetry, Do::LogInfo, Do::ScheduleRetry}},
  // ... up to switch_retries times, then drained like any failure.
  {"R_COMPLETE_KILLED_EXHAUSTED", S::TeardownRunning, E::TeardownResult, V::KilledExhausted, S::Done,
     {Do::LogError, Do::DrainIfConfigured, Do::Release, Do::ForgetJobinfo}, P::Quarantine},
  // Killed so with the nodes not held (block_job_complete false): a failure,
  // as a timeout is (switch.lua contract: job_complete EAGAIN, "a retry needs
  // the nodes held"; the nodes are already back in service).
  {"R_COMPLETE_KILLED_UNHELD", S::TeardownRunning, E::TeardownResult, V::KilledUnheld, S::Done,
     {Do::LogError, Do::DrainIfConfigured, Do::Release, Do::ForgetJobinfo}, P::Quarantine},
  // Issue 36: lost with the supervisor (it died, or the watchdog replaced
  // it) with the nodes not held: the call may not have finished, so it runs
  // again at the next periodic check, the nodes in service meanwhile, as a
  // retry counted against switch_retries; once they are used up, drained
  // like any failure (R_COMPLETE_KILLED_EXHAUSTED).
  {"R_COMPLETE_LOST",         S::TeardownRunning,   E::TeardownResult, V::LostRetry,  S::TeardownRetryWait,
     {Do::CountRetry, Do::LogInfo, Do::ScheduleRetry}},
  // Issue 20: job_complete's runner could not be started (a host fault):
  // the script did not run; it runs again after a back-off, the job (and
  // its nodes, if held) kept as they are, never drained for it, whatever
  // switch_retries says (the budget is the script's).
  {"R_COMPLETE_HOST_FAULT",   S::TeardownRunning,   E::TeardownResult, V::HostFault,  S::TeardownRetryWait,
     {Do::CountHostFault, Do::LogError, Do::ScheduleBackoff}},
  // Issue 20, the fabric breaker: job_complete returned slurm.FABRIC_DOWN,
  // or failed while the breaker is open: the teardown is kept (the job, and
  // its nodes if held, stay as they are), never drained for it, and runs
  // again after a back-off (5 s doubled, at most 60 s), and at once when
  // the breaker closes; switch_retries is not spent.
  {"R_COMPLETE_FABRIC_DOWN",  S::TeardownRunning,   E::TeardownResult, V::FabricDown, S::TeardownRetryWait,
     {Do::CountKept, Do::LogInfo, Do::ScheduleFabricRetry}},
  {"R_RETRY",                 S::TeardownRetryWait, E::RetryTick,   V::None,          S::TeardownRunning,
     {Do::RunJobCompleteWithJobinfo}},

  // A job_start with no recorded result (killed by a slurmctld restart or
  // reconfigure, or ended while its slurmctld was stopped and then fenced
  // out or killed: issue 40) is abandoned: job_complete(job, nil) for that attempt runs first, the
  // job still waiting in CONFIGURING ...
  {"R_RESTART_SETUP",         S::SetupRunning,      E::Recover,     V::Recovered,     S::SetupUndoing,
     {Do::LogInfo, Do::RunJobCompleteNil}},
  // ... then job_start runs again, as a new attempt, if it succeeded (any
  // rc >= 0 but EAGAIN) ...
  {"R_UNDO_OK",               S::SetupUndoing,      E::TeardownResult, V::Success,    S::SetupRunning,
     {Do::LogInfo, Do::RunJobStart}, P::Release},
  {"R_UNDO_OK",               S::SetupUndoing,      E::TeardownResult, V::OtherPositive, S::SetupRunning,
     {Do::LogInfo, Do::RunJobStart}, P::Release},
  // That job_complete killed from outside or lost with the supervisor (as
  // R_COMPLETE_KILLED): safe to repeat, so it runs again at once, up to
  // switch_retries times; the job keeps waiting (and its holds stay).
  {"R_UNDO_KILLED",           S::SetupUndoing,      E::TeardownResult, V::KilledRetry, S::SetupUndoing,
     {Do::CountRetry, Do::LogInfo, Do::RunJobCompleteNil}},
  {"R_UNDO_KILLED",           S::SetupUndoingEnded, E::TeardownResult, V::KilledRetry, S::SetupUndoingEnded,
     {Do::CountRetry, Do::LogInfo, Do::RunJobCompleteNil}},
  // Its runner could not be started (a host fault): after a back-off, again.
  {"R_UNDO_HOST_FAULT",       S::SetupUndoing,      E::TeardownResult, V::HostFault,  S::SetupUndoing,
     {Do::CountHostFault, Do::LogError, Do::ScheduleBackoff}},
  {"R_UNDO_HOST_FAULT",       S::SetupUndoingEnded, E::TeardownResult, V::HostFault,  S::SetupUndoingEnded,
     {Do::CountHostFault, Do::LogError, Do::ScheduleBackoff}},
  {"R_UNDO_FABRIC_DOWN",      S::SetupUndoing,      E::TeardownResult, V::FabricDown, S::SetupUndoing,
     {Do::CountKept, Do::LogInfo, Do::ScheduleFabricRetry}},
  {"R_UNDO_FABRIC_DOWN",      S::SetupUndoingEnded, E::TeardownResult, V::FabricDown, S::SetupUndoingEnded,
     {Do::CountKept, Do::LogInfo, Do::ScheduleFabricRetry}},
  {"R_UNDO_RETRY",       S::SetupUndoing,      E::RetryTick,   V::None,          S::SetupUndoing,
     {Do::RunJobCompleteNil}},
  {"R_UNDO_RETRY",       S::SetupUndoingEnded, E::RetryTick,   V::None,          S::SetupUndoingEnded,
     {Do::RunJobCompleteNil}},
  // ... else the job fails as a failed setup (requeue, else cancel).  No
  // drain: this job_complete(nil) is the plugin's own step before a re-run,
  // beyond the switch.lua contract, which never drains for a setup (issue 36).
  {"R_UNDO_FAIL",             S::SetupUndoing,      E::TeardownResult, V::Failure,    S::SetupFailed,
     {Do::LogError, Do::FailSetup, Do::EndConfiguring}, P::Quarantine},
  {"R_UNDO_FAIL",             S::SetupUndoing,      E::TeardownResult, V::EagainRetry, S::SetupFailed,
     {Do::LogError, Do::FailSetup, Do::EndConfiguring}, P::Quarantine},
  {"R_UNDO_FAIL",             S::SetupUndoing,      E::TeardownResult, V::EagainExhausted, S::SetupFailed,
     {Do::LogError, Do::FailSetup, Do::EndConfiguring}, P::Quarantine},
  {"R_UNDO_FAIL",             S::SetupUndoing,      E::TeardownResult, V::EagainUnheld, S::SetupFailed,
     {Do::LogError, Do::FailSetup, Do::EndConfiguring}, P::Quarantine},
  {"R_UNDO_FAIL",             S::SetupUndoing,      E::TeardownResult, V::KilledExhausted, S::SetupFailed,
     {Do::LogError, Do::FailSetup, Do::EndConfiguring}, P::Quarantine},
  // The job ended while that job_complete ran: hold the job and its nodes
  // until it reports; no job_start then.
  {"R_UNDO_ENDED",            S::SetupUndoing,      E::JobEnded,    V::Blocking,      S::SetupUndoingEnded,
     {Do::HoldJobAndNodes, Do::LogInfo}},
  {"R_UNDO_ENDED",            S::SetupUndoing,      E::JobEnded,    V::NonBlocking,   S::SetupUndoingEnded,
     {Do::HoldJobAndNodes, Do::LogInfo}},
  {"R_UNDO_ENDED_OK",         S::SetupUndoingEnded, E::TeardownResult, V::Success,    S::Done,
     {Do::LogInfo, Do::EndConfiguring, Do::Release}, P::Release},
  {"R_UNDO_ENDED_OK",         S::SetupUndoingEnded, E::TeardownResult, V::OtherPositive, S::Done,
     {Do::LogInfo, Do::EndConfiguring, Do::Release}, P::Release},
  {"R_UNDO_ENDED_FAIL",       S::SetupUndoingEnded, E::TeardownResult, V::Failure,    S::Done,
     {Do::LogError, Do::EndConfiguring, Do::DrainIfConfigured, Do::Release}, P::Quarantine},
  {"R_UNDO_ENDED_FAIL",       S::SetupUndoingEnded, E::TeardownResult, V::EagainRetry, S::Done,
     {Do::LogError, Do::EndConfiguring, Do::DrainIfConfigured, Do::Release}, P::Quarantine},
  {"R_UNDO_ENDED_FAIL",       S::SetupUndoingEnded, E::TeardownResult, V::EagainExhausted, S::Done,
     {Do::LogError, Do::EndConfiguring, Do::DrainIfConfigured, Do::Release}, P::Quarantine},
  {"R_UNDO_ENDED_FAIL",       S::SetupUndoingEnded, E::TeardownResult, V::KilledExhausted, S::Done,
     {Do::LogError, Do::EndConfiguring, Do::DrainIfConfigured, Do::Release}, P::Quarantine},
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

// What a restarted slurmctld makes of a job state Slurm saved, by what the
// journal says of its attempt (switch.lua(5), Restart; adopt_decision()).
// Slurm saves job state at most every few seconds: the journal is newer.
// clang-format off
const RecoveryRow kRecoveryRules[] = {
  // The journal says the attempt is over: forget it, never launch it again.
  {"R_RECOVER_FORGOTTEN",           JournalSays::Forgotten,
     {S::SetupRunning, S::SetupRunningEnded, S::Running, S::SetupFailed, S::SetupAbandoned,
      S::TeardownRunning, S::TeardownRetryWait, S::SetupUndoing, S::SetupUndoingEnded},
     S::Done, JobinfoFrom::Nowhere, true, Recovery::ClearConfiguring,
     "{job} recovery: the journal says attempt {attempt} needs nothing more (Slurm's saved state "
     "{state} is older): forgotten; not launched again"},
  // Its teardown had started with a jobinfo: resume that teardown.
  {"R_RECOVER_TEARDOWN_STARTED",    JournalSays::TeardownStarted,
     {S::SetupRunning, S::SetupRunningEnded, S::SetupAbandoned},
     S::TeardownRunning, JobinfoFrom::Journal, true, Recovery::ClearConfiguring,
     "{job} recovery: the journal says the teardown of attempt {attempt} had started with its "
     "jobinfo (Slurm's saved state {state} is older): job_start is not run again"},
  // job_start had returned a jobinfo: Running with it, never run again; a
  // released launch is not launched a second time ...
  {"R_RECOVER_ACCEPTED_LAUNCHED",   JournalSays::AcceptedLaunched, {S::SetupRunning},
     S::Running, JobinfoFrom::Journal, true, Recovery::ClearConfiguring,
     "{job} recovery: the journal says job_start of attempt {attempt} returned SUCCESS with a "
     "jobinfo before the crash (Slurm's saved state SetupRunning is older): restored with it, "
     "job_start is not run again; the launch was released before the crash: not launched again"},
  // ... one that was not is launched now.
  {"R_RECOVER_ACCEPTED_LAUNCH_NOW", JournalSays::Accepted, {S::SetupRunning},
     S::Running, JobinfoFrom::Journal, true, Recovery::LaunchNow,
     "{job} recovery: the journal says job_start of attempt {attempt} returned SUCCESS with a "
     "jobinfo before the crash (Slurm's saved state SetupRunning is older): restored with it, "
     "job_start is not run again; the launch was not released: launching it now"},
  // Otherwise Slurm's saved state stands (the R_RESTART_* rules then apply).
  {"R_RECOVER_AS_SAVED",            JournalSays::Nothing, {},
     S::None, JobinfoFrom::Saved, false, Recovery::Nothing, ""},
};
// clang-format on

// Teardowns outside a job's state (orphan_result(), late_result_decision()).
// An orphan's nodes cannot be held (no job record holds them), so, as for
// R_COMPLETE_EAGAIN_UNHELD and R_COMPLETE_KILLED_UNHELD, nothing of it is
// retried (switch.lua contract: job_complete EAGAIN).
// clang-format off
const OutcomeRow kOutcomeRules[] = {
  // An attempt the journal says is not over and no job record carries:
  // job_complete with its own job table and jobinfo (nil if it never reported).
  {"R_ORPHAN_TEARDOWN", Teardown::Orphan, V::Recovered,     {Do::LogInfo, Do::RunJobCompleteWithJobinfo}},
  // The lost start (issue 24): its launch was released before the crash and
  // its nodes may still run it: no teardown under running tasks; it waits
  // until the nodes no longer may run the job, then R_ORPHAN_TEARDOWN.
  {"R_ORPHAN_WAIT_NODES", Teardown::Orphan, V::NodesMayRun, {Do::LogInfo}},
  // rc >= 0 but EAGAIN: torn down.
  {"R_ORPHAN_OK",       Teardown::Orphan, V::Success,       {Do::LogInfo, Do::ForgetAttempt}, P::Release},
  {"R_ORPHAN_OK",       Teardown::Orphan, V::OtherPositive, {Do::LogInfo, Do::ForgetAttempt}, P::Release},
  // Its runner could not be started (a host fault): logged, nothing drained;
  // the core runs it again after a back-off (issue 20).
  {"R_ORPHAN_HOST_FAULT", Teardown::Orphan, V::HostFault,   {Do::LogError}},
  // Lost with the supervisor: as a host fault, run again after a back-off
  // (an orphan keeps no retry count).
  {"R_ORPHAN_HOST_FAULT", Teardown::Orphan, V::LostRetry,   {Do::LogError}},
  // slurm.FABRIC_DOWN: logged, nothing drained; run again after the breaker's back-off.
  {"R_ORPHAN_FABRIC_DOWN", Teardown::Orphan, V::FabricDown, {Do::LogInfo}},
  // Anything else is a failure: its job table's nodes are drained.
  {"R_ORPHAN_FAIL",     Teardown::Orphan, V::EagainUnheld,  {Do::LogError, Do::DrainIfConfigured, Do::ForgetAttempt}, P::Quarantine},
  {"R_ORPHAN_FAIL",     Teardown::Orphan, V::KilledUnheld,  {Do::LogError, Do::DrainIfConfigured, Do::ForgetAttempt}, P::Quarantine},
  {"R_ORPHAN_FAIL",     Teardown::Orphan, V::Failure,       {Do::LogError, Do::DrainIfConfigured, Do::ForgetAttempt}, P::Quarantine},
  // switch.lua contract, job_start timeout: the extra call's "result is
  // only logged", in any state, at error level unless it succeeded.
  {"R_LATE_RESULT",     Teardown::Late,   V::Success,       {Do::LogInfo}},
  {"R_LATE_RESULT",     Teardown::Late,   V::OtherPositive, {Do::LogInfo}},
  {"R_LATE_RESULT",     Teardown::Late,   V::EagainUnheld,  {Do::LogError}},
  {"R_LATE_RESULT",     Teardown::Late,   V::KilledUnheld,  {Do::LogError}},
  {"R_LATE_RESULT",     Teardown::Late,   V::Failure,       {Do::LogError}},
  {"R_LATE_RESULT",     Teardown::Late,   V::HostFault,     {Do::LogError}},
  {"R_LATE_RESULT",     Teardown::Late,   V::LostRetry,     {Do::LogError}},
  {"R_LATE_RESULT",     Teardown::Late,   V::FabricDown,    {Do::LogError}},
};
// clang-format on

// The log lines of the rules that have their own (rule_log_template()).
// clang-format off
constexpr std::pair<std::string_view, std::string_view> kRuleLogs[] = {
  {"R_START_OK", "{job} job_start accepted the job: jobinfo stored, job may launch"},
  {"R_START_DECLINE", "{job} job_start declined the job (nil jobinfo): not managed by switch/lua"},
  {"R_CANCEL_DURING_SETUP", "{job} ended while job_start runs: holding its nodes until the "
                            "setup reports; not a setup failure"},
  {"R_COMPLETE_EAGAIN", "{job} job_complete returned slurm.EAGAIN: nodes stay held, retry "
                        "{retry} of {retries} at the next periodic check"},
  {"R_END_AFTER_FAIL", "{job} ended after a failed setup: job_complete is not called (job_start "
                       "undoes its own work before it returns a failure)"},
  {"R_RESTART_SETUP", "{job} recovered after a slurmctld restart in state SetupRunning: the "
                      "job_start of attempt {attempt} has no recorded result (killed with its "
                      "slurmctld, or it ended while that slurmctld was stopped and its result "
                      "never reached the journal); running job_complete with nil jobinfo for "
                      "it, then job_start again (the job has not launched)"},
  {"R_RESTART_UNDO", "{job} recovered after a slurmctld restart in state {state}: running "
                     "job_complete with nil jobinfo for the killed job_start of attempt "
                     "{attempt} again"},
  {"R_RESTART_TEARDOWN", "{job} recovered after a slurmctld restart in state {state}: running "
                         "job_complete again"},
  {"R_RESTART_UNKNOWN", "{job} recovered after a slurmctld restart in state {state}: running "
                        "job_complete again"},
  {"R_COMPLETE_KILLED", "{job} job_complete {what}: nodes held, running it again at the next "
                        "periodic check (retry {retry} of {retries})"},
  {"R_COMPLETE_LOST", "{job} job_complete {what}: its nodes are not held (block_job_complete "
                      "is false); running it again at the next periodic check (retry {retry} "
                      "of {retries}), a failed teardown once they are used up"},
  {"R_COMPLETE_KILLED_UNHELD", "{job} job_complete {what}: its nodes are not held "
                               "(block_job_complete is false), so it is not run again: a failed "
                               "teardown"},
  {"R_UNDO_KILLED", "{job} job_complete for the killed job_start of attempt {attempt} {what}: "
                    "running it again (retry {retry} of {retries})"},
  {"R_UNDO_OK", "{job} job_complete for the killed job_start of attempt {attempt} {what}: "
                "running job_start again"},
  {"R_UNDO_FAIL", "{job} job_complete for the killed job_start of attempt {attempt} {what}"},
  {"R_UNDO_ENDED_FAIL", "{job} job_complete for the killed job_start of attempt {attempt} {what}"},
  {"R_UNDO_ENDED", "{job} ended while job_complete for its killed job_start runs: holding its "
                   "nodes until it reports; job_start is not run again"},
  {"R_UNDO_ENDED_OK", "{job} job_complete for the killed job_start of attempt {attempt} {what} "
                      "after the job had ended: nothing more to do"},
  {"R_CANCELLED_SETUP_OK", "{job} job_start {what} after the job had ended: {teardown}"},
  {"R_CANCELLED_SETUP_NONE", "{job} job_start {what} after the job had ended: {teardown}"},
  {"R_CANCELLED_SETUP_UNKNOWN", "{job} job_start {what} after the job had ended: {teardown}"},
  {"R_SETUP_WAIT_ORPHAN", "{job} job_start waits: an earlier attempt of this job id, launched "
                          "before a slurmctld restart, is not torn down yet (its nodes may still "
                          "run it); the job stays CONFIGURING until that teardown is over"},
  {"R_SETUP_AFTER_ORPHAN", "{job} the earlier attempt of this job id is torn down: running "
                           "job_start now"},
  {"R_SETUP_WAIT_HELD", "{job} job_start waits: the teardown of JobId={held_by} still holds one "
                        "of its nodes (the node went DOWN or was resumed while that teardown "
                        "was held, and Slurm gave it to this job); the job stays CONFIGURING "
                        "until that teardown has reported"},
  {"R_SETUP_AFTER_HELD", "{job} the teardown of JobId={held_by} has reported: running job_start "
                         "now"},
  {"R_WAIT_HELD_ENDED", "{job} ended while waiting for the teardown of JobId={held_by}: nothing "
                        "was set up, nothing to tear down"},
  {"R_WAIT_ORPHAN_ENDED", "{job} ended while waiting for the teardown of an earlier attempt of "
                          "its job id: nothing was set up, nothing to tear down"},
  {"R_CANCELLED_SETUP_NEVER_RAN", "{job} ended while job_start waited to be started again after "
                                  "a host fault: it never ran, nothing to tear down"},
  {"R_START_FABRIC_DOWN", "{job} job_start {what}: the fabric is unavailable (fabric breaker): "
                          "the setup fails, not counted toward switch_max_setup_failures"},
  {"R_COMPLETE_FABRIC_DOWN", "{job} job_complete {what}: the fabric is unavailable (fabric "
                             "breaker): teardown kept{held}, nothing drained; running it again "
                             "in {kept_backoff} s or when the breaker closes"},
  {"R_UNDO_FABRIC_DOWN", "{job} job_complete for the killed job_start of attempt {attempt} "
                         "{what}: the fabric is unavailable (fabric breaker): kept, running it "
                         "again in {kept_backoff} s or when the breaker closes"},
  {"R_START_LOST", "{job} job_start {what}: the supervisor that ran it is gone (replaced); not "
                   "the job's failure: running job_complete with nil jobinfo for attempt "
                   "{attempt}, then job_start again"},
  {"R_START_HOST_FAULT", "{job} job_start {what}: a fault of this host, not of the job: running it "
                         "again in {backoff} ms (host fault {fault} in a row; not counted toward "
                         "switch_max_setup_failures)"},
  {"R_START_HOST_FAULT_EXPIRED", "{job} job_start {what}: a fault of this host, for "
                                 "switch_timeout={timeout} s: the setup fails (not counted toward "
                                 "switch_max_setup_failures)"},
  {"R_COMPLETE_HOST_FAULT", "{job} job_complete {what}: a fault of this host, not a failed "
                            "teardown: running it again in {backoff} ms (host fault {fault} in a "
                            "row), nothing drained"},
  {"R_UNDO_HOST_FAULT", "{job} job_complete for the killed job_start of attempt {attempt} {what}: "
                        "a fault of this host: running it again in {backoff} ms (host fault "
                        "{fault} in a row)"},
};
// clang-format on

} // namespace

std::span<const Row> rule_table() {
  return kRules;
}

std::span<const RecoveryRow> recovery_table() {
  return kRecoveryRules;
}

std::span<const OutcomeRow> outcome_table() {
  return kOutcomeRules;
}

bool rule_has_own_log(std::string_view rule) {
  for (const auto &[id, text] : kRuleLogs)
    if (id == rule)
      return true;
  return false;
}

std::string_view rule_log_template(std::string_view rule) {
  for (const auto &[id, text] : kRuleLogs)
    if (id == rule)
      return text;
  return "{job} {hook} {what}";
}

} // namespace switchlua::fsm
