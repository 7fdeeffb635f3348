// SPDX-License-Identifier: GPL-2.0-or-later
//
// The one guard of the C ABI's entry points (src/plugin/abi_guard.hpp): an
// exception never crosses into slurmctld or slurmstepd; it becomes one
// error line naming switch/lua, the entry point and what follows, and the
// entry point's failure value.
#include "plugin/abi_guard.hpp"

#include <gtest/gtest.h>

#include <new>
#include <stdexcept>
#include <string>
#include <vector>

using namespace switchlua;

TEST(AbiGuard, ValueOfTheBodyWhenItReturns) {
  std::vector<std::string> lines;
  auto log = [&](const std::string &l) { lines.push_back(l); };
  EXPECT_EQ(cabi::guarded("reconfigure", "kept", -1, log, [] { return 7; }), 7);
  EXPECT_TRUE(lines.empty());
}

TEST(AbiGuard, ExceptionBecomesTheFailureValueAndOneLine) {
  std::vector<std::string> lines;
  auto log = [&](const std::string &l) { lines.push_back(l); };
  int r = cabi::guarded([] { return std::string("JobId=42 job_start"); },
                        "the job is not managed by switch/lua", 0, log,
                        []() -> int { throw std::runtime_error("boom"); });
  EXPECT_EQ(r, 0);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "switch/lua: JobId=42 job_start: boom; the job is not managed by switch/lua");
}

TEST(AbiGuard, AnythingThrownIsCaughtAndAThrowingLogIsSwallowed) {
  auto throwing_log = [](const std::string &) { throw std::bad_alloc(); };
  void *p = cabi::guarded("stepinfo", "no stepinfo", static_cast<void *>(nullptr), throwing_log,
                          []() -> void * { throw 42; });
  EXPECT_EQ(p, nullptr);
  std::vector<std::string> lines;
  cabi::guarded_void(
      "fini", "left running", [&](const std::string &l) { lines.push_back(l); }, [] { throw 1; });
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "switch/lua: fini: unknown exception; left running");
}
