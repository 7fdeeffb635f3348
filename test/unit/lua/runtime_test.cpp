// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: test/unit/lua/runtime_test.cpp
//
// lua/runtime.hpp: loading a script (chunk-return rules, errors with
// file:line) and the slurm table it sees (log functions, print, to_json,
// constants, read-only).
#include "lua/runtime.hpp"
#include "lua_test_util.hpp"

#include <gtest/gtest.h>

#include <string>

namespace switchlua {
namespace {

using test::first_line;
using test::Loaded;

/// The load error of `text`, or "" when it loaded.
std::string load_error(const std::string &text, std::string *path = nullptr) {
  Loaded l(text);
  if (path)
    *path = l.path;
  return l.script ? "" : l.script.error().message;
}

TEST(Runtime, ChunkReturningNothingLoads) {
  EXPECT_EQ(load_error("local x = 1\n"), "");
}

TEST(Runtime, ChunkReturningSuccessLoads) {
  EXPECT_EQ(load_error("return slurm.SUCCESS\n"), "");
  EXPECT_EQ(load_error("return 0.0\n"), "");
}

/// The load error of `text` and the path it was loaded from.
struct Refusal {
  std::string error, path;
  explicit Refusal(const std::string &text) { error = load_error(text, &path); }
  /// The message expected for a chunk that returned `what`.
  std::string want(const std::string &what) const {
    return path + ": the chunk returned " + what + ", not slurm.SUCCESS: script refused";
  }
};

TEST(Runtime, ChunkReturningMinusOneIsRefused) {
  Refusal r("return slurm.ERROR\n");
  EXPECT_EQ(r.error, r.want("-1"));
}

TEST(Runtime, ChunkReturningOneIsRefused) {
  Refusal r("return 1\n");
  EXPECT_EQ(r.error, r.want("1"));
}

TEST(Runtime, ChunkReturningNonNumberIsRefused) {
  Refusal x("return 'x'\n"), nil("return nil\n"), zero("return '0'\n"), half("return 0.5\n");
  EXPECT_EQ(x.error, x.want("\"x\" (a string)"));
  EXPECT_EQ(nil.error, nil.want("nil"));
  EXPECT_EQ(zero.error, zero.want("\"0\" (a string)"));
  EXPECT_EQ(half.error, half.want("0.5 (a float)"));
}

TEST(Runtime, ChunkReturningTwoValuesIsRefused) {
  Refusal r("return 0, 'x'\n");
  EXPECT_EQ(r.error, r.path + ": the chunk returned 2 values, expected slurm.SUCCESS or nothing: "
                              "script refused");
  EXPECT_EQ(load_error("return 0, nil\n"), "");
}

TEST(Runtime, RuntimeErrorInChunkHasFileLineAndTraceback) {
  std::string path;
  const auto e = load_error("local x = 1\nerror('boom')\n", &path);
  EXPECT_EQ(first_line(e), path + ":2: boom");
  EXPECT_NE(e.find("\nstack traceback:\n"), std::string::npos) << e;
}

TEST(Runtime, NonStringErrorObjectIsDescribed) {
  EXPECT_EQ(first_line(load_error("error({})\n")), "(error object is a table value)");
}

TEST(Runtime, SyntaxErrorHasFileLine) {
  std::string path;
  const auto e = load_error("local x = 1\nlocal = 2\n", &path);
  EXPECT_EQ(e, path + ":2: <name> expected near '='");
}

TEST(Runtime, MissingFileIsAnError) {
  auto s = Script::load("/nonexistent/switch.lua", nullptr);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, "cannot open /nonexistent/switch.lua: No such file or directory");
}

TEST(Runtime, BinaryChunkIsRefused) {
  test::TempDir dir;
  const auto path = dir.write("switch.lua", "\x1bLua\x54");
  auto s = Script::load(path, nullptr);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("attempt to load a binary chunk"), std::string::npos)
      << s.error().message;
}

TEST(Runtime, EachLoadHasAFreshState) {
  test::TempDir dir;
  const auto path = dir.write("switch.lua", "assert(counter == nil); counter = 1\n");
  auto a = Script::load(path, nullptr);
  auto b = Script::load(path, nullptr);
  EXPECT_TRUE(a) << a.error().message;
  EXPECT_TRUE(b) << b.error().message;
}

