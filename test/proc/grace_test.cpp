// SPDX-License-Identifier: GPL-2.0-or-later
//
// TERM, grace, KILL at the deadline (switch_kill_grace): the call's process
// group gets SIGTERM, then SIGKILL after the grace; the outcome is "timed
// out" either way.
#include "harness.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace switchlua;
using namespace switchlua::test;
using namespace std::chrono_literals;

namespace {

std::string marker_path() {
  return "/tmp/switchlua-grace-marker-" + std::to_string(::getpid());
}

std::string read_file(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

} // namespace

TEST(Grace, HelperThatTrapsTermCleansUpWithinTheGrace) {
  const std::string marker = marker_path();
  std::remove(marker.c_str());
  SyncClient c;
  CallRequest req = request("term_trap", 1s);
  req.job.name = marker;
  req.kill_grace = 5s;
  CallResult r = c.run(req);
  EXPECT_EQ(r.outcome.kind, OutcomeKind::TimedOut) << describe(r.outcome);
  EXPECT_EQ(read_file(marker), "cleaned up\n");
  std::remove(marker.c_str());
}

// Issue 19 item 7, switch.lua(5) Timeout: the runner dies at the deadline,
// but the call ends when its outcome is delivered, and that waits for the
// rest of its process group: a helper whose cleanup takes 0.5 s has
// finished it (and is gone) when the outcome arrives, so nothing the call
// started outlives the call.
TEST(Grace, TheOutcomeWaitsForTheGroupSoNothingOutlivesTheCall) {
  const std::string marker = marker_path();
  std::remove(marker.c_str());
  SyncClient c;
  CallRequest req = request("term_trap_slow", 1s);
  req.job.name = marker;
  req.kill_grace = 5s;
  CallResult r = c.run(req);
  EXPECT_EQ(r.outcome.kind, OutcomeKind::TimedOut) << describe(r.outcome);
  EXPECT_EQ(read_file(marker), "cleaned up\n") << "the outcome came before the group was gone";
  EXPECT_TRUE(r.outcome.escapees.empty());
  std::remove(marker.c_str());
}

TEST(Grace, ZeroGraceKillsAtOnceSoTheTrapNeverRuns) {
  const std::string marker = marker_path();
  std::remove(marker.c_str());
  SyncClient c;
  CallRequest req = request("term_trap", 1s);
  req.job.name = marker;
  req.kill_grace = 0s;
  CallResult r = c.run(req);
  EXPECT_EQ(r.outcome.kind, OutcomeKind::TimedOut) << describe(r.outcome);
  EXPECT_EQ(::access(marker.c_str(), F_OK), -1) << "the trap ran although the grace was 0";
  std::remove(marker.c_str());
}

TEST(Grace, MemberIgnoringTermIsKilledAfterTheGraceAndTheGroupIsGone) {
  SyncClient c;
  CallRequest req = request("term_ignored", 1s);
  req.kill_grace = 1s;
  const CallId id = c.submit(req);
  auto r = c.wait(id, 20s);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->outcome.kind, OutcomeKind::TimedOut) << describe(r->outcome);
  // The runner died of SIGTERM at the deadline; its group (leader unreaped
  // meanwhile) was emptied by SIGKILL at the end of the grace.
  EXPECT_GE(r->outcome.elapsed, 2000ms) << "reaped before the grace ended";
  EXPECT_TRUE(r->outcome.escapees.empty());
}
