// SPDX-License-Identifier: GPL-2.0-or-later
//
// The journal (ctld/journal.hpp): record codec, framing, replay, and the
// documented behaviour on damage: a torn tail is truncated with one log
// line; a corrupt middle is moved aside, named in an error line, and the
// journal starts empty.
#include "ctld/journal.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <functional>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace switchlua;
namespace fs = std::filesystem;

namespace {

JobArgs job(std::uint32_t id, std::int64_t attempt) {
  JobArgs j;
  j.job_id = id;
  j.nodes = "node[1-2]";
  j.node_names = {"node1", "node2"};
  j.num_nodes = 2;
  j.network = "fabric";
  j.submit_time = 1700000000 + id;
  j.attempt = attempt;
  return j;
}

JournalRecord started(std::uint32_t id, std::int64_t attempt) {
  JobArgs j = job(id, attempt);
  return {.kind = JournalKind::SetupStarted,
          .attempt = attempt,
          .job_id = id,
          .submit_time = j.submit_time,
          .job = j};
}
JournalRecord rec(JournalKind k, std::uint32_t id, std::int64_t attempt,
                  std::optional<std::string> jobinfo = std::nullopt) {
  return {.kind = k,
          .attempt = attempt,
          .job_id = id,
          .submit_time = 1700000000 + id,
          .jobinfo = std::move(jobinfo)};
}
const std::string kInfo = "\x81\xa1x\x01"; // {x = 1}

std::string image(const std::vector<JournalRecord> &rs) {
  std::string out(kJournalHeader);
  for (const auto &r : rs)
    out += frame_journal_record(r);
  return out;
}

struct TempDir {
  fs::path dir;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "swlj-test.XXXXXX").string();
    dir = ::mkdtemp(t.data());
  }
  ~TempDir() { fs::remove_all(dir); }
  std::string file() const { return (dir / "switch_lua.journal").string(); }
};

void write_file(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}
std::string read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Logged {
  std::vector<std::pair<bool, std::string>> lines;
  Journal::LogFn fn() {
    return [this](bool e, const std::string &l) { lines.emplace_back(e, l); };
  }
};

} // namespace

TEST(Journal, BodyRoundTripsEveryKind) {
  for (auto r :
       {started(7, 100), rec(JournalKind::SetupAccepted, 7, 100, kInfo),
        rec(JournalKind::LaunchReleased, 7, 100), rec(JournalKind::TeardownStarted, 7, 100),
        rec(JournalKind::TeardownStarted, 7, 100, kInfo), rec(JournalKind::Forgotten, 7, 100)}) {
    auto d = decode_journal_body(encode_journal_body(r));
    ASSERT_TRUE(d) << d.error().message;
    EXPECT_EQ(*d, r) << journal_kind_name(r.kind);
  }
}

TEST(Journal, BodyRefusesUnknownKindsAndNewerVersions) {
  std::string b = encode_journal_body(rec(JournalKind::Forgotten, 7, 100));
  // [ "swlj", 1, 5, ...]: the kind is the byte after the version byte.
  std::string kind9 = b;
  kind9[7] = 9;
  auto d = decode_journal_body(kind9);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().message, "switch/lua journal: unknown record kind 9");
  std::string v4 = b;
  v4[6] = 4;
  d = decode_journal_body(v4);
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("newer than this plugin's 3"), std::string::npos)
      << d.error().message;
  // Kinds 6 and 7 exist from version 2 on: a version-1 body with kind 6 is refused.
  std::string k6 = b;
  k6[7] = 6;
  d = decode_journal_body(k6);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().message, "switch/lua journal: unknown record kind 6");
}

TEST(Journal, Crc32MatchesTheStandardCheckValue) {
  EXPECT_EQ(crc32_of("123456789"), 0xcbf43926u);
}

