// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: ctld/journal.hpp
//
// The plugin's own durable record of its setup attempts, kept next to
// Slurm's state (StateSaveLocation/switch_lua.journal).  Slurm saves its job
// state at most every few seconds; the journal is written and fsync'ed
// BEFORE each effect that matters after a crash (a setup's result is acted
// on, the job is released to launch, a teardown starts, an attempt needs
// nothing more), so a restarted slurmctld knows what its saved state may
// not: a setup that returned is never run again, and a setup whose job
// record is gone is torn down with its own job table.
//
// File layout:
//   header  "SWLJRNL1" (8 bytes; "1" is the framing version)
//   record* u32 LE body length, u32 LE CRC-32 (IEEE) of the body, body
//   body    msgpack [ "swlj", <version>, <kind>, <attempt>, <job_id>,
//                     <submit_time>, <job: bin JobArgs::to_msgpack | nil>,
//                     <jobinfo: bin | nil> ]
// Version 1 bodies carry the kinds 1..5.  Version 2 (issue 11) adds the
// kinds 6 and 7 of switch_max_setup_failures, written only while that
// setting is on, so a journal of a cluster that never used it stays
// readable by a version-1 plugin; in a kind-6 body the last slot holds
// bin msgpack [<failures: uint>, <restart_count: uint>] instead of a
// jobinfo.  Version 3 (issue 38, fabric-ID pools) marks every record whose
// job table carries pools (job.pools) and adds kinds 8 and 9, written only
// while a pool is declared (switch_pool_NAME), so a site that never declares
// one writes the journal of version 2 byte for byte; in a kind-8 body the job
// slot holds a job table with job_id, submit_time, attempt and pools only,
// and the last slot bin msgpack [<since: int, Unix seconds>].
// A decoder of version N reads every version <= N and refuses newer ones
// (kJournalVersion is the newest this build reads).
//
// Damage (found when the Journal is constructed):
//   torn tail     the last record is incomplete or fails its checksum and
//                 nothing follows it (a crash during an append): the file
//                 is truncated to the last good record, one log line.
//   corrupt       a bad header, or a bad record with more bytes after it:
//                 one error line, the file is moved aside to
//                 <path>.corrupt-<unix seconds> (named in the line) and the
//                 plugin continues on Slurm's saved job state alone.
//
// A failing disk (issue 24; switch_lua.conf(5), STATESAVELOCATION):
//   failed or short append  the file is cut back (ftruncate) to the last
//                 whole record at once, so bytes written after the disk
//                 recovers never follow a partial record (which the next
//                 start would take for corruption in the middle);
//   failed fdatasync  the kernel may have dropped the dirty pages and a
//                 later fsync can report success for them (the PostgreSQL
//                 "fsyncgate" of 2018): the file is untrusted;
//   untrusted     no record is appended; each append (and retry()) first
//                 writes a fresh snapshot of the whole table (temp file,
//                 fsync, rename, fsync of the folder); once one succeeds the
//                 journal is trusted again.  append() says whether its
//                 records are durable; the caller decides what may not
//                 happen without them.  One error line at the first failure,
//                 one line when it is writable again.
//
// One writer (issues 24 and 40): only the slurmctld in control opens the
// journal, holding the control fence (ctld/fence.hpp: an OFD lock on
// <path>.lock and the epoch in <path>.epoch), checked before each batch of
// records.  A controller that takes control writes a fresh snapshot (a new
// file, renamed onto <path>): a stale writer's descriptor points at the old
// one, which no reader opens.  A file replaced or removed under the writer
// (a stale writer's compaction landing after its last check) is found at
// the next write() and written again from the table in memory.
#pragma once

#include "common/crc32.hpp"
#include "common/expected.hpp"
#include "common/safe_file.hpp"
#include "lua/contract.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace switchlua {

