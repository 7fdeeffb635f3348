// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: ctld/fence.hpp
//
// The control fence of the journal (issue 40; switch.lua(5), HIGH
// AVAILABILITY): which slurmctld may write StateSaveLocation's journal and
// run hooks, and how one that lost that right finds out.
//
// Files beside the journal <J> (StateSaveLocation/switch_lua.journal):
//   <J>.lock   the lock file: an OFD write lock (fcntl F_OFD_SETLK) held
//              by the controller in control; it says "<host> pid <pid>
//              since <unix seconds>".
//   <J>.epoch  the epoch: one decimal integer and a newline, replaced
//              atomically (temp file, fsync, rename, fsync of the folder)
//              by each controller that takes control, one higher each time
//              (a missing file reads as 0).
//
// Taking control (ControlFence::take):
//   1. the lock is tried every 100 ms for up to `wait` (5 s in the plugin);
//   2. if another process still holds it (a stopped, partitioned or stale
//      primary), a fenced takeover: a fresh lock file <J>.lock.<pid> is
//      created and locked, then renamed onto <J>.lock, so the old holder's
//      lock is on a file no one opens any more;
//   3. the epoch is read, incremented and written durably;
//   4. the identities (device and inode) of the lock file (the path and the
//      descriptor: they must be one file) and of the epoch file are kept.
// Every step that fails returns an error naming it; nothing of the old
// holder's is touched but the name <J>.lock.
//
// Staying in control (ControlFence::check): two stat(2) calls.  The
// controller is stale when <J>.lock is gone or is no longer the file it
// locked (another controller's fenced takeover, an operator who removed
// it), or when <J>.epoch is no longer the file it wrote (another
// controller took control since).  The core checks before each batch of
// journal records, each hook launch, the effects of each decision whose
// records the syncer made durable (core_worker.cpp) or that were synced
// under Slurm's locks (core.cpp, apply(): an interactive job's launch
// among them), and every 500 ms.
//
// What this cannot see, and the man page says: a lock lost inside the
// kernel or on the NFS server while the file stays (a lease expired, a
// mount with `nolock` or `local_lock`): then only the epoch tells, once
// another controller takes control; and a process stopped between its
// check and its write (microseconds) may land that one write, which the
// new controller's journal no longer reads (Journal heals a replaced
// file at its next write, journal_file.cpp).
#pragma once

#include "common/expected.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <sys/types.h>

namespace switchlua {

/// Test seam: called with the name of each step of take() before it runs
/// ("lock", "fence-create", "fence-rename", "epoch-read", "epoch-write",
/// "identify"), so a test can take the lock away (remove or replace a file)
/// at that point.  nullptr: nothing.
using FenceStepHook = std::function<void(std::string_view step)>;

/// Why a controller is no longer in control (ControlFence::check()).
struct FenceStale {
  std::uint64_t epoch = 0; ///< this controller's epoch
  std::uint64_t now = 0;   ///< the epoch on disk now (== epoch when only the lock was lost)
  std::string why;         ///< "its lock file ... was removed", "another slurmctld took control"
};

/// The right to write one journal, held from take() until destroyed.
class ControlFence {
public:
  /// Takes control of the journal at `journal` (steps 1-4 above).  `wait`:
  /// how long to wait for a lock another process holds before fencing it
  /// out.  `may_fence` false: a lock still held after `wait` is an error
  /// (a controller that lost a race for control retries so, never taking
  /// control back from the one that won it).  Errors start "switch/lua:
  /// journal <journal>: " and name the step that failed and errno (the lock
  /// or epoch file cannot be created, written or renamed; the lock file or
  /// the epoch changed under it); the caller then runs WAITING and retries.
  static Expected<std::unique_ptr<ControlFence>> take(const std::string &journal,
                                                      std::chrono::milliseconds wait,
                                                      const FenceStepHook &step = {},
                                                      bool may_fence = true);
  ~ControlFence();
  ControlFence(const ControlFence &) = delete;
  ControlFence &operator=(const ControlFence &) = delete;

  /// This control period's epoch (>= 1).
  std::uint64_t epoch() const { return epoch_; }
  /// Non-empty when take() fenced out a holder: what its lock file said
  /// ("ctld1 pid 123 since 1765000000"), or "holder unknown".
  const std::string &fenced_holder() const { return fenced_holder_; }
  /// nullopt while this controller is still in control; else why not.
  /// Two stat(2) calls (and a read of the epoch file once it changed).
  std::optional<FenceStale> check() const;
  /// The epoch written in the file at `epoch_path` (0 when there is none or
  /// it cannot be read).
  static std::uint64_t read_epoch(const std::string &epoch_path);
  const std::string &lock_path() const { return lock_path_; }
  const std::string &epoch_path() const { return epoch_path_; }

private:
  ControlFence() = default;
  /// take() step 2: a fresh lock file locked and renamed onto lock_path_
  /// (fd_ then holds it).  Errors name the call and errno.
  Expected<void> fence_out(const std::string &journal,
                           const std::function<void(std::string_view)> &at);
  /// take() step 4: the lock file at lock_path_ is fd_'s and the epoch file
  /// says epoch_; their identities kept for check().
  Expected<void> identify(const std::string &journal);
  std::string lock_path_;
  std::string epoch_path_;
  int fd_ = -1; ///< the locked lock file
  std::uint64_t epoch_ = 0;
  dev_t lock_dev_ = 0;
  ino_t lock_ino_ = 0;
  dev_t epoch_dev_ = 0;
  ino_t epoch_ino_ = 0;
  std::string fenced_holder_;
};

} // namespace switchlua
