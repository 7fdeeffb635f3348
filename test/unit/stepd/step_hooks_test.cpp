// SPDX-License-Identifier: GPL-2.0-or-later
//
// The slurmstepd side: the contract's mapping of preinit / init / postfini
// results to what happens to the step and the node.
#include "lua/broken_pipe.hpp"
#include "stepd/step_hooks.hpp"

#include <gtest/gtest.h>

#include <clocale>
#include <csignal>

#include <filesystem>
#include <fstream>

using namespace switchlua;

namespace {

struct Logged {
  std::vector<std::pair<LogLevel, std::string>> lines;
  LogSink sink() {
    return [this](LogLevel l, std::string_view t) { lines.emplace_back(l, std::string(t)); };
  }
  bool has(const std::string &needle) const {
    for (const auto &[l, t] : lines)
      if (t.find(needle) != std::string::npos)
        return true;
    return false;
  }
};

std::string write(const std::string &name, const std::string &body) {
  auto p = std::filesystem::temp_directory_path() / name;
  std::ofstream(p) << body;
  return p.string();
}

StepArgs step() {
  StepArgs a;
  a.job_id = 42;
  a.step_id = 3;
  a.node_name = "node2";
  return a;
}

const MsgpackBytes kInfo = "\x81\xa1v\x07"; // {"v": 7}

TEST(StepHooks, NegativePreinitFailsTheStep) {
  Logged log;
  auto h = StepHooks::load(write("sh1.lua", "function slurm_switch_step_preinit() return -1 end"),
                           log.sink());
  ASSERT_TRUE(h) << h.error().message;
  StepVerdict v = h->preinit(step(), &kInfo);
  EXPECT_EQ(v.kind, StepVerdict::Kind::FailStep);
  EXPECT_TRUE(log.has("JobId=42 StepId=42.3 node2 step_preinit returned -1: the step fails"));
}

TEST(StepHooks, PositiveRcIsLoggedAndTheStepProceeds) {
  Logged log;
  auto h = StepHooks::load(
      write("sh2.lua", "function slurm_switch_step_init() return 1, {A='b'} end"), log.sink());
  ASSERT_TRUE(h);
  StepVerdict v = h->init(step(), &kInfo);
  EXPECT_EQ(v.kind, StepVerdict::Kind::Proceed);
  ASSERT_EQ(v.env.size(), 1u);
  EXPECT_EQ(v.env[0], (EnvOp{EnvOp::Kind::Set, "A", "b"}));
  EXPECT_TRUE(log.has("step_init returned 1: logged, the step proceeds"));
}

TEST(StepHooks, LuaErrorIsFailOpenWithOneLineSummary) {
  Logged log;
  auto h = StepHooks::load(write("sh3.lua", "function slurm_switch_step_init() error('boom') end"),
                           log.sink());
  ASSERT_TRUE(h);
  StepVerdict v = h->init(step(), &kInfo);
  EXPECT_EQ(v.kind, StepVerdict::Kind::Proceed);
  EXPECT_TRUE(v.lua_error);
  EXPECT_TRUE(v.env.empty());
  EXPECT_EQ(v.summary.find('\n'), std::string::npos) << v.summary;
  EXPECT_NE(v.summary.find("sh3.lua:1: boom; fail-open: the step proceeds"), std::string::npos)
      << v.summary;
}

TEST(StepHooks, NegativePostfiniDrainsWithAReasonNamingTheStep) {
  Logged log;
  auto h = StepHooks::load(write("sh4.lua", "function slurm_switch_step_postfini() return -2 end"),
                           log.sink());
  ASSERT_TRUE(h);
  StepVerdict v = h->postfini(step(), &kInfo);
  EXPECT_EQ(v.kind, StepVerdict::Kind::DrainNode);
  EXPECT_EQ(v.reason,
            "switch postfini failed: rc=-2 (switch/lua step_postfini JobId=42 StepId=42.3 "
            "node2)");
  EXPECT_EQ(v.reason.substr(0, 20), "switch postfini fail"); // what sinfo -R shows
}

TEST(StepHooks, StringRcIsABrokenConventionAndFailOpen) {
  Logged log;
  auto h = StepHooks::load(write("sh5.lua", "function slurm_switch_step_preinit() return '-1' end"),
                           log.sink());
  ASSERT_TRUE(h);
  StepVerdict v = h->preinit(step(), &kInfo);
  EXPECT_EQ(v.kind, StepVerdict::Kind::Proceed);
  EXPECT_TRUE(v.lua_error);
  EXPECT_NE(v.summary.find("broke the return convention"), std::string::npos) << v.summary;
}

TEST(StepHooks, OsExitIsAnErrorNotTheEndOfSlurmstepd) {
  Logged log;
  auto h = StepHooks::load(write("sh6.lua", "function slurm_switch_step_init() os.exit(3) end"),
                           log.sink());
  ASSERT_TRUE(h);
  StepVerdict v = h->init(step(), &kInfo); // the test process is still alive
  EXPECT_TRUE(v.lua_error);
  EXPECT_NE(v.summary.find("os.exit() is not allowed here"), std::string::npos) << v.summary;
}

TEST(StepHooks, ScriptLogLinesCarryTheStep) {
  Logged log;
  auto h = StepHooks::load(
      write("sh7.lua", "function slurm_switch_step_preinit(s, si) slurm.log_info('v=%d', si.v) "
                       "return 0 end"),
      log.sink());
  ASSERT_TRUE(h);
  h->preinit(step(), &kInfo);
  EXPECT_TRUE(log.has("JobId=42 StepId=42.3 node2 step_preinit: v=7")) << log.lines.size();
}

TEST(StepHooks, PostfiniMessageReachesTheDrainReasonAndTheLog) {
  // switch.lua(5): a step hook may return a message with its rc.
  Logged log;
  auto h = StepHooks::load(
      write("sh9.lua", "function slurm_switch_step_postfini() return -1, 'fabric port down' end"),
      log.sink());
  ASSERT_TRUE(h);
  StepVerdict v = h->postfini(step(), &kInfo);
  EXPECT_EQ(v.kind, StepVerdict::Kind::DrainNode);
  EXPECT_EQ(v.message, "fabric port down");
  EXPECT_EQ(v.reason, "switch postfini failed: fabric port down (switch/lua step_postfini "
                      "JobId=42 StepId=42.3 node2)");
  EXPECT_TRUE(log.has("JobId=42 StepId=42.3 node2 step_postfini returned -1 (fabric port down): "
                      "this node is to be drained"));
}

TEST(StepHooks, InitMessageWithNegativeRcFailsTheStepAndIsLogged) {
  Logged log;
  auto h = StepHooks::load(
      write("sh10.lua", "function slurm_switch_step_init() return -1, 'no VNI left' end"),
      log.sink());
  ASSERT_TRUE(h);
  StepVerdict v = h->init(step(), &kInfo);
  EXPECT_EQ(v.kind, StepVerdict::Kind::FailStep);
  EXPECT_TRUE(log.has("JobId=42 StepId=42.3 node2 step_init returned -1 (no VNI left): the step "
                      "fails (Error configuring interconnect)"));
}

TEST(StepHooks, InitStringWithZeroRcIsStillABrokenConvention) {
  // With rc >= 0 the second value of step_init is the env table, never a message.
  Logged log;
  auto h = StepHooks::load(
      write("sh11.lua", "function slurm_switch_step_init() return 0, 'hello' end"), log.sink());
  ASSERT_TRUE(h);
  StepVerdict v = h->init(step(), &kInfo);
  EXPECT_TRUE(v.lua_error);
  EXPECT_NE(v.summary.find("broke the return convention"), std::string::npos) << v.summary;
}

TEST(StepHooks, MessageIsValidUtf8AndBounded) {
  Logged log;
  auto h = StepHooks::load(
      write("sh12.lua", "function slurm_switch_step_postfini() return -1, ('a'):rep(190) .. "
                        "('\xc3\xa9'):rep(20) .. '\xe9' end"),
      log.sink());
  ASSERT_TRUE(h);
  StepVerdict v = h->postfini(step(), &kInfo);
  EXPECT_LE(v.message.size(), kMaxHookMessageBytes);
  EXPECT_EQ(v.message.substr(v.message.size() - 3), "...");
  // 197 bytes of room: 190 'a' then 3 whole 'é' (6 bytes) would be 196.
  EXPECT_EQ(v.message, std::string(190, 'a') + "\xc3\xa9\xc3\xa9\xc3\xa9...");
}

TEST(StepHooks, ALocaleSetByAHookDoesNotOutliveTheCall) {
  // switch.lua(5): numbers in the task environment are "%.14g" in the C
  // locale, whatever locale a hook sets; the host keeps its own locale.
  Logged log;
  if (std::setlocale(LC_NUMERIC, "de_DE.UTF-8") == nullptr)
    GTEST_SKIP() << "no de_DE.UTF-8 locale here (scripts/testbed builds one)";
  std::setlocale(LC_ALL, "C");
  // The hook switches to a comma locale and leaves it set.
  auto h = StepHooks::load(write("sh13.lua", "function slurm_switch_step_init() "
                                             "assert(os.setlocale('de_DE.UTF-8')) "
                                             "return 0, {HALF = 0.5, BIG = 1e20} end"),
                           log.sink());
  ASSERT_TRUE(h);
  const std::string before = std::setlocale(LC_ALL, nullptr);
  StepVerdict v = h->init(step(), &kInfo);
  EXPECT_EQ(std::string(std::setlocale(LC_ALL, nullptr)), before);
  ASSERT_EQ(v.env.size(), 2u);
  EXPECT_EQ(v.env[0], (EnvOp{EnvOp::Kind::Set, "BIG", "1e+20"}));
  EXPECT_EQ(v.env[1], (EnvOp{EnvOp::Kind::Set, "HALF", "0.5"}));
}

TEST(StepHooks, EnvNamesMustBePortable) {
  Logged log;
  auto h =
      StepHooks::load(write("sh14.lua", "function slurm_switch_step_init() return 0, "
                                        "{['A B'] = 1, ['X\\nY'] = 2, ['1X'] = 3, OK_1 = 4} end"),
                      log.sink());
  ASSERT_TRUE(h);
  StepVerdict v = h->init(step(), &kInfo);
  ASSERT_EQ(v.env.size(), 1u);
  EXPECT_EQ(v.env[0], (EnvOp{EnvOp::Kind::Set, "OK_1", "4"}));
  EXPECT_TRUE(
      log.has("a variable name must be letters, digits and '_', not starting with a digit"));
}

TEST(StepHooks, MissingHooksProceed) {
  Logged log;
  auto h = StepHooks::load(write("sh8.lua", "-- nothing"), log.sink());
  ASSERT_TRUE(h);
  EXPECT_EQ(h->preinit(step(), &kInfo).kind, StepVerdict::Kind::Proceed);
  StepVerdict v = h->init(step(), &kInfo);
  EXPECT_EQ(v.kind, StepVerdict::Kind::Proceed);
  EXPECT_TRUE(v.env.empty());
  EXPECT_EQ(h->postfini(step(), &kInfo).kind, StepVerdict::Kind::Proceed);
}

} // namespace

