// SPDX-License-Identifier: GPL-2.0-or-later
//
// The control fence on its own (ctld/fence.hpp; issue 40): the lock taken
// or fenced out, the epoch file, what check() sees, and job.epoch in the
// job table's encoding.  The hand-over between controllers: the process
// test test/proc/core_fence_test.cpp.
#include "ctld/fence.hpp"
#include "lua/contract.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace switchlua;
namespace fs = std::filesystem;

namespace {

struct Dir {
  fs::path dir;
  Dir() {
    std::string t = (fs::temp_directory_path() / "swl-fence.XXXXXX").string();
    dir = ::mkdtemp(t.data());
  }
  ~Dir() { fs::remove_all(dir); }
  std::string journal() const { return (dir / "switch_lua.journal").string(); }
};

std::string read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

constexpr std::chrono::milliseconds kNoWait{0};

} // namespace

TEST(ControlFence, EachTakeHasTheNextEpochWrittenDurably) {
  Dir d;
  {
    auto a = ControlFence::take(d.journal(), kNoWait);
    ASSERT_TRUE(a) << a.error().message;
    EXPECT_EQ((*a)->epoch(), 1u);
    EXPECT_EQ(read_file(d.journal() + ".epoch"), "1\n");
    EXPECT_FALSE((*a)->check());
    EXPECT_TRUE((*a)->fenced_holder().empty());
  }
  auto b = ControlFence::take(d.journal(), kNoWait);
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ((*b)->epoch(), 2u);
  EXPECT_TRUE((*b)->fenced_holder().empty()) << "a released lock is taken, not fenced";
}

TEST(ControlFence, AHeldLockIsFencedOutAndItsHolderSeesItAtItsCheck) {
  Dir d;
  auto a = ControlFence::take(d.journal(), kNoWait);
  ASSERT_TRUE(a) << a.error().message;
  // OFD locks conflict between open file descriptions, even in one process.
  auto refused = ControlFence::take(d.journal(), std::chrono::milliseconds(200), {}, false);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("holds the lock " + d.journal() + ".lock"),
            std::string::npos)
      << refused.error().message;
  EXPECT_FALSE((*a)->check()) << "a refused take changes nothing";
  auto b = ControlFence::take(d.journal(), std::chrono::milliseconds(200));
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ((*b)->epoch(), 2u);
  EXPECT_NE((*b)->fenced_holder().find(fmt::format("pid {}", ::getpid())), std::string::npos)
      << (*b)->fenced_holder();
  auto stale = (*a)->check();
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale->epoch, 1u);
  EXPECT_EQ(stale->now, 2u);
  EXPECT_NE(stale->why.find("another slurmctld took control"), std::string::npos) << stale->why;
  EXPECT_FALSE((*b)->check());
}

TEST(ControlFence, ALockFileRemovedOrReplacedIsALostLock) {
  Dir d;
  auto a = ControlFence::take(d.journal(), kNoWait);
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_EQ(::unlink((d.journal() + ".lock").c_str()), 0);
  auto st = (*a)->check();
  ASSERT_TRUE(st);
  EXPECT_EQ(st->now, 1u) << "nobody took control: the epoch is still its own";
  EXPECT_NE(st->why.find("was removed"), std::string::npos) << st->why;
  std::ofstream(d.journal() + ".lock") << "someone\n";
  st = (*a)->check();
  ASSERT_TRUE(st);
  EXPECT_NE(st->why.find("was replaced"), std::string::npos) << st->why;
}

TEST(ControlFence, AnEpochThatCannotBeWrittenIsAnErrorNotATake) {
  Dir d;
  fs::create_directory(d.journal() + ".epoch"); // rename(2) onto a folder fails
  auto a = ControlFence::take(d.journal(), kNoWait);
  ASSERT_FALSE(a);
  EXPECT_NE(a.error().message.find("cannot write the epoch 1"), std::string::npos)
      << a.error().message;
  EXPECT_EQ(a.error().message.rfind("switch/lua: journal " + d.journal(), 0), 0u)
      << a.error().message;
  fs::remove(d.journal() + ".epoch");
  auto b = ControlFence::take(d.journal(), kNoWait);
  EXPECT_TRUE(b) << "the lock of the failed take was released";
}

TEST(JobEpoch, WrittenOnlyWhenSetAndReadBack) {
  JobArgs j;
  j.job_id = 7;
  const MsgpackBytes plain = j.to_msgpack();
  EXPECT_EQ(plain.find("epoch"), std::string::npos)
      << "a job table without an epoch stays readable by an older plugin";
  j.epoch = 12;
  auto back = JobArgs::from_msgpack(j.to_msgpack());
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->epoch, std::optional<std::uint32_t>(12));
  auto none = JobArgs::from_msgpack(plain);
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_FALSE(none->epoch);
}