TEST(Runtime, LogFunctionsFormatAndReachSinkWithLevels) {
  Loaded l(R"(
    slurm.log_error("e %d", 1)
    slurm.log_info("i %s", "two")
    slurm.log_verbose("v %5.2f", 3.14159)
    slurm.log_debug("d %s %s", nil, true)
    slurm.log_debug2("d2 %q", "q")
    slurm.log_debug3("d3 %%")
    slurm.log_debug4("d4 %x", 255)
    slurm.log_debug5("d5")
  )");
  ASSERT_TRUE(l.script) << l.script.error().message;
  const std::vector<std::pair<LogLevel, std::string>> want = {
      {LogLevel::Error, "e 1"},       {LogLevel::Info, "i two"},
      {LogLevel::Verbose, "v  3.14"}, {LogLevel::Debug, "d nil true"},
      {LogLevel::Debug2, "d2 \"q\""}, {LogLevel::Debug3, "d3 %"},
      {LogLevel::Debug4, "d4 ff"},    {LogLevel::Debug5, "d5"}};
  EXPECT_EQ(l.log.lines, want);
}

TEST(Runtime, LogLevelNames) {
  EXPECT_EQ(log_level_name(LogLevel::Error), "error");
  EXPECT_EQ(log_level_name(LogLevel::Verbose), "verbose");
  EXPECT_EQ(log_level_name(LogLevel::Debug5), "debug5");
}

TEST(Runtime, LogFormatErrorRaisesAtCallersLine) {
  Loaded l("local x = 1\nslurm.log_info('%d', 'x')\n");
  ASSERT_FALSE(l.script);
  EXPECT_EQ(first_line(l.script.error().message),
            l.path + ":2: slurm.log_info: bad argument #2 to 'string.format' (number expected, got "
                     "string)");
}

TEST(Runtime, LogStillFormatsWhenScriptReplacesStringFormat) {
  Loaded l("string.format = nil\nslurm.log_info('%s=%d', 'a', 1)\n");
  ASSERT_TRUE(l.script) << l.script.error().message;
  ASSERT_EQ(l.log.lines.size(), 1u);
  EXPECT_EQ(l.log.lines[0].second, "a=1");
}

TEST(Runtime, PrintGoesToSinkAtInfoTabSeparated) {
  // The tabs print puts between its arguments are control characters too:
  // shown escaped, like every one in a line (issue 21).
  Loaded l("print('a', 1, nil, true, 2.0)\nprint()\n");
  ASSERT_TRUE(l.script) << l.script.error().message;
  const std::vector<std::pair<LogLevel, std::string>> want = {
      {LogLevel::Info, "a\\t1\\tnil\\ttrue\\t2.0"}, {LogLevel::Info, ""}};
  EXPECT_EQ(l.log.lines, want);
}

TEST(Runtime, LogLinesShowControlCharactersEscapedOneCallOneLine) {
  // Issue 21: a user's string cannot forge a line of its own.
  Loaded l("local name = 'job\\nswitch/lua: JobId=1 forged\\r\\27[31m\\127'\n"
           "slurm.log_info('name=%s', name)\nprint(name)\nslurm.log_error(name)\n");
  ASSERT_TRUE(l.script) << l.script.error().message;
  const std::string want = "job\\nswitch/lua: JobId=1 forged\\r\\x1b[31m\\x7f";
  ASSERT_EQ(l.log.lines.size(), 3u);
  EXPECT_EQ(l.log.lines[0].second, "name=" + want);
  EXPECT_EQ(l.log.lines[1].second, want);
  EXPECT_EQ(l.log.lines[2].second, want);
  EXPECT_EQ(l.log.lines[2].first, LogLevel::Error);
}

TEST(Runtime, ThrowingSinkDoesNotBreakTheScript) {
  test::TempDir dir;
  const auto path = dir.write("switch.lua", "print('x'); slurm.log_info('y')\n");
  auto s = Script::load(path, [](LogLevel, std::string_view) { throw std::runtime_error("no"); });
  EXPECT_TRUE(s) << s.error().message;
}

TEST(Runtime, ConstantsAreExposed) {
  Loaded l("print(slurm.SUCCESS, slurm.ERROR, slurm.EAGAIN)\n");
  ASSERT_TRUE(l.script) << l.script.error().message;
  ASSERT_EQ(l.log.lines.size(), 1u);
  EXPECT_EQ(l.log.lines[0].second, "0\\t-1\\t11");
}

TEST(Runtime, SlurmTableIsReadOnly) {
  Loaded set("local x = 1\nslurm.SUCCESS = 5\n");
  ASSERT_FALSE(set.script);
  EXPECT_EQ(first_line(set.script.error().message),
            set.path + ":2: slurm: attempt to set read-only field 'SUCCESS'");
  Loaded add("slurm.x = 1\n");
  ASSERT_FALSE(add.script);
  EXPECT_EQ(first_line(add.script.error().message),
            add.path + ":1: slurm: attempt to set read-only field 'x'");
}

TEST(Runtime, SlurmMetatableIsProtected) {
  Loaded get("assert(getmetatable(slurm) == false)\n");
  EXPECT_TRUE(get.script) << get.script.error().message;
  Loaded set("setmetatable(slurm, {})\n");
  ASSERT_FALSE(set.script);
  EXPECT_EQ(first_line(set.script.error().message),
            set.path + ":1: cannot change a protected metatable");
}