namespace {

extern "C" void stepd_like_sigpipe(int) {}

/// SIGPIPE's handler now.
void (*sigpipe_handler())(int) {
  struct sigaction now{};
  ::sigaction(SIGPIPE, nullptr, &now);
  return now.sa_handler;
}

/// The three step hooks of test/fixtures/broken_pipe.lua: each writes 1 MiB
/// to an io.popen helper that exits without reading it; 0 only if the write
/// gave nil, "Broken pipe", 32 and a command it started died of SIGPIPE.
void expect_step_hooks_survive_a_broken_pipe() {
  Logged log;
  auto h = StepHooks::load(SWITCHLUA_FIXTURES "/broken_pipe.lua", log.sink());
  ASSERT_TRUE(h) << h.error().message;
  EXPECT_EQ(h->preinit(step(), &kInfo).rc, 0);
  StepVerdict init = h->init(step(), &kInfo);
  EXPECT_EQ(init.rc, 0);
  ASSERT_EQ(init.env.size(), 1u);
  EXPECT_EQ(init.env[0], (EnvOp{EnvOp::Kind::Set, "SWITCHLUA_PIPE_PROBE",
                                "write=nil Broken pipe 32; child=signal 13"}));
  EXPECT_EQ(h->postfini(step(), &kInfo).rc, 0);
}

} // namespace

