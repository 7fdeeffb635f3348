// SPDX-License-Identifier: GPL-2.0-or-later
//
// run_command() where the call has no process group of its own (slurmstepd:
// set_run_own_group(true), lua/run_command.hpp): the command gets a group
// of its own, and what it leaves behind is killed when slurm.run returns.
// The supervised case (the call's group) is test/proc/run_command_test.cpp.
#include "lua/run_command.hpp"

#include <gtest/gtest.h>
#include <lua.hpp>

#include <cerrno>
#include <cstring>
#include <poll.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <string>
#include <thread>
#include <unistd.h>

using namespace switchlua;
using namespace std::chrono_literals;

namespace {
/// Running, not a zombie: a killed orphan may wait for its new parent to
/// reap it.
bool alive(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(f, stat))
    return false;
  const auto paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
}
} // namespace

TEST(RunCommand, OwnGroupLeftoversAreKilledWhenItReturns) {
  RunRequest req;
  req.argv = {"sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $!"};
  req.own_group = true;
  RunResult r = run_command(req);
  ASSERT_TRUE(r.started) << r.error;
  EXPECT_EQ(r.status, 0);
  const pid_t child = std::stoi(r.out);
  ASSERT_GT(child, 0);
  // Killed with SIGKILL; reaped by whoever inherited it, so allow a moment.
  for (int i = 0; i < 100 && alive(child); ++i)
    std::this_thread::sleep_for(10ms);
  EXPECT_FALSE(alive(child)) << "the command's leftover child outlived slurm.run";
}

TEST(RunCommand, TimeoutKillsTheCommandAndItsGroup) {
  RunRequest req;
  req.argv = {"sh", "-c", "sleep 300 & sleep 300"};
  req.own_group = true;
  req.timeout = 200ms;
  RunResult r = run_command(req);
  ASSERT_TRUE(r.started) << r.error;
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_LT(r.elapsed, 5000ms);
}

TEST(RunCommand, MissingBinaryIsAnErrorNotAStart) {
  RunRequest req;
  req.argv = {"/nonexistent/fabric-ctl"};
  RunResult r = run_command(req);
  EXPECT_FALSE(r.started);
  EXPECT_EQ(r.error, "cannot run /nonexistent/fabric-ctl: No such file or directory");
}

TEST(RunCommand, TheTimeoutIsCappedByTheCallsDeadline) {
  set_call_deadline(std::chrono::steady_clock::now() + 1s);
  auto t = run_timeout(60000ms);
  ASSERT_TRUE(t);
  EXPECT_LE(*t, 1000ms - kRunDeadlineMargin);
  set_call_deadline(std::chrono::steady_clock::now() - 1s);
  EXPECT_FALSE(run_timeout(std::nullopt)) << "no time left: not started";
  set_call_deadline(std::nullopt);
  EXPECT_EQ(run_timeout(std::nullopt), kRunDefaultTimeout);
  EXPECT_EQ(run_timeout(5000ms), 5000ms);
}

namespace {
int failing_poll(pollfd *, nfds_t, int) {
  errno = ENOMEM;
  return -1;
}
/// The seam for one test.
struct FailingPoll {
  FailingPoll() { set_run_poll_for_tests(failing_poll); }
  ~FailingPoll() { set_run_poll_for_tests(nullptr); }
};
} // namespace

// Issue 35: a command that could not be watched was reported as exit status
// 0 (the wait status nobody filled in).
TEST(RunCommand, AFailedPollIsAFailureNotASuccess) {
  FailingPoll seam;
  RunRequest req;
  req.argv = {"sleep", "300"};
  req.own_group = true;
  RunResult r = run_command(req);
  EXPECT_TRUE(r.started);
  EXPECT_TRUE(r.unwatched);
  EXPECT_FALSE(r.status.has_value()) << "status " << r.status.value_or(-1);
  EXPECT_EQ(r.error,
            "sleep was killed: cannot watch it: poll: " + std::string(std::strerror(ENOMEM)));
}

TEST(RunCommand, SlurmRunReturnsNilWhenPollFails) {
  FailingPoll seam;
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  lua_newtable(L);
  register_run(L);
  lua_setglobal(L, "slurm");
  ASSERT_EQ(luaL_dostring(L, "local r, e = slurm.run({'true'})\n"
                             "return r == nil, e"),
            LUA_OK)
      << lua_tostring(L, -1);
  EXPECT_TRUE(lua_toboolean(L, -2));
  EXPECT_STREQ(lua_tostring(L, -1), "slurm.run: true was killed: cannot watch it: poll: Cannot "
                                    "allocate memory");
  lua_close(L);
}