TEST(Journal, ReplayKeepsLiveAttemptsAndTombstones) {
  JournalTable t;
  for (const auto &r : {started(7, 100), rec(JournalKind::SetupAccepted, 7, 100, kInfo),
                        rec(JournalKind::LaunchReleased, 7, 100), started(8, 101),
                        rec(JournalKind::Forgotten, 8, 101)})
    t.apply(r);
  ASSERT_EQ(t.live.size(), 1u);
  const JournalEntry &e = t.live.at(100);
  EXPECT_TRUE(e.accepted);
  EXPECT_TRUE(e.launch_released);
  EXPECT_FALSE(e.teardown_started);
  EXPECT_EQ(e.jobinfo, kInfo);
  EXPECT_EQ(e.job, job(7, 100));
  EXPECT_EQ(t.forgotten, std::set<std::int64_t>{101});
  EXPECT_EQ(t.max_attempt, 101);
  // The snapshot rebuilds the same table.
  JournalTable again;
  for (const auto &r : t.snapshot())
    again.apply(r);
  EXPECT_EQ(again.live, t.live);
  EXPECT_EQ(again.forgotten, t.forgotten);
  EXPECT_EQ(again.max_attempt, t.max_attempt);
}

TEST(Journal, ScanSeesATornTailAtEveryCut) {
  std::vector<JournalRecord> rs = {started(7, 100), rec(JournalKind::SetupAccepted, 7, 100, kInfo)};
  std::string full = image(rs);
  std::size_t first_end = image({rs[0]}).size();
  for (std::size_t cut = first_end + 1; cut < full.size(); ++cut) {
    JournalScan s = scan_journal(std::string_view(full).substr(0, cut));
    ASSERT_EQ(s.status, JournalScan::Status::TornTail) << "cut at " << cut;
    ASSERT_EQ(s.records.size(), 1u);
    EXPECT_EQ(s.good_bytes, first_end);
  }
  EXPECT_EQ(scan_journal(full).status, JournalScan::Status::Clean);
  EXPECT_EQ(scan_journal(full).records, rs);
}

TEST(Journal, ScanTellsACorruptMiddleFromATornTail) {
  std::vector<JournalRecord> rs = {started(7, 100), started(8, 101), started(9, 102)};
  std::string img = image(rs);
  std::string last = img;
  last[last.size() - 2] ^= 0x55; // the last record's checksum fails: a torn append
  EXPECT_EQ(scan_journal(last).status, JournalScan::Status::TornTail);
  std::string middle = img;
  middle[kJournalHeader.size() + 12] ^= 0x55; // inside the first record's body
  JournalScan s = scan_journal(middle);
  EXPECT_EQ(s.status, JournalScan::Status::Corrupt);
  EXPECT_NE(s.error.find("checksum mismatch"), std::string::npos) << s.error;
  EXPECT_EQ(scan_journal("NOTAJRNL").status, JournalScan::Status::Corrupt);
}

TEST(Journal, OpenTruncatesATornTailWithOneLogLine) {
  TempDir d;
  std::string img = image({started(7, 100), rec(JournalKind::SetupAccepted, 7, 100, kInfo)});
  write_file(d.file(), img.substr(0, img.size() - 3));
  Logged log;
  {
    Journal j(d.file(), log.fn());
    ASSERT_TRUE(j.active());
    ASSERT_EQ(j.table().live.size(), 1u);
    EXPECT_FALSE(j.table().live.at(100).accepted);
  }
  ASSERT_GE(log.lines.size(), 1u);
  EXPECT_FALSE(log.lines[0].first);
  EXPECT_NE(log.lines[0].second.find("torn tail"), std::string::npos) << log.lines[0].second;
  EXPECT_NE(log.lines[0].second.find(d.file()), std::string::npos);
  // The file now holds only good records.
  EXPECT_EQ(scan_journal(read_file(d.file())).status, JournalScan::Status::Clean);
  EXPECT_FALSE(fs::exists(d.file() + ".tmp." + std::to_string(::getpid())));
}

TEST(Journal, OpenMovesACorruptJournalAsideAndStartsEmpty) {
  TempDir d;
  std::string img = image({started(7, 100), started(8, 101), started(9, 102)});
  img[kJournalHeader.size() + 12] ^= 0x55;
  write_file(d.file(), img);
  Logged log;
  {
    Journal j(d.file(), log.fn());
    EXPECT_TRUE(j.active());
    EXPECT_TRUE(j.table().live.empty());
  }
  ASSERT_EQ(log.lines.size(), 1u);
  EXPECT_TRUE(log.lines[0].first) << "an error line";
  const std::string &line = log.lines[0].second;
  EXPECT_NE(line.find("CORRUPT"), std::string::npos) << line;
  std::string aside;
  for (const auto &ent : fs::directory_iterator(d.dir))
    if (ent.path().filename().string().starts_with("switch_lua.journal.corrupt-"))
      aside = ent.path().string();
  ASSERT_FALSE(aside.empty()) << "no file moved aside";
  EXPECT_NE(line.find("moved aside to " + aside), std::string::npos) << line;
  EXPECT_EQ(read_file(aside), img) << "the damaged file is kept as it was";
  EXPECT_EQ(read_file(d.file()), std::string(kJournalHeader)) << "a fresh journal";
}

