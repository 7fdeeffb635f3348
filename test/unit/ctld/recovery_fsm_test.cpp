// SPDX-License-Identifier: GPL-2.0-or-later
//
// The sibling tables of the rule table (ctld/recovery_fsm.hpp), one test
// (or more) named after each rule id: what a restarted slurmctld makes of a
// saved state with the journal (R_RECOVER_*), the teardown of an attempt no
// job record carries (R_ORPHAN_*), and the late setup result's extra
// job_complete (R_LATE_RESULT).  JobFsm.EveryRuleHasATestNamedAfterIt
// (job_fsm_test.cpp, the same binary) counts these tests.
#include "ctld/recovery_fsm.hpp"

#include <gtest/gtest.h>

using namespace switchlua;

namespace {

const std::string kSaved = "\x81\xa1s\x01";   // {"s": 1}: what Slurm saved
const std::string kJournal = "\x81\xa1j\x02"; // {"j": 2}: what the journal has

JobSwitchState saved(JobState st) {
  JobSwitchState s;
  s.state = st;
  s.job.job_id = 7;
  s.job.attempt = 555;
  s.job.submit_time = 1000;
  s.job.nodes = "node1";
  s.recovered = true;
  if (st != JobState::SetupRunning)
    s.jobinfo = kSaved;
  return s;
}

JournalEntry entry(bool accepted, bool launched, bool teardown) {
  JournalEntry e;
  e.job = saved(JobState::SetupRunning).job;
  e.accepted = accepted;
  e.launch_released = launched;
  e.teardown_started = teardown;
  if (accepted || teardown)
    e.jobinfo = kJournal;
  return e;
}

Outcome returned(std::int64_t rc) {
  Outcome o{.kind = OutcomeKind::Returned};
  o.ret.rc = rc;
  return o;
}

Outcome signaled(int sig) {
  Outcome o{.kind = OutcomeKind::Signaled};
  o.signal = sig;
  return o;
}

} // namespace

TEST(Recovery, R_RECOVER_FORGOTTEN_AnAttemptTheJournalSaysIsOverIsDoneAndNotLaunched) {
  for (JobState st : {JobState::SetupRunning, JobState::Running, JobState::TeardownRetryWait}) {
    AdoptDecision d = adopt_decision(saved(st), true, nullptr);
    EXPECT_EQ(d.rule, "R_RECOVER_FORGOTTEN") << job_state_name(st);
    EXPECT_EQ(d.next.state, JobState::Done);
    EXPECT_FALSE(d.next.jobinfo);
    EXPECT_EQ(d.hint, Recovery::ClearConfiguring);
  }
  EXPECT_EQ(adopt_decision(saved(JobState::SetupRunning), true, nullptr).log,
            "JobId=7 recovery: the journal says attempt 555 needs nothing more (Slurm's saved "
            "state SetupRunning is older): forgotten; not launched again");
}

TEST(Recovery, R_RECOVER_TEARDOWN_STARTED_ResumesTheTeardownWithTheJournalsJobinfo) {
  const JournalEntry e = entry(true, true, true);
  for (JobState st :
       {JobState::SetupRunning, JobState::SetupRunningEnded, JobState::SetupAbandoned}) {
    AdoptDecision d = adopt_decision(saved(st), false, &e);
    EXPECT_EQ(d.rule, "R_RECOVER_TEARDOWN_STARTED") << job_state_name(st);
    EXPECT_EQ(d.next.state, JobState::TeardownRunning);
    EXPECT_EQ(d.next.jobinfo, kJournal);
    EXPECT_EQ(d.hint, Recovery::ClearConfiguring);
  }
  EXPECT_EQ(adopt_decision(saved(JobState::SetupAbandoned), false, &e).log,
            "JobId=7 recovery: the journal says the teardown of attempt 555 had started with its "
            "jobinfo (Slurm's saved state SetupAbandoned is older): job_start is not run again");
}

TEST(Recovery, R_RECOVER_ACCEPTED_LAUNCHED_IsRunningWithTheJobinfoAndNotLaunchedAgain) {
  const JournalEntry e = entry(true, true, false);
  AdoptDecision d = adopt_decision(saved(JobState::SetupRunning), false, &e);
  EXPECT_EQ(d.rule, "R_RECOVER_ACCEPTED_LAUNCHED");
  EXPECT_EQ(d.next.state, JobState::Running);
  EXPECT_EQ(d.next.jobinfo, kJournal);
  EXPECT_EQ(d.hint, Recovery::ClearConfiguring);
  EXPECT_EQ(d.log, "JobId=7 recovery: the journal says job_start of attempt 555 returned SUCCESS "
                   "with a jobinfo before the crash (Slurm's saved state SetupRunning is older): "
                   "restored with it, job_start is not run again; the launch was released before "
                   "the crash: not launched again");
}

