// SPDX-License-Identifier: GPL-2.0-or-later
//
// Last known good script: a changed switch.lua is validated before calls
// use it; a broken edit never reaches a call, a fixed one is picked up by
// the next call; one error line per change names file:line and both
// content hashes.
#include "harness.hpp"
#include "supervisor/script_guard.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace switchlua;
using namespace switchlua::test;
using namespace std::chrono_literals;

namespace {

const char *kGood = R"(function slurm_switch_job_start(job)
  slurm.log_info("version %s", VERSION)
  return slurm.SUCCESS, {version = VERSION}
end
)";

/// Writes the script (a new inode each time, as editors do).
void write_script(const std::string &path, const std::string &version, const std::string &extra) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << "VERSION = \"" << version << "\"\n" << kGood << extra;
  }
  ASSERT_EQ(std::rename(tmp.c_str(), path.c_str()), 0);
}

CallRequest req_for(const std::string &path) {
  CallRequest r = request("returns_normally");
  r.script = path;
  return r;
}

int count_containing(const std::vector<std::string> &lines, const std::string &text) {
  int n = 0;
  for (const std::string &l : lines)
    n += l.find(text) != std::string::npos;
  return n;
}

} // namespace

TEST(LastGood, BrokenEditKeepsTheLastGoodVersionAndAFixIsPickedUp) {
  const std::string path = "/tmp/switchlua-last-good-" + std::to_string(::getpid()) + ".lua";
  write_script(path, "one", "");
  SyncClient c;
  CallResult first = c.run(req_for(path));
  ASSERT_EQ(first.outcome.kind, OutcomeKind::Returned) << describe(first.outcome);
  EXPECT_EQ(json(first.outcome.ret.jobinfo), R"({"version":"one"})");

  write_script(path, "two", "local x = = 1\n"); // a syntax error on line 6
  std::vector<std::string> logs;
  for (int i = 0; i < 3; ++i) {
    CallResult r = c.run(req_for(path));
    ASSERT_EQ(r.outcome.kind, OutcomeKind::Returned) << describe(r.outcome);
    EXPECT_EQ(json(r.outcome.ret.jobinfo), R"({"version":"one"})");
    logs.insert(logs.end(), r.logs.begin(), r.logs.end());
  }
  EXPECT_EQ(count_containing(logs, "but is refused: " + path + ":6: unexpected symbol near '='"), 1)
      << "one error line per change";
  EXPECT_EQ(count_containing(logs, "calls keep running the last good version (content fnv1a64:"),
            1);

  write_script(path, "three", "");
  CallResult fixed = c.run(req_for(path));
  ASSERT_EQ(fixed.outcome.kind, OutcomeKind::Returned) << describe(fixed.outcome);
  EXPECT_EQ(json(fixed.outcome.ret.jobinfo), R"({"version":"three"})");
  std::remove(path.c_str());
}

TEST(LastGood, HookThatIsNotAFunctionAndABadChunkReturnAreRefusedToo) {
  const std::string path = "/tmp/switchlua-last-good-types-" + std::to_string(::getpid()) + ".lua";
  write_script(path, "one", "");
  SyncClient c;
  ASSERT_EQ(c.run(req_for(path)).outcome.kind, OutcomeKind::Returned);
  write_script(path, "two", "slurm_switch_job_complete = 5\n");
  CallResult r = c.run(req_for(path));
  EXPECT_EQ(json(r.outcome.ret.jobinfo), R"({"version":"one"})");
  EXPECT_EQ(count_containing(r.logs, "slurm_switch_job_complete is 5, not a function"), 1);
  write_script(path, "three", "return -1\n");
  r = c.run(req_for(path));
  EXPECT_EQ(json(r.outcome.ret.jobinfo), R"({"version":"one"})");
  EXPECT_EQ(count_containing(r.logs, "the chunk returned -1"), 1);
  std::remove(path.c_str());
}

TEST(LastGood, ScriptThatNeverLoadedFailsToLoadAsBefore) {
  SyncClient c;
  CallResult r = c.run(request("load_failure_syntax"));
  EXPECT_EQ(r.outcome.kind, OutcomeKind::LoadFailed) << describe(r.outcome);
  EXPECT_EQ(count_containing(r.logs, "no version of it has passed yet"), 1);
}

