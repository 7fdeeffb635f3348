// SPDX-License-Identifier: GPL-2.0-or-later
//
// Late results (switch.lua contract, job_start timeout: a setup that still
// returns or exits after the deadline).  The race is made deterministic by
// stopping the supervisor (SIGSTOP) while the hook finishes and resuming it
// (SIGCONT) after the deadline: the runner's frame or exit is then only seen
// after the deadline, as on a machine too loaded to schedule the supervisor.
// The pure rules are in test/unit/supervisor/outcome_test.cpp.
#include "harness.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <thread>

using namespace switchlua;
using namespace switchlua::test;
using namespace std::chrono_literals;

namespace {

/// Runs fixture `name` (timeout 1 s) with the supervisor stopped from its
/// "ready" line until 1.5 s later.
CallResult run_with_supervisor_stopped(const std::string &name) {
  SyncClient c;
  const CallId id = c.submit(request(name, 1s));
  EXPECT_TRUE(c.wait_for_log(id, "ready"));
  const pid_t sup = c.client().supervisor_pid();
  ::kill(sup, SIGSTOP);
  // The hook finishes 0.5 s after "ready"; the deadline is < 1 s after it.
  std::this_thread::sleep_for(1500ms);
  ::kill(sup, SIGCONT);
  auto r = c.wait(id, 10s);
  EXPECT_TRUE(r.has_value());
  return r ? *r : CallResult{};
}

} // namespace

TEST(Late, ReturnSeenAfterTheDeadlineIsTimedOutWithLateReturn) {
  CallResult r = run_with_supervisor_stopped("late_return");
  ASSERT_EQ(r.outcome.kind, OutcomeKind::TimedOut) << describe(r.outcome);
  ASSERT_TRUE(r.outcome.late_return.has_value()) << describe(r.outcome);
  EXPECT_EQ(r.outcome.late_return->rc, kSuccess);
  EXPECT_EQ(json(r.outcome.late_return->jobinfo), R"({"late":true})");
  EXPECT_FALSE(r.outcome.late_exit);
}

TEST(Late, ExitSeenAfterTheDeadlineIsTimedOutWithLateExit) {
  CallResult r = run_with_supervisor_stopped("late_exit");
  ASSERT_EQ(r.outcome.kind, OutcomeKind::TimedOut) << describe(r.outcome);
  EXPECT_TRUE(r.outcome.late_exit) << describe(r.outcome);
  EXPECT_FALSE(r.outcome.late_return.has_value());
}
