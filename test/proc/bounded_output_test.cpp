// SPDX-License-Identifier: GPL-2.0-or-later
//
// Bounded output: a log line of any size, a flood of lines and a slow
// client never change a call's outcome, and every buffer stays bounded.
#include "harness.hpp"

#include "lua/log_limits.hpp"
#include "supervisor/server.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <thread>

using namespace switchlua;
using namespace switchlua::test;
using namespace std::chrono_literals;

namespace {

/// VmHWM (peak resident set) of `pid`, in KiB; -1 when unreadable.
long peak_rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0)
      return std::stol(line.substr(6));
  return -1;
}

bool contains(const std::vector<std::string> &lines, const std::string &text) {
  for (const std::string &l : lines)
    if (l.find(text) != std::string::npos)
      return true;
  return false;
}

} // namespace

TEST(BoundedOutput, TwoMebibyteLineIsTruncatedAndTheCallReturns) {
  SyncClient c;
  CallResult r = c.run(request("huge_line"));
  ASSERT_EQ(r.outcome.kind, OutcomeKind::Returned) << describe(r.outcome);
  EXPECT_EQ(json(r.outcome.ret.jobinfo), R"({"ok":true})");
  ASSERT_EQ(r.logs.size(), 1u);
  const std::string marker = " [... line truncated: 2097153 bytes in all]";
  EXPECT_EQ(r.logs[0].size(), kMaxLogLineBytes - 1 + marker.size());
  EXPECT_EQ(r.logs[0].substr(r.logs[0].size() - marker.size()), marker);
}

TEST(BoundedOutput, TwoMebibyteErrorIsALuaErrorWithATruncatedMessage) {
  SyncClient c;
  CallRequest req = request("huge_line");
  req.hook = Hook::JobComplete;
  CallResult r = c.run(req);
  ASSERT_EQ(r.outcome.kind, OutcomeKind::LuaError) << describe(r.outcome).substr(0, 200);
  EXPECT_NE(r.outcome.message.find("huge_line.lua:10: yyyy"), std::string::npos)
      << r.outcome.message.substr(0, 200);
  EXPECT_NE(r.outcome.message.find("[... line truncated: "), std::string::npos);
  EXPECT_LE(r.outcome.message.size(), kMaxMessageBytes + 64);
}

TEST(BoundedOutput, FloodKeepsTheBudgetAndSaysHowManyLinesWereSuppressed) {
  SyncClient c;
  CallResult r = c.run(request("log_flood", 60s));
  ASSERT_EQ(r.outcome.kind, OutcomeKind::Returned) << describe(r.outcome);
  EXPECT_EQ(json(r.outcome.ret.jobinfo), R"({"flooded":true})");
  // Each line is cut to 4096 bytes + the marker; as many as fit 1 MiB are
  // kept, then come the notice and the count.
  const std::string first = bound_log_line("1 " + std::string(10000, 'z'));
  const std::uint64_t kept = kCallLogByteBudget / first.size();
  EXPECT_EQ(r.logs[0], first);
  ASSERT_EQ(r.logs.size(), kept + 2);
  EXPECT_EQ(r.logs[kept], LogBudget::notice());
  EXPECT_EQ(r.logs.back(), fmt::format("{} lines suppressed (log budget: 1000 lines or 1048576 "
                                       "bytes per call)",
                                       5000 - kept));
  std::size_t bytes = 0;
  for (const std::string &l : r.logs)
    bytes += l.size();
  EXPECT_LE(bytes, kCallLogByteBudget + 1024);
}

TEST(BoundedOutput, SlowClientDropsLogLinesNeverOutcomesAndSupervisorMemoryStaysFlat) {
  // The client's I/O thread stalls on the first line for 3 s: the sockets
  // fill, and the supervisor's queue towards the client would grow by every
  // line of 16 floods (16 MiB) without its bound.
  std::atomic<bool> stalled{false};
  ClientOptions o = default_options();
  SyncClient c(o);
  c.set_log_observer([&](CallId, const std::string &) {
    if (!stalled.exchange(true))
      std::this_thread::sleep_for(3s);
  });
  std::vector<CallId> ids;
  for (int i = 0; i < 16; ++i)
    ids.push_back(c.submit(request("log_flood", 60s)));
  bool dropped = false;
  for (CallId id : ids) {
    auto r = c.wait(id, 120s);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->outcome.kind, OutcomeKind::Returned) << describe(r->outcome);
    dropped = dropped || contains(r->logs, "dropped: slurmctld did not read them fast enough");
  }
  const long peak = peak_rss_kib(c.client().supervisor_pid());
  std::printf("supervisor peak RSS after 16 floods with a stalled client: %ld KiB\n", peak);
  EXPECT_TRUE(dropped) << "the stalled client should have made the supervisor drop lines";
  ASSERT_GT(peak, 0);
  EXPECT_LT(peak, 16 * 1024) << "the backlog bound is " << kMaxClientLogBacklog << " bytes";
}