TEST(LastGood, AScriptThatDoesNotExistFailsEachCallAndTheSupervisorLives) {
  // The missing file is refused once; before the fix every dispatch started
  // another check of it, recursively, until the supervisor's stack overflowed.
  const std::string path = "/tmp/switchlua-last-good-none-" + std::to_string(::getpid()) + ".lua";
  std::remove(path.c_str());
  SyncClient c;
  std::vector<std::string> logs;
  pid_t supervisor = -1;
  for (int i = 0; i < 3; ++i) {
    CallResult r = c.run(req_for(path));
    EXPECT_EQ(r.outcome.kind, OutcomeKind::LoadFailed) << describe(r.outcome);
    EXPECT_NE(r.outcome.message.find("No such file or directory"), std::string::npos)
        << r.outcome.message;
    logs.insert(logs.end(), r.logs.begin(), r.logs.end());
    if (i == 0)
      supervisor = c.client().supervisor_pid();
    EXPECT_EQ(c.client().supervisor_pid(), supervisor) << "the supervisor was restarted";
  }
  EXPECT_GT(supervisor, 0);
  EXPECT_EQ(count_containing(logs, "cannot open " + path), 1) << "one line for the refusal";

  write_script(path, "back", ""); // and once it is there, it is used
  CallResult back = c.run(req_for(path));
  ASSERT_EQ(back.outcome.kind, OutcomeKind::Returned) << describe(back.outcome);
  EXPECT_EQ(json(back.outcome.ret.jobinfo), R"({"version":"back"})");
  std::remove(path.c_str());
}