TEST(Runtime, PairsListsSlurmFields) {
  Loaded l(R"(
    local names = {}
    for k in pairs(slurm) do names[#names + 1] = k end
    table.sort(names)
    print(table.concat(names, " "))
  )");
  ASSERT_TRUE(l.script) << l.script.error().message;
  ASSERT_EQ(l.log.lines.size(), 1u);
  EXPECT_EQ(
      l.log.lines[0].second,
      "EAGAIN ERROR FABRIC_DOWN SUCCESS log_debug log_debug2 log_debug3 log_debug4 log_debug5 "
      "log_error log_info log_verbose run to_json");
}

TEST(Runtime, ToJsonReturnsText) {
  Loaded l("print(slurm.to_json({b = 1, a = {1, 2.0, 'x'}}), slurm.to_json(nil))\n");
  ASSERT_TRUE(l.script) << l.script.error().message;
  ASSERT_EQ(l.log.lines.size(), 1u);
  EXPECT_EQ(l.log.lines[0].second, R"({"a":[1,2.0,"x"],"b":1})"
                                   "\\tnull");
}

TEST(Runtime, ToJsonRaisesWithPathAtCallersLine) {
  Loaded l("local x = 1\nlocal s = slurm.to_json({a = {1, print}})\n");
  ASSERT_FALSE(l.script);
  EXPECT_EQ(first_line(l.script.error().message),
            l.path + ":2: slurm.to_json: value.a[2]: a function cannot be converted");
}

TEST(Runtime, ToJsonWithoutArgumentRaises) {
  Loaded l("slurm.to_json()\n");
  ASSERT_FALSE(l.script);
  EXPECT_EQ(first_line(l.script.error().message),
            l.path + ":1: bad argument #1 to 'to_json' (value expected)");
}

TEST(Runtime, StandardLibrariesStayAvailable) {
  Loaded l("assert(io and os and debug and package and utf8 and coroutine and math and table)\n");
  EXPECT_TRUE(l.script) << l.script.error().message;
}

TEST(Runtime, HasHookReportsDefinedFunctions) {
  Loaded l("function slurm_switch_job_start(job) return 0 end\nslurm_switch_step_init = 5\n");
  ASSERT_TRUE(l.script) << l.script.error().message;
  EXPECT_TRUE(l.script->has_hook(Hook::JobStart));
  EXPECT_FALSE(l.script->has_hook(Hook::StepInit));
  EXPECT_FALSE(l.script->has_hook(Hook::JobComplete));
  EXPECT_EQ(lua_gettop(l.script->state()), 0);
}

TEST(Runtime, ScriptIsMovable) {
  Loaded l("function slurm_switch_block_job_complete() return true end\n");
  ASSERT_TRUE(l.script) << l.script.error().message;
  Script moved = std::move(*l.script);
  EXPECT_EQ(moved.path(), l.path);
  auto r = moved.call(Hook::BlockJobComplete, nullptr, nullptr, nullptr);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->flag);
}

// Issue 9 item 8: every hook runs under a Lua memory bound; past it the
// hook gets Lua's "not enough memory" error, handled like any Lua error,
// and the state (and its host) lives on.
TEST(Runtime, HookAllocatingPastTheMemoryBoundGetsACleanLuaError) {
  test::TempDir dir;
  const std::string path = dir.write(
      "switch.lua", "function slurm_switch_job_start(job)\n"
                    "  local t, chunk = {}, ('x'):rep(1 << 20)\n"
                    "  for i = 1, 1e9 do t[i] = chunk .. i end\n"
                    "end\n"
                    "function slurm_switch_job_complete(job, ji) return slurm.SUCCESS end\n");
  test::Lines log;
  auto s = Script::load(path, log.sink(), Script::Host::InProcess, std::size_t{16} << 20);
  ASSERT_TRUE(s) << s.error().message;
  JobArgs job = test::sample_job();
  auto r = s->call(Hook::JobStart, &job, nullptr, nullptr);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, CallError::Kind::LuaError);
  EXPECT_EQ(first_line(r.error().message), "not enough memory");
  lua_gc(s->state(), LUA_GCCOLLECT, 0);
  auto again = s->call(Hook::JobComplete, &job, nullptr, nullptr);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->rc, kSuccess);
}

TEST(Runtime, TheStepHostsBoundIs64MiB) {
  EXPECT_EQ(kStepLuaMemoryLimit, std::size_t{64} << 20);
  EXPECT_EQ(kDefaultCtldLuaMemoryLimit, std::size_t{256} << 20);
}

} // namespace
} // namespace switchlua
