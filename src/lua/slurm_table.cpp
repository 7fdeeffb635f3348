// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: lua/slurm_table.cpp
//
// The `slurm` table a script sees, and `print`.  Every function here is a
// Lua C function and may raise (longjmp): at each point that can raise it
// holds no C++ object with a destructor.  C++ work that allocates is done
// in a nested scope that ends before the raise, and sinks are called inside
// try/catch although they are noexcept by contract.
#include "common/utf8.hpp"
#include "lua/codec.hpp"
#include "lua/detail.hpp"
#include "lua/log_limits.hpp"
#include "lua/run_command.hpp"
#include "lua/runtime.hpp"

#include <lua.hpp>

namespace switchlua {

namespace {

/// Names of LogLevel values, indexed by the enum.  Null-terminated so they
/// can go through lua_pushfstring.
constexpr const char *kLevelNames[] = {"error",  "info",   "verbose", "debug",
                                       "debug2", "debug3", "debug4",  "debug5"};

/// Hands one line to the sink, its control characters escaped (one call,
/// one line: common/utf8.hpp log_escape, issue 21), cut to
/// kMaxLogLineBytes (lua/log_limits.hpp); never throws.
void emit(LogSink *sink, LogLevel level, const char *s, std::size_t len) noexcept {
  if (sink == nullptr || !*sink)
    return;
  try {
    const std::string line = log_escape(std::string_view(s, len));
    if (line.size() > kMaxLogLineBytes)
      (*sink)(level, bound_log_line(line));
    else
      (*sink)(level, line);
  } catch (...) { // a sink must not throw; a line is lost rather than the state
  }
}

/// slurm.log_<level>(fmt, ...): string.format(fmt, ...) to the sink.
/// Upvalues: 1 sink (light userdata), 2 level (integer), 3 string.format.
/// A format error raises "file:line: slurm.log_info: bad argument ...",
/// positioned at the caller.
int l_log(lua_State *L) {
  auto *sink = static_cast<LogSink *>(lua_touserdata(L, lua_upvalueindex(1)));
  const auto level = static_cast<LogLevel>(lua_tointeger(L, lua_upvalueindex(2)));
  const int nargs = lua_gettop(L);
  lua_pushvalue(L, lua_upvalueindex(3));
  lua_insert(L, 1);
  if (lua_pcall(L, nargs, 1, 0) != LUA_OK) {
    const char *msg = lua_tostring(L, -1);
    luaL_where(L, 1);
    lua_pushfstring(L, "%sslurm.log_%s: %s", lua_tostring(L, -1),
                    kLevelNames[static_cast<int>(level)],
                    msg ? msg : "(error object is not a string)");
    return lua_error(L);
  }
  std::size_t len = 0;
  const char *line = lua_tolstring(L, -1, &len);
  emit(sink, level, line, len);
  return 0;
}

/// print(...): the arguments through tostring, tab-separated, to the sink
/// at info level (Lua's print writes to stdout, which is /dev/null here).
/// Upvalue 1: sink.
int l_print(lua_State *L) {
  auto *sink = static_cast<LogSink *>(lua_touserdata(L, lua_upvalueindex(1)));
  const int nargs = lua_gettop(L);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (int i = 1; i <= nargs; ++i) {
    if (i > 1)
      luaL_addchar(&b, '\t');
    luaL_tolstring(L, i, nullptr);
    luaL_addvalue(&b);
  }
  luaL_pushresult(&b);
  std::size_t len = 0;
  const char *line = lua_tolstring(L, -1, &len);
  emit(sink, LogLevel::Info, line, len);
  return 0;
}

/// slurm.to_json(value): compact JSON text with sorted keys (lua/codec.hpp
/// rules), or raises "file:line: slurm.to_json: value.a[2]: a function
/// cannot be converted".
int l_to_json(lua_State *L) {
  luaL_checkany(L, 1);
  lua_settop(L, 1);
  enum { Ok, Refused, LuaFailed } outcome = LuaFailed;
  {
    // Scope of every C++ object: closed before anything below may raise.
    try {
      auto r = lua_to_json(L, 1, "value");
      const std::string_view text = r ? std::string_view(*r) : std::string_view(r.error().message);
      if (detail::push_string_protected(L, text))
        outcome = r ? Ok : Refused;
    } catch (const std::exception &e) {
      outcome = detail::push_string_protected(L, e.what()) ? Refused : LuaFailed;
    }
  }
  if (outcome == Ok)
    return 1;
  if (outcome == Refused) {
    luaL_where(L, 1);
    lua_pushfstring(L, "%sslurm.to_json: %s", lua_tostring(L, -1), lua_tostring(L, -2));
  }
  return lua_error(L);
}

/// __newindex of the slurm proxy: every assignment raises.
int l_readonly_newindex(lua_State *L) {
  const char *key = luaL_tolstring(L, 2, nullptr);
  return luaL_error(L, "slurm: attempt to set read-only field '%s'", key);
}

/// The iterator of l_readonly_pairs: Lua's `next`, independent of the global
/// a script may have replaced.
int l_next(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 2);
  if (lua_next(L, 1) != 0)
    return 2;
  lua_pushnil(L);
  return 1;
}

/// __pairs of the slurm proxy: iterate the real table (upvalue 1).
int l_readonly_pairs(lua_State *L) {
  lua_pushcfunction(L, l_next);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_pushnil(L);
  return 3;
}

/// Fills the real slurm table at the top of the stack.
void fill_slurm_table(lua_State *L, LogSink *sink, int format_idx) {
  for (int level = 0; level <= static_cast<int>(LogLevel::Debug5); ++level) {
    lua_pushlightuserdata(L, sink);
    lua_pushinteger(L, level);
    lua_pushvalue(L, format_idx);
    lua_pushcclosure(L, l_log, 3);
    lua_pushfstring(L, "log_%s", kLevelNames[level]);
    lua_insert(L, -2);
    lua_rawset(L, -3);
  }
  lua_pushcfunction(L, l_to_json);
  lua_setfield(L, -2, "to_json");
  register_run(L); // slurm.run: commands without a shell (lua/run_command.hpp)
  lua_pushinteger(L, static_cast<lua_Integer>(kSuccess));
  lua_setfield(L, -2, "SUCCESS");
  lua_pushinteger(L, static_cast<lua_Integer>(kError));
  lua_setfield(L, -2, "ERROR");
  lua_pushinteger(L, static_cast<lua_Integer>(kEagain));
  lua_setfield(L, -2, "EAGAIN");
  lua_pushinteger(L, static_cast<lua_Integer>(kFabricDown));
  lua_setfield(L, -2, "FABRIC_DOWN");
}

} // namespace

