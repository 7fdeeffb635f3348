// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: test/unit/lua/seed_test.cpp
//
// The contract script shared/seeds/switch.lua, loaded as shipped and with
// its directives enabled, through Script::call.  Skipped when the script is
// not beside the checkout (see meson.build).
#include "lua/codec.hpp"
#include "lua/contract.hpp"
#include "lua/runtime.hpp"
#include "lua_test_util.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>

namespace switchlua {
namespace {

using test::first_line;
using test::Loaded;
using test::sample_job;
using test::sample_step;

EnvOp set(std::string n, std::string v) {
  return {EnvOp::Kind::Set, std::move(n), std::move(v)};
}
EnvOp unset(std::string n) {
  return {EnvOp::Kind::Unset, std::move(n), ""};
}

/// $SWITCHLUA_SEED, else <source root>/../shared/seeds/switch.lua.
std::string seed_path() {
  if (const char *e = std::getenv("SWITCHLUA_SEED"))
    return e;
  return std::string(SWITCHLUA_SOURCE_ROOT) + "/../shared/seeds/switch.lua";
}

/// Runs the contract script's hooks; skipped when the script is absent.
class Seed : public ::testing::Test {
protected:
  void SetUp() override {
    std::ifstream in(seed_path(), std::ios::binary);
    if (!in)
      GTEST_SKIP() << "no contract script at " << seed_path();
    std::ostringstream ss;
    ss << in.rdbuf();
    text_ = ss.str();
  }

  /// The script as shipped, or with `local ALLOW_DIRECTIVES = false`
  /// flipped to true.
  std::unique_ptr<Loaded> load(bool allow_directives) const {
    std::string t = text_;
    if (allow_directives) {
      static constexpr const char kOff[] = "local ALLOW_DIRECTIVES = false";
      const auto pos = t.find(kOff);
      EXPECT_NE(pos, std::string::npos) << "the script no longer has " << kOff;
      if (pos != std::string::npos)
        t.replace(pos, std::strlen(kOff), "local ALLOW_DIRECTIVES = true");
    }
    auto l = std::make_unique<Loaded>(t);
    EXPECT_TRUE(l->script) << l->script.error().message;
    return l;
  }

  /// job_start for a job with --network=`network`.
  static Expected<HookReturn, CallError> job_start(Loaded &l, const std::string &network) {
    JobArgs job = sample_job();
    job.network = network;
    return l.script->call(Hook::JobStart, &job, nullptr, nullptr);
  }

  /// A step hook, with the jobinfo job_start made for --network=`network`.
  static Expected<HookReturn, CallError> step_hook(Loaded &l, Hook h, const std::string &network) {
    auto start = job_start(l, network);
    EXPECT_TRUE(start && start->jobinfo);
    const StepArgs step = sample_step();
    const MsgpackBytes *info = start && start->jobinfo ? &*start->jobinfo : nullptr;
    return l.script->call(h, nullptr, &step, info);
  }

  std::string text_;
};

TEST_F(Seed, LoadsAndDefinesAllSevenHooks) {
  auto l = load(false);
  ASSERT_TRUE(l->script);
  for (Hook h : kAllHooks)
    EXPECT_TRUE(l->script->has_hook(h)) << hook_function(h);
  ASSERT_FALSE(l->log.lines.empty());
  EXPECT_EQ(l->log.lines.back(),
            std::make_pair(LogLevel::Info, std::string("switchlua: script loaded")));
}

TEST_F(Seed, BooleanHooksAnswerFalse) {
  auto l = load(false);
  ASSERT_TRUE(l->script);
  for (Hook h : {Hook::BlockJobComplete, Hook::SetupSpecialSteps}) {
    auto r = l->script->call(h, nullptr, nullptr, nullptr);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_FALSE(r->flag);
  }
}

TEST_F(Seed, DirectivesAreIgnoredUnlessAllowed) {
  auto l = load(false);
  ASSERT_TRUE(l->script);
  auto r = job_start(*l, "switchlua:skip");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->jobinfo);
}

TEST_F(Seed, SkipDirectiveDeclinesTheJob) {
  auto l = load(true);
  ASSERT_TRUE(l->script);
  auto r = job_start(*l, "switchlua:skip");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->rc, kSuccess);
  EXPECT_FALSE(r->jobinfo);
  EXPECT_EQ(r->jobinfo_error, "");
}

