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

// Issue 39: a supervisor that is runnable (state R, as one starved for CPU on
// a loaded controller host) is not killed at the 5 s bound but at the
// runnable one, here shortened to 8 s, and the message says which bound.
TEST(Watchdog, RunnableSupervisorGetsTheRunnableBound) {
  ClientOptions o = default_options();
  o.supervisor = std::string(SWITCHLUA_FIXTURES) + "/spinning_supervisor.sh";
  o.watchdog_runnable_bound = 8s;
  SyncClient c(o);
  const CallId id = c.submit(request("returns_normally", 60s));
  auto r = c.wait(id, 50s);
  ASSERT_TRUE(r.has_value()) << "the runnable supervisor was never killed";
  EXPECT_EQ(r->outcome.kind, OutcomeKind::Abandoned) << describe(r->outcome);
  const std::string &m = r->outcome.message;
  const auto at = m.find(") stopped answering for ");
  ASSERT_NE(at, std::string::npos) << m;
  const long silent_ms = std::stol(m.substr(at + 24));
  EXPECT_GE(silent_ms, 8000) << m;
  EXPECT_NE(m.find(" ms (runnable, watchdog bound 8 s), killed"), std::string::npos) << m;
}
