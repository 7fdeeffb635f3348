// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: test/unit/source_lines.hpp
//
// The lines of a file of the source tree (a man page, the LuaLS meta, a
// script), for the tests that check one against another.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace switchlua::test {

/// The lines of `p`, without their newlines; a file that cannot be read
/// fails the test and gives none.
inline std::vector<std::string> read_lines(const std::filesystem::path &p) {
  std::ifstream in(p);
  EXPECT_TRUE(in) << p;
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);)
    out.push_back(l);
  return out;
}

} // namespace switchlua::test
