// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: lua/trust.cpp
#include "lua/trust.hpp"

#include "common/safe_file.hpp"

#include <lua.hpp>

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace switchlua {

namespace {

std::atomic<long long> g_slurm_user{-1}; // -1: not set

/// "alice", or "no such user" when the uid has no passwd entry.
std::string user_name(uid_t uid) {
  struct passwd pw{};
  struct passwd *res = nullptr;
  std::vector<char> buf(16384);
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &res) == 0 && res != nullptr &&
      res->pw_name != nullptr)
    return res->pw_name;
  return "no such user";
}

/// "root" or "root or SlurmUser (slurm)".
std::string trusted_owners(uid_t su) {
  if (su == 0)
    return "root";
  return fmt::format("root or SlurmUser ({})", user_name(su));
}

bool owner_ok(uid_t uid, uid_t su) {
  return uid == 0 || uid == su;
}

/// A directory passes when its owner is trusted and nobody else may write
/// it, or when it is root's with the sticky bit (/tmp): there only an
/// entry's owner or root may rename or remove the entry.
bool directory_ok(const struct stat &st, uid_t su) {
  if (!owner_ok(st.st_uid, su))
    return false;
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) == 0)
    return true;
  return st.st_uid == 0 && (st.st_mode & S_ISVTX) != 0;
}

std::string owner_and_mode(const struct stat &st) {
  return fmt::format("owned by uid {} ({}), mode {:04o}", st.st_uid, user_name(st.st_uid),
                     st.st_mode & 07777);
}

/// Every directory above `file` (absolute, normal) up to /.
Expected<void> check_directories(const std::string &shown, const std::filesystem::path &file,
                                 uid_t su) {
  std::filesystem::path d = file.parent_path();
  for (;;) {
    struct stat st{};
    if (::stat(d.c_str(), &st) != 0)
      return fail(fmt::format("{}: cannot check the directory {} above it: {}: refused", shown,
                              d.string(), std::strerror(errno)));
    if (!directory_ok(st, su))
      return fail(fmt::format(
          "{}: the directory {} above it is {}: refused; every directory above the script "
          "must be owned by {} and not writable by group or others (only root's own "
          "sticky directories, like /tmp, may be) (switch.lua(5))",
          shown, d.string(), owner_and_mode(st), trusted_owners(su)));
    if (d == d.root_path() || !d.has_relative_path())
      return {};
    d = d.parent_path();
  }
}

/// The entries of a compiled-in Lua search path that do not depend on the
/// current directory.
std::string without_relative_entries(std::string_view defaults) {
  std::string out;
  while (!defaults.empty()) {
    const std::size_t semi = defaults.find(';');
    std::string_view entry = defaults.substr(0, semi);
    defaults.remove_prefix(semi == std::string_view::npos ? defaults.size() : semi + 1);
    if (entry.empty() || entry[0] != '/')
      continue;
    if (!out.empty())
      out += ';';
    out += entry;
  }
  return out;
}

std::filesystem::path absolute_normal(const std::string &path) {
  std::error_code ec;
  auto p = std::filesystem::absolute(path, ec);
  if (ec)
    p = path;
  return p.lexically_normal();
}

/// Room for a refusal copied out of C++ strings before lua_error (no object
/// with a destructor may be alive when Lua raises: runtime.hpp).
struct MessageBuffer {
  char text[2048];
  void set(const std::string &s) { std::snprintf(text, sizeof text, "%s", s.c_str()); }
};

/// package.searchers[2] replacement: finds `name` on package.path, checks the
/// file with the rule, loads it as text.  Upvalue 1: the package table.
int l_search_lua(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  lua_getfield(L, lua_upvalueindex(1), "searchpath");
  lua_pushstring(L, name);
  lua_getfield(L, lua_upvalueindex(1), "path");
  if (!lua_isstring(L, -1))
    return luaL_error(L, "'package.path' must be a string");
  lua_call(L, 2, 2);
  if (lua_isnil(L, -2))
    return 1; // "no file ..." lines, for require's message
  const char *file = lua_tostring(L, -2);
  lua_pushfstring(L, "@%s", file);
  const char *chunkname = lua_tostring(L, -1);
  MessageBuffer msg{};
  int status = LUA_OK;
  bool refused = false;
  {
    auto bytes = read_trusted_file(file, slurm_user());
    if (!bytes) {
      msg.set(fmt::format("require '{}': {}", name, bytes.error().message));
      refused = true;
    } else {
      // luaL_loadbufferx runs protected: it returns, never raises.
      status = luaL_loadbufferx(L, bytes->data(), bytes->size(), chunkname, "t");
    }
  }
  if (refused) {
    lua_pushstring(L, msg.text);
    return lua_error(L);
  }
  if (status != LUA_OK)
    return luaL_error(L, "error loading module '%s' from file '%s':\n\t%s", name, file,
                      lua_tostring(L, -1));
  lua_pushstring(L, file);
  return 2;
}

