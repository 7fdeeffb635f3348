// SPDX-License-Identifier: GPL-2.0-or-later
//
// The settings table (ctld/config.cpp) is the one source of the switch_*
// settings: every copy of a fact about them elsewhere is checked here against
// it (issue 19, "one source for every copied fact"):
//   - each row has its entry in switch_lua.conf(5) SLURMCTLDPARAMETERS, with
//     the row's unit, range and default, and each entry there is a row;
//   - the Syntax paragraph names every setting, in table order;
//   - every settings line shown in the man pages and the README
//     ("switch_timeout=10 switch_retries=3 ...") is describe() of what it says;
//   - every "SlurmctldParameters: ..." message shown is the parser's own text;
//   - no e2e test spells the settings line out (they ask `switch-lua settings`).
#include "../source_lines.hpp"
#include "ctld/config.hpp"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace switchlua;

namespace {

const fs::path kRoot = SWITCHLUA_SOURCE_ROOT;

using switchlua::test::read_lines;

/// The words of a troff request line ".BR a b" as the reader sees them
/// ("ab"): arguments in double quotes or separated by spaces, run together
/// (the alternating-font macros put no space between them).
std::string macro_args(std::string_view rest) {
  std::string out;
  bool quoted = false;
  for (char c : rest) {
    if (c == '"')
      quoted = !quoted;
    else if (c != ' ' || quoted)
      out += c;
  }
  return out;
}

/// One line of a man page as text: font requests give their words, other
/// requests nothing; escapes for dashes, quotes and fonts are resolved.
std::string troff_text(const std::string &line) {
  std::string s;
  static const std::regex font_req(R"(^\.(B|I|BR|RB|BI|IB|RI|IR) (.*)$)");
  std::smatch m;
  if (std::regex_match(line, m, font_req))
    s = m[1].length() == 1 ? std::regex_replace(m[2].str(), std::regex("\""), "")
                           : macro_args(m[2].str());
  else if (!line.empty() && (line[0] == '.' || line[0] == '\''))
    return "";
  else
    s = line;
  s = std::regex_replace(s, std::regex(R"(\\-)"), "-");
  s = std::regex_replace(s, std::regex(R"(\\\(lq|\\\(rq)"), "\"");
  s = std::regex_replace(s, std::regex(R"(\\f[BIRP])"), "");
  return std::regex_replace(s, std::regex(R"(\\&)"), "");
}

/// One entry of SLURMCTLDPARAMETERS: its header line (".BI switch_x= unit")
/// and its body as one line of text.
struct ManEntry {
  std::string header;
  std::string body;
  std::size_t line;
};

/// The entries of switch_lua.conf(5) SLURMCTLDPARAMETERS, by setting name.
std::map<std::string, ManEntry> man_entries() {
  const auto lines = read_lines(kRoot / "man" / "switch_lua.conf.5");
  std::map<std::string, ManEntry> out;
  // A family of settings (switch_pool_NAME) is headed ".BI switch_pool_ NAME=UNIT".
  static const std::regex header(R"(^\.B[IR] (switch_[a-z_]+)(?:= ?| NAME=)(.*)$)");
  bool in_section = false;
  ManEntry *cur = nullptr;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string &l = lines[i];
    if (l.starts_with(".SH")) {
      in_section = l == ".SH SLURMCTLDPARAMETERS";
      cur = nullptr;
      continue;
    }
    if (!in_section)
      continue;
    if (l.starts_with(".SS"))
      break;
    std::smatch m;
    if (i > 0 && lines[i - 1] == ".TP" && std::regex_match(l, m, header)) {
      cur = &out[m[1].str()];
      *cur = ManEntry{m[2].str(), "", i + 1};
      continue;
    }
    if (cur) {
      std::string t = troff_text(l);
      if (!t.empty())
        cur->body += (cur->body.empty() ? "" : " ") + t;
    }
  }
  return out;
}

/// "Default: 3." or "Default: 0, no limit..." in `body`.
bool has_default(const std::string &body, const std::string &value) {
  const std::string d = "Default: " + value;
  for (auto at = body.find(d); at != std::string::npos; at = body.find(d, at + 1))
    if (at + d.size() < body.size() && (body[at + d.size()] == '.' || body[at + d.size()] == ','))
      return true;
  return false;
}

