// SPDX-License-Identifier: GPL-2.0-or-later
//
// When the supervisor delivers a call's outcome: as soon as the result
// arrives when nothing the call started can be left (a childless runner and
// no unknown child of the supervisor), else only once the runner is reaped
// and its leftovers are gone.  The runner here is test/proc/fake_runner.cpp,
// which stays alive for a while after its result.
#include "harness.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <thread>

using namespace switchlua;
using namespace switchlua::test;

namespace {

ClientOptions fake_options() {
  ClientOptions o = default_options();
  o.runner = SWITCHLUA_FAKE_RUNNER_PATH;
  o.fork_server = false; // the fake runner is no fork server
  return o;
}

CallRequest fake_request(const std::string &mode) {
  CallRequest r = request("returns_normally");
  r.script = "/fake-runner/" + mode; // the fake runner's instruction
  return r;
}

/// The number after `prefix` in the call's log lines, or 0.
pid_t logged_pid(const CallResult &r, const std::string &prefix) {
  for (const std::string &l : r.logs)
    if (l.rfind(prefix, 0) == 0)
      return static_cast<pid_t>(std::stol(l.substr(prefix.size())));
  return 0;
}

/// State letter of `pid` from /proc ('?' when gone).
char state_of(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string s;
  std::getline(f, s);
  const auto close = s.rfind(')');
  return close == std::string::npos || close + 2 >= s.size() ? '?' : s[close + 2];
}

bool gone_within(pid_t pid, std::chrono::seconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (process_exists(pid) && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return !process_exists(pid);
}

} // namespace

TEST(EarlyOutcome, AChildlessRunnersResultIsDeliveredBeforeItExits) {
  SyncClient c(fake_options());
  CallResult r = c.run(fake_request("childless"));
  ASSERT_EQ(r.outcome.kind, OutcomeKind::Returned) << describe(r.outcome);
  const pid_t runner = logged_pid(r, "pid ");
  ASSERT_GT(runner, 0);
  // The runner stays 2 s after its result: still running, not yet reaped.
  const char st = state_of(runner);
  EXPECT_TRUE(st != '?' && st != 'Z') << "runner state " << st;
  // ... and is still reaped once it exits: no zombie is left behind.
  EXPECT_TRUE(gone_within(runner, std::chrono::seconds(10)));
}

TEST(EarlyOutcome, ARunnerWithAChildIsWaitedForAndItsGroupKilled) {
  SyncClient c(fake_options());
  CallResult r = c.run(fake_request("with-child"));
  ASSERT_EQ(r.outcome.kind, OutcomeKind::Returned) << describe(r.outcome);
  const pid_t runner = logged_pid(r, "pid ");
  ASSERT_GT(runner, 0);
  EXPECT_FALSE(process_exists(runner)); // reaped before the outcome
  EXPECT_FALSE(group_exists(runner));   // the sleeping child was killed first
}

TEST(EarlyOutcome, AnOrphanOfTheCallKeepsTheOutcomeUntilItIsKilled) {
  SyncClient c(fake_options());
  CallResult r = c.run(fake_request("orphan"));
  ASSERT_EQ(r.outcome.kind, OutcomeKind::Returned) << describe(r.outcome);
  const pid_t runner = logged_pid(r, "pid ");
  const pid_t orphan = logged_pid(r, "orphan ");
  ASSERT_GT(runner, 0);
  ASSERT_GT(orphan, 0);
  EXPECT_FALSE(process_exists(runner));
  EXPECT_FALSE(process_exists(orphan));
  EXPECT_NE(std::find(r.outcome.escapees.begin(), r.outcome.escapees.end(), orphan),
            r.outcome.escapees.end())
      << describe(r.outcome);
}
