// SPDX-License-Identifier: GPL-2.0-or-later
//
// What a call's processes are given (stdio, fds, signals, environment) and
// what is left of them afterwards (nothing: group, grandchildren, escapees).
#include "harness.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

using namespace switchlua;
using namespace switchlua::test;
using namespace std::chrono_literals;

TEST(Isolation, HangPastTimeoutKillsTheWholeGroup) {
  SyncClient c;
  expect_hang_killed_with_its_group(c);
}

TEST(Isolation, SetsidEscapeeIsReportedAndDead) {
  SyncClient c;
  CallResult r = c.run(request("setsid_escapee"));
  ASSERT_EQ(r.outcome.kind, OutcomeKind::Returned) << describe(r.outcome);
  const pid_t escapee = std::stoi(field(json(r.outcome.ret.jobinfo), "escapee"));
  EXPECT_EQ(r.outcome.escapees, (std::vector<pid_t>{escapee}));
  EXPECT_FALSE(process_exists(escapee));
}

TEST(Isolation, LogLineArrivesWhileTheHookStillHangs) {
  SyncClient c;
  const CallId id = c.submit(request("logs_then_hangs", 2s));
  ASSERT_TRUE(c.wait_for_log(id, "before the hang"));
  EXPECT_FALSE(c.finished(id)) << "the log line came only with the outcome";
  auto r = c.wait(id);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->outcome.kind, OutcomeKind::TimedOut) << describe(r->outcome);
}

TEST(Isolation, StdioIsDevNullAndOnlyTheChannelIsInherited) {
  SyncClient c;
  CallResult r = c.run(request("child_fds"));
  ASSERT_EQ(r.outcome.kind, OutcomeKind::Returned) << describe(r.outcome);
  std::map<int, std::string> fds;
  for (const std::string &l : lines(field(json(r.outcome.ret.jobinfo), "fds")))
    fds[std::stoi(l)] = l.substr(l.find(' ') + 1);
  EXPECT_EQ(fds[0], "/dev/null");
  EXPECT_EQ(fds[1], "/dev/null");
  EXPECT_EQ(fds[2], "/dev/null");
  EXPECT_EQ(fds[3].rfind("socket:", 0), 0u) << fds[3];
  // Beyond those, only the fixture's own io.popen pipe: its read end, and
  // possibly its write end, which the runner closes right after starting the
  // shell and so may vanish between the glob and readlink (empty target).
  int others = 0;
  for (const auto &[fd, target] : fds)
    if (fd > 3) {
      ++others;
      EXPECT_TRUE(target.empty() || target.rfind("pipe:", 0) == 0)
          << "fd " << fd << " -> " << target;
    }
  EXPECT_LE(others, 2);
}

TEST(Isolation, SignalsAreUnblockedAndNotIgnored) {
  SyncClient c;
  CallResult r = c.run(request("child_signals"));
  ASSERT_EQ(r.outcome.kind, OutcomeKind::Returned) << describe(r.outcome);
  const std::string j = json(r.outcome.ret.jobinfo);
  EXPECT_EQ(field(j, "blocked"), "0000000000000000") << j;
  EXPECT_EQ(field(j, "ignored"), "0000000000000000") << j;
}

TEST(Isolation, EnvironmentIsTheCleanSetPlusChildEnv) {
  ClientOptions o = default_options();
  o.child_env = {"SLURM_CONF=/etc/slurm/test.conf"};
  SyncClient c(o);
  const CallId id = c.submit(request("child_environment"));
  auto r = c.wait(id);
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->outcome.kind, OutcomeKind::Returned) << describe(r->outcome);
  auto env = lines(field(json(r->outcome.ret.jobinfo), "environ"));
  std::sort(env.begin(), env.end());
  EXPECT_EQ(env, (std::vector<std::string>{"LANG=C", "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
                                           "SLURM_CONF=/etc/slurm/test.conf",
                                           "SWITCHLUA_CALL_ID=" + std::to_string(id)}));
}