inline constexpr std::uint32_t kJournalVersion = 3;
inline constexpr std::string_view kJournalHeader = "SWLJRNL1";
/// Largest record body accepted (a JobArgs and a 64 KiB jobinfo fit).
inline constexpr std::size_t kJournalMaxRecord = 1 << 20;
/// The file is compacted when it grows past this many bytes.
inline constexpr std::size_t kJournalCompactBytes = 1 << 20;
/// Attempts remembered as finished (newest first) across compactions.
inline constexpr std::size_t kJournalTombstones = 4096;
/// Jobs whose failed setups are counted at once (switch_max_setup_failures);
/// past it the lowest job ids are dropped (their count starts again).
/// Above Slurm's default MaxJobCount (10000) many times over (issue 20: an
/// outage with 5,000 array tasks failing must not forget the oldest, which
/// would then requeue for ever); an entry is 16 bytes in memory and about
/// 30 in a journal snapshot (2 MiB at the bound).
inline constexpr std::size_t kJournalMaxFailureCounts = 65536;

/// What a record says about one setup attempt.
enum class JournalKind : std::uint8_t {
  SetupStarted = 1,    ///< job_start is about to run (job set)
  SetupAccepted = 2,   ///< job_start returned SUCCESS + a table (jobinfo set)
  LaunchReleased = 3,  ///< the job's launch delay is about to end
  TeardownStarted = 4, ///< job_complete is about to run (jobinfo: what it gets, nil allowed)
  Forgotten = 5,       ///< the attempt needs nothing more (torn down, declined, failed)
  /// switch_max_setup_failures (version 2): the job's setup failed and it
  /// was requeued; `failures` consecutive failures so far, the last one in
  /// the run with `restart_count`.
  SetupFailureCounted = 6,
  /// The job's failure count is over: its setup succeeded or declined, or
  /// it was held (`scontrol release` then starts from 0).  Version 2.
  SetupFailuresCleared = 7,
  /// Version 3 (issue 38; switch.lua(5), POOLS): the attempt ended other
  /// than by a clean teardown (its teardown failed and drained, ...): the
  /// pool IDs of its job (job.pools) stay out of use after it is
  /// forgotten, until an administrator frees them.  Written just before
  /// its Forgotten record, only while a pool is declared.  Its last slot
  /// is bin msgpack [since]: the quarantine's start, Unix seconds.
  PoolsQuarantined = 8,
  /// Version 3: an administrator freed the quarantined IDs of `attempt`
  /// (switch-lua pool release): they may be handed out again.
  PoolsReleased = 9,
};
std::string_view journal_kind_name(JournalKind k);

/// One record.  `attempt` is the key (JobArgs::attempt); job_id and
/// submit_time repeat the job record's key for logs and checks.
struct JournalRecord {
  JournalKind kind = JournalKind::SetupStarted;
  std::int64_t attempt = 0;
  std::uint32_t job_id = 0;
  std::int64_t submit_time = 0;
  std::optional<JobArgs> job;          ///< SetupStarted, PoolsQuarantined
  std::optional<MsgpackBytes> jobinfo; ///< SetupAccepted, TeardownStarted
  std::uint32_t failures = 0;          ///< SetupFailureCounted
  std::uint32_t restart_count = 0;     ///< SetupFailureCounted
  std::int64_t since = 0;              ///< PoolsQuarantined: Unix seconds
  bool operator==(const JournalRecord &) const = default;
};

/// A job's consecutive failed setups (switch_max_setup_failures).  Keyed by
/// job id; `restart_count` is Slurm's restart_cnt of the run whose setup
/// failed last: the next run's setup continues the count only if it is
/// that run's requeue (restart_count + 1), so a job id reused after a
/// slurmctld crash, or a run in between that set up fine, starts from 0.
struct SetupFailures {
  std::uint32_t failures = 0;
  std::uint32_t restart_count = 0;
  std::int64_t submit_time = 0; ///< for logs
  bool operator==(const SetupFailures &) const = default;
};

/// The PoolsQuarantined record of `attempt` (issue 38): its job slot a job
/// table with job_id, submit_time, attempt and `pools` only; quarantined
/// `since` (Unix seconds).
JournalRecord pools_quarantined_record(std::int64_t attempt, std::uint32_t job_id,
                                       std::int64_t submit_time, const JobPools &pools,
                                       std::int64_t since);