TEST(SettingsMan, EveryRowOfTheTableHasItsEntryWithItsUnitRangeAndDefault) {
  const auto entries = man_entries();
  for (const SettingSpec &s : slurmctld_settings()) {
    const std::string name(s.name);
    auto it = entries.find(name);
    ASSERT_NE(it, entries.end())
        << "switch_lua.conf(5) SLURMCTLDPARAMETERS has no entry \".TP\" \".BI " << name
        << "= ...\" for the setting " << name << " of ctld/config.cpp";
    const ManEntry &e = it->second;
    const std::string where = "switch_lua.conf.5:" + std::to_string(e.line) + " " + name;
    // Read with troff_text, the body's ".\" " lines are gone and a default
    // given as ".BR yes ." reads "yes.".
    if (s.is_pool) {
      EXPECT_EQ(macro_args(e.header), std::string(s.unit)) << where << ": the unit";
      EXPECT_TRUE(has_default(e.body, s.default_value))
          << where << ": no \"Default: " << s.default_value << ".\" in: " << e.body;
    } else if (s.is_path) {
      EXPECT_EQ(macro_args(e.header), std::string(s.unit)) << where << ": the unit";
      EXPECT_NE(e.body.find("An absolute file path, or none."), std::string::npos)
          << where << ": no \"An absolute file path, or none.\" in: " << e.body;
      EXPECT_TRUE(has_default(e.body, s.default_value))
          << where << ": no \"Default: " << s.default_value << ".\" in: " << e.body;
    } else if (s.is_word) {
      const std::string words = macro_args(e.header);
      EXPECT_NE(words.find(std::string(s.words[1])), std::string::npos) << where << ": " << words;
      EXPECT_NE(words.find(std::string(s.words[0])), std::string::npos) << where << ": " << words;
      EXPECT_TRUE(has_default(e.body, s.default_value))
          << where << ": no \"Default: " << s.default_value << ".\" in: " << e.body;
    } else {
      EXPECT_EQ(macro_args(e.header), std::string(s.unit)) << where << ": the unit";
      const std::string range =
          "An integer from " + std::to_string(s.lo) + " to " + std::to_string(s.hi) + ".";
      EXPECT_NE(e.body.find(range), std::string::npos)
          << where << ": no \"" << range << "\" in: " << e.body;
      EXPECT_TRUE(has_default(e.body, s.default_value))
          << where << ": no \"Default: " << s.default_value << ".\" in: " << e.body;
    }
  }
}

TEST(SettingsMan, EveryEntryIsARowOfTheTable) {
  for (const auto &[name, e] : man_entries()) {
    bool found = false;
    for (const SettingSpec &s : slurmctld_settings())
      found = found || s.name == name;
    EXPECT_TRUE(found) << "switch_lua.conf.5:" << e.line << ": " << name
                       << " is not a setting of ctld/config.cpp";
  }
}

TEST(SettingsMan, TheSyntaxParagraphNamesEverySettingInTableOrder) {
  const auto lines = read_lines(kRoot / "man" / "switch_lua.conf.5");
  std::string para;
  bool in = false;
  for (const std::string &l : lines) {
    if (l == ".SS Syntax")
      in = true;
    else if (in && l.find("in any mix of upper and lower case") != std::string::npos)
      break;
    else if (in)
      para += troff_text(l) + " ";
  }
  ASSERT_FALSE(para.empty()) << "switch_lua.conf(5) has no .SS Syntax paragraph";
  std::string expected, got;
  for (const SettingSpec &s : slurmctld_settings())
    expected += std::string(s.name) + " ";
  static const std::regex name(R"(switch_[a-z_]+)");
  for (auto it = std::sregex_iterator(para.begin(), para.end(), name); it != std::sregex_iterator();
       ++it)
    got += it->str() + " ";
  EXPECT_EQ(got, expected) << "switch_lua.conf(5) .SS Syntax: " << para;
}

