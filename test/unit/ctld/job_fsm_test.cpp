// SPDX-License-Identifier: GPL-2.0-or-later
//
// The controller state machine, one case per contract rule (named after its
// rule id), plus randomized event sequences checking invariants.
#include "ctld/job_fsm.hpp"
#include "ctld/job_fsm_table.hpp"
#include "ctld/persist.hpp"
#include "ctld/setup_failures.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <set>

using namespace switchlua;

namespace {

Outcome returned(std::int64_t rc, std::optional<std::string> jobinfo = std::nullopt) {
  Outcome o{.kind = OutcomeKind::Returned};
  o.ret.rc = rc;
  o.ret.jobinfo = std::move(jobinfo);
  return o;
}
Outcome with_kind(OutcomeKind k, std::string msg = "switch.lua:7: boom") {
  return Outcome{.kind = k, .message = std::move(msg)};
}
Outcome unsaveable() {
  Outcome o = returned(kSuccess);
  o.ret.jobinfo_error = "jobinfo.fabric.handler: a function cannot be saved";
  return o;
}
Outcome timed_out_late_table() {
  Outcome o = with_kind(OutcomeKind::TimedOut, "");
  HookReturn late;
  late.rc = kSuccess;
  late.jobinfo = "\x81\xa1x\x01";
  o.late_return = late;
  return o;
}
Outcome timed_out_late_exit() {
  Outcome o = with_kind(OutcomeKind::TimedOut, "");
  o.late_exit = true;
  return o;
}
Outcome exited(int status) {
  Outcome o{.kind = OutcomeKind::ExitedWithoutReturn};
  o.exit_status = status;
  return o;
}
const std::string kJobinfo = "\x81\xa6"
                             "fabric"
                             "\x01"; // {"fabric": 1}

JobSwitchState state(JobState st) {
  JobSwitchState s;
  s.state = st;
  s.job.job_id = 42;
  s.job.nodes = "node[1-2]";
  s.job.network = "fabric";
  if (st == JobState::Running || st == JobState::TeardownRunning ||
      st == JobState::TeardownRetryWait)
    s.jobinfo = kJobinfo;
  return s;
}

struct Case {
  std::string name; // rule id + behaviour, used as the test name
  JobSwitchState from;
  EventKind event;
  std::optional<Outcome> outcome;
  CtldConfig cfg;
  JobState to;
  std::vector<ActionKind> actions; // in order, Log actions excluded
  std::string reason_has;          // substring of the Requeue/Cancel/Drain reason
  std::string rule = "";           // the rule id that must fire (when set)
};

/// The rule a test is named after: the leading all-capital words of
/// "R_START_FAIL_LuaErrorIsAFailedSetup" ("R_START_FAIL").
std::string rule_of_test_name(std::string_view name) {
  std::string rule;
  std::size_t pos = 0;
  while (pos < name.size()) {
    std::size_t end = name.find('_', pos);
    std::string_view word = name.substr(pos, end == std::string_view::npos ? end : end - pos);
    bool caps = !word.empty() && std::all_of(word.begin(), word.end(), [](char ch) {
      return (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
    });
    if (!caps)
      break;
    rule += rule.empty() ? "" : "_";
    rule += word;
    if (end == std::string_view::npos)
      break;
    pos = end + 1;
  }
  return rule;
}

JobSwitchState with(JobSwitchState s, auto f) {
  f(s);
  return s;
}

using A = ActionKind;
using S = JobState;
using E = EventKind;

std::vector<Case> cases() {
  CtldConfig def;
  CtldConfig nodrain;
  nodrain.drain_on_failure = false;
  auto requeueable = [](JobSwitchState &s) { s.requeue_allowed = true; };
  auto blocking = [](JobSwitchState &s) { s.block_job_complete = true; };
  auto held = [](JobSwitchState &s) { s.nodes_held = true; };
  auto recovered = [](JobSwitchState &s) { s.recovered = true; };
  CtldConfig max3;
  max3.max_setup_failures = 3;
  auto failed_twice = [](JobSwitchState &s) {
    s.requeue_allowed = true;
    s.setup_failures = 2;
  };
  auto failed_once = [](JobSwitchState &s) {
    s.requeue_allowed = true;
    s.setup_failures = 1;
  };
  auto failed_twice_no_requeue = [](JobSwitchState &s) { s.setup_failures = 2; };
  Outcome unreachable = returned(kError);
  unreachable.ret.message = "fabric manager unreachable";
  return {
      // Issue 11: switch_max_setup_failures=3, the third consecutive
      // failure requeues the job held, with the count and the message.
      {"R_SETUP_FAILURES_HELD_ThirdFailureHoldsTheJob",
       with(state(S::SetupRunning), failed_twice),
       E::SetupResult,
       unreachable,
       max3,
       S::SetupFailed,
       {A::RequeueHeld, A::EndConfiguring},
       "switch setup failed 3 times (switch_max_setup_failures=3): switch/lua job_start "
       "returned rc=-1: fabric manager unreachable"},
      {"R_SETUP_FAILURES_HELD_TimeoutCountsToo",
       with(state(S::SetupRunning), failed_twice),
       E::SetupResult,
       with_kind(OutcomeKind::TimedOut, ""),
       max3,
       S::SetupAbandoned,
       {A::RequeueHeld, A::EndConfiguring},
       "switch setup failed 3 times (switch_max_setup_failures=3): switch/lua job_start timed "
       "out"},
      {"R_START_FAIL_SecondFailureIsStillRequeued",
       with(state(S::SetupRunning), failed_once),
       E::SetupResult,
       unreachable,
       max3,
       S::SetupFailed,
       {A::Requeue, A::EndConfiguring},
       "switch setup failed: switch/lua job_start returned rc=-1: fabric manager unreachable"},
      {"R_START_FAIL_NoLimitByDefault",
       with(state(S::SetupRunning),
            [](JobSwitchState &s) {
              s.requeue_allowed = true;
              s.setup_failures = 500;
            }),
       E::SetupResult,
       returned(kError),
       def,
       S::SetupFailed,
       {A::Requeue, A::EndConfiguring},
       "switch setup failed: switch/lua job_start returned rc=-1"},
      {"R_START_FAIL_NotRequeueableIsCancelledWhateverTheCount",
       with(state(S::SetupRunning), failed_twice_no_requeue),
       E::SetupResult,
       returned(kError),
       max3,
       S::SetupFailed,
       {A::Cancel, A::EndConfiguring},
       "switch setup failed: switch/lua job_start returned rc=-1"},
      {"R_SETUP_RunsJobStart",
       state(S::None),
       E::SetupRequested,
       {},
       def,
       S::SetupRunning,
       {A::RunJobStart},
       ""},
      {"R_START_OK_StoresJobinfoAndLaunches",
       state(S::SetupRunning),
       E::SetupResult,
       returned(kSuccess, kJobinfo),
       def,
       S::Running,
       {A::EndConfiguring},
       ""},
      {"R_START_DECLINE_NilJobinfoIsNotManaged",
       state(S::SetupRunning),
       E::SetupResult,
       returned(kSuccess),
       def,
       S::Declined,
       {A::EndConfiguring},
       ""},
      {"R_START_FAIL_RequeuesWhenAllowed",
       with(state(S::SetupRunning), requeueable),
       E::SetupResult,
       returned(kError),
       def,
       S::SetupFailed,
       {A::Requeue, A::EndConfiguring},
       "switch setup failed: switch/lua job_start returned rc=-1"},
      {"R_START_FAIL_CancelsWhenNotRequeueable",
       state(S::SetupRunning),
       E::SetupResult,
       returned(kError),
       def,
       S::SetupFailed,
       {A::Cancel, A::EndConfiguring},
       "switch setup failed"},
      {"R_START_FAIL_LuaErrorIsAFailedSetup",
       state(S::SetupRunning),
       E::SetupResult,
       with_kind(OutcomeKind::LuaError),
       def,
       S::SetupFailed,
       {A::Cancel, A::EndConfiguring},
       "switch setup failed: switch/lua job_start raised an error: switch.lua:7: boom"},
      {"R_START_FAIL_BadReturnIsAFailedSetup",
       state(S::SetupRunning),
       E::SetupResult,
       with_kind(OutcomeKind::BadReturn, "returned \"0\" (a string) as rc"),
       def,
       S::SetupFailed,
       {A::Cancel, A::EndConfiguring},
       "broke the return convention"},
      {"R_START_FAIL_PositiveRcIsAFailedSetup",
       state(S::SetupRunning),
       E::SetupResult,
       returned(1, kJobinfo),
       def,
       S::SetupFailed,
       {A::Cancel, A::EndConfiguring},
       "rc=1"},
      {"R_START_UNSAVEABLE_FailsThenTearsDownWithNil",
       state(S::SetupRunning),
       E::SetupResult,
       unsaveable(),
       def,
       S::SetupAbandoned,
       {A::Cancel, A::EndConfiguring},
       "jobinfo.fabric.handler"},
      {"R_START_EXIT_FailsAsReturnedFailure",
       with(state(S::SetupRunning), requeueable),
       E::SetupResult,
       exited(3),
       def,
       S::SetupAbandoned,
       {A::Requeue, A::EndConfiguring},
       "switch setup failed: switch/lua job_start exited with status 3 without returning"},
      {"R_START_TIMEOUT_FailsWithTimedOutReason",
       state(S::SetupRunning),
       E::SetupResult,
       with_kind(OutcomeKind::TimedOut, ""),
       def,
       S::SetupAbandoned,
       {A::Cancel, A::EndConfiguring},
       "switch setup timed out"},
      {"R_START_TIMEOUT_SignalIsTreatedAsTimedOut",
       state(S::SetupRunning),
       E::SetupResult,
       with_kind(OutcomeKind::Signaled, ""),
       def,
       S::SetupAbandoned,
       {A::Cancel, A::EndConfiguring},
       "switch setup timed out"},
      {"R_START_LATE_LateTableGetsOneMoreJobComplete",
       state(S::SetupRunning),
       E::SetupResult,
       timed_out_late_table(),
       def,
       S::SetupAbandoned,
       {A::Cancel, A::EndConfiguring, A::RunLateJobComplete},
       "switch setup timed out"},
      {"R_START_LATE_LateExitGetsOneMoreJobComplete",
       state(S::SetupRunning),
       E::SetupResult,
       timed_out_late_exit(),
       def,
       S::SetupAbandoned,
       {A::Cancel, A::EndConfiguring, A::RunLateJobComplete},
       "switch setup timed out"},
      {"R_CANCEL_DURING_SETUP_HoldsNodesNoFailure",
       state(S::SetupRunning),
       E::JobEnded,
       {},
       def,
       S::SetupRunningEnded,
       {A::HoldNodes},
       ""},
      {"R_CANCELLED_SETUP_OK_TearsDownOnce",
       with(state(S::SetupRunningEnded), held),
       E::SetupResult,
       returned(kSuccess, kJobinfo),
       def,
       S::TeardownRunning,
       {A::EndConfiguring, A::RunJobComplete},
       ""},
      {"R_CANCELLED_SETUP_NONE_FailedSetupIsNotRequeuedNorDrained",
       with(state(S::SetupRunningEnded), held),
       E::SetupResult,
       returned(kError),
       def,
       S::Done,
       {A::EndConfiguring, A::ReleaseNodes},
       ""},
      {"R_CANCELLED_SETUP_UNKNOWN_TimeoutTearsDownWithNil",
       with(state(S::SetupRunningEnded), held),
       E::SetupResult,
       with_kind(OutcomeKind::TimedOut, ""),
       def,
       S::TeardownRunning,
       {A::EndConfiguring, A::RunJobComplete},
       ""},
      {"R_END_HOLD_BlockJobCompleteHoldsNodes",
       with(state(S::Running), blocking),
       E::JobEnded,
       {},
       def,
       S::TeardownRunning,
       {A::HoldNodes, A::RunJobComplete},
       ""},
      {"R_END_RunsJobCompleteWithJobinfo",
       state(S::Running),
       E::JobEnded,
       {},
       def,
       S::TeardownRunning,
       {A::HoldNodes, A::RunJobComplete},
       ""},
      {"R_END_AFTER_FAIL_NoJobCompleteForFailedSetup",
       state(S::SetupFailed),
       E::JobEnded,
       {},
       def,
       S::Done,
       {},
       ""},
      {"R_END_AFTER_FAIL_NoJobCompleteEvenWhenBlocking",
       with(state(S::SetupFailed), blocking),
       E::JobEnded,
       {},
       def,
       S::Done,
       {},
       ""},
      {"R_END_AFTER_ABANDON_JobCompleteWithNilNodesHeld",
       state(S::SetupAbandoned),
       E::JobEnded,
       {},
       def,
       S::TeardownRunning,
       {A::HoldNodes, A::RunJobComplete},
       ""},
      {"R_COMPLETE_OK_ReleasesNodes",
       with(state(S::TeardownRunning), held),
       E::TeardownResult,
       returned(kSuccess),
       def,
       S::Done,
       {A::ReleaseNodes},
       ""},
      {"R_COMPLETE_POSITIVE_OnlyLogged",
       with(state(S::TeardownRunning), held),
       E::TeardownResult,
       returned(5),
       def,
       S::Done,
       {A::ReleaseNodes},
       ""},
      {"R_COMPLETE_EAGAIN_RetriesWhileHeld",
       with(state(S::TeardownRunning), held),
       E::TeardownResult,
       returned(kEagain),
       def,
       S::TeardownRetryWait,
       {A::ScheduleRetry},
       ""},
      {"R_COMPLETE_EAGAIN_EXHAUSTED_DrainsAfterSwitchRetries",
       with(with(state(S::TeardownRunning), held), [](JobSwitchState &s) { s.retries = 3; }),
       E::TeardownResult,
       returned(kEagain),
       def,
       S::Done,
       {A::DrainNodes, A::ReleaseNodes},
       "switch teardown failed: JobId=42 switch/lua job_complete still returned slurm.EAGAIN after "
       "switch_retries=3"},
      {"R_COMPLETE_EAGAIN_UNHELD_IsAFailure",
       state(S::TeardownRunning),
       E::TeardownResult,
       returned(kEagain),
       def,
       S::Done,
       {A::DrainNodes, A::ReleaseNodes},
       "block_job_complete is false"},
      {"R_COMPLETE_FAIL_NegativeRcDrains",
       state(S::TeardownRunning),
       E::TeardownResult,
       returned(-2),
       def,
       S::Done,
       {A::DrainNodes, A::ReleaseNodes},
       "switch teardown failed: JobId=42 switch/lua job_complete returned rc=-2"},
      {"R_COMPLETE_FAIL_LuaErrorDrains",
       state(S::TeardownRunning),
       E::TeardownResult,
       with_kind(OutcomeKind::LuaError),
       def,
       S::Done,
       {A::DrainNodes, A::ReleaseNodes},
       "switch/lua job_complete raised an error: switch.lua:7: boom"},
      {"R_COMPLETE_FAIL_TimeoutDrains",
       state(S::TeardownRunning),
       E::TeardownResult,
       with_kind(OutcomeKind::TimedOut, ""),
       def,
       S::Done,
       {A::DrainNodes, A::ReleaseNodes},
       "timed out"},
      {"R_COMPLETE_FAIL_NoDrainWhenConfiguredNo",
       state(S::TeardownRunning),
       E::TeardownResult,
       returned(-1),
       nodrain,
       S::Done,
       {A::ReleaseNodes},
       ""},
      {"R_RETRY_TickRunsJobCompleteAgain",
       with(state(S::TeardownRetryWait), held),
       E::RetryTick,
       {},
       def,
       S::TeardownRunning,
       {A::RunJobComplete},
       ""},
      {"R_RESTART_SETUP_KilledJobStartIsTornDownWithNilFirst",
       with(state(S::SetupRunning), recovered),
       E::Recover,
       {},
       def,
       S::SetupUndoing,
       {A::RunJobComplete},
       "",
       "R_RESTART_SETUP"},
      {"R_UNDO_OK_ThenJobStartRunsAgain",
       state(S::SetupUndoing),
       E::TeardownResult,
       returned(kSuccess),
       def,
       S::SetupRunning,
       {A::RunJobStart},
       "",
       "R_UNDO_OK"},
      {"R_UNDO_FAIL_FailsTheJobAndNeverDrains", // issue 36: no drain for a setup
       state(S::SetupUndoing),
       E::TeardownResult,
       returned(kError),
       def,
       S::SetupFailed,
       {A::Cancel, A::EndConfiguring},
       "switch setup failed: switch/lua job_complete for a killed job_start returned rc=-1",
       "R_UNDO_FAIL"},
      {"R_UNDO_FAIL_RequeuesWhenAllowed",
       with(state(S::SetupUndoing), requeueable),
       E::TeardownResult,
       with_kind(OutcomeKind::TimedOut, ""),
       def,
       S::SetupFailed,
       {A::Requeue, A::EndConfiguring},
       "switch setup failed: switch/lua job_complete for a killed job_start timed out",
       "R_UNDO_FAIL"},
      {"R_UNDO_KILLED_SignalFromOutsideRunsTheUndoAgain",
       state(S::SetupUndoing),
       E::TeardownResult,
       with_kind(OutcomeKind::Signaled, ""),
       def,
       S::SetupUndoing,
       {A::RunJobComplete},
       "",
       "R_UNDO_KILLED"},
      {"R_UNDO_KILLED_LostWithTheSupervisorAfterTheJobEndedRunsItAgain",
       state(S::SetupUndoingEnded),
       E::TeardownResult,
       with_kind(OutcomeKind::Abandoned, "switch-lua-supervisor died"),
       def,
       S::SetupUndoingEnded,
       {A::RunJobComplete},
       "",
       "R_UNDO_KILLED"},
      {"R_UNDO_FAIL_KilledAfterSwitchRetriesFailsTheJobWithoutADrain",
       with(state(S::SetupUndoing), [](JobSwitchState &s) { s.retries = 3; }),
       E::TeardownResult,
       with_kind(OutcomeKind::Signaled, ""),
       def,
       S::SetupFailed,
       {A::Cancel, A::EndConfiguring},
       "switch setup failed: switch/lua job_complete for a killed job_start died on signal 0",
       "R_UNDO_FAIL"},
      {"R_UNDO_ENDED_HoldsUntilTheTeardownReports",
       state(S::SetupUndoing),
       E::JobEnded,
       {},
       def,
       S::SetupUndoingEnded,
       {A::HoldNodes},
       "",
       "R_UNDO_ENDED"},
      {"R_UNDO_ENDED_OK_ReleasesWithoutJobStart",
       with(state(S::SetupUndoingEnded), held),
       E::TeardownResult,
       returned(kSuccess),
       def,
       S::Done,
       {A::EndConfiguring, A::ReleaseNodes},
       "",
       "R_UNDO_ENDED_OK"},
      {"R_UNDO_ENDED_FAIL_DrainsAndReleases",
       with(state(S::SetupUndoingEnded), held),
       E::TeardownResult,
       returned(kError),
       def,
       S::Done,
       {A::EndConfiguring, A::DrainNodes, A::ReleaseNodes},
       "switch teardown failed: JobId=42",
       "R_UNDO_ENDED_FAIL"},
      {"R_RESTART_UNDO_RunsTheNilTeardownAgain",
       with(state(S::SetupUndoing), recovered),
       E::Recover,
       {},
       def,
       S::SetupUndoing,
       {A::RunJobComplete},
       "",
       "R_RESTART_UNDO"},
      {"R_RESTART_UNDO_EndedJobHoldsAndRunsTheNilTeardownAgain",
       with(state(S::SetupUndoing), recovered),
       E::JobEnded,
       {},
       def,
       S::SetupUndoingEnded,
       {A::HoldNodes, A::RunJobComplete},
       "",
       "R_RESTART_UNDO"},
      // Issue 20, host faults are the host's: a runner that could not be
      // started is retried after a back-off, never the job's failure ...
      {"R_START_HOST_FAULT_SpawnEagainIsRetriedNotFailed",
       with(state(S::SetupRunning), failed_twice),
       E::SetupResult,
       with_kind(OutcomeKind::SpawnFailed, "fork: Resource temporarily unavailable"),
       max3,
       S::SetupRunning,
       {A::ScheduleRetry}},
      {"R_START_HOST_RETRY_TheBackOffRunsJobStartAgain",
       with(state(S::SetupRunning), [](JobSwitchState &s) { s.host_faults = 1; }),
       E::RetryTick,
       {},
       def,
       S::SetupRunning,
       {A::RunJobStart}},
      // ... until switch_timeout has passed: requeued, not held even at the
      // third failure of switch_max_setup_failures=3.
      {"R_START_HOST_FAULT_EXPIRED_AfterSwitchTimeoutRequeuesUncounted",
       with(state(S::SetupRunning),
            [](JobSwitchState &s) {
              s.requeue_allowed = true;
              s.setup_failures = 2;
              s.host_faults = 5;
              s.host_fault_age = std::chrono::seconds(11);
            }),
       E::SetupResult,
       with_kind(OutcomeKind::SpawnFailed, "fork: Resource temporarily unavailable"),
       max3,
       S::SetupFailed,
       {A::Requeue, A::EndConfiguring},
       "switch setup failed: switch/lua job_start could not be started: fork: Resource "
       "temporarily unavailable for switch_timeout=10 s (a fault of the slurmctld host"},
      // Issue 24 with issue 20: a job_start the journal refused (it cannot
      // write the setup's record) is not retried as a host fault (every
      // retry would be refused too): it fails at once, requeued, and is not
      // held even at the third failure of switch_max_setup_failures=3.
      {"R_START_FAIL_AJournalRefusalFailsAtOnceNeverHeld",
       with(state(S::SetupRunning),
            [](JobSwitchState &s) {
              s.requeue_allowed = true;
              s.setup_failures = 2;
              s.journal_down = true;
            }),
       E::SetupResult,
       with_kind(OutcomeKind::SpawnFailed, "journal /x/switch_lua.journal: cannot append: No "
                                           "space left on device (errno 28): no setup starts "
                                           "without its record"),
       max3,
       S::SetupFailed,
       {A::Requeue, A::EndConfiguring},
       "switch setup failed: switch/lua job_start could not be started: journal "
       "/x/switch_lua.journal: cannot append"},
      {"R_CANCELLED_SETUP_NEVER_RAN_EndedDuringTheBackOffReleases",
       with(with(state(S::SetupRunningEnded), held), [](JobSwitchState &s) { s.host_faults = 2; }),
       E::RetryTick,
       {},
       def,
       S::Done,
       {A::EndConfiguring, A::ReleaseNodes}},
      {"R_CANCELLED_SETUP_NONE_SpawnFailureAfterTheEndReleases",
       with(state(S::SetupRunningEnded), held),
       E::SetupResult,
       with_kind(OutcomeKind::SpawnFailed, "fork: Cannot allocate memory"),
       def,
       S::Done,
       {A::EndConfiguring, A::ReleaseNodes}},
      // A RetryTick for a setup that waits for none is ignored (it must
      // never start a second job_start beside the one in flight).
      {"R_IGNORED_AStrayRetryTickDuringASetupStartsNothing",
       state(S::SetupRunning),
       E::RetryTick,
       {},
       def,
       S::SetupRunning,
       {}},
      {"R_COMPLETE_HOST_FAULT_SpawnFailureIsRetriedNeverDrained",
       with(with(state(S::TeardownRunning), held), [](JobSwitchState &s) { s.retries = 3; }),
       E::TeardownResult,
       with_kind(OutcomeKind::SpawnFailed, "fork: Resource temporarily unavailable"),
       def,
       S::TeardownRetryWait,
       {A::ScheduleRetry}},
      {"R_COMPLETE_HOST_FAULT_UnheldIsRetriedToo",
       state(S::TeardownRunning),
       E::TeardownResult,
       with_kind(OutcomeKind::SpawnFailed, "switch-lua-supervisor: the batch lane's queue is full"),
       def,
       S::TeardownRetryWait,
       {A::ScheduleRetry}},
      {"R_UNDO_HOST_FAULT_UndoIsRetriedTheJobWaits",
       state(S::SetupUndoing),
       E::TeardownResult,
       with_kind(OutcomeKind::SpawnFailed, "fork: Resource temporarily unavailable"),
       def,
       S::SetupUndoing,
       {A::ScheduleRetry}},
      {"R_UNDO_RETRY_TheBackOffRunsTheNilTeardownAgain",
       with(state(S::SetupUndoingEnded), [](JobSwitchState &s) { s.kept = 1; }),
       E::RetryTick,
       {},
       def,
       S::SetupUndoingEnded,
       {A::RunJobComplete}},
      // Issue 20: a job_start lost with a supervisor the watchdog replaced
      // is undone and run again (restart rules), not failed to the job ...
      {"R_START_LOST_ReplacedSupervisorUndoesAndRunsAgain",
       with(state(S::SetupRunning), requeueable),
       E::SetupResult,
       with_kind(OutcomeKind::Abandoned, "switch-lua-supervisor stopped answering; replaced"),
       def,
       S::SetupUndoing,
       {A::RunJobComplete}},
      // ... up to switch_retries times in a row.
      {"R_START_TIMEOUT_LostSwitchRetriesTimesFailsAsTimedOut",
       with(with(state(S::SetupRunning), requeueable), [](JobSwitchState &s) { s.lost = 3; }),
       E::SetupResult,
       with_kind(OutcomeKind::Abandoned, "switch-lua-supervisor died"),
       def,
       S::SetupAbandoned,
       {A::Requeue, A::EndConfiguring},
       "switch setup timed out"},
      // Issue 20, the fabric breaker: slurm.FABRIC_DOWN keeps the teardown ...
      {"R_COMPLETE_FABRIC_DOWN_TheScriptSaysTheFabricIsDownKeptNotDrained",
       with(state(S::TeardownRunning), held),
       E::TeardownResult,
       returned(kFabricDown),
       def,
       S::TeardownRetryWait,
       {A::ScheduleRetry}},
      // ... and so does any failure while the breaker is open, held or not,
      // switch_retries used up or not.
      {"R_COMPLETE_FABRIC_DOWN_AFailureWhileTheBreakerIsOpenIsKept",
       with(state(S::TeardownRunning), [](JobSwitchState &s) { s.fabric_down = true; }),
       E::TeardownResult,
       returned(kError),
       def,
       S::TeardownRetryWait,
       {A::ScheduleRetry}},
      {"R_COMPLETE_FAIL_TheSameFailureWithTheBreakerClosedDrains",
       state(S::TeardownRunning),
       E::TeardownResult,
       returned(kError),
       def,
       S::Done,
       {A::DrainNodes, A::ReleaseNodes}},
      {"R_UNDO_FABRIC_DOWN_TheUndoIsKeptTheJobWaits",
       state(S::SetupUndoing),
       E::TeardownResult,
       returned(kFabricDown),
       def,
       S::SetupUndoing,
       {A::ScheduleRetry}},
      // A setup that fails while the breaker is open is requeued naming
      // the outage, never counted (not held at switch_max_setup_failures).
      {"R_START_FABRIC_DOWN_AFailedSetupNamesTheOutageUncounted",
       with(with(state(S::SetupRunning), failed_twice),
            [](JobSwitchState &s) { s.fabric_down = true; }),
       E::SetupResult,
       unreachable,
       max3,
       S::SetupFailed,
       {A::Requeue, A::EndConfiguring},
       "switch setup failed: the fabric is unavailable (switch/lua fabric breaker open): "
       "switch/lua job_start returned rc=-1: fabric manager unreachable"},
      {"R_START_FABRIC_DOWN_TheScriptSaysSoWithTheBreakerClosed",
       with(state(S::SetupRunning), requeueable),
       E::SetupResult,
       returned(kFabricDown),
       def,
       S::SetupFailed,
       {A::Requeue, A::EndConfiguring},
       "the fabric is unavailable (switch/lua fabric breaker opening)"},
      {"R_COMPLETE_KILLED_SignalFromOutsideIsRetriedHeld",
       with(state(S::TeardownRunning), held),
       E::TeardownResult,
       with_kind(OutcomeKind::Signaled, ""),
       def,
       S::TeardownRetryWait,
       {A::ScheduleRetry},
       "",
       "R_COMPLETE_KILLED"},
      // Issue 19 item 7: with block_job_complete false the nodes are back in
      // service, so the killed teardown is a failure, not a retry.
      {"R_COMPLETE_KILLED_UNHELD_SignalWithTheNodesInServiceDrains",
       state(S::TeardownRunning),
       E::TeardownResult,
       with_kind(OutcomeKind::Signaled, ""),
       def,
       S::Done,
       {A::DrainNodes, A::ReleaseNodes},
       "switch teardown failed: JobId=42 switch/lua job_complete died on signal 0",
       "R_COMPLETE_KILLED_UNHELD"},
      // Issue 20: lost with a supervisor the watchdog replaced, the nodes
      // not held: run again on the new one; issue 36: as a retry, counted
      // against switch_retries ...
      {"R_COMPLETE_LOST_LostWithTheSupervisorUnheldRunsAgainAsARetry",
       state(S::TeardownRunning),
       E::TeardownResult,
       with_kind(OutcomeKind::Abandoned, "switch-lua-supervisor died"),
       def,
       S::TeardownRetryWait,
       {A::ScheduleRetry}},
      // ... and drained once they are used up, as a killed one is.
      {"R_COMPLETE_KILLED_EXHAUSTED_LostUnheldAfterSwitchRetriesDrains",
       with(state(S::TeardownRunning), [](JobSwitchState &s) { s.retries = 3; }),
       E::TeardownResult,
       with_kind(OutcomeKind::Abandoned, "switch-lua-supervisor died"),
       def,
       S::Done,
       {A::DrainNodes, A::ReleaseNodes},
       "switch teardown failed: JobId=42 switch/lua job_complete was abandoned: "
       "switch-lua-supervisor died",
       "R_COMPLETE_KILLED_EXHAUSTED"},
      {"R_COMPLETE_KILLED_LostWithTheSupervisorIsRetried",
       with(state(S::TeardownRunning), held),
       E::TeardownResult,
       with_kind(OutcomeKind::Abandoned, "switch-lua-supervisor died"),
       def,
       S::TeardownRetryWait,
       {A::ScheduleRetry},
       "",
       "R_COMPLETE_KILLED"},
      {"R_COMPLETE_KILLED_EXHAUSTED_DrainsAfterSwitchRetries",
       with(with(state(S::TeardownRunning), held), [](JobSwitchState &s) { s.retries = 3; }),
       E::TeardownResult,
       with_kind(OutcomeKind::Signaled, ""),
       def,
       S::Done,
       {A::DrainNodes, A::ReleaseNodes},
       "switch teardown failed: JobId=42 switch/lua job_complete died on signal 0",
       "R_COMPLETE_KILLED_EXHAUSTED"},
      {"R_RESTART_TEARDOWN_ReRunsJobCompleteHeld",
       with(state(S::TeardownRunning), recovered),
       E::JobEnded,
       {},
       def,
       S::TeardownRunning,
       {A::HoldNodes, A::RunJobComplete},
       ""},
      {"R_RESTART_TEARDOWN_RetryWaitReRunsOnRecover",
       with(state(S::TeardownRetryWait), recovered),
       E::Recover,
       {},
       def,
       S::TeardownRunning,
       {A::HoldNodes, A::RunJobComplete},
       ""},
      {"R_RESTART_UNKNOWN_OutstandingSetupOfAnEndedJobTearsDownWithNil",
       with(state(S::SetupRunning), recovered),
       E::JobEnded,
       {},
       def,
       S::TeardownRunning,
       {A::HoldNodes, A::RunJobComplete},
       ""},
      {"R_RESTART_NOTHING_SetUpJobIsNotSetUpAgain",
       with(state(S::Running), recovered),
       E::Recover,
       {},
       def,
       S::Running,
       {},
       ""},
      {"R_RESTART_NOTHING_FailedSetupIsNotRunAgain",
       with(state(S::SetupFailed), recovered),
       E::Recover,
       {},
       def,
       S::SetupFailed,
       {},
       ""},
      {"R_END_RecoveredRunningJobEndsAsUsual",
       with(state(S::Running), recovered),
       E::JobEnded,
       {},
       def,
       S::TeardownRunning,
       {A::HoldNodes, A::RunJobComplete},
       ""},
      {"R_END_AFTER_ABANDON_RecoveredAbandonedSetupIsTornDown",
       with(state(S::SetupAbandoned), recovered),
       E::JobEnded,
       {},
       def,
       S::TeardownRunning,
       {A::HoldNodes, A::RunJobComplete},
       ""},
      {"R_START_FAIL_ReasonCarriesOnlyTheFirstLine",
       state(S::SetupRunning),
       E::SetupResult,
       with_kind(OutcomeKind::LuaError, "switch.lua:7: boom\nstack traceback:\n\t[C]: in ?"),
       def,
       S::SetupFailed,
       {A::Cancel, A::EndConfiguring},
       "switch setup failed: switch/lua job_start raised an error: switch.lua:7: boom"},
      // Issue 24, the lost start.
      {"R_SETUP_WAIT_ORPHAN_AnEarlierAttemptMayStillRunSoNoJobStartYet",
       with(state(S::None), [](JobSwitchState &s) { s.orphan_pending = true; }),
       E::SetupRequested,
       {},
       def,
       S::SetupWaitOrphan,
       {},
       ""},
      {"R_SETUP_NoOrphanMeansJobStartAtOnce",
       state(S::None),
       E::SetupRequested,
       {},
       def,
       S::SetupRunning,
       {A::RunJobStart},
       ""},
      {"R_SETUP_AFTER_ORPHAN_TheEarlierAttemptIsTornDownSoTheSetupRuns",
       state(S::SetupWaitOrphan),
       E::OrphanGone,
       {},
       def,
       S::SetupRunning,
       {A::RunJobStart},
       ""},
      {"R_WAIT_ORPHAN_ENDED_TheJobEndsFirstNothingToTearDown",
       state(S::SetupWaitOrphan),
       E::JobEnded,
       {},
       def,
       S::Done,
       {A::EndConfiguring},
       ""},
      {"R_WAIT_ORPHAN_ENDED_AfterARestartToo",
       with(state(S::SetupWaitOrphan), recovered),
       E::JobEnded,
       {},
       def,
       S::Done,
       {A::EndConfiguring},
       ""},
      // Issue 20: a node that went DOWN (or was resumed) while another
      // job's teardown held it was given to this job by Slurm.
      {"R_SETUP_WAIT_HELD_AnotherJobsHeldTeardownHoldsANodeSoNoJobStartYet",
       with(state(S::None), [](JobSwitchState &s) { s.held_by = 7; }),
       E::SetupRequested,
       {},
       def,
       S::SetupWaitOrphan,
       {},
       ""},
      {"R_SETUP_WAIT_ORPHAN_AnOrphanIsWaitedForFirstEvenWithANodeHeld",
       with(state(S::None),
            [](JobSwitchState &s) {
              s.orphan_pending = true;
              s.held_by = 7;
            }),
       E::SetupRequested,
       {},
       def,
       S::SetupWaitOrphan,
       {},
       ""},
      {"R_SETUP_AFTER_HELD_ThatTeardownReportedSoTheSetupRuns",
       with(state(S::SetupWaitOrphan), [](JobSwitchState &s) { s.held_by = 7; }),
       E::OrphanGone,
       {},
       def,
       S::SetupRunning,
       {A::RunJobStart},
       ""},
      {"R_WAIT_HELD_ENDED_TheJobEndsFirstNothingToTearDown",
       with(state(S::SetupWaitOrphan), [](JobSwitchState &s) { s.held_by = 7; }),
       E::JobEnded,
       {},
       def,
       S::Done,
       {A::EndConfiguring},
       ""},
      {"R_RESTART_WAIT_ORPHAN_ItWaitsOnAfterARestart",
       with(state(S::SetupWaitOrphan), recovered),
       E::Recover,
       {},
       def,
       S::SetupWaitOrphan,
       {},
       ""},
      {"R_IGNORED_StrayRetryTickChangesNothing",
       state(S::Running),
       E::RetryTick,
       {},
       def,
       S::Running,
       {},
       ""},
  };
}

void PrintTo(const Case &c, std::ostream *os) {
  *os << c.name;
}

class JobFsmRule : public testing::TestWithParam<Case> {};

TEST_P(JobFsmRule, FollowsTheContract) {
  const Case &c = GetParam();
  Event e{.kind = c.event, .outcome = c.outcome ? &*c.outcome : nullptr};
  StepResult r = step(c.from, e, c.cfg);
  EXPECT_EQ(job_state_name(r.next.state), job_state_name(c.to)) << "rule " << r.rule;
  // The rule the test is named after fired: as the row that matched, or
  // as the rule of an action (R_START_LATE is the late job_complete action
  // of the R_START_TIMEOUT row).
  const std::string want_rule = c.rule.empty() ? rule_of_test_name(c.name) : c.rule;
  bool fired = r.rule == want_rule;
  for (const Action &a : r.actions)
    fired = fired || (a.kind != A::Log && a.rule == want_rule);
  EXPECT_TRUE(fired) << "the test is named after " << want_rule << " but " << r.rule << " fired";
  std::vector<ActionKind> got;
  std::string reason;
  for (const Action &a : r.actions) {
    if (a.kind == ActionKind::Log)
      continue;
    got.push_back(a.kind);
    if (a.kind == A::Requeue || a.kind == A::RequeueHeld || a.kind == A::Cancel ||
        a.kind == A::DrainNodes) {
      reason = a.reason;
      EXPECT_NE(a.reason.find("switch/lua"), std::string::npos) << a.reason;
    }
  }
  std::vector<std::string> got_names, want_names;
  for (auto k : got)
    got_names.emplace_back(action_kind_name(k));
  for (auto k : c.actions)
    want_names.emplace_back(action_kind_name(k));
  EXPECT_EQ(got_names, want_names);
  if (!c.reason_has.empty()) {
    EXPECT_NE(reason.find(c.reason_has), std::string::npos) << "reason: " << reason;
  }
  EXPECT_EQ(reason.find('\n'), std::string::npos) << "a reason is one line: " << reason;
}

INSTANTIATE_TEST_SUITE_P(Rules, JobFsmRule, testing::ValuesIn(cases()),
                         [](const testing::TestParamInfo<Case> &i) { return i.param.name; });

// Issue 13: every row of the rule table has a test named after its id (one
// grep of the id finds the row, its test and its man-page entry).  Issue
// 19: the rows of the sibling tables (recovery_fsm.hpp) too, whose tests
// are TEST()s of this binary (recovery_fsm_test.cpp): every test of the
// binary counts, by the rule its name starts with.
TEST(JobFsm, EveryRuleHasATestNamedAfterIt) {
  std::set<std::string> tested;
  for (const Case &c : cases())
    tested.insert(rule_of_test_name(c.name));
  const testing::UnitTest &all = *testing::UnitTest::GetInstance();
  for (int i = 0; i < all.total_test_suite_count(); ++i) {
    const testing::TestSuite &suite = *all.GetTestSuite(i);
    for (int k = 0; k < suite.total_test_count(); ++k)
      tested.insert(rule_of_test_name(suite.GetTestInfo(k)->name()));
  }
  for (std::string_view id : rule_ids())
    EXPECT_TRUE(tested.count(std::string(id))) << id << " has no test case named after it";
}

// Issue 13: switch.lua(5) has an entry (".B R_ID" in its rule list) for
// every rule id of the table.
TEST(JobFsm, EveryRuleHasAManPageEntry) {
  std::ifstream in(SWITCHLUA_SOURCE_ROOT "/man/switch.lua.5");
  ASSERT_TRUE(in) << SWITCHLUA_SOURCE_ROOT "/man/switch.lua.5";
  std::set<std::string> entries;
  for (std::string line; std::getline(in, line);)
    if (line.starts_with(".B R_"))
      entries.insert(line.substr(3));
  for (std::string_view id : rule_ids())
    EXPECT_TRUE(entries.count(std::string(id)))
        << id << " has no \".B " << id << "\" entry in switch.lua(5)";
}

TEST(JobFsm, R_UNDO_FAIL_TheJobsReasonSaysTheSetupFailed) {
  Outcome o = returned(kError);
  StepResult r = step(state(S::SetupUndoing), Event{.kind = E::TeardownResult, .outcome = &o}, {});
  EXPECT_EQ(r.rule, "R_UNDO_FAIL");
  ASSERT_EQ(r.actions[1].kind, A::Cancel);
  EXPECT_EQ(r.actions[1].reason,
            "switch setup failed: switch/lua job_complete for a killed job_start returned rc=-1");
}

// Issue 9 item 6: reasons are cut on a character boundary, never in half
// an "é" (error(("a"):rep(115)..("é"):rep(20), 0) in job_start).
TEST(JobFsm, R_START_FAIL_LongAccentedMessageIsCutOnAWholeCharacter) {
  std::string msg = std::string(115, 'a');
  for (int i = 0; i < 20; ++i)
    msg += "\xc3\xa9";
  Outcome o = with_kind(OutcomeKind::LuaError, msg);
  StepResult r = step(state(S::SetupRunning), Event{.kind = E::SetupResult, .outcome = &o}, {});
  ASSERT_EQ(r.actions[1].kind, A::Cancel);
  std::string want =
      "switch setup failed: switch/lua job_start raised an error: " + std::string(115, 'a');
  for (int i = 0; i < 12; ++i)
    want += "\xc3\xa9";
  want += "...";
  EXPECT_EQ(r.actions[1].reason, want);
}

TEST(JobFsm, R_COMPLETE_FAIL_LongAccentedMessageIsCutOnAWholeCharacter) {
  std::string msg = std::string(115, 'a');
  for (int i = 0; i < 20; ++i)
    msg += "\xc3\xa9";
  Outcome o = with_kind(OutcomeKind::LuaError, msg);
  StepResult r =
      step(state(S::TeardownRunning), Event{.kind = E::TeardownResult, .outcome = &o}, {});
  std::string drain;
  for (const Action &a : r.actions)
    if (a.kind == A::DrainNodes)
      drain = a.reason;
  std::string want = "switch teardown failed: JobId=42 switch/lua job_complete raised an error: " +
                     std::string(115, 'a');
  for (int i = 0; i < 12; ++i)
    want += "\xc3\xa9";
  want += "...";
  EXPECT_EQ(drain, want);
}

/// job_complete's failure with a message and the nodes it names (issue 20).
Outcome failed_naming(std::optional<std::vector<std::string>> nodes,
                      std::string message = "port 7 stuck") {
  Outcome o = returned(kError);
  o.ret.hook = Hook::JobComplete;
  o.ret.message = std::move(message);
  o.ret.nodes = std::move(nodes);
  return o;
}

/// The actions of a teardown of node[1-2] that ended with `o`, and `cfg`.
StepResult teardown_of_two(const Outcome &o, const CtldConfig &cfg = {}) {
  JobSwitchState s = state(S::TeardownRunning);
  s.job.node_names = {"node1", "node2"};
  return step(s, Event{.kind = E::TeardownResult, .outcome = &o}, cfg);
}

std::vector<const Action *> of_kind(const StepResult &r, ActionKind k) {
  std::vector<const Action *> out;
  for (const Action &a : r.actions)
    if (a.kind == k)
      out.push_back(&a);
  return out;
}

// Issue 20, per-node attribution: a failure that names node2 drains node2
// only, with the script's message in the reason.
TEST(JobFsm, R_COMPLETE_FAIL_DrainsOnlyTheNodesTheScriptNamed) {
  StepResult r = teardown_of_two(failed_naming(std::vector<std::string>{"node2"}));
  EXPECT_EQ(r.rule, "R_COMPLETE_FAIL");
  auto drains = of_kind(r, A::DrainNodes);
  ASSERT_EQ(drains.size(), 1u);
  EXPECT_EQ(drains[0]->nodes, "node2");
  EXPECT_EQ(
      drains[0]->reason,
      "switch teardown failed: JobId=42 switch/lua job_complete returned rc=-1: port 7 stuck");
  EXPECT_EQ(of_kind(r, A::ReleaseNodes).size(), 1u);
}

// Without a third value (or from another hook), the job's nodes, as before:
// the action names none (execute() takes the job's).
TEST(JobFsm, R_COMPLETE_FAIL_WithoutNodesDrainsTheJobsNodes) {
  StepResult r = teardown_of_two(failed_naming(std::nullopt));
  auto drains = of_kind(r, A::DrainNodes);
  ASSERT_EQ(drains.size(), 1u);
  EXPECT_EQ(drains[0]->nodes, "");
  EXPECT_NE(drains[0]->reason.find("returned rc=-1: port 7 stuck"), std::string::npos);
}

// Names that are not the job's are never drained (one error line); when
// none is left, the job's nodes are.
TEST(JobFsm, R_COMPLETE_FAIL_ForeignNodesAreNeverDrained) {
  StepResult r = teardown_of_two(failed_naming(std::vector<std::string>{"node2", "login1"}));
  auto drains = of_kind(r, A::DrainNodes);
  ASSERT_EQ(drains.size(), 1u);
  EXPECT_EQ(drains[0]->nodes, "node2");
  bool logged = false;
  for (const Action *a : of_kind(r, A::Log))
    logged = logged || a->reason == "JobId=42 job_complete named login1 that is not the job's "
                                    "(node[1-2]): never drained";
  EXPECT_TRUE(logged);
  r = teardown_of_two(failed_naming(std::vector<std::string>{"login1"}));
  drains = of_kind(r, A::DrainNodes);
  ASSERT_EQ(drains.size(), 1u);
  EXPECT_EQ(drains[0]->nodes, "");
}

// An empty list: the failure concerns none of the job's nodes, nothing is
// drained, and an error line says so.
TEST(JobFsm, R_COMPLETE_FAIL_AnEmptyListDrainsNothing) {
  StepResult r = teardown_of_two(failed_naming(std::vector<std::string>{}));
  EXPECT_EQ(r.rule, "R_COMPLETE_FAIL");
  EXPECT_TRUE(of_kind(r, A::DrainNodes).empty());
  bool logged = false;
  for (const Action *a : of_kind(r, A::Log))
    logged = logged || (a->error && a->reason.starts_with("JobId=42 job_complete named none of "
                                                          "the job's nodes (an empty list): "
                                                          "nothing drained (switch teardown"));
  EXPECT_TRUE(logged);
}

// switch_drain_on_failure=no: the line names the nodes it would drain.
TEST(JobFsm, R_COMPLETE_FAIL_NoDrainNamesTheNodes) {
  CtldConfig nodrain;
  nodrain.drain_on_failure = false;
  StepResult r = teardown_of_two(failed_naming(std::vector<std::string>{"node1"}), nodrain);
  EXPECT_TRUE(of_kind(r, A::DrainNodes).empty());
  bool logged = false;
  for (const Action *a : of_kind(r, A::Log))
    logged = logged || a->reason.starts_with("JobId=42 not draining node1 (switch teardown failed");
  EXPECT_TRUE(logged);
}

// Nodes with a success, EAGAIN or slurm.FABRIC_DOWN drain nothing.
TEST(JobFsm, R_COMPLETE_OK_NodesWithASuccessDrainNothing) {
  Outcome o = failed_naming(std::vector<std::string>{"node1"});
  o.ret.rc = kSuccess;
  EXPECT_TRUE(of_kind(teardown_of_two(o), A::DrainNodes).empty());
  o.ret.rc = kFabricDown;
  EXPECT_TRUE(of_kind(teardown_of_two(o), A::DrainNodes).empty());
}

// The undo of a killed setup whose job ended names its nodes the same way.
TEST(JobFsm, R_UNDO_ENDED_FAIL_DrainsOnlyTheNodesTheScriptNamed) {
  JobSwitchState s = state(S::SetupUndoingEnded);
  s.job.node_names = {"node1", "node2"};
  s.nodes_held = true;
  Outcome o = failed_naming(std::vector<std::string>{"node1"});
  StepResult r = step(s, Event{.kind = E::TeardownResult, .outcome = &o}, {});
  EXPECT_EQ(r.rule, "R_UNDO_ENDED_FAIL");
  auto drains = of_kind(r, A::DrainNodes);
  ASSERT_EQ(drains.size(), 1u) << r.rule;
  EXPECT_EQ(drains[0]->nodes, "node1");
}

TEST(JobFsm, R_UNDO_OK_TheNewJobStartGetsTheJobTable) {
  Outcome o = returned(kSuccess);
  StepResult r = step(state(S::SetupUndoing), Event{.kind = E::TeardownResult, .outcome = &o}, {});
  EXPECT_EQ(r.rule, "R_UNDO_OK");
  EXPECT_EQ(r.next.job.job_id, 42u);
  EXPECT_FALSE(r.next.jobinfo.has_value());
}

TEST(JobFsm, LateTableIsPassedToTheExtraJobComplete) {
  Outcome o = timed_out_late_table();
  Event e{.kind = E::SetupResult, .outcome = &o};
  StepResult r = step(state(S::SetupRunning), e, {});
  ASSERT_EQ(r.actions.back().kind, A::RunLateJobComplete);
  EXPECT_EQ(r.actions.back().jobinfo, o.late_return->jobinfo);
}

TEST(JobFsm, AbandonedSetupTeardownGetsNilJobinfo) {
  StepResult r = step(state(S::SetupAbandoned), Event{.kind = E::JobEnded}, {});
  ASSERT_EQ(r.actions.back().kind, A::RunJobComplete);
  EXPECT_FALSE(r.actions.back().jobinfo.has_value());
}

/// The hold actions of a step, as "job" / "job+nodes".
std::vector<std::string> holds(const StepResult &r) {
  std::vector<std::string> out;
  for (const Action &a : r.actions)
    if (a.kind == A::HoldNodes)
      out.push_back(a.hold == HoldScope::JobAndNodes ? "job+nodes" : "job");
  return out;
}

// switch.lua contract, job_complete EAGAIN: nodes are held only with
// block_job_complete true, for a job that ended while its setup was still
// running, or for a teardown run again after a restart.  An abandoned setup
// (timed out) whose job ends afterwards is none of these.
TEST(JobFsm, R_END_AFTER_ABANDON_NonBlockingHoldsTheJobButNotItsNodes) {
  StepResult r = step(state(S::SetupAbandoned), Event{.kind = E::JobEnded}, {});
  EXPECT_EQ(r.rule, "R_END_AFTER_ABANDON");
  EXPECT_EQ(holds(r), std::vector<std::string>{"job"});
  EXPECT_FALSE(r.next.nodes_held);
  // ... so its first EAGAIN is a failure: drained at once, no retry.
  Outcome again = returned(kEagain);
  StepResult t = step(r.next, Event{.kind = E::TeardownResult, .outcome = &again}, {});
  EXPECT_EQ(t.rule, "R_COMPLETE_EAGAIN_UNHELD");
  EXPECT_EQ(job_state_name(t.next.state), "Done");
  std::vector<std::string> drains;
  for (const Action &a : t.actions)
    if (a.kind == A::DrainNodes)
      drains.push_back(a.reason);
  EXPECT_EQ(drains, std::vector<std::string>{"switch teardown failed: JobId=42 switch/lua "
                                             "job_complete returned slurm.EAGAIN but "
                                             "block_job_complete is false"});
}

TEST(JobFsm, R_END_AFTER_ABANDON_BlockingHoldsTheNodesAndRetriesEagain) {
  JobSwitchState s = state(S::SetupAbandoned);
  s.block_job_complete = true;
  StepResult r = step(s, Event{.kind = E::JobEnded}, {});
  EXPECT_EQ(holds(r), std::vector<std::string>{"job+nodes"});
  EXPECT_TRUE(r.next.nodes_held);
  Outcome again = returned(kEagain);
  StepResult t = step(r.next, Event{.kind = E::TeardownResult, .outcome = &again}, {});
  EXPECT_EQ(t.rule, "R_COMPLETE_EAGAIN");
}

TEST(JobFsm, R_RESTART_UNKNOWN_AbandonedSetupHoldsNodesOnlyWhenBlocking) {
  JobSwitchState s = state(S::SetupAbandoned);
  s.recovered = true;
  StepResult r = step(s, Event{.kind = E::Recover}, {});
  EXPECT_EQ(r.rule, "R_RESTART_UNKNOWN");
  EXPECT_EQ(holds(r), std::vector<std::string>{"job"});
  EXPECT_FALSE(r.next.nodes_held);
  s.block_job_complete = true;
  r = step(s, Event{.kind = E::Recover}, {});
  EXPECT_EQ(holds(r), std::vector<std::string>{"job+nodes"});
  EXPECT_TRUE(r.next.nodes_held);
}

TEST(JobFsm, R_COMPLETE_KILLED_KeepsTheNodesHeld) {
  Outcome killed = with_kind(OutcomeKind::Signaled, "");
  JobSwitchState h = state(S::TeardownRunning);
  h.nodes_held = true;
  StepResult r = step(h, Event{.kind = E::TeardownResult, .outcome = &killed}, {});
  EXPECT_EQ(r.rule, "R_COMPLETE_KILLED");
  EXPECT_TRUE(holds(r).empty());
  EXPECT_TRUE(r.next.nodes_held);
}

// Issue 19 item 7: a killed job_complete with block_job_complete false is
// not run again while its nodes are back in service: its line says so, and
// no line says "nodes held".
TEST(JobFsm, R_COMPLETE_KILLED_UNHELD_TheLogLineSaysTheNodesAreNotHeld) {
  Outcome killed = with_kind(OutcomeKind::Signaled, "");
  killed.signal = 9;
  StepResult r =
      step(state(S::TeardownRunning), Event{.kind = E::TeardownResult, .outcome = &killed}, {});
  EXPECT_EQ(r.rule, "R_COMPLETE_KILLED_UNHELD");
  EXPECT_FALSE(r.next.nodes_held);
  std::vector<std::string> logs;
  for (const Action &a : r.actions)
    if (a.kind == A::Log)
      logs.push_back(a.reason);
  EXPECT_EQ(logs, std::vector<std::string>{"JobId=42 job_complete died on signal 9 (SIGKILL): its "
                                           "nodes are not held (block_job_complete is false), so "
                                           "it is not run again: a failed teardown"});
  EXPECT_EQ(std::count_if(r.actions.begin(), r.actions.end(),
                          [](const Action &a) { return a.kind == A::ScheduleRetry; }),
            0);
}

// The log line says that the killed teardown runs again (a rule id renamed
// from R-COMPLETE-KILLED once left it saying only "died on signal 9").
TEST(JobFsm, R_COMPLETE_KILLED_TheLogLineSaysItRunsAgain) {
  Outcome killed = with_kind(OutcomeKind::Signaled, "");
  killed.signal = 9;
  CtldConfig cfg;
  cfg.switch_retries = 3;
  auto log_of = [](const StepResult &r) {
    std::string text;
    for (const Action &a : r.actions)
      if (a.kind == A::Log)
        text = a.reason;
    return text;
  };
  JobSwitchState h = state(S::TeardownRunning);
  h.nodes_held = true;
  StepResult r = step(h, Event{.kind = E::TeardownResult, .outcome = &killed}, cfg);
  EXPECT_EQ(log_of(r),
            "JobId=42 job_complete died on signal 9 (SIGKILL): nodes held, running it again at "
            "the next periodic check (retry 1 of 3)");
  JobSwitchState u = state(S::SetupUndoing);
  u.job.attempt = 7;
  r = step(u, Event{.kind = E::TeardownResult, .outcome = &killed}, cfg);
  EXPECT_EQ(r.rule, "R_UNDO_KILLED");
  EXPECT_EQ(log_of(r), "JobId=42 job_complete for the killed job_start of attempt 7 died on "
                       "signal 9 (SIGKILL): running it again (retry 1 of 3)");
}

// One log line per teardown outcome: the controller logs a job_complete
// that did not return (with its timings and traceback); the rule adds none
// unless it decides something more (a retry), a return is the rule's line.
TEST(JobFsm, R_COMPLETE_FAIL_OneLogLinePerTeardownOutcome) {
  auto logs = [](const StepResult &r) {
    return std::count_if(r.actions.begin(), r.actions.end(),
                         [](const Action &a) { return a.kind == A::Log; });
  };
  Outcome err = with_kind(OutcomeKind::LuaError);
  StepResult r =
      step(state(S::TeardownRunning), Event{.kind = E::TeardownResult, .outcome = &err}, {});
  EXPECT_EQ(r.rule, "R_COMPLETE_FAIL");
  EXPECT_EQ(logs(r), 0) << "the controller's outcome line says it";
  Outcome bad = returned(kError);
  r = step(state(S::TeardownRunning), Event{.kind = E::TeardownResult, .outcome = &bad}, {});
  ASSERT_EQ(logs(r), 1);
  EXPECT_EQ(r.actions[0].reason, "JobId=42 job_complete returned rc=-1");
  Outcome spawn = with_kind(OutcomeKind::SpawnFailed, "fork: out of memory");
  r = step(state(S::TeardownRunning), Event{.kind = E::TeardownResult, .outcome = &spawn}, {});
  EXPECT_EQ(logs(r), 1) << "no outcome line is logged for a call that never ran";
}

TEST(JobFsm, TeardownAfterRunningGetsTheSameJobinfo) {
  StepResult r = step(state(S::Running), Event{.kind = E::JobEnded}, {});
  ASSERT_EQ(r.actions.back().kind, A::RunJobComplete);
  EXPECT_EQ(r.actions.back().jobinfo, kJobinfo);
}

TEST(JobFsm, RequeuedJobStartsAFreshRun) {
  JobSwitchState s = state(S::Done);
  s.retries = 2;
  StepResult r = step(s, Event{.kind = E::SetupRequested}, {});
  EXPECT_EQ(r.next.state, S::SetupRunning);
  EXPECT_EQ(r.next.retries, 0u);
  EXPECT_FALSE(r.next.jobinfo.has_value());
}

// ---- randomized sequences ----

/// Drives one job with random but realistic events and checks invariants.
struct Model {
  std::mt19937 rng;
  CtldConfig cfg;
  JobSwitchState s;
  int pending_start = 0, pending_complete = 0;
  bool setup_declined_or_failed = false;
  bool nodes_held = false;
  std::uint32_t completes_this_run = 0;
  bool ended = false;
  bool ended_during_setup = false; ///< JobEnded while job_start (or its undo) ran
  bool restarted = false;

  void check(const StepResult &r) {
    for (const Action &a : r.actions) {
      switch (a.kind) {
      case A::RunJobStart:
        pending_start++;
        break;
      case A::RunJobComplete:
        ASSERT_FALSE(setup_declined_or_failed) << "job_complete after a declined/failed setup";
        pending_complete++;
        completes_this_run++;
        break;
      case A::HoldNodes:
        if (a.hold == HoldScope::JobAndNodes) {
          // switch.lua contract, job_complete EAGAIN: nodes are held only
          // with block_job_complete true, for a job that ended while its
          // setup ran, or for a teardown run again after a restart.
          ASSERT_TRUE(s.block_job_complete || ended_during_setup || restarted)
              << "nodes held outside the contract's cases by " << r.rule;
          nodes_held = true;
        }
        break;
      case A::ReleaseNodes:
        nodes_held = false;
        break;
      case A::Requeue:
      case A::Cancel:
      case A::DrainNodes:
        ASSERT_NE(a.reason.find("switch/lua"), std::string::npos);
        break;
      default:
        break;
      }
    }
    ASSERT_LE(r.next.retries, cfg.switch_retries) << "retries exceed switch_retries";
    ASSERT_EQ(r.next.nodes_held, nodes_held) << "held flag disagrees with hold/release actions";
    if (is_terminal(r.next.state)) {
      ASSERT_FALSE(nodes_held) << "nodes still held in terminal state " << r.rule;
    }
  }

  Outcome random_outcome() {
    static const OutcomeKind kinds[] = {OutcomeKind::Returned,           OutcomeKind::Returned,
                                        OutcomeKind::Returned,           OutcomeKind::LuaError,
                                        OutcomeKind::TimedOut,           OutcomeKind::Signaled,
                                        OutcomeKind::ExitedWithoutReturn};
    OutcomeKind k = kinds[rng() % std::size(kinds)];
    if (k != OutcomeKind::Returned)
      return with_kind(k);
    static const std::int64_t rcs[] = {kSuccess, kSuccess, kEagain, kError, 3};
    bool table = rng() % 2;
    return returned(rcs[rng() % std::size(rcs)], table ? std::optional(kJobinfo) : std::nullopt);
  }

  void feed(const Event &e) {
    if (e.kind == E::SetupResult && e.outcome) {
      auto &o = *e.outcome;
      bool declined_or_failed =
          (o.kind == OutcomeKind::Returned && (o.ret.rc != kSuccess || !o.ret.jobinfo)) ||
          o.kind == OutcomeKind::LuaError;
      setup_declined_or_failed = declined_or_failed;
    }
    StepResult r = step(s, e, cfg);
    check(r);
    s = r.next;
  }

  void restart() {
    auto rec = decode_job_state(encode_job_state(&s));
    ASSERT_TRUE(rec) << rec.error().message;
    ASSERT_TRUE(rec->has_value());
    JobSwitchState before = s;
    s = **rec;
    ASSERT_EQ(s.state, before.state) << "state lost across restart";
    ASSERT_EQ(s.jobinfo, before.jobinfo) << "jobinfo lost across restart";
    ASSERT_EQ(s.retries, before.retries);
    pending_start = pending_complete = 0; // calls in flight died with slurmctld
    restarted = true;
    nodes_held = s.nodes_held;
    feed(Event{.kind = E::Recover});
  }

  void run(int steps) {
    s = state(S::None);
    s.block_job_complete = rng() % 2;
    s.requeue_allowed = rng() % 2;
    feed(Event{.kind = E::SetupRequested});
    for (int i = 0; i < steps && !is_terminal(s.state); ++i) {
      int pick = rng() % 10;
      if (pick < 6 && pending_start && s.state != S::Running) {
        Outcome o = random_outcome();
        pending_start--;
        feed(Event{.kind = E::SetupResult, .outcome = &o});
      } else if (pick < 6 && pending_complete) {
        Outcome o = random_outcome();
        pending_complete--;
        feed(Event{.kind = E::TeardownResult, .outcome = &o});
      } else if (pick < 8 && !ended) {
        ended = true;
        ended_during_setup = s.state == S::SetupRunning || s.state == S::SetupUndoing;
        feed(Event{.kind = E::JobEnded});
      } else if (pick < 9) {
        feed(Event{.kind = E::RetryTick});
      } else {
        restart();
      }
      if (HasFatalFailure())
        return;
    }
  }
  static bool HasFatalFailure() { return testing::Test::HasFatalFailure(); }
};

TEST(JobFsm, RandomSequencesKeepTheInvariants) {
  for (std::uint32_t seed = 1; seed <= 3000; ++seed) {
    Model m{.rng = std::mt19937(seed)};
    m.cfg.switch_retries = seed % 4;
    m.run(60);
    ASSERT_FALSE(testing::Test::HasFatalFailure()) << "seed " << seed;
  }
}

} // namespace

// The log line of a killed job_complete says it runs again (the rule ids
// are spelled with '_': the line is chosen by the id's suffix).
TEST(JobFsm, R_COMPLETE_KILLED_LogSaysItRunsAgain) {
  Outcome o{.kind = OutcomeKind::Signaled};
  o.signal = 9;
  JobSwitchState s = state(S::TeardownRunning);
  s.nodes_held = true;
  StepResult r = step(s, Event{.kind = E::TeardownResult, .outcome = &o}, {});
  EXPECT_EQ(r.rule, "R_COMPLETE_KILLED");
  std::string logged;
  for (const Action &a : r.actions)
    if (a.kind == A::Log)
      logged += a.reason;
  EXPECT_NE(logged.find(
                "job_complete died on signal 9 (SIGKILL): nodes held, running it again at the next "
                "periodic check (retry 1 of 3)"),
            std::string::npos)
      << logged;
}

// Issue 36 item 3: a teardown lost with its supervisor while its nodes are
// not held (block_job_complete false) is run again, but like a killed one
// it is counted against switch_retries: switch_retries+1 calls in all, then
// a failed teardown that drains the job's nodes (or, with
// switch_drain_on_failure=no, releases them and says so); never re-run for
// ever with the nodes in service and no mark of the leftover state.
TEST(JobFsm, R_COMPLETE_KILLED_EXHAUSTED_AnUnheldTeardownLostEveryTimeDrainsAfterSwitchRetries) {
  Outcome lost = with_kind(OutcomeKind::Abandoned, "switch-lua-supervisor (pid 4242) died");
  for (bool drain : {true, false}) {
    CtldConfig cfg;
    cfg.switch_retries = 3;
    cfg.drain_on_failure = drain;
    JobSwitchState s = state(S::TeardownRunning);
    int calls = 1; // the first job_complete, lost
    StepResult r;
    for (int guard = 0; guard < 20; ++guard) {
      r = step(s, Event{.kind = E::TeardownResult, .outcome = &lost}, cfg);
      s = r.next;
      if (s.state != S::TeardownRetryWait)
        break;
      r = step(s, Event{.kind = E::RetryTick}, cfg);
      s = r.next;
      ++calls;
    }
    EXPECT_EQ(s.state, S::Done) << "drain=" << drain;
    EXPECT_EQ(calls, 4) << "switch_retries=3: the first call and 3 more";
    EXPECT_EQ(r.rule, "R_COMPLETE_KILLED_EXHAUSTED");
    const auto drains = std::count_if(r.actions.begin(), r.actions.end(),
                                      [](const Action &a) { return a.kind == A::DrainNodes; });
    EXPECT_EQ(drains, drain ? 1 : 0);
    std::string said;
    for (const Action &a : r.actions)
      said += a.reason + "\n";
    EXPECT_NE(said.find("switch teardown failed: JobId=42 switch/lua job_complete was abandoned"),
              std::string::npos)
        << said;
    if (!drain) {
      EXPECT_NE(said.find("switch_drain_on_failure=no"), std::string::npos) << said;
    }
  }
}

// Issue 36 item 3: the line of a lost teardown that runs again says that
// its nodes are not held, which retry it is, and that it fails after them.
TEST(JobFsm, R_COMPLETE_LOST_TheLogLineSaysItRunsAgainAsARetry) {
  Outcome lost = with_kind(OutcomeKind::Abandoned, "switch-lua-supervisor (pid 4242) died");
  CtldConfig cfg;
  cfg.switch_retries = 3;
  StepResult r =
      step(state(S::TeardownRunning), Event{.kind = E::TeardownResult, .outcome = &lost}, cfg);
  EXPECT_EQ(r.rule, "R_COMPLETE_LOST");
  EXPECT_EQ(r.next.retries, 1u);
  EXPECT_FALSE(r.next.nodes_held);
  std::vector<std::string> logs;
  for (const Action &a : r.actions)
    if (a.kind == A::Log)
      logs.push_back(a.reason);
  EXPECT_EQ(logs, std::vector<std::string>{
                      "JobId=42 job_complete was abandoned: switch-lua-supervisor (pid 4242) died: "
                      "its nodes are not held (block_job_complete is false); running it again at "
                      "the next periodic check (retry 1 of 3), a failed teardown once they are "
                      "used up"});
}

// Issue 20, jobs of any size: a 5,000-task array whose setup fails every
// time, with switch_max_setup_failures=3: every task is held after its
// third failure, none forgotten by the failure counts (which kept 4,096
// jobs before) to requeue for ever.  The tasks fail round by round, as in
// an outage: each is requeued once per round.
TEST(JobFsm, R_SETUP_FAILURES_HELD_EveryTaskOfA5000TaskArrayIsHeldAfterItsThirdFailure) {
  CtldConfig cfg;
  cfg.max_setup_failures = 3;
  SetupFailureCounts counts;
  Outcome fail = returned(kError);
  constexpr std::uint32_t kTasks = 5000;
  std::uint32_t held = 0;
  for (std::uint32_t round = 0; round < 3; ++round) {
    for (std::uint32_t t = 0; t < kTasks; ++t) {
      JobSwitchState s = state(S::SetupRunning);
      s.job.job_id = 1000 + t;
      s.job.restart_count = round;
      s.requeue_allowed = true;
      s.setup_failures = prior_setup_failures(counts, s.job);
      Event e{.kind = E::SetupResult, .outcome = &fail};
      StepResult r = step(s, e, cfg);
      (void)count_setup_failures(counts, cfg, e, r);
      const bool is_held = std::any_of(r.actions.begin(), r.actions.end(),
                                       [](const Action &a) { return a.kind == A::RequeueHeld; });
      if (round < 2)
        ASSERT_FALSE(is_held) << "task " << t << " held after " << round + 1 << " failures";
      else
        held += is_held;
    }
  }
  EXPECT_EQ(held, kTasks) << "tasks not held after their third failure requeue for ever";
}

// Issue 38: what becomes of an attempt's pool IDs is a column of the rule
// table.  Every row that ends an attempt (its next state is over and its
// state was not, or it starts a new attempt in place of one that held a
// setup) names Release or Quarantine; no other row names one; a row that
// drains (a failed teardown) quarantines.
TEST(JobFsmTable, EveryRowThatEndsAnAttemptNamesWhatBecomesOfItsPoolIds) {
  const auto over = [](JobState s) { return is_terminal(s) || s == JobState::SetupFailed; };
  const auto has = [](const auto &actions, fsm::Do d) {
    return std::find(actions.begin(), actions.end(), d) != actions.end();
  };
  int ending = 0;
  for (const fsm::Row &r : fsm::rule_table()) {
    const bool restarts = has(r.actions, fsm::Do::RunJobStart) && r.state != JobState::None &&
                          r.state != JobState::SetupWaitOrphan;
    const bool ends = (over(r.next) && !over(r.state)) || restarts;
    ending += ends;
    if (ends) {
      EXPECT_NE(r.pools, PoolsFate::Keep) << r.rule << ": ends an attempt, names no pools fate";
    } else {
      EXPECT_EQ(r.pools, PoolsFate::Keep) << r.rule << ": ends no attempt";
    }
    if (has(r.actions, fsm::Do::DrainIfConfigured)) {
      EXPECT_EQ(r.pools, PoolsFate::Quarantine) << r.rule << ": a failed teardown";
    }
  }
  EXPECT_GE(ending, 20);
  for (const fsm::OutcomeRow &r : fsm::outcome_table()) {
    if (has(r.actions, fsm::Do::ForgetAttempt)) {
      EXPECT_NE(r.pools, PoolsFate::Keep) << r.rule;
    } else {
      EXPECT_EQ(r.pools, PoolsFate::Keep) << r.rule;
    }
    if (has(r.actions, fsm::Do::DrainIfConfigured)) {
      EXPECT_EQ(r.pools, PoolsFate::Quarantine) << r.rule;
    }
  }
}