/// Encodes a record body (msgpack, no framing).
std::string encode_journal_body(const JournalRecord &r);
/// Decodes a record body.  Errors start "switch/lua journal: " and say
/// what is wrong ("unknown record kind 9", "field 'job': ...").
Expected<JournalRecord> decode_journal_body(std::string_view bytes);
/// One framed record: length, CRC-32, body.
std::string frame_journal_record(const JournalRecord &r);

/// What scan_journal() found in a journal image.
struct JournalScan {
  enum class Status { Clean, TornTail, Corrupt };
  Status status = Status::Clean;
  std::vector<JournalRecord> records; ///< the good records, in order
  std::size_t good_bytes = 0;         ///< header + good records
  std::string error;                  ///< TornTail / Corrupt: what and at which offset
};
/// Parses a whole journal image (header included).  An empty image is Clean.
JournalScan scan_journal(std::string_view bytes);

/// One setup attempt the journal knows is not over.
struct JournalEntry {
  JobArgs job;                         ///< as job_start got it (attempt, submit_time inside)
  bool accepted = false;               ///< job_start returned SUCCESS + jobinfo
  std::optional<MsgpackBytes> jobinfo; ///< accepted: the table; teardown: what it gets
  bool launch_released = false;
  bool teardown_started = false;
  bool operator==(const JournalEntry &) const = default;
};

/// The pool IDs of a finished attempt kept out of use (PoolsQuarantined).
struct JournalQuarantine {
  std::uint32_t job_id = 0;
  std::int64_t submit_time = 0;
  JobPools pools;
  std::int64_t since = 0; ///< Unix seconds
  bool operator==(const JournalQuarantine &) const = default;
};

/// The live attempts and the recent tombstones after replaying records.
struct JournalTable {
  std::map<std::int64_t, JournalEntry> live;             ///< by attempt
  std::map<std::int64_t, JournalQuarantine> quarantined; ///< by attempt (issue 38)
  std::set<std::int64_t> forgotten;                      ///< finished attempts (bounded)
  std::map<std::uint32_t, SetupFailures> failures;       ///< by job id (bounded)
  std::int64_t max_attempt = 0;
  /// Applies one record (records for unknown attempts other than
  /// SetupStarted and Forgotten are ignored).
  void apply(const JournalRecord &r);
  /// The records that rebuild this table (for compaction).
  std::vector<JournalRecord> snapshot() const;
  /// Drops the IDs of every pool not in `declared` from the live attempts'
  /// job tables and from the quarantine (a pool removed from the settings,
  /// issue 38); returns the names dropped, each once, sorted.
  std::vector<std::string> keep_pools(const std::set<std::string> &declared);
};

/// Test seam of the journal's own appends (fault injection): each returns
/// as the system call it stands for, errno set on failure.  nullptr: the
/// system call.  `fsync` also goes to the snapshot's write_file_atomically.
struct JournalIo {
  ssize_t (*write)(int fd, const void *buf, std::size_t n) = nullptr;
  int (*fdatasync)(int fd) = nullptr;
  int (*fsync)(int fd) = nullptr;
};

/// The journal file.  Not thread-safe: the core calls it under its mutex.
class Journal {
public:
  using LogFn = std::function<void(bool error, const std::string &line)>;
  /// Opens (or creates) the file at `path`, replays it, handles damage as
  /// described above, and compacts it.  Never fails: a journal that cannot
  /// be opened or written is logged ("switch/lua: journal <path>: ...")
  /// and the plugin runs without one (as before the journal existed).
  /// The caller holds its ControlFence.
  Journal(std::string path, LogFn log, JournalIo io = {});
  ~Journal();
  Journal(const Journal &) = delete;
  Journal &operator=(const Journal &) = delete;

