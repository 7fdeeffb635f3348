// SPDX-License-Identifier: GPL-2.0-or-later
//
// The supervisor's results files (supervisor/results_log.hpp) and what a
// controller that takes control adopts from them (ctld/adopt_results.hpp;
// issue 40: a call that ended while its slurmctld was stopped is not run
// again after that slurmctld is killed).
#include "ctld/adopt_results.hpp"

#include "common/content_hash.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace switchlua;
namespace fs = std::filesystem;

namespace {

JobArgs job(std::uint32_t id, std::int64_t attempt) {
  JobArgs j;
  j.job_id = id;
  j.nodes = "node1";
  j.node_names = {"node1"};
  j.num_nodes = 1;
  j.network = "fabric";
  j.submit_time = 1700000000 + id;
  j.attempt = attempt;
  return j;
}

ResultRecord returned(Hook h, std::uint32_t id, std::int64_t attempt, std::int64_t rc,
                      std::optional<MsgpackBytes> jobinfo = std::nullopt) {
  ResultRecord r{.hook = h,
                 .attempt = attempt,
                 .job_id = id,
                 .submit_time = 1700000000 + id,
                 .epoch = 3,
                 .jobinfo_given = "",
                 .ended_unix_ms = 1765000000123,
                 .outcome = {}};
  r.outcome.kind = OutcomeKind::Returned;
  r.outcome.ret.hook = h;
  r.outcome.ret.rc = rc;
  r.outcome.ret.jobinfo = std::move(jobinfo);
  return r;
}

/// A journal table with attempt `attempt` of job `id` started, and as far as `upto`.
JournalTable table(std::uint32_t id, std::int64_t attempt, JournalKind upto,
                   const MsgpackBytes &jobinfo = "\x81\xa3vni\xcd\x07\xd1") {
  JournalTable t;
  const JobArgs j = job(id, attempt);
  t.apply({.kind = JournalKind::SetupStarted,
           .attempt = attempt,
           .job_id = id,
           .submit_time = j.submit_time,
           .job = j});
  if (upto == JournalKind::SetupStarted)
    return t;
  t.apply({.kind = JournalKind::SetupAccepted,
           .attempt = attempt,
           .job_id = id,
           .submit_time = j.submit_time,
           .jobinfo = jobinfo});
  if (upto == JournalKind::SetupAccepted)
    return t;
  t.apply({.kind = JournalKind::TeardownStarted,
           .attempt = attempt,
           .job_id = id,
           .submit_time = j.submit_time,
           .jobinfo = jobinfo});
  return t;
}

class TempDir : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/switchlua-results-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir = tmpl;
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string slurp(const std::string &p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::string dir;
};

} // namespace

TEST(ResultsFile, RecordRoundTrips) {
  ResultRecord r = returned(Hook::JobComplete, 42, 1765000000000001, kSuccess);
  r.jobinfo_given = content_hash("abc");
  r.outcome.elapsed = std::chrono::milliseconds(250);
  r.outcome.script_hash = "fnv1a64:0123456789abcdef";
  const ResultsScan s = scan_results(frame_result_record(r));
  ASSERT_EQ(s.error, "");
  ASSERT_EQ(s.records.size(), 1u);
  const ResultRecord &b = s.records[0];
  EXPECT_EQ(b.hook, Hook::JobComplete);
  EXPECT_EQ(b.attempt, r.attempt);
  EXPECT_EQ(b.job_id, 42u);
  EXPECT_EQ(b.submit_time, r.submit_time);
  EXPECT_EQ(b.epoch, 3u);
  EXPECT_EQ(b.jobinfo_given, r.jobinfo_given);
  EXPECT_EQ(b.ended_unix_ms, 1765000000123);
  EXPECT_EQ(b.outcome.kind, OutcomeKind::Returned);
  EXPECT_EQ(b.outcome.ret.rc, kSuccess);
  EXPECT_EQ(b.outcome.script_hash, r.outcome.script_hash);
}

