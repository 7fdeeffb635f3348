// SPDX-License-Identifier: GPL-2.0-or-later
//
// What a call's processes are given (stdio, fds, signals, environment) and
// what is left of them afterwards (nothing: group, grandchildren, escapees).
#include "harness.hpp"
#include "supervisor/protocol.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fmt/format.h>
#include <fstream>
#include <set>
#include <sstream>
#include <sys/resource.h>

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

// Issue 22, the lanes' order on the CPU: a batch setup (and what it
// starts) runs kBatchLaneNice nicer than the supervisor; an interactive
// setup and a teardown at the supervisor's own nice value.
TEST(Isolation, ABatchSetupRunsNicerThanTheOtherLanes) {
  errno = 0;
  const int base = ::getpriority(PRIO_PROCESS, 0); // the supervisor inherits it
  ASSERT_EQ(errno, 0);
  SyncClient c(default_options());
  auto nice_of = [&](CallRequest req) {
    const CallId id = c.submit(std::move(req));
    auto r = c.wait(id);
    EXPECT_TRUE(r.has_value());
    if (!r)
      return std::string();
    EXPECT_EQ(r->outcome.kind, OutcomeKind::Returned) << describe(r->outcome);
    return r->logs.empty() ? std::string("no line") : r->logs.front();
  };
  CallRequest batch = request("nice_probe");
  batch.job.batch = true;
  CallRequest interactive = request("nice_probe");
  interactive.job.batch = false;
  CallRequest teardown = request("nice_probe");
  teardown.hook = Hook::JobComplete;
  teardown.job.batch = true;
  const int nicer = std::min(base + kBatchLaneNice, 19);
  EXPECT_EQ(nice_of(batch), fmt::format("nice runner={} command={}", nicer, nicer));
  EXPECT_EQ(nice_of(interactive), fmt::format("nice runner={} command={}", base, base));
  EXPECT_EQ(nice_of(teardown), fmt::format("nice runner={} command={}", base, base));
  // The number switch_lua.conf(5) states is this one.
  std::ifstream man(std::string(SWITCHLUA_FIXTURES) + "/../../man/switch_lua.conf.5");
  ASSERT_TRUE(man) << "man/switch_lua.conf.5 beside the fixtures";
  std::stringstream page;
  page << man.rdbuf();
  EXPECT_NE(
      page.str().find(fmt::format("runs {} nice values above the supervisor", kBatchLaneNice)),
      std::string::npos)
      << "switch_lua.conf(5), CALLS RUNNING AT ONCE, states another nice increment than "
      << kBatchLaneNice;
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
