// SPDX-License-Identifier: GPL-2.0-or-later
//
// classify() and describe(): one rule of outcome.hpp per test.
#include "supervisor/client.hpp"
#include "supervisor/outcome.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <set>

using namespace switchlua;

namespace {

int exited(int code) {
  return (code & 0xff) << 8;
} // as waitpid reports it
int killed(int sig) {
  return sig & 0x7f;
}

Observation spawned() {
  Observation o;
  o.spawned = true;
  return o;
}

HookReturn returned_rc(std::int64_t rc) {
  HookReturn r;
  r.hook = Hook::JobStart;
  r.rc = rc;
  r.jobinfo = std::string("\x80", 1); // an empty msgpack map
  return r;
}

} // namespace

TEST(Classify, NotSpawnedIsSpawnFailedWithTheError) {
  Observation o;
  o.spawn_error = "cannot execute /x: No such file or directory";
  const Outcome out = classify(o);
  EXPECT_EQ(out.kind, OutcomeKind::SpawnFailed);
  EXPECT_EQ(out.message, o.spawn_error);
}

TEST(Classify, ReturnedFrameWinsWhateverTheExitStatus) {
  Observation o = spawned();
  o.result = returned_rc(0);
  o.wait_status = killed(SIGKILL);
  const Outcome out = classify(o);
  EXPECT_EQ(out.kind, OutcomeKind::Returned);
  EXPECT_EQ(out.ret.rc, 0);
  EXPECT_TRUE(out.ret.jobinfo.has_value());
}

TEST(Classify, LuaErrorBadReturnLoadFailedFrames) {
  Observation a = spawned();
  a.lua_error = "x.lua:3: boom";
  EXPECT_EQ(classify(a).kind, OutcomeKind::LuaError);
  EXPECT_EQ(classify(a).message, "x.lua:3: boom");
  Observation b = spawned();
  b.bad_return = "returned \"0\" (a string) as rc";
  EXPECT_EQ(classify(b).kind, OutcomeKind::BadReturn);
  Observation c = spawned();
  c.load_error = "x.lua:1: syntax error";
  c.wait_status = exited(0);
  EXPECT_EQ(classify(c).kind, OutcomeKind::LoadFailed);
}

TEST(Classify, NoFrameAndExitIsExitedWithoutReturn) {
  Observation o = spawned();
  o.wait_status = exited(3);
  const Outcome out = classify(o);
  EXPECT_EQ(out.kind, OutcomeKind::ExitedWithoutReturn);
  EXPECT_EQ(out.exit_status, 3);
}

TEST(Classify, NoFrameAndSignalIsSignaledNot128PlusN) {
  Observation o = spawned();
  o.wait_status = killed(SIGSEGV);
  const Outcome out = classify(o);
  EXPECT_EQ(out.kind, OutcomeKind::Signaled);
  EXPECT_EQ(out.signal, SIGSEGV);
  EXPECT_EQ(out.exit_status, 0);
}

TEST(Classify, DeadlineWithOurKillIsPlainTimedOut) {
  Observation o = spawned();
  o.deadline_fired = true;
  o.wait_status = killed(SIGKILL);
  const Outcome out = classify(o);
  EXPECT_EQ(out.kind, OutcomeKind::TimedOut);
  EXPECT_FALSE(out.late_return.has_value());
  EXPECT_FALSE(out.late_exit);
}

TEST(Classify, ReturnedFrameAfterDeadlineIsLateReturn) {
  Observation o = spawned();
  o.deadline_fired = true;
  o.result = returned_rc(0);
  o.result_after_deadline = true;
  o.wait_status = exited(0);
  const Outcome out = classify(o);
  EXPECT_EQ(out.kind, OutcomeKind::TimedOut);
  ASSERT_TRUE(out.late_return.has_value());
  EXPECT_EQ(out.late_return->rc, 0);
  EXPECT_FALSE(out.late_exit);
}

