// SPDX-License-Identifier: GPL-2.0-or-later
//
// What the fork server (supervisor/fork_server.hpp) must keep of the
// runner's contract: each call a process of its own, the supervisor's
// child and the leader of its own group, that sees nothing of the calls
// before it; and the fork server is the host's: killed or stopped, it is
// replaced and no call fails for it.  Each test also runs with exec'd
// runners (fork_server = false), the behaviour the fork server must match.
#include "harness.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

using namespace switchlua;
using namespace switchlua::test;
using namespace std::chrono_literals;

namespace {

/// The supervisor's children that are fork servers (waited for, at most
/// 10 s, until there are `n`).
std::vector<pid_t> fork_servers(pid_t sup, std::size_t n = 1) {
  const auto until = std::chrono::steady_clock::now() + 10s;
  std::vector<pid_t> out;
  do {
    out.clear();
    std::ifstream f(fmt::format("/proc/{}/task/{}/children", sup, sup));
    for (pid_t p; f >> p;)
      if (proc_cmdline(p).find("--fork-server") != std::string::npos)
        out.push_back(p);
    if (out.size() == n)
      break;
    std::this_thread::sleep_for(10ms);
  } while (std::chrono::steady_clock::now() < until);
  return out;
}

struct Mode {
  std::uint32_t prestart;
  bool fork_server;
};

std::string mode_name(const ::testing::TestParamInfo<Mode> &i) {
  return fmt::format("{}_prestart{}", i.param.fork_server ? "ForkServer" : "Exec",
                     i.param.prestart);
}

class EachCall : public ::testing::TestWithParam<Mode> {
protected:
  ClientOptions options() const {
    ClientOptions o = default_options();
    o.prestart = GetParam().prestart;
    o.fork_server = GetParam().fork_server;
    o.child_env = {"SLURM_CONF=/etc/slurm/test.conf"};
    return o;
  }
};

} // namespace

// A call left a global, a module, an open file and an exported variable
// behind: the next call sees none of them, and each is a process of its
// own (its own pid, leading its own group, the supervisor's child) with a
// math.random of its own.
TEST_P(EachCall, IsAFreshProcessThatSeesNothingOfTheCallsBefore) {
  SyncClient c(options());
  std::set<std::string> pids, randoms;
  std::vector<pid_t> servers;
  for (int i = 0; i < 4; ++i) {
    const CallId id = c.submit(request("call_leaks"));
    auto r = c.wait(id);
    ASSERT_TRUE(r.has_value());
    ASSERT_EQ(r->outcome.kind, OutcomeKind::Returned) << describe(r->outcome);
    const std::string j = json(r->outcome.ret.jobinfo);
    EXPECT_EQ(field(j, "global"), "false") << "call " << i << " saw a global of an earlier one";
    EXPECT_EQ(field(j, "loaded"), "false") << "call " << i << " saw a module of an earlier one";
    for (const std::string &l : lines(field(j, "fds"))) {
      const int fd = std::stoi(l);
      const std::string target = l.substr(l.find(' ') + 1);
      if (fd <= 2)
        EXPECT_EQ(target, "/dev/null") << "fd " << fd;
      else if (fd == 3)
        EXPECT_EQ(target.rfind("socket:", 0), 0u) << target;
      else // the fixture's own io.popen pipe (its write end may be gone: empty)
        EXPECT_TRUE(target.empty() || target.rfind("pipe:", 0) == 0)
            << "call " << i << ": fd " << fd << " -> " << target;
    }
    auto env = lines(field(j, "environ"));
    std::sort(env.begin(), env.end());
    EXPECT_EQ(env, (std::vector<std::string>{"LANG=C", "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
                                             "SLURM_CONF=/etc/slurm/test.conf",
                                             "SWITCHLUA_CALL_ID=" + std::to_string(id)}))
        << "call " << i;
    const std::string pid = field(j, "pid");
    EXPECT_EQ(field(j, "pgrp"), pid) << "call " << i << " does not lead its own group";
    EXPECT_EQ(field(j, "ppid"), std::to_string(c.client().supervisor_pid()))
        << "call " << i << " is not the supervisor's child";
    pids.insert(pid);
    randoms.insert(field(j, "random"));
    // The fork server in use is one and the same (a failed fork replaces
    // it), or there is none with exec'd runners.
    const auto now = fork_servers(c.client().supervisor_pid(), GetParam().fork_server ? 1 : 0);
    EXPECT_EQ(now.size(), GetParam().fork_server ? 1u : 0u) << "call " << i;
    if (i == 0)
      servers = now;
    EXPECT_EQ(now, servers) << "call " << i << ": the fork server was replaced";
  }
  EXPECT_EQ(pids.size(), 4u) << "a process served two calls";
  EXPECT_EQ(randoms.size(), 4u) << "two calls drew the same math.random(0)";
}

INSTANTIATE_TEST_SUITE_P(Runners, EachCall,
                         ::testing::Values(Mode{0, true}, Mode{2, true}, Mode{0, false},
                                           Mode{2, false}),
                         mode_name);