// Issue 19 item 7: in a process whose SIGPIPE is SIG_DFL (switch-lua
// simulate; this test), a broken pipe in a step hook is a Lua value, not
// the process's death, and SIG_DFL is back after the call: the host's
// disposition is not changed for good.
TEST(StepHooks, ABrokenPipeIsALuaValueAndSigpipeIsDefaultAgainAfterTheCall) {
  ASSERT_EQ(sigpipe_handler(), SIG_DFL);
  expect_step_hooks_survive_a_broken_pipe();
  EXPECT_EQ(sigpipe_handler(), SIG_DFL);
}

// slurmstepd 24.11 catches SIGPIPE itself (conmgr): its handler is left in
// place, before, during and after the hooks.
TEST(StepHooks, ABrokenPipeLeavesSlurmstepdsOwnSigpipeHandlerInPlace) {
  struct sigaction sa{};
  sa.sa_handler = stepd_like_sigpipe;
  sigemptyset(&sa.sa_mask);
  struct sigaction before{};
  ::sigaction(SIGPIPE, &sa, &before);
  expect_step_hooks_survive_a_broken_pipe();
  EXPECT_EQ(sigpipe_handler(), &stepd_like_sigpipe);
  ::sigaction(SIGPIPE, &before, nullptr);
}

// A handler the host installs while a hook runs (slurmstepd's conmgr, in
// another thread) survives the end of the hook's guard: the guard restores
// the default only over its own handler.
TEST(StepHooks, AHandlerInstalledWhileAHookRunsIsNotReplacedByTheDefault) {
  ASSERT_EQ(sigpipe_handler(), SIG_DFL);
  {
    switchlua::BrokenPipeIsAnError guard;
    ASSERT_NE(sigpipe_handler(), SIG_DFL) << "the guard catches SIGPIPE while it lives";
    struct sigaction sa{};
    sa.sa_handler = stepd_like_sigpipe;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGPIPE, &sa, nullptr);
  }
  EXPECT_EQ(sigpipe_handler(), &stepd_like_sigpipe);
  struct sigaction dfl{};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(SIGPIPE, &dfl, nullptr);
}