TEST(Recovery, R_RECOVER_ACCEPTED_LAUNCH_NOW_IsRunningWithTheJobinfoAndLaunchedNow) {
  const JournalEntry e = entry(true, false, false);
  AdoptDecision d = adopt_decision(saved(JobState::SetupRunning), false, &e);
  EXPECT_EQ(d.rule, "R_RECOVER_ACCEPTED_LAUNCH_NOW");
  EXPECT_EQ(d.next.state, JobState::Running);
  EXPECT_EQ(d.next.jobinfo, kJournal);
  EXPECT_EQ(d.hint, Recovery::LaunchNow);
  EXPECT_NE(d.log.find("the launch was not released: launching it now"), std::string::npos)
      << d.log;
}

TEST(Recovery, R_RECOVER_AS_SAVED_WithoutNewerNewsSlurmsStateStands) {
  const JournalEntry started = entry(false, false, false); // job_start not reported
  const JournalEntry accepted = entry(true, true, false);
  const JournalEntry teardown = entry(true, true, true);
  struct {
    JobState st;
    bool forgotten;
    const JournalEntry *live;
  } cases[] = {
      {JobState::SetupRunning, false, nullptr},    // no entry (or another job's)
      {JobState::SetupRunning, false, &started},   // nothing newer
      {JobState::Done, true, nullptr},             // already over in Slurm's state too
      {JobState::Running, false, &teardown},       // not a setup state
      {JobState::SetupAbandoned, false, &accepted} // accepted, but not SetupRunning
  };
  for (const auto &c : cases) {
    const JobSwitchState s = saved(c.st);
    AdoptDecision d = adopt_decision(s, c.forgotten, c.live);
    EXPECT_EQ(d.rule, "R_RECOVER_AS_SAVED") << job_state_name(c.st);
    EXPECT_EQ(d.next, s);
    EXPECT_FALSE(d.hint);
    EXPECT_EQ(d.log, "");
  }
}

TEST(Recovery, R_ORPHAN_TEARDOWN_TheLineSaysWhatTheJournalHasAndWithWhat) {
  EXPECT_EQ(orphan_teardown_line(555, entry(true, true, false), true),
            "JobId=7 recovery: the journal has attempt 555 (submitted at 1000) set up (job_start "
            "returned a jobinfo), and no job record carries it (the record was lost, or its job "
            "id now belongs to a newer job): tearing it down with its jobinfo (R_ORPHAN_TEARDOWN)");
  EXPECT_NE(orphan_teardown_line(555, entry(false, false, false), false)
                .find("with job_start started but not reported, and no job record carries it "
                      "(the record was lost, or its job id now belongs to a newer job): tearing "
                      "it down with nil jobinfo"),
            std::string::npos);
}

TEST(Recovery, R_ORPHAN_OK_SuccessOrAnotherPositiveValueEndsIt) {
  for (std::int64_t rc : {kSuccess, std::int64_t{3}}) {
    TeardownDecision d = orphan_result(returned(rc));
    EXPECT_EQ(d.rule, "R_ORPHAN_OK") << rc;
    EXPECT_TRUE(d.forget);
    EXPECT_FALSE(d.drain);
    EXPECT_FALSE(d.error);
  }
}

// Issue 19 item 7: no node of an orphan is held (no job record holds it),
// and EAGAIN without held nodes is a failure (switch.lua contract,
// job_complete EAGAIN): drained at once, never retried.
TEST(Recovery, R_ORPHAN_FAIL_EagainIsAFailureNotARetry) {
  TeardownDecision d = orphan_result(returned(kEagain));
  EXPECT_EQ(d.rule, "R_ORPHAN_FAIL");
  EXPECT_TRUE(d.drain);
  EXPECT_TRUE(d.forget);
  EXPECT_TRUE(d.error);
  EXPECT_EQ(d.what, "returned slurm.EAGAIN but its nodes cannot be held (job record gone)");
}

TEST(Recovery, R_ORPHAN_FAIL_AKillFromOutsideIsAFailureALostSupervisorIsNot) {
  TeardownDecision d = orphan_result(signaled(9));
  EXPECT_EQ(d.rule, "R_ORPHAN_FAIL");
  EXPECT_TRUE(d.drain);
  EXPECT_EQ(d.what, "died on signal 9 (SIGKILL)");
  // Issue 20: lost with its supervisor it runs again on the new one.
  d = orphan_result(Outcome{.kind = OutcomeKind::Abandoned, .message = "supervisor died"});
  EXPECT_EQ(d.rule, "R_ORPHAN_HOST_FAULT");
  EXPECT_FALSE(d.drain || d.forget);
}

