// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: common/epoch_file.hpp
//
// The control epoch file, `<journal>.epoch` under StateSaveLocation (issue
// 40; switch.lua(5), HIGH AVAILABILITY): one decimal number and a newline,
// replaced by rename each time a slurmctld takes control of the journal.
// The controller writes it (ctld/fence.hpp); the supervisor only reads it,
// before it starts a queued call, to refuse the calls of a slurmctld that
// another one fenced out while it was stopped.
#pragma once

#include <cstdint>
#include <string>
#include <sys/types.h>
#include <time.h>

namespace switchlua {

/// The epoch written in the file at `path`: 0 when there is none, it cannot
/// be read, it is not a regular file or it is longer than 64 bytes (a read
/// that never blocks and never takes more: common/safe_file.hpp).
std::uint64_t read_epoch_file(const std::string &path);

/// read_epoch_file() with a cache: one stat(2) per call, and a read only when
/// the file's identity (device, inode, size, mtime) changed since the last
/// one.  Not thread-safe (the supervisor's one thread).
class EpochWatch {
public:
  /// The epoch in `path` now (0 as read_epoch_file()).
  std::uint64_t current(const std::string &path);

private:
  std::string path_;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  off_t size_ = -1;
  struct timespec mtime_{};
  std::uint64_t value_ = 0;
};

} // namespace switchlua