TEST(Journal, AppendedRecordsSurviveAReopen) {
  TempDir d;
  Logged log;
  std::int64_t a;
  {
    Journal j(d.file(), log.fn());
    a = j.next_attempt();
    j.append({started(7, a), rec(JournalKind::SetupAccepted, 7, a, kInfo)});
    j.append({rec(JournalKind::LaunchReleased, 7, a)});
    EXPECT_GT(j.next_attempt(), a);
  }
  Journal j(d.file(), log.fn());
  ASSERT_EQ(j.table().live.count(a), 1u);
  EXPECT_TRUE(j.table().live.at(a).launch_released);
  EXPECT_GT(j.next_attempt(), a) << "attempt ids never come back";
}

namespace {

/// The core's syncer (issue 40): a compaction of `j` with the four steps of
/// Journal::CompactionTicket, as if no lock were held for 2 and 4; whether
/// the file was renamed.  `meanwhile` runs between steps 1 and 2 (appends
/// under the caller's mutex while the snapshot is written).
bool compact_outside(Journal &j, const std::function<void()> &meanwhile = {},
                     bool may_write = true) {
  Journal::CompactionTicket t = j.compaction_ticket();
  if (!t.due)
    return false;
  if (meanwhile)
    meanwhile();
  Journal::stage_compaction(t);
  if (!j.finish_compaction(t, may_write))
    return false;
  Journal::sync_compaction_folder(t);
  j.compaction_settled(t);
  return true;
}

/// Files in `d` other than the journal itself (temp files left behind).
std::vector<std::string> leftovers(const TempDir &d) {
  std::vector<std::string> out;
  for (const auto &e : fs::directory_iterator(d.dir))
    if (e.path().filename() != "switch_lua.journal")
      out.push_back(e.path().filename().string());
  return out;
}

} // namespace

TEST(Journal, CompactionBoundsTheFile) {
  TempDir d;
  Logged log;
  Journal j(d.file(), log.fn());
  std::string big(4000, 'x');
  int compactions = 0;
  for (std::int64_t a = 1; a <= 600; ++a) {
    j.append({started(static_cast<std::uint32_t>(a), a),
              rec(JournalKind::SetupAccepted, static_cast<std::uint32_t>(a), a, big)});
    j.append({rec(JournalKind::Forgotten, static_cast<std::uint32_t>(a), a)});
    compactions += compact_outside(j);
  }
  EXPECT_GT(compactions, 0);
  j.append({started(1, 5000)});
  EXPECT_LT(fs::file_size(d.file()), 2 * kJournalCompactBytes);
  Journal again(d.file(), log.fn());
  EXPECT_EQ(again.table().live.size(), 1u);
  EXPECT_EQ(again.table().live.count(5000), 1u);
  EXPECT_EQ(again.table().forgotten.count(600), 1u);
}

// Issue 11 (switch_max_setup_failures): the failure counts are version-2
// records; the other kinds are still written as version 1, so a journal
// that never counted a failure stays readable by the previous plugin.
TEST(Journal, FailureCountsRoundTripAsVersion2) {
  JournalRecord counted{.kind = JournalKind::SetupFailureCounted,
                        .attempt = 100,
                        .job_id = 7,
                        .submit_time = 1700000007,
                        .failures = 2,
                        .restart_count = 5};
  std::string b = encode_journal_body(counted);
  EXPECT_EQ(b[6], 2) << "version 2";
  auto d = decode_journal_body(b);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(*d, counted);
  JournalRecord cleared{.kind = JournalKind::SetupFailuresCleared, .job_id = 7};
  d = decode_journal_body(encode_journal_body(cleared));
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(*d, cleared);
  EXPECT_EQ(encode_journal_body(rec(JournalKind::Forgotten, 7, 100))[6], 1) << "version 1";
}

