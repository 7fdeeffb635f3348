// SPDX-License-Identifier: GPL-2.0-or-later
//
// The slurmstepd side: the contract's mapping of preinit / init / postfini
// results to what happens to the step and the node.
#include "stepd/step_hooks.hpp"

#include <gtest/gtest.h>

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
  EXPECT_TRUE(log.has("JobId=42 StepId=3 node2 step_preinit returned -1: the step fails"));
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
  EXPECT_EQ(
      v.reason,
      "switch step cleanup failed: switch/lua step_postfini returned -2 (JobId=42 StepId=3 node2)");
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
  EXPECT_TRUE(log.has("JobId=42 StepId=3 node2 step_preinit: v=7")) << log.lines.size();
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