// Issue 20: an orphan teardown whose runner could not be started is not a
// failed teardown: nothing drained, the attempt kept (the core runs it
// again after a back-off).
TEST(Recovery, R_ORPHAN_HOST_FAULT_ASpawnFailureDrainsNothingAndKeepsTheAttempt) {
  TeardownDecision d = orphan_result(Outcome{.kind = OutcomeKind::SpawnFailed,
                                             .message = "fork: Resource temporarily unavailable"});
  EXPECT_EQ(d.rule, "R_ORPHAN_HOST_FAULT");
  EXPECT_FALSE(d.drain);
  EXPECT_FALSE(d.forget);
  EXPECT_TRUE(d.error);
}

TEST(Recovery, R_ORPHAN_FABRIC_DOWN_TheFabricIsDownDrainsNothingAndKeepsTheAttempt) {
  TeardownDecision d = orphan_result(returned(kFabricDown));
  EXPECT_EQ(d.rule, "R_ORPHAN_FABRIC_DOWN");
  EXPECT_FALSE(d.drain);
  EXPECT_FALSE(d.forget);
}

TEST(Recovery, R_ORPHAN_FAIL_ANegativeRcOrALuaErrorDrains) {
  for (const Outcome &o :
       {returned(kError), Outcome{.kind = OutcomeKind::LuaError, .message = "switch.lua:3: x"},
        Outcome{.kind = OutcomeKind::TimedOut}}) {
    TeardownDecision d = orphan_result(o);
    EXPECT_EQ(d.rule, "R_ORPHAN_FAIL") << outcome_text(o);
    EXPECT_TRUE(d.drain && d.forget && d.error);
    EXPECT_EQ(d.what, outcome_text(o));
  }
}

TEST(Recovery, R_LATE_RESULT_IsOnlyLoggedAtErrorUnlessItSucceeded) {
  for (std::int64_t rc : {kSuccess, std::int64_t{3}}) {
    const Outcome o = returned(rc);
    TeardownDecision d = late_result_decision(&o);
    EXPECT_EQ(d.rule, "R_LATE_RESULT");
    EXPECT_FALSE(d.error) << rc;
    EXPECT_FALSE(d.drain || d.forget);
  }
  const Outcome eagain = returned(kEagain), failed = returned(kError), killed = signaled(9);
  for (const Outcome *o : {&eagain, &failed, &killed, static_cast<const Outcome *>(nullptr)}) {
    TeardownDecision d = late_result_decision(o);
    EXPECT_EQ(d.rule, "R_LATE_RESULT");
    EXPECT_TRUE(d.error) << (o ? outcome_text(*o) : "no outcome");
    EXPECT_FALSE(d.drain || d.forget) << "only logged: nothing drained, nothing retried";
  }
}

// Issue 24, the lost start: an orphan whose launch was released before the
// crash and whose teardown never started may still run on its nodes: its
// teardown waits while they may; every other orphan is torn down at once.
TEST(Recovery, R_ORPHAN_WAIT_NODES_ALaunchedOrphanWaitsWhileItsNodesMayRunIt) {
  const JournalEntry launched = entry(true, true, false);
  OrphanStart st = orphan_start(555, launched, true, true);
  EXPECT_EQ(st.rule, "R_ORPHAN_WAIT_NODES");
  EXPECT_TRUE(st.wait);
  EXPECT_NE(st.line.find("JobId=7 recovery: the journal has attempt 555"), std::string::npos)
      << st.line;
  EXPECT_NE(st.line.find("is not torn down yet"), std::string::npos) << st.line;
  // Its nodes no longer may: torn down now.
  st = orphan_start(555, launched, false, true);
  EXPECT_EQ(st.rule, "R_ORPHAN_TEARDOWN");
  EXPECT_FALSE(st.wait);
  // Not launched, or its teardown had started (the job had ended): never waits.
  for (const JournalEntry &e :
       {entry(true, false, false), entry(false, false, false), entry(true, true, true)}) {
    EXPECT_FALSE(orphan_may_still_run(e));
    st = orphan_start(555, e, true, e.accepted);
    EXPECT_EQ(st.rule, "R_ORPHAN_TEARDOWN");
    EXPECT_FALSE(st.wait);
  }
}