// Issue 35 item 3: slurmstepd runs postfini under the user's SLURM_UMASK;
// the hook and the commands slurm.run starts create files with 0644, and
// the umask before is back afterwards.
TEST(StepHooks, PostfiniRunsUnderUmask022WhateverTheUsersAndRestoresIt) {
  const auto dir = std::filesystem::temp_directory_path() / "switchlua-umask-test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directory(dir);
  Logged log;
  auto h =
      StepHooks::load(write("sh-umask.lua", "function slurm_switch_step_postfini()\n"
                                            "  local f = assert(io.open('" +
                                                (dir / "by-hook").string() +
                                                "', 'w'))\n"
                                                "  f:write('x') f:close()\n"
                                                "  local r = slurm.run({'touch', '" +
                                                (dir / "by-run").string() +
                                                "'})\n"
                                                "  if not r or r.status ~= 0 then return -1 end\n"
                                                "  return 0\n"
                                                "end\n"),
                      log.sink());
  ASSERT_TRUE(h) << h.error().message;
  const mode_t before = ::umask(0000); // SLURM_UMASK=0000
  StepVerdict v = h->postfini(step(), &kInfo);
  const mode_t after = ::umask(before);
  EXPECT_EQ(after, 0000u) << "the umask before the hook is restored";
  EXPECT_EQ(v.kind, StepVerdict::Kind::Proceed) << v.summary;
  for (const char *name : {"by-hook", "by-run"}) {
    struct stat st{};
    ASSERT_EQ(::stat((dir / name).c_str(), &st), 0) << name;
    EXPECT_EQ(st.st_mode & 0777, 0644u) << name;
  }
  std::filesystem::remove_all(dir);
}