TEST(ResultsFile, TornTailKeepsTheRecordsBeforeIt) {
  const std::string a =
      frame_result_record(returned(Hook::JobStart, 1, 11, kSuccess, std::string("\x80", 1)));
  const std::string b = frame_result_record(returned(Hook::JobStart, 2, 12, -1));
  const std::string c = frame_result_record(returned(Hook::JobStart, 3, 13, kSuccess));
  const ResultsScan s = scan_results(a + b + c.substr(0, c.size() / 2));
  ASSERT_EQ(s.records.size(), 2u);
  EXPECT_EQ(s.records[1].job_id, 2u);
  EXPECT_NE(s.error.find(fmt::format("record at offset {}: cut at", a.size() + b.size())),
            std::string::npos)
      << s.error;
}

TEST(ResultsFile, ChecksumMismatchEndsTheScan) {
  const std::string a = frame_result_record(returned(Hook::JobStart, 1, 11, kSuccess));
  std::string b = frame_result_record(returned(Hook::JobStart, 2, 12, kSuccess));
  b[b.size() - 1] ^= 0x01;
  const ResultsScan s = scan_results(a + b + a);
  ASSERT_EQ(s.records.size(), 1u);
  EXPECT_NE(s.error.find("checksum mismatch"), std::string::npos) << s.error;
}

TEST_F(TempDir, ListedInEpochThenSegmentOrderOnlyTheirOwnNames) {
  const std::string journal = dir + "/switch_lua.journal";
  for (const char *n : {"switch_lua.journal.results.10.1", "switch_lua.journal.results.9.10",
                        "switch_lua.journal.results.9.2", "switch_lua.journal.results.9",
                        "switch_lua.journal.results.x.1", "switch_lua.journal.results.9.2.tmp",
                        "switch_lua.journal", "other.results.1.1"})
    std::ofstream(dir + "/" + n) << "x";
  EXPECT_EQ(list_results_files(journal),
            (std::vector<std::string>{journal + ".results.9.2", journal + ".results.9.10",
                                      journal + ".results.10.1"}));
  EXPECT_EQ(results_file_path(journal, 7, 2), journal + ".results.7.2");
}

TEST_F(TempDir, WriterMakesRecordsDurableAndSaysWhenItCannot) {
  const std::string path = dir + "/j.results.1.1";
  std::vector<std::future<std::string>> done;
  {
    ResultsWriter w;
    for (std::uint32_t id = 1; id <= 3; ++id) {
      auto p = std::make_shared<std::promise<std::string>>();
      done.push_back(p->get_future());
      w.write(path, frame_result_record(returned(Hook::JobStart, id, id, kSuccess)),
              [p](const std::string &err) { p->set_value(err); });
    }
    for (auto &f : done)
      EXPECT_EQ(f.get(), "");
    EXPECT_EQ(scan_results(slurp(path)).records.size(), 3u);
    struct stat st{};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);

    // A failing fdatasync: the caller is told, and the next record goes on.
    w.set_fdatasync([](int) {
      errno = EIO;
      return -1;
    });
    std::promise<std::string> failed;
    w.write(path, frame_result_record(returned(Hook::JobStart, 4, 4, kSuccess)),
            [&](const std::string &err) { failed.set_value(err); });
    EXPECT_NE(failed.get_future().get().find("cannot fdatasync " + path), std::string::npos);
    w.set_fdatasync(nullptr);
    std::promise<std::string> again;
    w.write(path, frame_result_record(returned(Hook::JobStart, 5, 5, kSuccess)),
            [&](const std::string &err) { again.set_value(err); });
    EXPECT_EQ(again.get_future().get(), "");
  }
  EXPECT_EQ(scan_results(slurp(path)).records.back().job_id, 5u);
}

TEST_F(TempDir, WriterRefusesAFolderOthersCanWrite) {
  const std::string open = dir + "/open";
  fs::create_directory(open);
  ASSERT_EQ(::chmod(open.c_str(), 0777), 0);
  ResultsWriter w;
  std::promise<std::string> p;
  w.write(open + "/j.results.1.1", frame_result_record(returned(Hook::JobStart, 1, 1, kSuccess)),
          [&](const std::string &err) { p.set_value(err); });
  EXPECT_NE(p.get_future().get().find("refused"), std::string::npos);
  EXPECT_FALSE(fs::exists(open + "/j.results.1.1"));
}