TEST(LastGood, TheCopyCarriesTheLastGoodVersionToTheNextSupervisorAndTheRefusalIsNotLoggedAgain) {
  const std::string path = "/tmp/switchlua-last-good-copy-" + std::to_string(::getpid()) + ".lua";
  const std::string copy = path + ".good";
  std::remove(copy.c_str());
  ClientOptions opts = default_options();
  opts.good_copy = copy;
  write_script(path, "one", "");
  {
    SyncClient c(opts);
    ASSERT_EQ(json(c.run(req_for(path)).outcome.ret.jobinfo), R"({"version":"one"})");
    write_script(path, "two", "local x = = 1\n");
    CallResult r = c.run(req_for(path));
    EXPECT_EQ(json(r.outcome.ret.jobinfo), R"({"version":"one"})");
    EXPECT_EQ(count_containing(r.logs, "but is refused: " + path + ":6:"), 1);
  }
  auto kept = read_good_copy(copy);
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_EQ(kept->script, path);
  EXPECT_EQ(kept->hash, content_hash(kept->bytes));
  EXPECT_NE(kept->refused, "");
  struct stat st{};
  ASSERT_EQ(::stat(copy.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  {
    // A new supervisor (the slurmctld a reconfigure execs): still version
    // one, and the broken edit is not reported a second time.
    SyncClient c(opts);
    CallResult r = c.run(req_for(path));
    ASSERT_EQ(r.outcome.kind, OutcomeKind::Returned) << describe(r.outcome);
    EXPECT_EQ(json(r.outcome.ret.jobinfo), R"({"version":"one"})");
    EXPECT_EQ(count_containing(r.logs, "refused"), 0);
    // The fix runs, and the copy follows it.
    write_script(path, "three", "");
    r = c.run(req_for(path));
    EXPECT_EQ(json(r.outcome.ret.jobinfo), R"({"version":"three"})");
    EXPECT_EQ(count_containing(r.logs, "): it loads, calls now run it"), 1);
  }
  kept = read_good_copy(copy);
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_NE(kept->bytes.find("VERSION = \"three\""), std::string::npos);
  EXPECT_EQ(kept->refused, "");
  std::remove(copy.c_str());
  std::remove(path.c_str());
}

TEST(LastGood, WithoutTheCopyANewSupervisorStartsWithNoGoodVersion) {
  // keep_good_copy_at_init removed it (a cold start): the broken script is
  // refused as at any start.
  const std::string path = "/tmp/switchlua-last-good-cold-" + std::to_string(::getpid()) + ".lua";
  const std::string copy = path + ".good";
  ClientOptions opts = default_options();
  opts.good_copy = copy;
  write_script(path, "one", "");
  {
    SyncClient c(opts);
    ASSERT_EQ(c.run(req_for(path)).outcome.kind, OutcomeKind::Returned);
  }
  write_script(path, "two", "local x = = 1\n");
  EXPECT_EQ(keep_good_copy_at_init(copy, path, false, nullptr), "");
  SyncClient c(opts);
  CallResult r = c.run(req_for(path));
  EXPECT_EQ(r.outcome.kind, OutcomeKind::LoadFailed) << describe(r.outcome);
  EXPECT_EQ(count_containing(r.logs, "no version of it has passed yet"), 1);
  std::remove(path.c_str());
}

TEST(LastGood, ACorruptCopyIsNotUsedAndSaysWhy) {
  const std::string path =
      "/tmp/switchlua-last-good-corrupt-" + std::to_string(::getpid()) + ".lua";
  const std::string copy = path + ".good";
  write_script(path, "one", "");
  ASSERT_TRUE(write_good_copy(copy, GoodCopy{path, content_hash("x"), "", "y"}));
  write_script(path, "two", "local x = = 1\n");
  ClientOptions opts = default_options();
  opts.good_copy = copy;
  SyncClient c(opts);
  CallResult r = c.run(req_for(path));
  EXPECT_EQ(r.outcome.kind, OutcomeKind::LoadFailed) << describe(r.outcome);
  EXPECT_EQ(count_containing(r.logs, "the copy of the last good script " + copy +
                                         " is not used: its content is " + content_hash("y") +
                                         ", its header says " + content_hash("x")),
            1);
  std::remove(copy.c_str());
  std::remove(path.c_str());
}

TEST(LastGood, OnlyAReconfigureThatNamesTheCopysHashKeepsIt) {
  // plugin init (ctld_abi.cpp): SLURMCTLD_RECONF set by Slurm 24.11 in the
  // process a reconfigure execs, SWITCHLUA_GOOD_SCRIPT by the old process.
  const std::string script = "/etc/slurm/switch.lua";
  const std::string copy = "/tmp/switchlua-keep-" + std::to_string(::getpid()) + ".good";
  const GoodCopy c{script, content_hash("good bytes"), "", "good bytes"};
  ASSERT_TRUE(write_good_copy(copy, c));
  ::unsetenv(kGoodScriptEnv);
  export_good_copy(copy);
  ASSERT_NE(std::getenv(kGoodScriptEnv), nullptr);
  EXPECT_EQ(std::string(std::getenv(kGoodScriptEnv)), c.hash);

  EXPECT_EQ(keep_good_copy_at_init(copy, script, true, c.hash.c_str()),
            "reconfigure: /etc/slurm/switch.lua keeps its last good version (content " + c.hash +
                ") from the previous slurmctld");
  EXPECT_TRUE(read_good_copy(copy));

  const std::string other = content_hash("other");
  EXPECT_EQ(keep_good_copy_at_init(copy, script, true, other.c_str()),
            "reconfigure: the last good version of /etc/slurm/switch.lua (content " + other +
                ") is lost (" + copy + " holds content " + c.hash + ", not " + other +
                "); calls run the file as it is");
  EXPECT_FALSE(read_good_copy(copy)) << "removed";

  ASSERT_TRUE(write_good_copy(copy, c));
  EXPECT_EQ(keep_good_copy_at_init(copy, "/etc/other.lua", true, c.hash.c_str()),
            "reconfigure: the last good version of /etc/other.lua (content " + c.hash +
                ") is lost (" + copy +
                " is a copy of /etc/slurm/switch.lua); calls run the file "
                "as it is");
  ASSERT_TRUE(write_good_copy(copy, c));
  EXPECT_EQ(keep_good_copy_at_init(copy, script, false, c.hash.c_str()), "") << "a cold start";
  EXPECT_EQ(read_good_copy(copy).error().message, "missing");
  export_good_copy(copy);
  EXPECT_EQ(std::getenv(kGoodScriptEnv), nullptr) << "no copy, nothing to pass on";
}
