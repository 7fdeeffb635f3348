// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: common/atomic_file.hpp
//
// The one way the project replaces a file: the journal's compaction, the
// status file and the script's last good copy are all written by
// `write_file_atomically()`, so a reader (or a restart after a crash or a
// power loss) sees either the old content or the new, never a mix:
//
//   1. write PATH.tmp.<pid> in the same folder (O_NOFOLLOW; mode set with
//      fchmod, so the umask does not change it),
//   2. fsync it and close it,
//   3. rename it onto PATH,
//   4. fsync the folder, so that the rename itself is on disk.
//
// A failure in steps 1-3 removes the temp file and leaves PATH as it was.
#pragma once

#include "common/expected.hpp"

#include <string>
#include <string_view>
#include <sys/types.h>

namespace switchlua {

/// How write_file_atomically() writes.
struct AtomicWriteOptions {
  mode_t mode = 0600; ///< the new file's permission bits
  /// Test seam: called in place of ::fsync(2) for the temp file, then for
  /// the folder; returns 0, or -1 with errno set.  nullptr: ::fsync.
  int (*fsync_fn)(int fd) = nullptr;
};

/// Why write_file_atomically() failed.
struct AtomicWriteError {
  /// "cannot <create|write|sync|rename|sync the folder of> <path>...: <strerror>"
  std::string message;
  int err = 0; ///< the errno of the failing call
  /// True when only step 4 failed: PATH already holds the new content, but
  /// the rename may not survive a power loss.  False: PATH is untouched.
  bool replaced = false;
};

/// Replaces the file `path` by `data` (steps 1 to 4 above).  Errors: the
/// failing step, the path it was about and errno, in an AtomicWriteError.
Expected<void, AtomicWriteError> write_file_atomically(const std::string &path,
                                                       std::string_view data,
                                                       const AtomicWriteOptions &opts = {});

/// The folder part of `path`: "." for a bare name, "/" for a file in "/".
std::string folder_of(const std::string &path);

} // namespace switchlua