/// Every file that may show the settings line: the man pages, the README.
std::vector<fs::path> documents() {
  std::vector<fs::path> out{kRoot / "README.md"};
  for (const auto &e : fs::directory_iterator(kRoot / "man"))
    out.push_back(e.path());
  return out;
}

/// "switch_timeout=10 switch_retries=3 ..." (two or more settings separated
/// by single spaces): a copy of describe().
const std::regex kSettingsLine(R"(switch_[a-z_]+=[^\s,)]+( switch_[a-z_]+=[^\s,)]+)+)");

TEST(SettingsLine, EveryCopyInTheDocumentsIsTheLineThePluginLogs) {
  int copies = 0;
  for (const fs::path &p : documents()) {
    const auto lines = read_lines(p);
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const std::string text = troff_text(lines[i]);
      for (auto it = std::sregex_iterator(text.begin(), text.end(), kSettingsLine);
           it != std::sregex_iterator(); ++it) {
        ++copies;
        const std::string shown = it->str();
        auto c = parse_slurmctld_parameters(std::regex_replace(shown, std::regex(" "), ","));
        ASSERT_TRUE(c) << p.filename().string() << ":" << i + 1 << ": " << c.error().message;
        EXPECT_EQ(shown, describe(*c))
            << p.filename().string() << ":" << i + 1
            << ": a settings line that is not the plugin's (`switch-lua settings` prints it)";
      }
    }
  }
  EXPECT_GE(copies, 3) << "the man pages show the settings line at least three times";
}

TEST(SettingsLine, NoE2eTestSpellsTheLineOut) {
  for (const auto &e : fs::directory_iterator(kRoot / "test" / "e2e")) {
    if (e.path().extension() != ".sh")
      continue;
    const auto lines = read_lines(e.path());
    for (std::size_t i = 0; i < lines.size(); ++i)
      EXPECT_FALSE(
          lines[i].find_first_not_of(" \t") != std::string::npos &&
          lines[i][lines[i].find_first_not_of(" \t")] != '#' &&

          std::regex_search(lines[i], std::regex(R"(switch_timeout=[0-9]+ switch_retries)")))
          << e.path().filename().string() << ":" << i + 1
          << ": derive the settings line with settings_line (test/e2e/lib.sh)";
  }
}

/// What the parser says for the input that the message shown names.
std::string parser_message(const std::string &shown) {
  std::smatch m;
  if (std::regex_search(shown, m,
                        std::regex(R"(^SlurmctldParameters: (switch_[a-z_]+=[^:]*): must)"))) {
    auto c = parse_slurmctld_parameters(m[1].str());
    return c ? "(accepted)" : c.error().message;
  }
  if (std::regex_search(
          shown, m,
          std::regex(
              R"(^SlurmctldParameters: (switch_[a-z_]+) given twice \((\S+) and (\S+)\))"))) {
    auto c = parse_slurmctld_parameters(m[1].str() + "=" + m[2].str() + "," + m[1].str() + "=" +
                                        m[3].str());
    return c ? "(accepted)" : c.error().message;
  }
  if (std::regex_search(shown, m,
                        std::regex(R"(^SlurmctldParameters: (switch_[a-z_]+) is not a)"))) {
    auto w = slurmctld_parameters_warnings(m[1].str() + "=1");
    return w.empty() ? "(no warning)" : w.front();
  }
  return "(a message of unknown form)";
}

TEST(SettingsMan, EveryParserMessageShownIsTheParsersText) {
  int shown_count = 0;
  for (const fs::path &p : documents()) {
    const auto lines = read_lines(p);
    for (std::size_t i = 0; i < lines.size(); ++i) {
      std::string text = troff_text(lines[i]);
      if (text.starts_with("switch/lua: "))
        text = text.substr(12);
      if (!text.starts_with("SlurmctldParameters: "))
        continue;
      ++shown_count;
      const std::string want = parser_message(text);
      EXPECT_TRUE(text.starts_with(want)) << p.filename().string() << ":" << i + 1
                                          << ": shown: " << text << "\n  the parser says: " << want;
    }
  }
  EXPECT_GE(shown_count, 10);
}

} // namespace