// Issue 38 (fabric-ID pools): a record whose job carries pools, and the
// quarantine (kind 8), are version 3; without pools nothing changes.
TEST(Journal, PoolsAreVersion3AndOnlyWhenThereArePools) {
  JournalRecord st = started(7, 100);
  EXPECT_EQ(encode_journal_body(st)[6], 1) << "no pools: version 1, as before";
  st.job->pools = {{"vni", {1024}}, {"pkey", {32769, 32770}}};
  std::string b = encode_journal_body(st);
  EXPECT_EQ(b[6], 3) << "a job with pools: version 3";
  auto d = decode_journal_body(b);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(*d, st);
  JournalRecord q = pools_quarantined_record(100, 7, 1700000007, {{"vni", {1024}}}, 1700000400);
  b = encode_journal_body(q);
  EXPECT_EQ(b[6], 3);
  EXPECT_EQ(b[7], 8);
  d = decode_journal_body(b);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(*d, q);
  b[6] = 2; // kind 8 exists from version 3 on
  d = decode_journal_body(b);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().message, "switch/lua journal: unknown record kind 8");
  JournalRecord r{.kind = JournalKind::PoolsReleased, .attempt = 100, .job_id = 7};
  b = encode_journal_body(r);
  EXPECT_EQ(b[6], 3);
  EXPECT_EQ(b[7], 9);
  d = decode_journal_body(b);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(*d, r);
}

// A quarantine keeps its start across a reopen; a release ends it, also
// across a reopen and a compaction (issue 38, switch-lua pool release).
TEST(Journal, AQuarantineKeepsItsTimeAndAReleaseEndsIt) {
  TempDir d;
  Logged log;
  {
    Journal j(d.file(), log.fn());
    j.append({pools_quarantined_record(100, 7, 1700000007, {{"vni", {1024}}}, 1700000400),
              pools_quarantined_record(101, 8, 1700000008, {{"vni", {1025}}}, 1700000500)});
  }
  {
    Journal j(d.file(), log.fn()); // opening compacts
    ASSERT_EQ(j.table().quarantined.size(), 2u);
    EXPECT_EQ(j.table().quarantined.at(100).since, 1700000400);
    j.append({{.kind = JournalKind::PoolsReleased, .attempt = 101, .job_id = 8}});
    EXPECT_FALSE(j.table().quarantined.contains(101));
  }
  Journal j(d.file(), log.fn());
  ASSERT_EQ(j.table().quarantined.size(), 1u);
  EXPECT_EQ(j.table().quarantined.at(100).since, 1700000400);
}

TEST(Journal, QuarantinedPoolsOutliveTheirAttemptAReopenAndACompaction) {
  TempDir d;
  Logged log;
  JournalRecord st = started(7, 100);
  st.job->pools = {{"vni", {1024}}};
  {
    Journal j(d.file(), log.fn());
    j.append({st});
    j.append({pools_quarantined_record(100, 7, 1700000007, {{"vni", {1024}}}, 1700000400),
              rec(JournalKind::Forgotten, 7, 100)});
    EXPECT_FALSE(j.table().live.contains(100));
    ASSERT_TRUE(j.table().quarantined.contains(100));
  }
  Journal j(d.file(), log.fn()); // opening compacts
  ASSERT_TRUE(j.table().quarantined.contains(100));
  EXPECT_EQ(j.table().quarantined.at(100).pools, (JobPools{{"vni", {1024}}}));
  EXPECT_EQ(j.table().quarantined.at(100).job_id, 7u);
}

TEST(Journal, APoolNoLongerDeclaredIsDroppedAndNotWrittenAgain) {
  TempDir d;
  Logged log;
  JournalRecord st = started(7, 100);
  st.job->pools = {{"vni", {1024}}, {"pkey", {32769}}};
  {
    Journal j(d.file(), log.fn());
    j.append({st, pools_quarantined_record(99, 6, 1700000006, {{"pkey", {32770}}}, 1700000300)});
    EXPECT_EQ(j.keep_pools({"vni", "pkey"}), std::vector<std::string>{});
    EXPECT_FALSE(j.compaction_ticket().due) << "a small file, no pool dropped";
    const auto before = read_file(d.file());
    EXPECT_EQ(j.keep_pools({"vni"}), std::vector<std::string>{"pkey"});
    EXPECT_EQ(read_file(d.file()), before) << "no I/O under Slurm's locks (issue 40)";
    EXPECT_EQ(j.table().live.at(100).job.pools, (JobPools{{"vni", {1024}}}));
    EXPECT_FALSE(j.table().quarantined.contains(99));
    EXPECT_TRUE(compact_outside(j)) << "the syncer's next ticket is due";
    EXPECT_FALSE(j.compaction_ticket().due) << "and only once";
  }
  EXPECT_EQ(read_file(d.file()).find("pkey"), std::string::npos) << "compacted without it";
  Journal j(d.file(), log.fn());
  EXPECT_EQ(j.table().live.at(100).job.pools, (JobPools{{"vni", {1024}}}));
  EXPECT_TRUE(j.table().quarantined.empty());
}

