// SPDX-License-Identifier: GPL-2.0-or-later
//
// Runs the switch-lua binary under test (SWITCHLUA_CLI, set by meson) the
// way a user does, and returns its exit status and output.
#pragma once

#include <array>
#include <cstdio>
#include <string>

namespace switchlua::test {

/// The wait status (pclose()) and stdout+stderr of one command.
struct CmdResult {
  int status = -1;
  std::string out;
};

/// Runs `prefix` SWITCHLUA_CLI `args` through sh, stderr merged into out;
/// `prefix` is e.g. "env TZ=UTC " (empty: none).
inline CmdResult run_cli(const std::string &args, const std::string &prefix = "") {
  const std::string cmd = prefix + std::string(SWITCHLUA_CLI) + " " + args + " 2>&1";
  CmdResult r;
  FILE *p = popen(cmd.c_str(), "r");
  if (!p)
    return r;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0)
    r.out.append(buf.data(), n);
  r.status = pclose(p);
  return r;
}

} // namespace switchlua::test
