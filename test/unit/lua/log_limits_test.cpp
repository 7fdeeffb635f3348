// SPDX-License-Identifier: GPL-2.0-or-later
//
// Bounded output (switch.lua(5), LOG LINES): line truncation on a UTF-8
// boundary, the per-call budget.
#include "lua/log_limits.hpp"

#include <gtest/gtest.h>

using namespace switchlua;

namespace {
bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t n = c < 0x80         ? 1
                          : (c >> 5) == 6  ? 2
                          : (c >> 4) == 14 ? 3
                          : (c >> 3) == 30 ? 4
                                           : 0;
    if (n == 0 || i + n > s.size())
      return false;
    for (std::size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80)
        return false;
    i += n;
  }
  return true;
}
} // namespace

TEST(LogLimits, ShortLinesAreUnchanged) {
  EXPECT_EQ(bound_log_line("hello"), "hello");
  const std::string exact(kMaxLogLineBytes, 'x');
  EXPECT_EQ(bound_log_line(exact), exact);
}

TEST(LogLimits, LongLineIsCutOnACharacterBoundaryAndMarked) {
  // "x" then two-byte characters: byte 4096 falls inside a character.
  std::string line = "x";
  for (int i = 0; i < 1 << 20; ++i)
    line += "\xc3\xa9"; // é
  const std::string out = bound_log_line(line);
  const std::string marker = " [... line truncated: 2097153 bytes in all]";
  ASSERT_GT(out.size(), marker.size());
  EXPECT_EQ(out.substr(out.size() - marker.size()), marker);
  const std::string kept = out.substr(0, out.size() - marker.size());
  EXPECT_EQ(kept.size(), kMaxLogLineBytes - 1);
  EXPECT_TRUE(valid_utf8(out));
}

TEST(LogLimits, FourByteCharactersAreNeverSplit) {
  std::string line;
  for (int i = 0; i < 2000; ++i)
    line += "\xf0\x9f\x98\x80"; // U+1F600
  EXPECT_EQ(utf8_prefix(line, 4095).size(), 4092u);
  EXPECT_TRUE(valid_utf8(bound_log_line(line)));
}

TEST(LogLimits, BudgetAdmitsThenSuppressesAndCounts) {
  LogBudget b;
  for (std::uint64_t i = 0; i < kCallLogLineBudget; ++i)
    ASSERT_TRUE(b.admit(10));
  EXPECT_FALSE(b.admit(10));
  EXPECT_TRUE(b.first_refusal());
  EXPECT_FALSE(b.admit(1));
  EXPECT_FALSE(b.first_refusal());
  EXPECT_EQ(b.suppressed(), 2u);
  EXPECT_EQ(b.summary(), "2 lines suppressed (log budget: 1000 lines or 1048576 bytes per call)");
}

TEST(LogLimits, ByteBudgetCountsToo) {
  LogBudget b;
  int admitted = 0;
  while (b.admit(kMaxLogLineBytes))
    ++admitted;
  EXPECT_EQ(admitted, static_cast<int>(kCallLogByteBudget / kMaxLogLineBytes));
  EXPECT_FALSE(b.admit(1)) << "once refused, every later line is refused";
}
