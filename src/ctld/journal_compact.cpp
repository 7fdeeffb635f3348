// SPDX-License-Identifier: GPL-2.0-or-later
// The journal's compaction without the caller's locks (issue 40): the
// CompactionTicket steps of journal.hpp.  The snapshot is written and
// fsync'ed by the core's syncer thread, outside every lock; only its
// rename, and the few records appended meanwhile, are done under the
// core's mutex.
#include "ctld/journal.hpp"

#include "common/log_stamp.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

namespace switchlua {

Journal::CompactionTicket Journal::compaction_ticket() {
  CompactionTicket t;
  if (fd_ < 0 || untrusted_ || compacting_ || (size_ <= compact_at_ && !compact_wanted_))
    return t;
  t.due = true;
  t.image = kJournalHeader;
  for (const JournalRecord &r : table_.snapshot())
    t.image += frame_journal_record(r);
  t.path = path_;
  t.upto = written_seq_;
  t.epoch = epoch_;
  t.journal = id_;
  t.fsync = io_.fsync;
  compacting_ = true;
  tail_.clear();
  tail_synced_ = false;
  return t;
}

void Journal::stage_compaction(CompactionTicket &t) {
  if (!t.due)
    return;
  auto staged = stage_file(t.path, t.image, {.fsync_fn = t.fsync});
  if (!staged)
    t.error = staged.error().message;
  else
    t.staged = std::move(*staged);
  t.image.clear();
  t.image.shrink_to_fit();
}

bool Journal::finish_compaction(CompactionTicket &t, bool may_write) {
  if (!t.due)
    return false;
  const bool mine = t.journal == id_ && t.epoch == epoch_ && compacting_ && fd_ >= 0;
  if (mine)
    compacting_ = false;
  std::string tail = mine ? std::move(tail_) : std::string();
  tail_.clear();
  const bool tail_synced = std::exchange(tail_synced_, false) && mine;
  if (!mine || !may_write || t.staged.fd < 0) {
    if (mine && !t.error.empty() && !untrusted_)
      log_(true, log_line({}, "journal {}: compaction failed: {}; appending to the old file", path_,
                          t.error));
    abandon_staged(t.staged);
    return false;
  }
  // The records appended since the snapshot, then (only if sync_now() made
  // some of them durable in the old file) their fdatasync, before the
  // rename makes the new file the journal.
  std::string why;
  if (!tail.empty() &&
      ::write(t.staged.fd, tail.data(), tail.size()) != static_cast<ssize_t>(tail.size()))
    why = fmt::format("cannot append the {} bytes written meanwhile: {}", tail.size(),
                      std::strerror(errno ? errno : ENOSPC));
  else if (tail_synced && (io_.fdatasync ? io_.fdatasync(t.staged.fd) : ::fdatasync(t.staged.fd)))
    why = fmt::format("fdatasync: {}", std::strerror(errno));
  if (why.empty()) {
    if (auto renamed = commit_staged(t.staged); !renamed)
      why = renamed.error().message;
  }
  if (!why.empty()) {
    abandon_staged(t.staged);
    log_(true,
         log_line({}, "journal {}: compaction failed: {}; appending to the old file", path_, why));
    return false;
  }
  ::close(fd_);
  fd_ = std::exchange(t.staged.fd, -1);
  struct stat st{};
  if (::fstat(fd_, &st) == 0)
    size_ = static_cast<std::size_t>(st.st_size);
  // Many live attempts make a large snapshot: compact again only once the
  // file has doubled (as compact()).
  compact_at_ = std::max(kJournalCompactBytes, 2 * (size_ - std::min(size_, tail.size())));
  ++epoch_;
  compact_wanted_ = false;
  // durable_seq_ stays: until the folder's fsync (step 4) a crash may
  // leave the old file under the name, where what was not synced yet is
  // not durable.  compaction_settled() counts the snapshot.
  folder_pending_ = t.staged.dir;
  return true;
}

void Journal::sync_compaction_folder(CompactionTicket &t) {
  if (t.due && !t.staged.dir.empty())
    t.folder_err = fsync_folder(t.staged.dir, t.fsync);
}

void Journal::compaction_settled(const CompactionTicket &t) {
  if (!t.due || t.journal != id_ || folder_pending_.empty() || t.epoch + 1 != epoch_)
    return;
  folder_pending_.clear();
  durable_seq_ = std::max(durable_seq_, t.upto); // the snapshot holds them, under the name
  if (t.folder_err != 0)                         // as compact(): logged, counted as done
    log_(true, log_line({}, "journal {}: compacted, but cannot fsync its folder: {}", path_,
                        std::strerror(t.folder_err)));
}

} // namespace switchlua
