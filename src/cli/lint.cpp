// SPDX-License-Identifier: GPL-2.0-or-later
//
// luacheck for `switch-lua check` (cli/lint.hpp).
#include "cli/lint.hpp"

#include "lua/run_command.hpp"

#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace switchlua {

namespace {

/// luacheck's PATH, whatever the caller's.
constexpr std::string_view kLuacheckPath = "/usr/local/bin:/usr/bin:/bin";

/// The environment luacheck runs with: fixed, nothing of the caller's (no
/// LUA_PATH, LUA_INIT, PATH with "." in it; issue 35).
const std::vector<std::string> &luacheck_env() {
  static const std::vector<std::string> env = {"PATH=" + std::string(kLuacheckPath),
                                               "LC_ALL=C.UTF-8", "HOME=/nonexistent"};
  return env;
}

/// The executable `name` in the absolute folders of $PATH (kLuacheckPath
/// when unset), or "": an empty or relative entry (the current folder) is
/// never searched.
std::string on_path(const std::string &name) {
  const char *path = std::getenv("PATH");
  std::stringstream dirs{std::string(path && path[0] ? path : kLuacheckPath)};
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty() || dir[0] != '/')
      continue;
    const std::string p = dir + "/" + name;
    if (::access(p.c_str(), X_OK) == 0)
      return p;
  }
  return {};
}

/// Owned by root or the caller, a regular file not writable by others.
bool trusted_file(const std::filesystem::path &p) {
  struct stat st{};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         (st.st_uid == 0 || st.st_uid == ::geteuid()) && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

} // namespace

std::string luacheck_config() {
  if (const char *e = std::getenv("SWITCHLUA_LUACHECKRC"); e && e[0])
    return e;
  // A build tree's binary (not the installed one: no build path is compiled
  // in) uses the standard its build generated, <build>/src/cli/../../.
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec && self.parent_path() != std::filesystem::path(SWITCHLUA_BINDIR)) {
    const auto built =
        self.parent_path().parent_path().parent_path() / "switchlua-build.luacheckrc";
    if (trusted_file(built))
      return built.string();
  }
  return SWITCHLUA_LUACHECKRC;
}

LintResult run_luacheck(const std::string &script) {
  LintResult r;
  r.config = luacheck_config();
  const std::string luacheck = on_path("luacheck");
  if (luacheck.empty()) {
    r.why_not = "luacheck is not installed (Debian: lua-check)";
    return r;
  }
  if (!std::filesystem::exists(r.config)) {
    r.why_not = fmt::format("no luacheck configuration at {}", r.config);
    return r;
  }
  RunRequest req;
  std::error_code ec;
  const auto absolute = std::filesystem::absolute(script, ec); // it runs in /
  req.argv = {luacheck, "--config", r.config,     "--formatter",
              "plain",  "--codes",  "--no-color", ec ? script : absolute.string()};
  req.timeout = std::chrono::seconds(60);
  req.own_group = true;
  req.env = luacheck_env();
  req.cwd = "/";
  const RunResult run = run_command(req);
  // luacheck: 0 no warning, 1 warnings, 2 errors (syntax), 3 or more: it
  // failed itself.
  if (!run.started || !run.status || *run.status > 2) {
    r.why_not = !run.started ? run.error
                : run.timed_out
                    ? "luacheck timed out"
                    : fmt::format("luacheck failed ({}): {}",
                                  run.status ? fmt::format("exit {}", *run.status)
                                             : fmt::format("signal {}", run.signal.value_or(0)),
                                  run.err.empty() ? run.out : run.err);
    return r;
  }
  std::stringstream out(run.out);
  for (std::string line; std::getline(out, line);)
    if (!line.empty())
      r.warnings.push_back(line);
  r.ran = true;
  return r;
}

} // namespace switchlua