std::string_view log_level_name(LogLevel l) {
  return kLevelNames[static_cast<int>(l)];
}

void install_slurm_table(lua_State *L, LogSink *sink) {
  luaL_checkstack(L, 8, "installing the slurm table");
  const int top = lua_gettop(L);
  // The original string.format, so a script replacing it cannot break logging.
  lua_getglobal(L, "string");
  lua_getfield(L, -1, "format");
  const int format_idx = lua_gettop(L);
  lua_newtable(L); // the real table
  const int real = lua_gettop(L);
  fill_slurm_table(L, sink, format_idx);

  lua_newtable(L); // the proxy the script sees
  lua_createtable(L, 0, 4);
  lua_pushvalue(L, real);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, l_readonly_newindex);
  lua_setfield(L, -2, "__newindex");
  lua_pushvalue(L, real);
  lua_pushcclosure(L, l_readonly_pairs, 1);
  lua_setfield(L, -2, "__pairs");
  lua_pushboolean(L, 0); // getmetatable(slurm) == false; setmetatable raises
  lua_setfield(L, -2, "__metatable");
  lua_setmetatable(L, -2);
  lua_setglobal(L, "slurm");

  lua_pushlightuserdata(L, sink);
  lua_pushcclosure(L, l_print, 1);
  lua_setglobal(L, "print");
  lua_settop(L, top);
}

} // namespace switchlua
