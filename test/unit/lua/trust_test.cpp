// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: test/unit/lua/trust_test.cpp
//
// lua/trust.hpp: the ownership rule for switch.lua, the directories above
// it and the modules it requires (switch.lua(5)), and the one module search
// path.  The tests run as root: they chown files to an unprivileged uid.
#include "lua/runtime.hpp"
#include "lua/trust.hpp"
#include "lua_test_util.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace switchlua {
namespace {

using test::first_line;
using test::TempDir;

constexpr uid_t kOther = 65534; // nobody

/// Every test starts with SlurmUser = root (root only).
class Trust : public ::testing::Test {
protected:
  void SetUp() override {
    if (::geteuid() != 0)
      GTEST_SKIP() << "needs root (chown)";
    set_slurm_user(0);
  }
  void TearDown() override { set_slurm_user(::geteuid()); }

  /// The load error of `path`, or "" when it loaded.
  static std::string load_error(const std::string &path) {
    auto s = Script::load(path, nullptr);
    return s ? "" : s.error().message;
  }
};

const std::string kFileRule =
    ": refused; it must be owned by root and not writable by group or others (switch.lua(5))";

TEST_F(Trust, RootOwned0644Loads) {
  TempDir d;
  const auto p = d.write("switch.lua", "return 0\n");
  ::chmod(p.c_str(), 0644);
  EXPECT_EQ(load_error(p), "");
}

TEST_F(Trust, WorldWritableScriptIsRefused) {
  TempDir d;
  const auto p = d.write("switch.lua", "return 0\n");
  ::chmod(p.c_str(), 0666);
  EXPECT_EQ(load_error(p), p + ": owned by uid 0 (root), mode 0666" + kFileRule);
}

TEST_F(Trust, GroupWritableScriptIsRefused) {
  TempDir d;
  const auto p = d.write("switch.lua", "return 0\n");
  ::chmod(p.c_str(), 0664);
  EXPECT_EQ(load_error(p), p + ": owned by uid 0 (root), mode 0664" + kFileRule);
}

TEST_F(Trust, ScriptOfAnotherUserIsRefusedUnlessSlurmUser) {
  TempDir d;
  const auto p = d.write("switch.lua", "return 0\n");
  ::chmod(p.c_str(), 0644);
  ASSERT_EQ(::chown(p.c_str(), kOther, 0), 0);
  EXPECT_EQ(load_error(p), p + ": owned by uid 65534 (nobody), mode 0644" + kFileRule);
  set_slurm_user(kOther); // SlurmUser may own it
  EXPECT_EQ(load_error(p), "");
  ::chmod(p.c_str(), 0646);
  EXPECT_EQ(load_error(p), p + ": owned by uid 65534 (nobody), mode 0646: refused; it must be "
                               "owned by root or SlurmUser (nobody) and not writable by group or "
                               "others (switch.lua(5))");
}

TEST_F(Trust, WritableDirectoryAboveIsRefused) {
  TempDir d;
  const auto p = d.write("switch.lua", "return 0\n");
  ::chmod(d.path().c_str(), 0775);
  EXPECT_EQ(load_error(p), p + ": the directory " + d.path() +
                               " above it is owned by uid 0 (root), mode 0775: refused; every "
                               "directory above the script must be owned by root and not "
                               "writable by group or others (only root's own sticky directories, "
                               "like /tmp, may be) (switch.lua(5))");
}

TEST_F(Trust, DirectoryOfAnotherUserIsRefused) {
  TempDir d;
  ::mkdir((d.path() + "/sub").c_str(), 0755);
  const auto p = d.write("sub/switch.lua", "return 0\n");
  ASSERT_EQ(::chown((d.path() + "/sub").c_str(), kOther, 0), 0);
  EXPECT_EQ(first_line(load_error(p)),
            p + ": the directory " + d.path() +
                "/sub above it is owned by uid 65534 (nobody), mode 0755: refused; every "
                "directory above the script must be owned by root and not writable by group or "
                "others (only root's own sticky directories, like /tmp, may be) (switch.lua(5))");
}

TEST_F(Trust, StickyDirectoryOnlyWhenRootOwned) {
  TempDir d;
  ::chmod(d.path().c_str(), 01777); // like /tmp
  const auto p = d.write("switch.lua", "return 0\n");
  EXPECT_EQ(load_error(p), "");
  ASSERT_EQ(::chown(d.path().c_str(), kOther, 0), 0);
  EXPECT_NE(load_error(p).find("above it is owned by uid 65534 (nobody), mode 1777: refused"),
            std::string::npos)
      << load_error(p);
  ASSERT_EQ(::chown(d.path().c_str(), 0, 0), 0);
  ::chmod(d.path().c_str(), 0777); // writable by all, not sticky
  EXPECT_NE(load_error(p).find("above it is owned by uid 0 (root), mode 0777: refused"),
            std::string::npos);
}

TEST_F(Trust, SymlinkIntoAnUntrustedDirectoryIsRefused) {
  TempDir d;
  ::mkdir((d.path() + "/home").c_str(), 0755);
  const auto target = d.write("home/real.lua", "return 0\n");
  ASSERT_EQ(::chown((d.path() + "/home").c_str(), kOther, 0), 0);
  const std::string link = d.path() + "/switch.lua";
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  EXPECT_NE(load_error(link).find(link + ": the directory " + d.path() +
                                  "/home above it is owned by uid 65534 (nobody)"),
            std::string::npos)
      << load_error(link);
}

TEST_F(Trust, FifoIsRefusedWithoutHanging) {
  TempDir d;
  const std::string p = d.path() + "/switch.lua";
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
  EXPECT_EQ(load_error(p), p + ": not a regular file: refused (switch.lua(5))");
}

TEST_F(Trust, MissingFileIsStillCannotOpen) {
  EXPECT_EQ(load_error("/nonexistent/switch.lua"),
            "cannot open /nonexistent/switch.lua: No such file or directory");
}

TEST_F(Trust, ModuleIsCheckedToo) {
  TempDir d;
  const auto m = d.write("fabric.lua", "return { port = 7 }\n");
  const auto p = d.write("switch.lua", "local f = require 'fabric'\nassert(f.port == 7)\n");
  EXPECT_EQ(load_error(p), "");
  ::chmod(m.c_str(), 0666);
  EXPECT_EQ(first_line(load_error(p)),
            "require 'fabric': " + m + ": owned by uid 0 (root), mode 0666" + kFileRule);
  ::chmod(m.c_str(), 0644);
  ASSERT_EQ(::chown(m.c_str(), kOther, 0), 0);
  EXPECT_EQ(first_line(load_error(p)),
            "require 'fabric': " + m + ": owned by uid 65534 (nobody), mode 0644" + kFileRule);
}

TEST_F(Trust, ModuleInASubdirectoryWithInitLua) {
  TempDir d;
  ::mkdir((d.path() + "/site").c_str(), 0755);
  d.write("site/init.lua", "return { name = 'site' }\n");
  const auto p = d.write("switch.lua", "assert(require('site').name == 'site')\n");
  EXPECT_EQ(load_error(p), "");
}

TEST_F(Trust, SearchPathIsTheScriptDirectoryAndTheSystemOnes) {
  TempDir d;
  const std::string want = d.path() + "/?.lua;" + d.path() + "/?/init.lua;";
  const std::string path = module_path(d.path() + "/switch.lua");
  EXPECT_EQ(path.substr(0, want.size()), want);
  EXPECT_NE(path.find("/usr/share/lua/5.4/?.lua"), std::string::npos) << path;
  EXPECT_EQ(path.find("./"), std::string::npos) << path; // nothing relative to the cwd
  EXPECT_EQ(module_cpath().find("./"), std::string::npos) << module_cpath();
}

TEST_F(Trust, CallersLuaPathIsIgnored) {
  TempDir d, elsewhere;
  elsewhere.write("onlythere.lua", "return 1\n");
  ::setenv("LUA_PATH", (elsewhere.path() + "/?.lua").c_str(), 1);
  ::setenv("LUA_PATH_5_4", (elsewhere.path() + "/?.lua").c_str(), 1);
  const auto p = d.write("switch.lua", "require 'onlythere'\n");
  const std::string e = load_error(p);
  ::unsetenv("LUA_PATH");
  ::unsetenv("LUA_PATH_5_4");
  EXPECT_NE(e.find("module 'onlythere' not found"), std::string::npos) << e;
  EXPECT_NE(e.find("no file '" + d.path() + "/onlythere.lua'"), std::string::npos) << e;
  EXPECT_EQ(e.find(elsewhere.path()), std::string::npos) << e;
  // package.path as the script sees it.
  auto s = Script::load(d.write("pp.lua", "PP = package.path\n"), nullptr);
  ASSERT_TRUE(s);
  lua_getglobal(s->state(), "PP");
  EXPECT_EQ(std::string(lua_tostring(s->state(), -1)), module_path(d.path() + "/pp.lua"));
}

TEST_F(Trust, ValidatedBytesStillCheckModules) {
  // The runner loads the supervisor's validated bytes (load_source): a module
  // that became world-writable since is refused all the same.
  TempDir d;
  const auto m = d.write("fabric.lua", "return {}\n");
  ::chmod(m.c_str(), 0666);
  auto s = Script::load_source(d.path() + "/switch.lua", "require 'fabric'\n", nullptr,
                               Script::Host::OwnProcess);
  ASSERT_FALSE(s);
  EXPECT_EQ(first_line(s.error().message),
            "require 'fabric': " + m + ": owned by uid 0 (root), mode 0666" + kFileRule);
}

} // namespace
} // namespace switchlua
