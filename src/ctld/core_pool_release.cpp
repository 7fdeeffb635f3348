// SPDX-License-Identifier: GPL-2.0-or-later
//
// The controller's side of `switch-lua pool release` (ctld/pool_release.hpp;
// issue 38, switch.lua(5) POOLS), served by the syncer thread every second
// while a pool is declared: the files' I/O outside every lock (the storage
// of StateSaveLocation may stall), the release itself under the core's
// mutex, in control only.
#include "common/log_stamp.hpp"
#include "common/safe_file.hpp"
#include "ctld/core_impl.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fmt/format.h>

namespace switchlua {

namespace {

/// Claims the request in `dir` by a rename (so that one the command
/// withdraws, or a new one written meanwhile, is never removed unread),
/// reads and parses it.  False when there is none; else `req`, or the
/// refusal in `answer.error`.
bool take_request(const std::string &dir, std::optional<PoolReleaseRequest> &req,
                  PoolReleaseAnswer &answer) {
  const std::string request = fmt::format("{}/{}", dir, kPoolReleaseRequest);
  const std::string taken = request + ".taken";
  if (std::rename(request.c_str(), taken.c_str()) != 0)
    return false; // none (ENOENT), or the folder refuses it: the next second again
  std::string error;
  if (auto folder = check_folder(dir); !folder)
    error = folder.error().message; // a request others could have planted
  else if (auto text = read_pool_release_request(taken, error))
    req = parse_pool_release_request(*text, error);
  ::unlink(taken.c_str());
  if (req)
    answer.token = req->token;
  else
    answer.error = fmt::format("{}: {}", request, error);
  return true;
}

} // namespace

void CtldCore::Impl::serve_pool_release() {
  {
    // Every second too: the reuse delays over by now (Pools::cool); jobs
    // the gate keeps PENDING for those IDs start at once.
    std::lock_guard g(mu);
    if (in_control && pools.alloc.cool(pools.mono())) {
      pools.publish(stats);
      if (!pools.waiting.empty())
        port.schedule();
    }
  }
  if (opts.journal_path.empty())
    return;
  {
    std::lock_guard g(mu);
    if (!in_control || frozen || !journal)
      return; // the controller in control answers
  }
  const std::string dir = folder_of(opts.journal_path);
  std::optional<PoolReleaseRequest> req;
  PoolReleaseAnswer answer;
  if (!take_request(dir, req, answer))
    return;
  if (!req)
    port.log(LogLevel::Error, log_line({}, "pool release refused: {}", answer.error));
  else if (Journal::SyncTicket sync = release_pools(*req, answer); sync.journal != 0) {
    // Durable before it is answered: this thread is the syncer, and syncs
    // as run_syncer() does, outside every lock.
    const int err = timed_sync(sync);
    std::lock_guard g(mu);
    if (journal && journal->id() == sync.journal) {
      journal->sync_done(sync, err);
      stats.set_journal_failure(journal->failure());
      if (!journal->failure().empty())
        arm_journal_timer();
      dispatch_pending(); // what this sync made durable too
      ready_pending_effects();
    }
    if (err != 0)
      answer.error = fmt::format("released, but the journal's fdatasync failed ({}): a restart "
                                 "may quarantine them again",
                                 std::strerror(err));
  }
  // The answer, outside every lock; not fsync'ed (the journal holds what
  // was done).  A folder that refuses it is logged: the command times out.
  auto w = write_file_atomically(dir, std::string(kPoolReleaseAnswer),
                                 encode_pool_release_answer(answer), {.durable = false});
  if (!w)
    port.log(LogLevel::Error,
             log_line({}, "pool release: cannot write the answer: {}", w.error().message));
}

Journal::SyncTicket CtldCore::Impl::release_pools(const PoolReleaseRequest &req,
                                                  PoolReleaseAnswer &answer) {
  std::lock_guard g(mu);
  if (!pools.alloc.any()) {
    answer.error = "no pool is declared (switch_pool_NAME): nothing is quarantined";
    return {};
  }
  if (!in_control || frozen || !journal || !fence_ok()) {
    answer.error = "this slurmctld is no longer in control: ask again";
    return {};
  }
  if (!journal->failure().empty()) {
    answer.error =
        fmt::format("the journal cannot be written ({}): nothing is released", journal->failure());
    return {};
  }
  answer.released = pools.release(req);
  std::vector<JournalRecord> recs = std::exchange(pools.records, {});
  const bool written = recs.empty() || journal_append(recs);
  for (const PoolReleased &p : answer.released)
    port.log(LogLevel::Info,
             log_line({.job_id = p.job_id},
                      "pool IDs released by an administrator (switch-lua pool release): {}, "
                      "quarantined since {}{}",
                      pool_ids_text(p.ids), utc_text(p.since),
                      written ? ""
                              : "; its journal record could not be written: a restart "
                                "quarantines them again"));
  pools.publish(stats);
  if (!answer.released.empty() && !pools.waiting.empty())
    port.schedule(); // jobs kept PENDING for these IDs (the gate) start now
  return !recs.empty() && written ? journal->sync_ticket() : Journal::SyncTicket{};
}

} // namespace switchlua
