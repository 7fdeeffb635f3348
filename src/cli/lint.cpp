// SPDX-License-Identifier: GPL-2.0-or-later
//
// luacheck for `switch-lua check` (cli/lint.hpp).
#include "cli/lint.hpp"

#include "lua/run_command.hpp"

#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <sstream>
#include <unistd.h>

namespace switchlua {

namespace {

/// The executable `name` on $PATH, or "" (as execvp would find it).
std::string on_path(const std::string &name) {
  const char *path = std::getenv("PATH");
  std::stringstream dirs(path && path[0] ? path : "/usr/local/bin:/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string p = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(p.c_str(), X_OK) == 0)
      return p;
  }
  return {};
}

} // namespace

std::string luacheck_config() {
  if (const char *e = std::getenv("SWITCHLUA_LUACHECKRC"); e && e[0])
    return e;
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::filesystem::path build = SWITCHLUA_BUILD_ROOT;
  if (!ec && self.string().starts_with(build.string() + "/") &&
      std::filesystem::exists(build / "switchlua-build.luacheckrc"))
    return (build / "switchlua-build.luacheckrc").string();
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
  req.argv = {luacheck, "--config", r.config,     "--formatter",
              "plain",  "--codes",  "--no-color", script};
  req.timeout = std::chrono::seconds(60);
  req.own_group = true;
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