TEST(AdoptResult, ASetupThatReturnedAJobinfoIsAccepted) {
  const JournalTable t = table(7, 70, JournalKind::SetupStarted);
  auto rec =
      adopt_result(t, returned(Hook::JobStart, 7, 70, kSuccess, std::string("\x81\xa1v\x01")));
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->kind, JournalKind::SetupAccepted);
  EXPECT_EQ(rec->attempt, 70);
  EXPECT_EQ(rec->job_id, 7u);
  EXPECT_EQ(rec->jobinfo, std::string("\x81\xa1v\x01"));
}

TEST(AdoptResult, ASetupIsAdoptedOnlyWhenItProvesTheNextStep) {
  const MsgpackBytes ji("\x81\xa1v\x01");
  const JournalTable started = table(7, 70, JournalKind::SetupStarted);
  // Failed, declined or a jobinfo that cannot be saved: the restart rules decide.
  EXPECT_FALSE(adopt_result(started, returned(Hook::JobStart, 7, 70, -1)));
  EXPECT_FALSE(adopt_result(started, returned(Hook::JobStart, 7, 70, kSuccess)));
  ResultRecord bad = returned(Hook::JobStart, 7, 70, kSuccess, ji);
  bad.outcome.ret.jobinfo_error = "a function cannot be saved";
  EXPECT_FALSE(adopt_result(started, bad));
  ResultRecord late = returned(Hook::JobStart, 7, 70, kSuccess, ji);
  late.outcome.kind = OutcomeKind::TimedOut;
  EXPECT_FALSE(adopt_result(started, late));
  // Not that attempt any more, or another job's.
  EXPECT_FALSE(adopt_result(started, returned(Hook::JobStart, 7, 69, kSuccess, ji)));
  ResultRecord other = returned(Hook::JobStart, 7, 70, kSuccess, ji);
  other.submit_time += 1; // job id 7 reused by a newer job
  EXPECT_FALSE(adopt_result(started, other));
  // Already accepted, or its teardown begun.
  EXPECT_FALSE(adopt_result(table(7, 70, JournalKind::SetupAccepted),
                            returned(Hook::JobStart, 7, 70, kSuccess, ji)));
  EXPECT_FALSE(adopt_result(table(7, 70, JournalKind::TeardownStarted),
                            returned(Hook::JobStart, 7, 70, kSuccess, ji)));
}

TEST(AdoptResult, ATeardownThatSucceededWithItsJobinfoIsForgotten) {
  const MsgpackBytes ji("\x81\xa3vni\xcd\x07\xd1");
  const JournalTable t = table(8, 80, JournalKind::TeardownStarted, ji);
  ResultRecord r = returned(Hook::JobComplete, 8, 80, kSuccess);
  r.jobinfo_given = content_hash(ji);
  auto rec = adopt_result(t, r);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->kind, JournalKind::Forgotten);
  EXPECT_EQ(rec->attempt, 80);
  r.outcome.ret.rc = 3; // any rc >= 0 but EAGAIN is a success (R_COMPLETE_OK)
  EXPECT_TRUE(adopt_result(t, r));
}

TEST(AdoptResult, ATeardownIsAdoptedOnlyForItsOwnJobinfo) {
  const MsgpackBytes ji("\x81\xa3vni\xcd\x07\xd1");
  const JournalTable t = table(8, 80, JournalKind::TeardownStarted, ji);
  ResultRecord r = returned(Hook::JobComplete, 8, 80, kSuccess);
  EXPECT_FALSE(adopt_result(t, r)) << "nil given: an undo, not this teardown";
  r.jobinfo_given = content_hash("another");
  EXPECT_FALSE(adopt_result(t, r));
  r.jobinfo_given = content_hash(ji);
  r.outcome.ret.rc = kEagain;
  EXPECT_FALSE(adopt_result(t, r));
  r.outcome.ret.rc = -1;
  EXPECT_FALSE(adopt_result(t, r));
  r.outcome.ret.rc = kSuccess;
  EXPECT_FALSE(adopt_result(table(8, 80, JournalKind::SetupAccepted, ji), r))
      << "no teardown started: nothing it can be the result of";
}