// A call's leftovers are in its own group and die with it; with the fork
// server as with exec'd runners (Isolation covers the rest by default).
TEST_P(EachCall, LeftoversInTheGroupAreKilledAtTheDeadline) {
  SyncClient c(options());
  expect_hang_killed_with_its_group(c);
}

namespace {

ClientOptions per_call_fork_server() {
  ClientOptions o = default_options();
  o.prestart = 0; // every call asks the fork server
  return o;
}

} // namespace

// Killed between calls: the next call gets a runner all the same (exec'd,
// or from a new fork server) and a new fork server serves the ones after.
TEST(ForkServer, AKilledForkServerIsReplacedAndNoCallFails) {
  SyncClient c(per_call_fork_server());
  ASSERT_EQ(c.run(request("returns_normally")).outcome.kind, OutcomeKind::Returned);
  const pid_t sup = c.client().supervisor_pid();
  const auto before = fork_servers(sup);
  ASSERT_EQ(before.size(), 1u) << "no fork server after the first call";
  ASSERT_EQ(::kill(before[0], SIGKILL), 0);
  for (int i = 0; i < 3; ++i) {
    CallResult r = c.run(request("returns_normally"));
    EXPECT_EQ(r.outcome.kind, OutcomeKind::Returned) << describe(r.outcome);
  }
  const auto after = fork_servers(sup);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_NE(after[0], before[0]);
  EXPECT_FALSE(process_exists(before[0])) << "the dead fork server was not reaped";
}

// Stopped (it never answers): the call waits at most kForkReplyLimit, gets
// an exec'd runner and returns; the stopped one is killed and replaced.
TEST(ForkServer, AStoppedForkServerIsKilledAndReplacedAndTheCallReturns) {
  SyncClient c(per_call_fork_server());
  ASSERT_EQ(c.run(request("returns_normally")).outcome.kind, OutcomeKind::Returned);
  const pid_t sup = c.client().supervisor_pid();
  const auto before = fork_servers(sup);
  ASSERT_EQ(before.size(), 1u);
  ASSERT_EQ(::kill(before[0], SIGSTOP), 0);
  CallResult r = c.run(request("returns_normally"));
  EXPECT_EQ(r.outcome.kind, OutcomeKind::Returned) << describe(r.outcome);
  ASSERT_EQ(c.run(request("returns_normally")).outcome.kind, OutcomeKind::Returned);
  const auto after = fork_servers(sup);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_NE(after[0], before[0]);
  for (int i = 0; i < 500 && process_exists(before[0]); ++i)
    std::this_thread::sleep_for(10ms);
  EXPECT_FALSE(process_exists(before[0])) << "the stopped fork server was left";
}

// A runner is the supervisor's child, not the fork server's: the fork
// server's death does not touch a call in flight.
TEST(ForkServer, ACallInFlightOutlivesTheForkServer) {
  SyncClient c(per_call_fork_server());
  const std::string gate =
      (std::filesystem::temp_directory_path() / fmt::format("swl-fs-gate-{}", ::getpid())).string();
  std::filesystem::remove(gate);
  CallRequest req = request("lane_gate", 60s);
  req.job.network = gate;
  const CallId id = c.submit(req);
  ASSERT_TRUE(c.wait_for_log(id, "start"));
  const auto fs = fork_servers(c.client().supervisor_pid());
  ASSERT_EQ(fs.size(), 1u);
  ASSERT_EQ(::kill(fs[0], SIGKILL), 0);
  std::ofstream(gate) << "open\n";
  auto r = c.wait(id, 60s);
  std::filesystem::remove(gate);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->outcome.kind, OutcomeKind::Returned) << describe(r->outcome);
}

// The runner file replaced (an upgrade): the next call's runner is the new
// file, from a new fork server; removed: the runner cannot start, as an
// exec'd one could not (a host fault, SpawnFailed).
TEST(ForkServer, AReplacedRunnerFileRetiresTheForkServerAndARemovedOneCannotStart) {
  char tmpl[] = "/tmp/swl-fs-runner-XXXXXX";
  const std::filesystem::path dir = ::mkdtemp(tmpl);
  const std::filesystem::path runner = dir / "switch-lua-runner";
  std::filesystem::copy_file(SWITCHLUA_RUNNER_PATH, runner);
  ClientOptions o = per_call_fork_server();
  o.runner = runner.string();
  SyncClient c(o);
  ASSERT_EQ(c.run(request("returns_normally")).outcome.kind, OutcomeKind::Returned);
  const pid_t sup = c.client().supervisor_pid();
  const auto before = fork_servers(sup);
  ASSERT_EQ(before.size(), 1u);
  std::filesystem::copy_file(SWITCHLUA_RUNNER_PATH, dir / "new");
  std::filesystem::rename(dir / "new", runner); // a new inode, as dpkg installs it
  ASSERT_EQ(c.run(request("returns_normally")).outcome.kind, OutcomeKind::Returned);
  const auto after = fork_servers(sup);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_NE(after[0], before[0]) << "the runners still come from the old file";
  std::filesystem::remove(runner);
  CallResult r = c.run(request("returns_normally"));
  EXPECT_EQ(r.outcome.kind, OutcomeKind::SpawnFailed) << describe(r.outcome);
  std::filesystem::remove_all(dir);
}
