// SPDX-License-Identifier: GPL-2.0-or-later
//
// The client's watchdog: a supervisor that stops answering (SIGSTOP) is
// killed and replaced; its calls in flight complete Abandoned.
#include "harness.hpp"

#include <gtest/gtest.h>

#include <csignal>

using namespace switchlua;
using namespace switchlua::test;
using namespace std::chrono_literals;

TEST(Watchdog, StoppedSupervisorIsKilledAndReplacedAndItsCallsGetAnOutcome) {
  SyncClient c;
  std::vector<CallId> ids;
  for (int i = 0; i < 4; ++i)
    ids.push_back(c.submit(request("logs_then_hangs", 60s)));
  ASSERT_TRUE(c.wait_for_log(ids[0], "before the hang"));
  const pid_t first = c.client().supervisor_pid();
  ASSERT_GT(first, 0);
  ASSERT_EQ(::kill(first, SIGSTOP), 0);
  // The calls' own deadline is 60 s: only the watchdog can end them sooner.
  for (CallId id : ids) {
    auto r = c.wait(id, 30s);
    ASSERT_TRUE(r.has_value()) << "no outcome while the supervisor is stopped";
    EXPECT_EQ(r->outcome.kind, OutcomeKind::Abandoned) << describe(r->outcome);
    EXPECT_NE(r->outcome.message.find("switch-lua-supervisor (pid " + std::to_string(first) +
                                      ") stopped answering for "),
              std::string::npos)
        << r->outcome.message;
  }
  CallResult next = c.run(request("returns_normally"));
  EXPECT_EQ(next.outcome.kind, OutcomeKind::Returned) << describe(next.outcome);
  EXPECT_NE(c.client().supervisor_pid(), first);
  EXPECT_FALSE(process_exists(first)) << "the stopped supervisor was reaped";
}
