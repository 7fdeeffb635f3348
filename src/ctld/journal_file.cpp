// SPDX-License-Identifier: GPL-2.0-or-later
// The journal's file under StateSaveLocation: reading it back at start,
// appending records (write(2) under the core's mutex, fdatasync either
// there or outside it through a SyncTicket: the group commit of issue 22),
// snapshots, the failing-disk rules of issue 24, and a file replaced under
// the writer written again (issue 40).  The record format and the table it
// replays into are journal.cpp; the writer's lock and epoch are fence.cpp.
#include "ctld/journal.hpp"

#include "common/log_stamp.hpp"
#include "common/safe_file.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <optional>
#include <sys/stat.h>
#include <unistd.h>

namespace switchlua {
namespace {

/// Writes all of `data`; false with errno set on an error or a write that
/// stops short (ENOSPC when the call reported no error).
bool write_all(int fd, std::string_view data, const JournalIo &io) {
  while (!data.empty()) {
    ssize_t n =
        io.write ? io.write(fd, data.data(), data.size()) : ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      if (n == 0)
        errno = ENOSPC;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

/// A journal larger than this is not read (compaction keeps it far below).
constexpr std::size_t kJournalMaxBytes = std::size_t{1} << 30;

/// Reads all of `path` into `out` (common/safe_file.hpp: a regular file of
/// ours, no link followed, bounded); a missing file reads as empty.  The
/// error's message otherwise.
std::optional<std::string> read_whole_file(const std::string &path, std::string &out) {
  auto fd = open_own_file(path, O_RDONLY);
  if (!fd)
    return fd.error().err == ENOENT ? std::nullopt : std::optional(fd.error().message);
  auto bytes = read_fd_bounded(*fd, kJournalMaxBytes, path);
  ::close(*fd);
  if (!bytes)
    return bytes.error().message;
  out = std::move(*bytes);
  return std::nullopt;
}

} // namespace

Journal::Journal(std::string path, LogFn log, JournalIo io)
    : path_(std::move(path)), log_(std::move(log)), io_(io) {
  static std::atomic<std::uint64_t> journals{0};
  id_ = ++journals;
  auto say = [&](bool error, const std::string &what) {
    log_(error, log_line({}, "journal {}: {}", path_, what));
  };
  std::string image;
  if (auto why = read_whole_file(path_, image)) {
    say(true, fmt::format("cannot read: {}; running without a journal (recovery after a "
                          "crash relies on Slurm's saved job state alone)",
                          *why));
    return;
  }
  JournalScan scan = scan_journal(image);
  switch (scan.status) {
  case JournalScan::Status::Clean:
    break;
  case JournalScan::Status::TornTail:
    say(false, fmt::format("torn tail ({}), truncated to {} bytes: a crash during an append; "
                           "{} records kept",
                           scan.error, scan.good_bytes, scan.records.size()));
    break;
  case JournalScan::Status::Corrupt: {
    std::string aside = fmt::format("{}.corrupt-{}", path_,
                                    std::chrono::duration_cast<std::chrono::seconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
    bool moved = ::rename(path_.c_str(), aside.c_str()) == 0;
    say(true, fmt::format("CORRUPT ({}); {}; the {} records before it are ignored too and "
                          "switch/lua continues on Slurm's saved job state alone: setups that "
                          "returned since Slurm's last save may run again, and setups whose job "
                          "record is gone are not torn down (see switch.lua(5), Journal)",
                          scan.error,
                          moved ? fmt::format("moved aside to {}", aside)
                                : fmt::format("cannot move it aside to {}: {}", aside,
                                              std::strerror(errno)),
                          scan.records.size()));
    scan.records.clear();
    break;
  }
  }
  for (const JournalRecord &r : scan.records)
    table_.apply(r);
  auto opened = open_own_file(path_, O_WRONLY | O_CREAT | O_APPEND, 0600);
  if (!opened) {
    say(true, fmt::format("cannot open for writing: {}; running without a journal",
                          opened.error().message));
    return;
  }
  fd_ = *opened;
  compact();
  if (!table_.live.empty())
    say(false, fmt::format("{} setup attempt(s) not over, {} remembered as over",
                           table_.live.size(), table_.forgotten.size()));
}

Journal::~Journal() {
  if (fd_ >= 0)
    ::close(fd_);
}

std::vector<std::string> Journal::keep_pools(const std::set<std::string> &declared) {
  std::vector<std::string> dropped = table_.keep_pools(declared);
  // Issue 40: never a compaction here (this runs under Slurm's locks at a
  // reconfigure): the syncer's next compaction_ticket() is due.
  compact_wanted_ = compact_wanted_ || !dropped.empty();
  return dropped;
}

bool Journal::compact() {
  if (fd_ < 0)
    return false;
  std::string image(kJournalHeader);
  for (const JournalRecord &r : table_.snapshot())
    image += frame_journal_record(r);
  auto written = write_file_atomically(path_, image, {.fsync_fn = io_.fsync});
  if (!written && !written.error().replaced) {
    if (untrusted_) // the streak's line is already out
      return false;
    log_(true, log_line({}, "journal {}: compaction failed: {}; appending to the old file", path_,
                        written.error().message));
    return false;
  }
  if (!written) // the snapshot is in place; only its rename may not be on disk yet
    log_(true, log_line({}, "journal {}: compacted, but {}", path_, written.error().message));
  // Many live attempts make a large snapshot: compact again only once the
  // file has doubled.
  compact_at_ = std::max(kJournalCompactBytes, 2 * image.size());
  compact_wanted_ = false;
  // The old descriptor points at the file the rename replaced: appending
  // to it would write where no reader looks.  Without the new one, run
  // without a journal, loudly, rather than lose records silently.
  auto nfd = open_own_file(path_, O_WRONLY | O_APPEND);
  ::close(fd_);
  fd_ = nfd ? *nfd : -1;
  if (!nfd) {
    log_(true, log_line({},
                        "journal {}: cannot open the compacted file for writing ({}): running "
                        "without a journal; what happens now may be repeated after a crash",
                        path_, nfd.error().message));
    return false;
  }
  size_ = image.size();
  ++epoch_;
  durable_seq_ = written_seq_; // the snapshot holds every record written so far
  compacting_ = false;         // a CompactionTicket outstanding is void (epoch)
  tail_.clear();
  tail_synced_ = false;
  folder_pending_.clear(); // this one synced the folder (or said it could not)
  return true;
}

void Journal::fail(const std::string &what, int err, const std::string &consequence) {
  const bool first = failure_.empty();
  failure_ = fmt::format("{}: {} (errno {})", what, std::strerror(err), err);
  failure_errno_ = err;
  untrusted_ = true;
  if (first)
    log_(true, log_line({},
                        "journal {}: {}; {}; until a fresh snapshot of it is written and synced "
                        "{} (see switch_lua.conf(5), STATESAVELOCATION)",
                        path_, failure_, consequence, while_failing_));
}

bool Journal::retry() {
  if (fd_ < 0 || !untrusted_)
    return !untrusted_;
  if (!compact() || fd_ < 0)
    return false;
  untrusted_ = false;
  log_(false, log_line({},
                       "journal {}: writable again after '{}': a fresh snapshot ({} setup "
                       "attempt(s) not over) is written and synced; setups start again",
                       path_, failure_, table_.live.size()));
  failure_.clear();
  failure_errno_ = 0;
  return true;
}

namespace {

/// The consequence a failed fdatasync's error line names.
constexpr std::string_view kSyncFailed =
    "the kernel may have dropped what was written, and a later sync can report success "
    "for it: the file is no longer trusted";

int call_fdatasync(int (*fn)(int), int fd) {
  return fn ? fn(fd) : ::fdatasync(fd);
}

} // namespace

Journal::Write Journal::write(const std::vector<JournalRecord> &records, std::uint64_t *seq) {
  const Write ok = untrusted_ ? Write::Failed : Write::Durable;
  if (records.empty())
    return ok;
  for (const JournalRecord &r : records)
    table_.apply(r);
  if (fd_ < 0)
    return ok;
  if (untrusted_) // the table already holds the new records: the snapshot writes them
    return retry() ? Write::Durable : Write::Failed;
  if (replaced()) { // a file past its size: compaction_ticket(), outside the locks
    if (compact())
      return Write::Durable;
    if (fd_ < 0)
      return Write::Failed;
  }
  std::string data;
  for (const JournalRecord &r : records)
    data += frame_journal_record(r);
  if (!write_all(fd_, data, io_)) {
    const int err = errno;
    // Cut back to the last whole record: a partial one followed, once the
    // disk has room again, by whole ones would read as corruption in the
    // middle and cost every live attempt at the next start.
    const bool cut = ::ftruncate(fd_, static_cast<off_t>(size_)) == 0;
    fail("cannot append", err,
         cut ? fmt::format("cut back to its last whole record ({} bytes)", size_)
             : fmt::format("cannot cut it back to its last whole record ({} bytes): {}", size_,
                           std::strerror(errno)));
    return Write::Failed;
  }
  size_ += data.size();
  if (compacting_)
    tail_ += data; // written again into the snapshot at finish_compaction()
  *seq = ++written_seq_;
  return Write::Written;
}

bool Journal::replaced() {
  struct stat mine{}, named{};
  if (::fstat(fd_, &mine) != 0)
    return false;
  if (::stat(path_.c_str(), &named) == 0 && named.st_dev == mine.st_dev &&
      named.st_ino == mine.st_ino)
    return false;
  log_(true, log_line({},
                      "journal {}: the file was removed or replaced under the controller in "
                      "control (a stale controller's write, or by hand): written again from "
                      "memory ({} setup attempt(s) not over)",
                      path_, table_.live.size()));
  return true;
}

bool Journal::append(const std::vector<JournalRecord> &records) {
  std::uint64_t seq = 0;
  const Write w = write(records, &seq);
  if (w != Write::Written)
    return w == Write::Durable;
  return sync_now();
}

bool Journal::sync_now() {
  if (fd_ < 0 || all_durable())
    return !untrusted_;
  if (untrusted_)
    return false;
  if (!folder_pending_.empty()) { // a compaction's rename first (CompactionTicket step 4)
    if (const int err = fsync_folder(folder_pending_, io_.fsync); err != 0) {
      fail("fsync of the journal's folder failed", err, std::string(kSyncFailed));
      return false;
    }
    folder_pending_.clear();
  }
  if (call_fdatasync(io_.fdatasync, fd_) != 0) {
    const int err = errno;
    fail("fdatasync failed", err, std::string(kSyncFailed));
    return false;
  }
  durable_seq_ = written_seq_;
  // What was appended since the snapshot is durable in the old file only.
  tail_synced_ = tail_synced_ || (compacting_ && !tail_.empty());
  return true;
}

Journal::SyncTicket Journal::sync_ticket() {
  // Not while a compaction's rename waits for its folder's fsync: the
  // syncer does that first (CompactionTicket step 4).
  if (fd_ < 0 || untrusted_ || all_durable() || !folder_pending_.empty())
    return {};
  const int fd = ::fcntl(fd_, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) { // no descriptor to spare: the sync here, under the caller's mutex
    sync_now();
    return {};
  }
  return {
      .fd = fd, .upto = written_seq_, .epoch = epoch_, .journal = id_, .fdatasync = io_.fdatasync};
}

int Journal::sync_outside(SyncTicket &t) {
  if (t.fd < 0)
    return 0;
  const int err = call_fdatasync(t.fdatasync, t.fd) == 0 ? 0 : errno;
  ::close(t.fd);
  t.fd = -1;
  return err;
}

void Journal::sync_done(const SyncTicket &t, int err) {
  // A compaction since the ticket wrote and synced a snapshot of the whole
  // table: what the ticket covers is durable whatever its fdatasync said
  // (of a file no reader opens now).  Once untrusted, only a snapshot counts.
  if (t.journal != id_ || t.epoch != epoch_ || untrusted_)
    return;
  if (err != 0) {
    fail("fdatasync failed", err, std::string(kSyncFailed));
    return;
  }
  durable_seq_ = std::max(durable_seq_, t.upto);
}

std::int64_t Journal::next_attempt() {
  std::int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  std::int64_t a = std::max(now, table_.max_attempt + 1);
  table_.max_attempt = a;
  return a;
}

} // namespace switchlua
