// SPDX-License-Identifier: GPL-2.0-or-later
//
// common/slurm_series.hpp, the one table of what differs by Slurm series,
// against switch.lua(5) SLURM VERSIONS (issue 36 item 3): every series of
// the table has an entry, and each entry (or the one it says it is "As")
// states the table's special steps and who asks the start-up questions.
#include "common/slurm_series.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

namespace switchlua {
namespace {

/// The text of switch.lua(5) SLURM VERSIONS, one ".TP" entry per series
/// (name -> its words, roff requests and font escapes removed, one line).
std::map<std::string, std::string> version_entries() {
  std::ifstream in(std::string(SWITCHLUA_SOURCE_ROOT) + "/man/switch.lua.5");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string man = ss.str();
  const auto begin = man.find("\n.SH SLURM VERSIONS\n");
  const auto end = man.find("\n.SH ", begin + 1);
  std::istringstream lines(man.substr(begin, end - begin));
  std::map<std::string, std::string> out;
  std::string line, current;
  bool name_next = false;
  while (std::getline(lines, line)) {
    if (line == ".TP") {
      name_next = true;
      continue;
    }
    if (line == ".PP" || line.rfind(".SH", 0) == 0) {
      current.clear();
      continue;
    }
    line = std::regex_replace(line, std::regex(R"(^\.[A-Z]+ ?)"), "");
    line = std::regex_replace(line, std::regex(R"(\\-)"), "-");
    line = std::regex_replace(line, std::regex(R"(\\f[BIPR])"), "");
    if (name_next) {
      current = line;
      name_next = false;
      continue;
    }
    if (!current.empty())
      out[current] += line + " ";
  }
  return out;
}

/// The entry of `name`, following one "As X." at its start.
std::string entry_of(const std::map<std::string, std::string> &entries, const std::string &name) {
  auto it = entries.find(name);
  if (it == entries.end())
    return "";
  std::smatch m;
  if (std::regex_search(it->second, m, std::regex(R"(^As ([0-9]+\.[0-9]+)\b)")))
    return it->second + entry_of(entries, m[1].str());
  return it->second;
}

TEST(SlurmSeries, TheManPageHasAnEntryForEverySeriesOfTheTableAndNoOther) {
  const auto entries = version_entries();
  ASSERT_FALSE(entries.empty());
  for (const SlurmSeries &s : kSlurmSeries)
    EXPECT_TRUE(entries.count(std::string(s.name))) << s.name;
  EXPECT_EQ(entries.size(), kSlurmSeries.size());
}

TEST(SlurmSeries, EachEntrySaysWhatTheTableSaysOfSpecialStepsAndStartUpQuestions) {
  const auto entries = version_entries();
  for (const SlurmSeries &s : kSlurmSeries) {
    const std::string e = entry_of(entries, std::string(s.name));
    SCOPED_TRACE(std::string(s.name) + ": " + e);
    const bool ignored =
        std::regex_search(e, std::regex("setup_special_steps ?, which is ignored"));
    const bool included = e.find("special steps included") != std::string::npos;
    EXPECT_EQ(included, s.special_steps);
    EXPECT_EQ(ignored, !s.special_steps);
    EXPECT_EQ(e.find("slurmstepd asks both start-up questions") != std::string::npos,
              s.stepd_asks_start_questions);
    EXPECT_EQ(e.find("slurmstepd asks neither start-up question") != std::string::npos,
              !s.stepd_asks_start_questions);
  }
}

TEST(SlurmSeries, TheRowsAreThoseOfThePluginsTable) {
  // src/plugin/slurm_series: "series abi kind" rows, which meson builds for.
  std::ifstream in(std::string(SWITCHLUA_SOURCE_ROOT) + "/src/plugin/slurm_series");
  ASSERT_TRUE(in) << "src/plugin/slurm_series";
  std::string line;
  std::size_t rows = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#')
      continue;
    std::istringstream f(line);
    std::string name, abi, kind;
    f >> name >> abi >> kind;
    ++rows;
    const SlurmSeries *s = find_slurm_series(name);
    ASSERT_NE(s, nullptr) << name << " is in src/plugin/slurm_series, not in kSlurmSeries";
    EXPECT_EQ(s->snapshot, kind == "snapshot") << name;
  }
  EXPECT_EQ(rows, kSlurmSeries.size());
}

TEST(SlurmSeries, LookUpByNameAndNumberAndTheNewestIsTheDefault) {
  ASSERT_NE(find_slurm_series("25.11"), nullptr);
  EXPECT_EQ(find_slurm_series("25.11"), find_slurm_series(2511u));
  EXPECT_EQ(find_slurm_series("23.11"), nullptr);
  EXPECT_EQ(find_slurm_series(2311u), nullptr);
  EXPECT_EQ(newest_slurm_series().name, "26.05") << "the newest release, not a snapshot";
  EXPECT_NE(setup_special_steps_line(*find_slurm_series("24.11")),
            setup_special_steps_line(*find_slurm_series("26.05")));
}

} // namespace
} // namespace switchlua
