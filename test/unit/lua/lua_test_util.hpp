// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: test/unit/lua/lua_test_util.hpp
//
// Helpers of the lua_unit tests: a temporary directory for inline Lua
// fixtures, a log sink that records lines, and a bare lua_State for codec
// tests.
#pragma once

#include "lua/runtime.hpp"

#include <lua.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace switchlua::test {

/// A fresh directory under $TMPDIR (or /tmp), removed with its content.
class TempDir {
public:
  TempDir() {
    const char *base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base ? base : "/tmp") + "/switchlua-test-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr)
      throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;

  /// Writes `text` to `name` in the directory; returns the full path.
  std::string write(const std::string &name, const std::string &text) const {
    const std::string p = path_ + "/" + name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  const std::string &path() const { return path_; }

private:
  std::string path_;
};

/// Records every line a script logs.
struct Lines {
  std::vector<std::pair<LogLevel, std::string>> lines;
  LogSink sink() {
    return [this](LogLevel l, std::string_view s) { lines.emplace_back(l, std::string(s)); };
  }
};

/// A script written to a temporary file and loaded with a recording sink.
struct Loaded {
  TempDir dir;
  Lines log;
  std::string path;
  Expected<Script> script = fail("not loaded");

  explicit Loaded(const std::string &text) {
    path = dir.write("switch.lua", text);
    script = Script::load(path, log.sink());
  }
};

/// The first line of a message (the rest is a traceback).
inline std::string first_line(const std::string &s) {
  return s.substr(0, s.find('\n'));
}

/// A job as slurmctld would describe it (JobId=42, two nodes).
inline JobArgs sample_job() {
  JobArgs j;
  j.job_id = 42;
  j.user_id = 1000;
  j.group_id = 100;
  j.user_name = "alice";
  j.name = "train";
  j.nodes = "node[1-2]";
  j.node_names = {"node1", "node2"};
  j.num_nodes = 2;
  j.partition = "gpu";
  j.network = "switchlua:skip";
  j.sluid = "S123";
  j.restart_count = 3;
  j.batch = true;
  return j;
}

/// Step 0 of sample_job() on node1.
inline StepArgs sample_step() {
  StepArgs s;
  s.job_id = 42;
  s.step_id = 0;
  s.sluid = "S123";
  s.partition = "gpu";
  s.node_name = "node1";
  s.node_id = 0;
  s.num_nodes = 2;
  s.num_tasks = 8;
  s.user_id = 1000;
  s.user_name = "alice";
  s.nodes = "node[1-2]";
  return s;
}

/// A bare state with the standard libraries, for codec tests.
class LuaState {
public:
  LuaState() : L_(luaL_newstate()) { luaL_openlibs(L_); }
  ~LuaState() { lua_close(L_); }
  LuaState(const LuaState &) = delete;
  LuaState &operator=(const LuaState &) = delete;
  lua_State *get() const { return L_; }
  operator lua_State *() const { return L_; }

  /// Runs `return <expr>` and leaves its one value on the stack.
  void push(const std::string &expr) const {
    const std::string code = "return " + expr;
    if (luaL_loadstring(L_, code.c_str()) != LUA_OK || lua_pcall(L_, 0, 1, 0) != LUA_OK) {
      ADD_FAILURE() << "Lua error: " << lua_tostring(L_, -1);
      lua_pop(L_, 1);
      lua_pushnil(L_);
    }
  }
  /// Runs a statement block (asserting success).
  void run(const std::string &code) const {
    if (luaL_dostring(L_, code.c_str()) != LUA_OK) {
      ADD_FAILURE() << "Lua error: " << lua_tostring(L_, -1);
      lua_pop(L_, 1);
    }
  }

private:
  lua_State *L_;
};

} // namespace switchlua::test