/// Wraps a C searcher (upvalue 2) so that the library it would load
/// (upvalue 3: true = search the root name, as the all-in-one searcher)
/// is checked with the rule first.  Upvalue 1: the package table.
int l_search_c_checked(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  const char *search = name;
  if (lua_toboolean(L, lua_upvalueindex(3))) {
    const char *dot = std::strchr(name, '.');
    if (dot == nullptr)
      return 0; // the original would not search either
    lua_pushlstring(L, name, static_cast<std::size_t>(dot - name));
    search = lua_tostring(L, -1);
  }
  lua_getfield(L, lua_upvalueindex(1), "searchpath");
  lua_pushstring(L, search);
  lua_getfield(L, lua_upvalueindex(1), "cpath");
  if (!lua_isstring(L, -1))
    return luaL_error(L, "'package.cpath' must be a string");
  lua_call(L, 2, 2);
  if (!lua_isnil(L, -2)) {
    const char *file = lua_tostring(L, -2);
    MessageBuffer msg{};
    bool refused = false;
    {
      Expected<void> ok = fail(fmt::format("cannot open {}", file));
      const int fd = ::open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
      struct stat st{};
      if (fd < 0)
        ok = fail(fmt::format("cannot open {}: {}", file, std::strerror(errno)));
      else if (::fstat(fd, &st) != 0)
        ok = fail(fmt::format("cannot stat {}: {}", file, std::strerror(errno)));
      else
        ok = check_trusted(file, st, slurm_user());
      if (fd >= 0)
        ::close(fd);
      if (!ok) {
        msg.set(fmt::format("require '{}': {}", name, ok.error().message));
        refused = true;
      }
    }
    if (refused) {
      lua_pushstring(L, msg.text);
      return lua_error(L);
    }
  }
  lua_settop(L, 1);
  lua_pushvalue(L, lua_upvalueindex(2));
  lua_insert(L, 1);
  lua_call(L, 1, LUA_MULTRET);
  return lua_gettop(L);
}

} // namespace

void set_slurm_user(uid_t uid) {
  g_slurm_user.store(static_cast<long long>(uid));
}

uid_t slurm_user() {
  const long long set = g_slurm_user.load();
  if (set >= 0)
    return static_cast<uid_t>(set);
  if (const char *v = std::getenv(kSlurmUserEnv)) {
    char *end = nullptr;
    errno = 0;
    const unsigned long long n = std::strtoull(v, &end, 10);
    if (end != v && *end == '\0' && errno == 0 && n < 0xFFFFFFFFULL)
      return static_cast<uid_t>(n);
  }
  return ::geteuid();
}

Expected<void> check_trusted(const std::string &path, const struct stat &st, uid_t su) {
  if (!S_ISREG(st.st_mode))
    return fail(fmt::format("{}: not a regular file: refused (switch.lua(5))", path));
  if (!owner_ok(st.st_uid, su) || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return fail(fmt::format("{}: {}: refused; it must be owned by {} and not writable by group "
                            "or others (switch.lua(5))",
                            path, owner_and_mode(st), trusted_owners(su)));
  const std::filesystem::path written = absolute_normal(path);
  if (auto ok = check_directories(path, written, su); !ok)
    return ok;
  std::error_code ec;
  const std::filesystem::path resolved = std::filesystem::canonical(path, ec);
  if (ec)
    return fail(fmt::format("{}: cannot resolve it: {}: refused", path, ec.message()));
  if (resolved != written)
    return check_directories(path, resolved, su);
  return {};
}

Expected<std::string> read_trusted_file(const std::string &path, uid_t su) {
  // O_NONBLOCK: a FIFO put in its place must not hang the host; it is then
  // refused as not a regular file.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0)
    return fail(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st{};
  if (::fstat(fd, &st) != 0)
    return fail(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  if (auto ok = check_trusted(path, st, su); !ok)
    return Unexpected<Error>{ok.error()};
  // Checked before a byte is read: a refused file is never read.
  auto bytes = read_fd_bounded(fd, kMaxScriptBytes, path);
  if (!bytes)
    return fail(bytes.error().message);
  return std::move(*bytes);
}

std::string module_path(const std::string &script_path) {
  const std::string dir = absolute_normal(script_path).parent_path().string();
  const std::string system = without_relative_entries(LUA_PATH_DEFAULT);
  // A directory whose name holds a template character cannot be searched.
  if (dir.empty() || dir.find_first_of(";?") != std::string::npos)
    return system;
  const std::string base = dir == "/" ? std::string() : dir;
  return fmt::format("{}/?.lua;{}/?/init.lua;{}", base, base, system);
}

std::string module_cpath() {
  return without_relative_entries(LUA_CPATH_DEFAULT);
}

void install_module_rules(lua_State *L, const std::string &script_path) {
  lua_getglobal(L, "package");
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    return;
  }
  const int pkg = lua_gettop(L);
  lua_pushstring(L, module_path(script_path).c_str());
  lua_setfield(L, pkg, "path");
  lua_pushstring(L, module_cpath().c_str());
  lua_setfield(L, pkg, "cpath");
  lua_getfield(L, pkg, "searchers");
  if (lua_istable(L, -1)) {
    const int searchers = lua_gettop(L);
    lua_pushvalue(L, pkg);
    lua_pushcclosure(L, l_search_lua, 1);
    lua_rawseti(L, searchers, 2);
    for (int i : {3, 4}) {
      lua_pushvalue(L, pkg);
      lua_rawgeti(L, searchers, i);
      if (lua_isnil(L, -1)) {
        lua_pop(L, 2);
        continue;
      }
      lua_pushboolean(L, i == 4);
      lua_pushcclosure(L, l_search_c_checked, 3);
      lua_rawseti(L, searchers, i);
    }
  }
  lua_settop(L, pkg - 1);
}

} // namespace switchlua
