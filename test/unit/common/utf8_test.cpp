// SPDX-License-Identifier: GPL-2.0-or-later
#include "common/utf8.hpp"

#include <gtest/gtest.h>

using namespace switchlua;

TEST(Utf8, ValidAcceptsAsciiAndMultibyte) {
  EXPECT_TRUE(utf8_valid(""));
  EXPECT_TRUE(utf8_valid("plain"));
  EXPECT_TRUE(utf8_valid("caf\xc3\xa9"));      // é
  EXPECT_TRUE(utf8_valid("\xe2\x82\xac"));     // €
  EXPECT_TRUE(utf8_valid("\xf0\x9f\x98\x80")); // U+1F600
  EXPECT_TRUE(utf8_valid("\xf4\x8f\xbf\xbf")); // U+10FFFF
}

TEST(Utf8, ValidRefusesBadSequences) {
  EXPECT_FALSE(utf8_valid("caf\xe9"));          // Latin-1 é
  EXPECT_FALSE(utf8_valid("\xc0\xaf"));         // overlong '/'
  EXPECT_FALSE(utf8_valid("\xe0\x80\xaf"));     // overlong, 3 bytes
  EXPECT_FALSE(utf8_valid("\xed\xa0\x80"));     // surrogate U+D800
  EXPECT_FALSE(utf8_valid("\xf4\x90\x80\x80")); // above U+10FFFF
  EXPECT_FALSE(utf8_valid("\xc3"));             // truncated
  EXPECT_FALSE(utf8_valid("\x80"));             // lone continuation
}

TEST(Utf8, SanitizeReplacesEachInvalidByteWithReplacementCharacter) {
  EXPECT_EQ(utf8_sanitize("caf\xe9"), "caf\xef\xbf\xbd");
  EXPECT_EQ(utf8_sanitize("a\xc3"), "a\xef\xbf\xbd");
  EXPECT_EQ(utf8_sanitize("\xff\xfe"), "\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(utf8_sanitize("caf\xc3\xa9"), "caf\xc3\xa9"); // valid: unchanged
  EXPECT_TRUE(utf8_valid(utf8_sanitize("\xed\xa0\x80 x \xf4\x90\x80\x80")));
}

TEST(Utf8, TruncateNeverCutsACharacter) {
  EXPECT_EQ(utf8_truncate("a\xc3\xa9", 2), "a");
  EXPECT_EQ(utf8_truncate("a\xc3\xa9", 3), "a\xc3\xa9");
  EXPECT_EQ(utf8_truncate("\xe2\x82\xac\xe2\x82\xac", 5), "\xe2\x82\xac");
  EXPECT_EQ(utf8_truncate("abc", 0), "");
  EXPECT_EQ(utf8_truncate("abc", 10), "abc");
}

TEST(Utf8, TruncateMarkedFitsTheLimitWithTheMarker) {
  // The example: 115 'a' then 20 'é' cut to 160 bytes.
  std::string s(115, 'a');
  for (int i = 0; i < 20; ++i)
    s += "\xc3\xa9";
  std::string out = utf8_truncate_marked(s, 140, "...");
  EXPECT_LE(out.size(), 140u);
  EXPECT_TRUE(utf8_valid(out));
  EXPECT_EQ(out.substr(out.size() - 3), "...");
  // 137 bytes of room: 115 + 11 * 2 = 137, so 11 whole é fit.
  EXPECT_EQ(out.size(), 115u + 22u + 3u);
  EXPECT_EQ(utf8_truncate_marked("short", 140), "short");
  EXPECT_EQ(utf8_truncate_marked("caf\xe9", 140), "caf\xef\xbf\xbd");
}

TEST(Utf8, LogEscapeShowsEveryLineBreakingOrTerminalCharacterEscaped) {
  // Issue 21 (switch.lua(5), Escaping): one call, one line.
  EXPECT_EQ(log_escape("plain text, caf\xc3\xa9 \\ back"), "plain text, caf\xc3\xa9 \\ back");
  EXPECT_EQ(log_escape("a\nb\rc\td"), "a\\nb\\rc\\td");
  EXPECT_EQ(log_escape(std::string("\x00\x01\x1b[31m\x7f", 8)), "\\x00\\x01\\x1b[31m\\x7f");
  EXPECT_EQ(log_escape("nel\xc2\x85 ls\xe2\x80\xa8 ps\xe2\x80\xa9"),
            "nel\\u0085 ls\\u2028 ps\\u2029");
  EXPECT_EQ(log_escape("bad\xff"), "bad\xef\xbf\xbd") << "invalid UTF-8 is replaced first";
  // Idempotent: nothing it writes is escaped again.
  const std::string once = log_escape("x\n\x1b\xc2\x85");
  EXPECT_EQ(log_escape(once), once);
  EXPECT_EQ(once.find_first_of("\n\r\t\x1b"), std::string::npos);
}