TEST(Journal, FailureCountsSurviveAReopenAndACompaction) {
  TempDir d;
  Logged log;
  {
    Journal j(d.file(), log.fn());
    j.append({{.kind = JournalKind::SetupFailureCounted,
               .job_id = 7,
               .failures = 1,
               .restart_count = 0}});
    j.append({{.kind = JournalKind::SetupFailureCounted,
               .job_id = 7,
               .failures = 2,
               .restart_count = 1}});
    j.append({{.kind = JournalKind::SetupFailureCounted,
               .job_id = 8,
               .failures = 1,
               .restart_count = 4}});
    j.append({{.kind = JournalKind::SetupFailuresCleared, .job_id = 8}});
  }
  {
    Journal j(d.file(), log.fn());
    ASSERT_EQ(j.table().failures.size(), 1u);
    EXPECT_EQ(j.table().failures.at(7), (SetupFailures{.failures = 2, .restart_count = 1}));
    ASSERT_TRUE(j.compact());
  }
  Journal j(d.file(), log.fn());
  ASSERT_EQ(j.table().failures.count(7), 1u);
  EXPECT_EQ(j.table().failures.at(7).failures, 2u);
  EXPECT_EQ(j.table().failures.count(8), 0u);
}

// ---------------------------------------------------------------------------
// A failing disk (issue 24): fault injection through JournalIo.
// ---------------------------------------------------------------------------