TEST_F(Seed, DefaultJobStartReturnsJobinfoWithVlans) {
  auto l = load(true);
  ASSERT_TRUE(l->script);
  auto r = job_start(*l, "fabric");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->rc, kSuccess);
  ASSERT_TRUE(r->jobinfo) << r->jobinfo_error;
  auto json = msgpack_to_json(*r->jobinfo);
  ASSERT_TRUE(json);
  EXPECT_NE(json->find(R"("vlans":[101,102,103])"), std::string::npos) << *json;
  EXPECT_NE(json->find(R"("token":"tok-42")"), std::string::npos) << *json;
}

TEST_F(Seed, DeferAndStartCrashFailTheSetup) {
  auto l = load(true);
  ASSERT_TRUE(l->script);
  auto defer = job_start(*l, "switchlua:defer");
  ASSERT_TRUE(defer) << defer.error().message;
  EXPECT_EQ(defer->rc, kError);
  auto crash = job_start(*l, "switchlua:start_crash");
  ASSERT_FALSE(crash);
  EXPECT_EQ(crash.error().kind, CallError::Kind::LuaError);
  EXPECT_NE(first_line(crash.error().message).find("switchlua: deliberate error in job_start"),
            std::string::npos);
}

TEST_F(Seed, CompleteAgainReturnsEagain) {
  auto l = load(true);
  ASSERT_TRUE(l->script);
  JobArgs job = sample_job();
  job.network = "switchlua:complete_again";
  auto r = l->script->call(Hook::JobComplete, &job, nullptr, nullptr);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->rc, kEagain);
}

TEST_F(Seed, StepInitNoenvReturnsNoEnv) {
  auto l = load(true);
  ASSERT_TRUE(l->script);
  auto r = step_hook(*l, Hook::StepInit, "switchlua:noenv");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->rc, kSuccess);
  EXPECT_FALSE(r->has_env);
}

TEST_F(Seed, StepInitDefaultSetsEnvByTheRules) {
  auto l = load(true);
  ASSERT_TRUE(l->script);
  auto r = step_hook(*l, Hook::StepInit, "fabric");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->has_env);
  const std::vector<EnvOp> want = {set("SWITCHLUA_ENABLED", "1"),
                                   set("SWITCHLUA_ENDPOINT", "fabric-mgr.example.invalid:8080"),
                                   set("SWITCHLUA_JOB_ID", "42"),
                                   set("SWITCHLUA_RANK_HINT", "7"),
                                   unset("SWITCHLUA_SHOULD_BE_UNSET"),
                                   set("SWITCHLUA_SLUID", "S123"),
                                   set("SWITCHLUA_TOKEN", "tok-42")};
  EXPECT_EQ(r->env, want);
  EXPECT_TRUE(r->warnings.empty());
}

TEST_F(Seed, StepDirectivesGiveTheirReturnCodes) {
  auto l = load(true);
  ASSERT_TRUE(l->script);
  const std::tuple<Hook, const char *, std::int64_t> cases[] = {
      {Hook::StepPreinit, "switchlua:preinit_fail", -1},
      {Hook::StepPreinit, "switchlua:preinit_warn", 1},
      {Hook::StepInit, "switchlua:init_fail", -1},
      {Hook::StepPostfini, "switchlua:postfini_drain", -1},
      {Hook::StepPostfini, "switchlua:postfini_warn", 1},
      {Hook::StepPostfini, "fabric", 0}};
  for (const auto &[hook, network, rc] : cases) {
    auto r = step_hook(*l, hook, network);
    ASSERT_TRUE(r) << network << ": " << r.error().message;
    EXPECT_EQ(r->rc, rc) << network;
  }
  auto crash = step_hook(*l, Hook::StepPreinit, "switchlua:preinit_crash");
  ASSERT_FALSE(crash);
  EXPECT_EQ(crash.error().kind, CallError::Kind::LuaError);
}

} // namespace
} // namespace switchlua
