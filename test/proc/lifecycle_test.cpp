// SPDX-License-Identifier: GPL-2.0-or-later
//
// The supervisor's life: concurrency cap, its own death, the client's
// destruction, spawn failures, submit's refusals.
#include "harness.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <thread>

using namespace switchlua;
using namespace switchlua::test;
using namespace std::chrono_literals;

TEST(Lifecycle, ConcurrencyCapIsNeverExceeded) {
  ClientOptions o = default_options();
  o.max_concurrent = 2;
  SyncClient c(o);
  std::mutex mu;
  int running = 0, most = 0;
  // Log frames reach the client in the order the supervisor handled them,
  // and a queued call starts only after a running one ended (after its
  // "end" line), so this count is exact.
  c.set_log_observer([&](CallId, const std::string &line) {
    std::lock_guard lock(mu);
    running += line == "start" ? 1 : line == "end" ? -1 : 0;
    most = std::max(most, running);
  });
  std::vector<CallId> ids;
  for (int i = 0; i < 6; ++i)
    ids.push_back(c.submit(request("concurrency_probe")));
  for (CallId id : ids) {
    auto r = c.wait(id);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->outcome.kind, OutcomeKind::Returned) << describe(r->outcome);
  }
  EXPECT_EQ(most, 2);
}

TEST(Lifecycle, SupervisorKilledMidCallAbandonsAndNextSubmitRestartsIt) {
  SyncClient c;
  const CallId id = c.submit(request("logs_then_hangs", 30s));
  ASSERT_TRUE(c.wait_for_log(id, "before the hang"));
  const pid_t first = c.client().supervisor_pid();
  ASSERT_GT(first, 0);
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  auto r = c.wait(id, 10s);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->outcome.kind, OutcomeKind::Abandoned);
  EXPECT_NE(r->outcome.message.find("switch-lua-supervisor (pid " + std::to_string(first) +
                                    ") died (killed by signal 9"),
            std::string::npos)
      << r->outcome.message;
  CallResult next = c.run(request("returns_normally"));
  EXPECT_EQ(next.outcome.kind, OutcomeKind::Returned) << describe(next.outcome);
  EXPECT_NE(c.client().supervisor_pid(), first);
  EXPECT_GT(c.client().supervisor_pid(), 0);
}

TEST(Lifecycle, SupervisorKilledMidCallTakesTheCallsGroupWithIt) {
  SyncClient c;
  const CallId id = c.submit(request("hang_with_grandchild", 30s));
  ASSERT_TRUE(c.wait_for_log(id, "pgid="));
  ASSERT_EQ(::kill(c.client().supervisor_pid(), SIGKILL), 0);
  auto r = c.wait(id, 10s);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->outcome.kind, OutcomeKind::Abandoned);
  int pgid = 0, grandchild = 0;
  ASSERT_EQ(std::sscanf(r->logs.at(0).c_str(), "pgid=%d grandchild=%d", &pgid, &grandchild), 2);
  // The runner's parent-death signal makes it kill its own group.  Nobody of
  // ours reaps them now (init does), so count live members, not zombies.
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (live_group_members(pgid) > 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(live_group_members(pgid), 0);
}

TEST(Lifecycle, DestroyedClientLeavesNoSupervisorNorChildren) {
  SyncClient c;
  const CallId id = c.submit(request("hang_with_grandchild", 30s));
  ASSERT_TRUE(c.wait_for_log(id, "pgid="));
  const pid_t supervisor = c.client().supervisor_pid();
  c.destroy();
  auto r = c.wait(id, 0s);
  ASSERT_TRUE(r.has_value()) << "shutdown must complete the call in flight";
  EXPECT_EQ(r->outcome.kind, OutcomeKind::Abandoned);
  int pgid = 0, grandchild = 0;
  ASSERT_EQ(r->logs.size(), 1u);
  ASSERT_EQ(std::sscanf(r->logs[0].c_str(), "pgid=%d grandchild=%d", &pgid, &grandchild), 2);
  EXPECT_FALSE(process_exists(supervisor));
  EXPECT_FALSE(group_exists(pgid));
  EXPECT_FALSE(process_exists(grandchild));
}

TEST(Lifecycle, MissingRunnerIsSpawnFailed) {
  ClientOptions o = default_options();
  o.runner = "/nonexistent/switch-lua-runner";
  SyncClient c(o);
  CallResult r = c.run(request("returns_normally"));
  ASSERT_EQ(r.outcome.kind, OutcomeKind::SpawnFailed) << describe(r.outcome);
  EXPECT_EQ(r.outcome.message,
            "cannot execute /nonexistent/switch-lua-runner: No such file or directory");
}

TEST(Lifecycle, MissingSupervisorIsSpawnFailed) {
  ClientOptions o = default_options();
  o.supervisor = "/nonexistent/switch-lua-supervisor";
  SyncClient c(o);
  CallResult r = c.run(request("returns_normally"));
  ASSERT_EQ(r.outcome.kind, OutcomeKind::SpawnFailed) << describe(r.outcome);
  EXPECT_NE(r.outcome.message.find("cannot start switch-lua-supervisor: cannot execute "
                                   "/nonexistent/switch-lua-supervisor: No such file"),
            std::string::npos)
      << r.outcome.message;
}

TEST(Lifecycle, SubmitRefusesBeyondMaxQueued) {
  ClientOptions o = default_options();
  o.max_queued = 1;
  SyncClient c(o);
  const CallId first = c.submit(request("returns_normally"));
  auto second = c.client().submit(request("returns_normally"), [](CallId, const Outcome &) {});
  ASSERT_FALSE(second.has_value());
  EXPECT_NE(second.error().message.find("max_queued"), std::string::npos);
  ASSERT_TRUE(c.wait(first).has_value());
}

TEST(Lifecycle, SubmitRefusesStepHooksAndSubSecondTimeouts) {
  SyncClient c;
  CallRequest step = request("returns_normally");
  step.hook = Hook::StepInit;
  EXPECT_FALSE(c.client().submit(step, [](CallId, const Outcome &) {}).has_value());
  CallRequest zero = request("returns_normally", 0s);
  EXPECT_FALSE(c.client().submit(zero, [](CallId, const Outcome &) {}).has_value());
}

TEST(Lifecycle, SubmitAfterShutdownFails) {
  SyncClient c;
  c.client().shutdown();
  auto id = c.client().submit(request("returns_normally"), [](CallId, const Outcome &) {});
  EXPECT_FALSE(id.has_value());
}
