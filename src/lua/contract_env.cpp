// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: lua/contract_env.cpp
//
// The env rules of step_init (lua/contract.hpp, env_ops_from_table):
// which entries of the returned table become environment changes, and the
// warning for each one skipped.  Rule source: the contract script
// shared/seeds/switch.lua (step_init) and switch.lua(5).
#include "common/utf8.hpp"
#include "lua/contract.hpp"
#include "lua/detail.hpp"

#include <lua.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace switchlua {

namespace {

/// Whether `name` is a portable environment variable name (POSIX: letters,
/// digits and '_', not starting with a digit): what a shell and every task
/// can read back.
bool portable_env_name(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9'))
    return false;
  for (char c : name)
    if (!(c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
      return false;
  return true;
}

/// One environment entry (key at -2, value at -1); nullopt when skipped.
std::optional<EnvOp> env_op(lua_State *L, std::vector<std::string> &warnings) {
  if (lua_type(L, -2) != LUA_TSTRING) {
    warnings.push_back(
        fmt::format("env key {} skipped: a variable name must be a string", describe_value(L, -2)));
    return std::nullopt;
  }
  std::size_t len = 0;
  const char *k = lua_tolstring(L, -2, &len);
  EnvOp op{EnvOp::Kind::Set, std::string(k, len), ""};
  std::string path = "env";
  detail::append_key(path, op.name);
  auto skip = [&](std::string_view why) -> std::optional<EnvOp> {
    warnings.push_back(fmt::format("{} skipped: {}", path, why));
    return std::nullopt;
  };
  if (op.name.empty())
    return skip("an empty variable name");
  if (op.name.find('=') != std::string::npos)
    return skip("a variable name cannot contain '='");
  if (op.name.find('\0') != std::string::npos)
    return skip("a variable name cannot contain a NUL byte");
  if (!portable_env_name(op.name))
    return skip("a variable name must be letters, digits and '_', not starting with a digit");
  if (op.name.rfind("SLURM_", 0) == 0)
    return skip("SLURM_* names belong to Slurm");
  switch (lua_type(L, -1)) {
  case LUA_TSTRING: {
    const char *v = lua_tolstring(L, -1, &len);
    op.value.assign(v, len);
    if (op.value.find('\0') != std::string::npos)
      return skip("a value cannot contain a NUL byte");
    if (!utf8_valid(op.value)) {
      op.value = utf8_sanitize(op.value);
      warnings.push_back(
          fmt::format("{}: the value is not valid UTF-8; invalid bytes replaced by U+FFFD", path));
    }
    return op;
  }
  case LUA_TNUMBER: {
    if (lua_isinteger(L, -1)) {
      op.value = fmt::format("{}", lua_tointeger(L, -1));
      return op;
    }
    const double d = lua_tonumber(L, -1);
    if (!std::isfinite(d))
      return skip(fmt::format("{} is not a finite number", detail::format_float(d)));
    op.value = detail::format_number(d); // "%.14g" in every locale
    return op;
  }
  case LUA_TBOOLEAN:
    if (!lua_toboolean(L, -1))
      op.kind = EnvOp::Kind::Unset;
    else
      op.value = "1";
    return op;
  default:
    return skip(fmt::format("{} is not a string, number or boolean", describe_value(L, -1)));
  }
}

} // namespace

std::vector<EnvOp> env_ops_from_table(lua_State *L, int idx, std::vector<std::string> &warnings) {
  idx = lua_absindex(L, idx);
  std::vector<EnvOp> ops;
  if (!lua_checkstack(L, 3)) {
    warnings.push_back("env skipped: the Lua stack is exhausted");
    return ops;
  }
  const std::size_t first_warning = warnings.size();
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {
    if (auto op = env_op(L, warnings))
      ops.push_back(std::move(*op));
    lua_pop(L, 1);
  }
  // lua_next's order is arbitrary: sort the warnings too, for stable logs.
  std::sort(warnings.begin() + static_cast<std::ptrdiff_t>(first_warning), warnings.end());
  std::sort(ops.begin(), ops.end(), [](const EnvOp &a, const EnvOp &b) { return a.name < b.name; });
  return ops;
}

} // namespace switchlua
