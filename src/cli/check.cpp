// SPDX-License-Identifier: GPL-2.0-or-later
//
// `switch-lua check` (cli/simulate.hpp: run_check) and the script checks it
// shares with `simulate` (cli/simulate_report.hpp).
#include "cli/lint.hpp"
#include "cli/simulate.hpp"
#include "cli/simulate_report.hpp"

#include "common/content_hash.hpp"
#include "common/safe_file.hpp"
#include "lua/contract.hpp"
#include "lua/trust.hpp"
#include "supervisor/script_guard.hpp"

#include <fmt/format.h>
#include <iostream>
#include <lua.hpp>
#include <nlohmann/json.hpp>

namespace switchlua {

using json = nlohmann::json;

std::string file_content_hash(const std::string &path) {
  auto bytes = read_file_bounded(path, kMaxScriptBytes);
  return content_hash(bytes ? *bytes : std::string());
}

std::vector<std::string> controller_errors(const Expected<Script> &s) {
  if (!s)
    return {s.error().message};
  return s->hook_type_errors();
}

std::string join(const std::vector<std::string> &errors) {
  std::string out;
  for (const std::string &e : errors)
    out += (out.empty() ? "" : "; ") + e;
  return out;
}

/// The Lua type of hook `h`'s global in the loaded script (LUA_TNIL: absent).
static int hook_type(Script &s, Hook h) {
  lua_State *L = s.state();
  lua_getglobal(L, std::string(hook_function(h)).c_str());
  const int type = lua_type(L, -1);
  lua_pop(L, 1);
  return type;
}

namespace {
/// The luacheck lines of `switch-lua check`: advice, never its exit status.
void print_lint(const LintResult &lint) {
  if (!lint.ran) {
    fmt::print("luacheck: not run: {}\n", lint.why_not);
    return;
  }
  fmt::print("luacheck: {} warning{} ({})\n", lint.warnings.size(),
             lint.warnings.size() == 1 ? "" : "s", lint.config);
  for (const std::string &w : lint.warnings)
    fmt::print("  {}\n", w);
}
} // namespace

int run_check(const std::string &script, bool as_json) {
  std::vector<std::string> lines;
  auto s = Script::load(
      script,
      [&](LogLevel l, std::string_view t) {
        lines.push_back(fmt::format("{}: {}", log_level_name(l), t));
      },
      Script::Host::InProcess);
  // The same checks as the controller's before it lets calls use a changed
  // script (supervisor/script_guard.hpp), with the same content hash and
  // the same message.
  const std::string content = file_content_hash(script);
  const std::vector<std::string> errors = controller_errors(s);
  const bool loaded = errors.empty();
  const LintResult lint = run_luacheck(script);
  if (as_json) {
    json j{{"script", script}, {"loaded", loaded}, {"content", content}, {"errors", errors}};
    j["luacheck"] = {{"ran", lint.ran}, {"config", lint.config}, {"warnings", lint.warnings}};
    if (!lint.ran)
      j["luacheck"]["why_not"] = lint.why_not;
    if (!loaded)
      j["error"] = join(errors);
    if (s) {
      std::vector<std::string> present, missing;
      for (Hook h : kAllHooks)
        if (const int type = hook_type(*s, h); type == LUA_TFUNCTION)
          present.emplace_back(hook_function(h));
        else if (type == LUA_TNIL)
          missing.emplace_back(hook_function(h)); // a non-function is in "errors"
      j["hooks"] = present;
      j["missing"] = missing;
      j["log"] = lines;
    }
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return loaded ? 0 : 1;
  }
  if (!loaded) {
    fmt::print(stderr, "switch-lua check: {} (content {})\n", join(errors), content);
    return 1;
  }
  fmt::print("{}: loaded (content {})\n", script, content);
  for (const std::string &l : lines)
    fmt::print("  log {}\n", l);
  for (Hook h : kAllHooks) // loaded: every hook global is a function or nil
    if (hook_type(*s, h) == LUA_TFUNCTION)
      fmt::print("  hook    {}\n", hook_function(h));
    else
      fmt::print("  missing {} (default: {})\n", hook_function(h), hook_info(h).when_absent);
  print_lint(lint);
  return 0;
}

} // namespace switchlua
