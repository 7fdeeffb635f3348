// SPDX-License-Identifier: GPL-2.0-or-later
//
// One outcome class per test, each through the real client, supervisor and
// runner, with the fixture script named after the behaviour.
#include "harness.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <unistd.h>

using namespace switchlua;
using namespace switchlua::test;

TEST(Outcomes, ReturnsNormallyWithRcAndJobinfo) {
  SyncClient c;
  CallResult r = c.run(request("returns_normally"));
  ASSERT_EQ(r.outcome.kind, OutcomeKind::Returned) << describe(r.outcome);
  EXPECT_EQ(r.outcome.ret.rc, kSuccess);
  EXPECT_EQ(json(r.outcome.ret.jobinfo), R"({"job_id":42,"nodes":"node[1-2]","vlans":[101,102]})");
  EXPECT_EQ(r.logs, (std::vector<std::string>{"job_start JobId=42"}));
  EXPECT_TRUE(r.outcome.escapees.empty());
}

TEST(Outcomes, JobCompleteReceivesTheJobinfo) {
  SyncClient c;
  CallResult start = c.run(request("returns_normally"));
  ASSERT_EQ(start.outcome.kind, OutcomeKind::Returned) << describe(start.outcome);
  CallRequest req = request("returns_normally");
  req.hook = Hook::JobComplete;
  req.jobinfo = start.outcome.ret.jobinfo;
  CallResult r = c.run(req);
  ASSERT_EQ(r.outcome.kind, OutcomeKind::Returned) << describe(r.outcome);
  EXPECT_EQ(r.outcome.ret.rc, kEagain); // the fixture's "jobinfo arrived" answer
}

// Issue 19 item 7: a write to an io.popen helper that exited before reading
// it is a Lua value the script can handle (nil, "Broken pipe", 32), never
// the runner's death on SIGPIPE (job_start was reported "timed out ... died
// on signal 13"); a command the script starts still dies of SIGPIPE.
TEST(Outcomes, ABrokenPipeIsALuaValueNotTheRunnersDeath) {
  SyncClient c;
  CallResult start = c.run(request("broken_pipe"));
  ASSERT_EQ(start.outcome.kind, OutcomeKind::Returned) << describe(start.outcome);
  EXPECT_EQ(start.outcome.ret.rc, kSuccess);
  EXPECT_EQ(json(start.outcome.ret.jobinfo),
            R"({"seen":"write=nil Broken pipe 32; child=signal 13"})");
  CallRequest req = request("broken_pipe");
  req.hook = Hook::JobComplete;
  req.jobinfo = start.outcome.ret.jobinfo;
  CallResult done = c.run(req);
  ASSERT_EQ(done.outcome.kind, OutcomeKind::Returned) << describe(done.outcome);
  EXPECT_EQ(done.outcome.ret.rc, kSuccess) << testing::PrintToString(done.logs);
}

TEST(Outcomes, AFinalizerThatNeverEndsDoesNotDelayTheResult) {
  // The runner exits without closing the call's Lua state; closing it would
  // run the endless __gc and the call would time out instead.
  SyncClient c;
  CallResult r = c.run(request("finalizer_hangs", std::chrono::seconds(2)));
  ASSERT_EQ(r.outcome.kind, OutcomeKind::Returned) << describe(r.outcome);
  EXPECT_EQ(json(r.outcome.ret.jobinfo), R"({"job_id":42})");
}

TEST(Outcomes, WhatTheScriptWroteToAFileItLeftOpenIsThereWhenTheCallReports) {
  // The Lua state is never closed (previous test), so no __gc flushes the
  // file: the runner flushes every open stream before its result.
  const std::string path = "/tmp/switchlua-unclosed-" + std::to_string(::getpid());
  std::remove(path.c_str());
  SyncClient c;
  CallRequest req = request("unclosed_file");
  req.job.name = path;
  CallResult r = c.run(req);
  ASSERT_EQ(r.outcome.kind, OutcomeKind::Returned) << describe(r.outcome);
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "written by JobId=42");
  std::remove(path.c_str());
}

TEST(Outcomes, LuaErrorCarriesFileLineAndMessage) {
  SyncClient c;
  CallResult r = c.run(request("lua_error"));
  ASSERT_EQ(r.outcome.kind, OutcomeKind::LuaError) << describe(r.outcome);
  EXPECT_NE(r.outcome.message.find("lua_error.lua:4: deliberate failure in job_start"),
            std::string::npos)
      << r.outcome.message;
}

TEST(Outcomes, BadReturnIsNotASuccess) {
  SyncClient c;
  CallResult r = c.run(request("bad_return"));
  ASSERT_EQ(r.outcome.kind, OutcomeKind::BadReturn) << describe(r.outcome);
  EXPECT_NE(r.outcome.message.find("\"0\""), std::string::npos) << r.outcome.message;
}

TEST(Outcomes, SyntaxErrorIsLoadFailed) {
  SyncClient c;
  CallResult r = c.run(request("load_failure_syntax"));
  ASSERT_EQ(r.outcome.kind, OutcomeKind::LoadFailed) << describe(r.outcome);
  EXPECT_NE(r.outcome.message.find("load_failure_syntax.lua:"), std::string::npos)
      << r.outcome.message;
}

TEST(Outcomes, ChunkReturningMinusOneIsLoadFailed) {
  SyncClient c;
  CallResult r = c.run(request("load_failure_chunk_returns"));
  ASSERT_EQ(r.outcome.kind, OutcomeKind::LoadFailed) << describe(r.outcome);
  EXPECT_NE(r.outcome.message.find("-1"), std::string::npos) << r.outcome.message;
}

TEST(Outcomes, OsExitIsExitedWithoutReturn) {
  SyncClient c;
  CallResult r = c.run(request("exits_without_return"));
  ASSERT_EQ(r.outcome.kind, OutcomeKind::ExitedWithoutReturn) << describe(r.outcome);
  EXPECT_EQ(r.outcome.exit_status, 3);
  EXPECT_EQ(r.logs, (std::vector<std::string>{"about to exit"}));
}

TEST(Outcomes, SelfSentSegvIsSignaled) {
  SyncClient c;
  CallResult r = c.run(request("self_signal"));
  ASSERT_EQ(r.outcome.kind, OutcomeKind::Signaled) << describe(r.outcome);
  EXPECT_EQ(r.outcome.signal, SIGSEGV);
}