namespace {

/// What the injected write and fdatasync do: the next `short_writes` writes
/// write half their bytes, then the next `failed_writes` fail with ENOSPC;
/// the next `failed_syncs` fdatasyncs fail with EIO.
int g_short_writes = 0, g_failed_writes = 0, g_failed_syncs = 0, g_failed_fsyncs = 0;

ssize_t inject_write(int fd, const void *buf, std::size_t n) {
  if (g_short_writes > 0 && n > 1) {
    --g_short_writes;
    return ::write(fd, buf, n / 2);
  }
  if (g_failed_writes > 0) {
    --g_failed_writes;
    errno = ENOSPC;
    return -1;
  }
  return ::write(fd, buf, n);
}
int inject_fdatasync(int fd) {
  if (g_failed_syncs > 0) {
    --g_failed_syncs;
    errno = EIO;
    return -1;
  }
  return ::fdatasync(fd);
}
int inject_fsync(int fd) {
  if (g_failed_fsyncs > 0) {
    --g_failed_fsyncs;
    errno = ENOSPC;
    return -1;
  }
  return ::fsync(fd);
}
constexpr JournalIo kInjected{
    .write = inject_write, .fdatasync = inject_fdatasync, .fsync = inject_fsync};

ino_t inode_of(const std::string &path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

std::size_t count_lines(const Logged &log, bool error, const std::string &part) {
  std::size_t n = 0;
  for (const auto &[e, l] : log.lines)
    n += (e == error && l.find(part) != std::string::npos) ? 1 : 0;
  return n;
}

} // namespace

TEST(JournalDisk, AShortAppendIsCutBackToTheLastWholeRecord) {
  TempDir d;
  Logged log;
  Journal j(d.file(), log.fn(), kInjected);
  ASSERT_TRUE(j.append({started(7, 100)}));
  const std::string before = read_file(d.file());
  // The disk fills in the middle of the next append: half of it written,
  // then ENOSPC.
  g_short_writes = 1;
  g_failed_writes = 1;
  EXPECT_FALSE(j.append({started(8, 101), rec(JournalKind::SetupAccepted, 8, 101, kInfo)}));
  EXPECT_EQ(read_file(d.file()), before) << "the partial record is cut off at once";
  EXPECT_EQ(scan_journal(read_file(d.file())).status, JournalScan::Status::Clean);
  EXPECT_EQ(j.failure(), "cannot append: No space left on device (errno 28)");
  EXPECT_EQ(j.failure_errno(), ENOSPC);
  EXPECT_EQ(count_lines(log, true, "cannot append: No space left on device (errno 28)"), 1u);
  EXPECT_EQ(count_lines(log, true, "cut back to its last whole record"), 1u);
  // Still full: no record is appended, no second error line.
  g_failed_fsyncs = 1; // the snapshot's temp file cannot be synced either
  EXPECT_FALSE(j.append({rec(JournalKind::LaunchReleased, 8, 101)}));
  EXPECT_EQ(read_file(d.file()), before);
  EXPECT_EQ(log.lines.size(), 1u) << log.lines.back().second;
  // Room again: the next append writes a fresh snapshot holding everything
  // the table knows, the records that could not be written included.
  EXPECT_TRUE(j.append({started(9, 102)}));
  EXPECT_TRUE(j.failure().empty());
  EXPECT_EQ(count_lines(log, false, "writable again"), 1u);
  JournalScan scan = scan_journal(read_file(d.file()));
  EXPECT_EQ(scan.status, JournalScan::Status::Clean);
  JournalTable t;
  for (const auto &r : scan.records)
    t.apply(r);
  ASSERT_EQ(t.live.size(), 3u);
  EXPECT_TRUE(t.live.at(101).accepted);
  EXPECT_TRUE(t.live.at(101).launch_released);
  // And plain appends after it.
  EXPECT_TRUE(j.append({rec(JournalKind::Forgotten, 7, 100)}));
  EXPECT_EQ(scan_journal(read_file(d.file())).status, JournalScan::Status::Clean);
}

TEST(JournalDisk, AFailedFdatasyncIsNotForgottenAfterTheNextSuccessfulOne) {
  TempDir d;
  Logged log;
  Journal j(d.file(), log.fn(), kInjected);
  ASSERT_TRUE(j.append({started(7, 100)}));
  const ino_t first = inode_of(d.file());
  g_failed_syncs = 1;
  EXPECT_FALSE(j.append({started(8, 101)}));
  EXPECT_EQ(j.failure(), "fdatasync failed: Input/output error (errno 5)");
  EXPECT_EQ(count_lines(log, true, "no longer trusted"), 1u);
  // The next fdatasync would succeed, but the pages of the failed one may
  // be gone: the file is replaced by a fresh snapshot, never appended to.
  EXPECT_TRUE(j.append({started(9, 102)}));
  EXPECT_NE(inode_of(d.file()), first) << "a new file (snapshot renamed over the old one)";
  EXPECT_TRUE(j.failure().empty());
  Logged again;
  Journal k(d.file(), again.fn());
  EXPECT_EQ(k.table().live.size(), 3u);
}

// Issue 22, group commit: write() leaves the fdatasync to a ticket synced
// outside the caller's mutex; one ticket covers every write before it, a
// later write waits for the next one, and a compaction meanwhile counts as
// the sync (its snapshot holds the records).
TEST(JournalDisk, AWriteIsDurableOnlyOnceATicketCoveringItIsSynced) {
  TempDir d;
  Logged log;
  Journal j(d.file(), log.fn(), kInjected);
  std::uint64_t a = 0, b = 0, c = 0;
  ASSERT_EQ(j.write({started(7, 100)}, &a), Journal::Write::Written);
  ASSERT_EQ(j.write({started(8, 101)}, &b), Journal::Write::Written);
  EXPECT_LT(a, b);
  EXPECT_LT(j.durable_seq(), a) << "not durable before a sync";
  EXPECT_EQ(scan_journal(read_file(d.file())).records.size(), 2u) << "but written";
  Journal::SyncTicket t = j.sync_ticket();
  ASSERT_GE(t.fd, 0);
  ASSERT_EQ(j.write({started(9, 102)}, &c), Journal::Write::Written); // after the ticket
  EXPECT_EQ(Journal::sync_outside(t), 0);
  EXPECT_EQ(t.fd, -1) << "the duplicate descriptor is closed";
  j.sync_done(t, 0);
  EXPECT_GE(j.durable_seq(), b) << "one sync covers both writes before it";
  EXPECT_LT(j.durable_seq(), c) << "the write after the ticket waits for the next";
  EXPECT_FALSE(j.all_durable());
  EXPECT_TRUE(j.sync_now());
  EXPECT_TRUE(j.all_durable());
  EXPECT_EQ(j.sync_ticket().fd, -1) << "nothing to sync";
  // A compaction between the ticket and its result: durable by the snapshot.
  std::uint64_t e = 0;
  ASSERT_EQ(j.write({rec(JournalKind::Forgotten, 7, 100)}, &e), Journal::Write::Written);
  Journal::SyncTicket u = j.sync_ticket();
  ASSERT_TRUE(j.compact());
  EXPECT_GE(j.durable_seq(), e);
  EXPECT_EQ(Journal::sync_outside(u), 0);
  j.sync_done(u, EIO); // of the replaced file: not a failure of this one
  EXPECT_TRUE(j.failure().empty());
  EXPECT_TRUE(log.lines.empty()) << log.lines.front().second;
}

TEST(JournalDisk, AFailedTicketSyncMakesTheFileUntrustedUntilASnapshot) {
  TempDir d;
  Logged log;
  Journal j(d.file(), log.fn(), kInjected);
  std::uint64_t a = 0;
  ASSERT_EQ(j.write({started(7, 100)}, &a), Journal::Write::Written);
  Journal::SyncTicket t = j.sync_ticket();
  g_failed_syncs = 1;
  EXPECT_EQ(Journal::sync_outside(t), EIO);
  j.sync_done(t, EIO);
  EXPECT_LT(j.durable_seq(), a);
  EXPECT_EQ(j.failure(), "fdatasync failed: Input/output error (errno 5)");
  EXPECT_EQ(count_lines(log, true, "no longer trusted"), 1u);
  EXPECT_EQ(j.sync_ticket().fd, -1) << "only a snapshot makes it durable now";
  EXPECT_FALSE(j.sync_now());
  std::uint64_t b = 0;
  EXPECT_EQ(j.write({started(8, 101)}, &b), Journal::Write::Durable) << "a fresh snapshot";
  EXPECT_TRUE(j.failure().empty());
  EXPECT_TRUE(j.all_durable());
  Logged again;
  Journal k(d.file(), again.fn());
  EXPECT_EQ(k.table().live.size(), 2u);
}

TEST(JournalDisk, RetryRecoversWithoutANewRecord) {
  TempDir d;
  Logged log;
  Journal j(d.file(), log.fn(), kInjected);
  g_failed_writes = 1;
  EXPECT_FALSE(j.append({started(7, 100)}));
  g_failed_fsyncs = 1;
  EXPECT_FALSE(j.retry());
  EXPECT_FALSE(j.failure().empty());
  EXPECT_TRUE(j.retry());
  EXPECT_TRUE(j.failure().empty());
  Logged again;
  Journal k(d.file(), again.fn());
  EXPECT_EQ(k.table().live.size(), 1u);
}

// Issue 40: a write() never compacts (its fsyncs would be made under
// Slurm's locks); the file grows past its size until the syncer's
// CompactionTicket steps run, and what is written between the snapshot and
// its rename is kept.
TEST(Journal, AWriteNeverCompactsAndWhatIsWrittenDuringACompactionIsKept) {
  TempDir d;
  Logged log;
  Journal j(d.file(), log.fn());
  std::string big(4000, 'x');
  std::uint64_t seq = 0;
  for (std::int64_t a = 1; a <= 400; ++a) {
    ASSERT_NE(j.write({started(static_cast<std::uint32_t>(a), a),
                       rec(JournalKind::SetupAccepted, static_cast<std::uint32_t>(a), a, big)},
                      &seq),
              Journal::Write::Durable)
        << "record " << a << ": snapshotted inside write()";
    if (a < 390)
      j.write({rec(JournalKind::Forgotten, static_cast<std::uint32_t>(a), a)}, &seq);
  }
  ASSERT_TRUE(j.sync_now());
  ASSERT_GT(fs::file_size(d.file()), kJournalCompactBytes);
  const std::uint64_t before = j.durable_seq();
  std::uint64_t during = 0;
  ASSERT_TRUE(compact_outside(j, [&] {
    j.write({started(9001, 9001)}, &during); // appended to the old file, and kept
    j.write({rec(JournalKind::Forgotten, 395, 395)}, &during);
  }));
  EXPECT_LT(fs::file_size(d.file()), kJournalCompactBytes);
  EXPECT_GE(j.durable_seq(), before);
  EXPECT_LT(j.durable_seq(), during) << "the tail counted durable before any sync of it";
  ASSERT_TRUE(j.sync_now());
  Journal again(d.file(), log.fn());
  EXPECT_EQ(again.table().live.count(9001), 1u) << "a record written during the compaction lost";
  EXPECT_EQ(again.table().live.count(395), 0u);
  EXPECT_EQ(again.table().live.count(396), 1u);
  EXPECT_EQ(again.table().live.size(), 11u); // 390..400 but 395, and 9001
  EXPECT_TRUE(leftovers(d).empty()) << testing::PrintToString(leftovers(d));
}

namespace {
int g_datasyncs = 0;
int counting_fdatasync(int fd) {
  ++g_datasyncs;
  return ::fdatasync(fd);
}
} // namespace

// Issue 40: the new file needs a fdatasync before its rename only when
// records appended during the compaction were synced in the old file (the
// rename must not make them less durable); a sync during a compaction with
// nothing appended yet costs the new file none.
TEST(Journal, ACompactionSyncsTheNewFileOnlyForATailSyncedInTheOldOne) {
  for (const bool appended : {false, true}) {
    TempDir d;
    Logged log;
    Journal j(d.file(), log.fn(), {.fdatasync = counting_fdatasync});
    const std::string big(4000, 'x');
    std::uint64_t seq = 0;
    for (std::int64_t a = 1; a <= 300; ++a)
      j.write({started(static_cast<std::uint32_t>(a), a),
               rec(JournalKind::SetupAccepted, static_cast<std::uint32_t>(a), a, big)},
              &seq);
    Journal::CompactionTicket t = j.compaction_ticket();
    ASSERT_TRUE(t.due);
    if (appended)
      j.write({started(9003, 9003)}, &seq);
    ASSERT_TRUE(j.sync_now()); // in the old file
    Journal::stage_compaction(t);
    g_datasyncs = 0;
    ASSERT_TRUE(j.finish_compaction(t, true));
    EXPECT_EQ(g_datasyncs, appended ? 1 : 0) << (appended ? "a synced tail" : "an empty tail");
    Journal::sync_compaction_folder(t);
    j.compaction_settled(t);
    Journal again(d.file(), log.fn());
    EXPECT_EQ(again.table().live.size(), appended ? 301u : 300u);
  }
}

// A crash between the snapshot's stage and its rename leaves the old file,
// whole; one that lost the fence, or whose file was compacted meanwhile,
// gives the stage up (its temp file removed) and keeps appending.
TEST(Journal, ACompactionNotRenamedLeavesTheOldFileWhole) {
  TempDir d;
  Logged log;
  std::string big(4000, 'x');
  auto fill = [&](Journal &j) {
    for (std::int64_t a = 1; a <= 300; ++a)
      j.append({started(static_cast<std::uint32_t>(a), a),
                rec(JournalKind::SetupAccepted, static_cast<std::uint32_t>(a), a, big)});
  };
  {
    Journal j(d.file(), log.fn());
    fill(j);
    Journal::CompactionTicket t = j.compaction_ticket();
    ASSERT_TRUE(t.due);
    Journal::stage_compaction(t);
    j.append({started(9002, 9002)});
    abandon_staged(t.staged); // the crash: nothing of the stage is read back
  }
  {
    Journal j(d.file(), log.fn());
    EXPECT_EQ(j.table().live.size(), 301u);
  }
  for (const bool fenced_out : {true, false}) {
    TempDir d; // a fresh journal: the one above is compacted at its open
    Journal j(d.file(), log.fn());
    fill(j);
    const auto size = fs::file_size(d.file());
    Journal::CompactionTicket t = j.compaction_ticket();
    ASSERT_TRUE(t.due);
    Journal::stage_compaction(t);
    if (!fenced_out) {
      ASSERT_TRUE(j.compact()); // a compaction of its own since the ticket
    }
    EXPECT_FALSE(j.finish_compaction(t, !fenced_out));
    EXPECT_TRUE(leftovers(d).empty()) << testing::PrintToString(leftovers(d));
    if (fenced_out) {
      EXPECT_EQ(fs::file_size(d.file()), size) << "a fenced-out controller renamed its snapshot";
    }
    EXPECT_TRUE(j.append({started(9003, 9003)}));
    Journal again(d.file(), log.fn());
    EXPECT_EQ(again.table().live.count(9003), 1u);
  }
}