TEST(Classify, NormalExitWithoutFrameAfterDeadlineIsLateExit) {
  Observation o = spawned();
  o.deadline_fired = true;
  o.wait_status = exited(0);
  const Outcome out = classify(o);
  EXPECT_EQ(out.kind, OutcomeKind::TimedOut);
  EXPECT_TRUE(out.late_exit);
  EXPECT_FALSE(out.late_return.has_value());
}

TEST(Classify, ErrorFrameAfterDeadlineIsNeitherLateReturnNorLateExit) {
  Observation o = spawned();
  o.deadline_fired = true;
  o.lua_error = "x.lua:1: late";
  o.result_after_deadline = true;
  o.wait_status = exited(0);
  const Outcome out = classify(o);
  EXPECT_EQ(out.kind, OutcomeKind::TimedOut);
  EXPECT_FALSE(out.late_return.has_value());
  EXPECT_FALSE(out.late_exit);
}

TEST(Classify, SignalOtherThanOursAfterDeadlineIsStillTimedOut) {
  Observation o = spawned();
  o.deadline_fired = true;
  o.wait_status = killed(SIGSEGV);
  const Outcome out = classify(o);
  EXPECT_EQ(out.kind, OutcomeKind::TimedOut);
  EXPECT_FALSE(out.late_exit);
}

TEST(Describe, OneLinePerKind) {
  Outcome t;
  t.kind = OutcomeKind::TimedOut;
  t.elapsed = std::chrono::milliseconds(2000);
  t.late_return = returned_rc(0);
  EXPECT_EQ(describe(t), "timed out after 2000 ms (late result: rc=0 with jobinfo)");
  Outcome s;
  s.kind = OutcomeKind::Signaled;
  s.signal = SIGSEGV;
  EXPECT_EQ(describe(s), "died on signal 11 (SIGSEGV), not sent by the supervisor");
  Outcome e;
  e.kind = OutcomeKind::LuaError;
  e.message = "x.lua:3: boom\nstack traceback:\n\t...";
  EXPECT_EQ(describe(e), "raised an error: x.lua:3: boom");
  Outcome r;
  r.kind = OutcomeKind::Returned;
  r.ret = returned_rc(0);
  r.escapees = {123};
  EXPECT_EQ(describe(r), "returned rc=0 with jobinfo; killed 1 process(es) that had left its "
                         "process group (pid 123)");
}

TEST(OutcomeKindName, EveryKindHasADistinctName) {
  std::set<std::string_view> names;
  for (int i = 0; i <= static_cast<int>(OutcomeKind::LoadFailed); ++i)
    names.insert(outcome_kind_name(static_cast<OutcomeKind>(i)));
  EXPECT_EQ(names.size(), 9u);
  EXPECT_EQ(names.count("unknown"), 0u);
}

// Issue 39: a supervisor that is runnable (waiting for a CPU on a starved
// host) is not taken for a hung one at the 5 s bound; a stopped, stuck or
// not-reading one is.
TEST(Watchdog, ARunnableSupervisorGetsTheLongerBoundEveryOtherStateTheShortOne) {
  using std::chrono::milliseconds;
  EXPECT_FALSE(watchdog_kills('R', kWatchdogBound));
  EXPECT_FALSE(watchdog_kills('R', kWatchdogRunnableBound - milliseconds(1)));
  EXPECT_TRUE(watchdog_kills('R', kWatchdogRunnableBound));
  for (char s : {'T', 't', 'D', 'S', 'Z', '?'}) {
    EXPECT_FALSE(watchdog_kills(s, kWatchdogBound - milliseconds(1))) << s;
    EXPECT_TRUE(watchdog_kills(s, kWatchdogBound)) << s;
  }
}

TEST(Watchdog, ATestMayShortenTheRunnableBoundOnly) {
  EXPECT_FALSE(watchdog_kills('R', std::chrono::seconds(7), std::chrono::seconds(8)));
  EXPECT_TRUE(watchdog_kills('R', std::chrono::seconds(8), std::chrono::seconds(8)));
  EXPECT_TRUE(watchdog_kills('S', kWatchdogBound, std::chrono::seconds(8)));
}
