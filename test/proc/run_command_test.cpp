// SPDX-License-Identifier: GPL-2.0-or-later
//
// slurm.run (lua/run_command.hpp, issue 21) in a real supervised call:
// argv with spaces and shell metacharacters, 1 MiB of standard input, a
// timeout, a command that leaves a child (killed with the call), a missing
// binary, the argument checks, and the cap by the call's own timeout.
#include "harness.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>
#include <unistd.h>

using namespace switchlua;
using namespace switchlua::test;
using namespace std::chrono_literals;

namespace {

nlohmann::json run_case(const std::string &name, const std::string &account = {},
                        std::chrono::seconds timeout = 10s, Outcome *out = nullptr) {
  SyncClient c;
  CallRequest req = request("run_command", timeout);
  req.job.name = name;
  if (!account.empty())
    req.job.account = account;
  CallResult r = c.run(req);
  if (out)
    *out = r.outcome;
  EXPECT_EQ(r.outcome.kind, OutcomeKind::Returned) << describe(r.outcome);
  return nlohmann::json::parse(json(r.outcome.ret.jobinfo), nullptr, false);
}

} // namespace

TEST(SlurmRun, ArgvIsPassedAsItIsWithoutAShell) {
  const std::string marker =
      (std::filesystem::temp_directory_path() / ("swlua-run-marker-" + std::to_string(getpid())))
          .string();
  std::filesystem::remove(marker);
  auto j = run_case("argv", marker);
  EXPECT_EQ(j["status"], 0);
  EXPECT_EQ(j["stdout"], "<a b><; touch " + marker + "><$(touch " + marker + ")><`touch " + marker +
                             "`><'q'\"q\"><x\ny><*><$HOME><|| touch " + marker + ">");
  EXPECT_FALSE(std::filesystem::exists(marker)) << "a shell ran the user's string";
}

TEST(SlurmRun, OneMebibyteOfStandardInput) {
  auto j = run_case("stdin");
  EXPECT_EQ(j["status"], 0);
  EXPECT_EQ(j["count"], "1048576\n");
  EXPECT_EQ(j["same"], true) << "cat did not echo the input back whole";
}

TEST(SlurmRun, ACommandPastItsTimeoutIsKilled) {
  auto j = run_case("timeout");
  EXPECT_EQ(j["timed_out"], true);
  EXPECT_EQ(j["signal"], 9);
  EXPECT_GE(j["elapsed"].get<double>(), 0.25);
  EXPECT_LT(j["elapsed"].get<double>(), 5.0);
}

TEST(SlurmRun, ALeftoverChildIsInTheCallsGroupAndKilledWithTheCall) {
  auto j = run_case("leftover");
  EXPECT_EQ(j["status"], 0);
  const pid_t child = j["child"].get<int>();
  ASSERT_GT(child, 0);
  // The supervisor kills the group's leftovers before it reaps the runner.
  for (int i = 0; i < 50 && process_exists(child); ++i)
    std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(process_exists(child)) << "the command's child survived the call";
  EXPECT_FALSE(group_exists(j["pgid"].get<int>()));
}

TEST(SlurmRun, AMissingBinaryIsAClearErrorNotACrash) {
  auto j = run_case("missing");
  EXPECT_EQ(j["result"], "nil");
  EXPECT_EQ(j["err"], "slurm.run: cannot run /nonexistent/fabric-ctl: No such file or directory");
}

TEST(SlurmRun, ExitStatusStderrAndArgumentChecks) {
  auto j = run_case("status");
  EXPECT_EQ(j["status"], 3);
  EXPECT_EQ(j["stderr"], "oops\n");
  EXPECT_NE(j["e1"].get<std::string>().find("table expected"), std::string::npos) << j["e1"];
  EXPECT_EQ(j["e2"], "slurm.run: opts has an unknown key (stdin and timeout are known)");
  EXPECT_EQ(j["e3"], "slurm.run: argv must be a non-empty array of strings");
}

TEST(SlurmRun, TheTimeoutIsCappedByTheCallsOwn) {
  Outcome o;
  auto j = run_case("capped", {}, 2s, &o);
  EXPECT_EQ(j["timed_out"], true) << "the command outlived the call's switch_timeout";
  EXPECT_LT(j["elapsed"].get<double>(), 2.0);
}