  /// Applies the records to table() (always: it is the truth in memory)
  /// and makes them durable before the caller acts: appended and
  /// fdatasync'ed, or, when the file is untrusted or was replaced, in a
  /// fresh snapshot (a file grown past its size is compacted by the
  /// CompactionTicket steps below, never here).  True when they are on disk (or there is no file at
  /// all: running without a journal, as logged at open); false when the disk failed (see "A failing
  /// disk" above; failure() says how).
  bool append(const std::vector<JournalRecord> &records);

  /// What write() did with its records.
  enum class Write {
    Durable, ///< on disk already (a snapshot, or no file at all)
    Written, ///< written, not yet fdatasync'ed: durable once durable_seq() >= the seq
    Failed,  ///< the disk failed (failure() says how)
  };
  /// As append(), but without the fdatasync of an ordinary append (issue
  /// 22, group commit): the records are applied to table() and written;
  /// `*seq` gets their sequence number (Written only).  The caller makes
  /// them durable before it acts on them: the fdatasync of a sync_ticket()
  /// outside its locks (sync_done()), or sync_now().  An untrusted or
  /// replaced file is snapshotted here, as by append() (Durable or Failed).
  Write write(const std::vector<JournalRecord> &records, std::uint64_t *seq);
  /// Every write() up to this sequence number is durable.
  std::uint64_t durable_seq() const { return durable_seq_; }
  /// Whether every write() so far is durable.
  bool all_durable() const { return durable_seq_ == written_seq_; }
  /// An fdatasync to run without the caller's mutex (sync_outside()): a
  /// duplicate of the file's descriptor, and how far it covers.  fd -1 when
  /// nothing written waits for one (or the journal is failing: only a
  /// snapshot makes it durable again).
  struct SyncTicket {
    int fd = -1;
    std::uint64_t upto = 0;
    std::uint64_t epoch = 0;   ///< compactions so far: a later one made it durable already
    std::uint64_t journal = 0; ///< id() of the journal it is of
    int (*fdatasync)(int fd) = nullptr;
  };
  SyncTicket sync_ticket();
  /// fdatasync of the ticket's descriptor, which it then closes: 0, or
  /// the errno.  Touches no Journal (it may be gone when this returns).
  static int sync_outside(SyncTicket &t);
  /// Back under the caller's mutex: the ticket's result.  A failure makes
  /// the file untrusted (as a failed append's fdatasync does).
  void sync_done(const SyncTicket &t, int err);
  /// fdatasync now of what write() left unsynced (before control is given
  /// up); true when everything written is durable.
  bool sync_now();
  /// This journal among all opened in the process (a SyncTicket's owner).
  std::uint64_t id() const { return id_; }
  /// While untrusted: tries the fresh snapshot now (the core's periodic
  /// check), so the journal recovers without waiting for a record.  True
  /// when the journal is (again) trusted.
  bool retry();
  /// "" while writes succeed; else why not, for logs, reasons and the
  /// status file: "cannot append: No space left on device (errno 28)".
  const std::string &failure() const { return failure_; }
  /// The errno of failure(), 0 when none.
  int failure_errno() const { return failure_errno_; }
  const JournalTable &table() const { return table_; }
  /// JournalTable::keep_pools() of table(); when a pool was dropped, the
  /// next compaction_ticket() is due whatever the file's size, so that the
  /// file no longer holds it once the syncer has run (no I/O here: this
  /// runs under Slurm's locks at a reconfigure).  The names dropped.
  std::vector<std::string> keep_pools(const std::set<std::string> &declared);
  /// A fresh attempt id: microseconds since the epoch, greater than every
  /// attempt seen so far.
  std::int64_t next_attempt();
  /// Whether the file is in use (it could be opened).
  bool active() const { return fd_ >= 0; }
  const std::string &path() const { return path_; }
  /// Issue 40, no fsync under the caller's locks for a file grown past
  /// kJournalCompactBytes (or twice its last snapshot): its compaction in
  /// four steps, two of them without the caller's mutex (the core's
  /// syncer thread), so that a stalled StateSaveLocation never blocks a
  /// thread that holds Slurm's locks or the core's mutex.
  ///  1. compaction_ticket(), under the mutex: `due` when the file is past
  ///     its size; the snapshot of table() (every write() so far, `upto`).
  ///     write() goes on appending to the current file and also keeps what
  ///     it appends from now on (the tail).
  ///  2. stage_compaction(), no lock: the snapshot written to a temp file
  ///     beside the journal and fsync'ed (common/safe_file.hpp stage_file).
  ///  3. finish_compaction(), under the mutex: the tail appended to it
  ///     (and fdatasync'ed there only if sync_now() made part of the tail
  ///     durable meanwhile), renamed onto the journal, written from now on.
  ///     Given up (the temp file removed) when `may_write` is false (the
  ///     fence: control was lost), when the stage failed, or when the file
  ///     was compacted or reopened meanwhile.
  ///  4. sync_compaction_folder(), no lock, then compaction_settled(): the
  ///     rename is durable.  Until then no sync ticket is issued and
  ///     sync_now() syncs the folder first: a later record must not count
  ///     as durable in a file a crash could un-rename.
  /// A crash at any step leaves the old file (every record written up to
  /// step 3) or the new one (the snapshot and the tail) under the name.
  struct CompactionTicket {
    bool due = false;
    std::string image;         ///< header + snapshot (step 1), moved out by step 2
    std::string path;          ///< the journal's path
    std::uint64_t upto = 0;    ///< the write() the snapshot covers
    std::uint64_t epoch = 0;   ///< compactions before it: another one since voids it
    std::uint64_t journal = 0; ///< id() of the journal it is of
    int (*fsync)(int fd) = nullptr;
    StagedFile staged; ///< step 2's temp file
    std::string error; ///< step 2's or 4's failure, for the log line
    int folder_err = 0;
  };
  CompactionTicket compaction_ticket();
  static void stage_compaction(CompactionTicket &t);
  bool finish_compaction(CompactionTicket &t, bool may_write);
  static void sync_compaction_folder(CompactionTicket &t);
  void compaction_settled(const CompactionTicket &t);
  /// Rewrites the file as a snapshot of table() (common/safe_file.hpp:
  /// temp file, fsync, rename, fsync of the folder).  False (logged) when
  /// the old file is still in place; a failed fsync of the folder only is
  /// logged and counts as done.
  bool compact();
  /// What the product does while the journal cannot be written, for the
  /// failure's error line ("no new setup starts ..."; the core sets it from
  /// switch_journal_failure).
  void set_while_failing(std::string what) { while_failing_ = std::move(what); }

private:
  /// Whether the file at path() is no longer the one this Journal writes
  /// (fstat of the descriptor against stat of the path; logged).
  bool replaced();
  /// Records a failure (first one of a streak: one error line).
  void fail(const std::string &what, int err, const std::string &consequence);
  std::string path_;
  LogFn log_;
  JournalIo io_;
  int fd_ = -1;
  std::size_t size_ = 0;
  std::size_t compact_at_ = kJournalCompactBytes;
  bool untrusted_ = false;        ///< a failed append or fdatasync: snapshot first
  std::uint64_t written_seq_ = 0; ///< write()s so far
  std::uint64_t durable_seq_ = 0; ///< of those, the ones known durable
  std::uint64_t epoch_ = 0;       ///< compactions that replaced the file
  bool compacting_ = false;       ///< a CompactionTicket is between steps 1 and 3
  bool compact_wanted_ = false;   ///< keep_pools() dropped a pool: compact at any size
  std::string tail_;              ///< while compacting_: the frames appended since step 1
  bool tail_synced_ = false;      ///< while compacting_: sync_now() synced part of the tail
  std::string folder_pending_;    ///< after step 3, until step 4: the folder to fsync
  std::uint64_t id_ = 0;
  std::string failure_;
  int failure_errno_ = 0;
  std::string while_failing_ = "no new setup starts (each fails naming the journal)";
  JournalTable table_;
};

} // namespace switchlua
