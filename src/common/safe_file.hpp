// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: common/safe_file.hpp
//
// The one place for the files the project writes as root or SlurmUser (the
// status file, the metrics textfile, the journal and its snapshots, the
// script's last good copy) and for the bounded reads of files that others
// could change (issue 35).  Rules:
//
//   * a folder written in must be owned by root or by us (the effective
//     uid) and not writable by group or others, unless it has the sticky
//     bit and is owned by root or us (/tmp): otherwise another user could
//     plant or swap entries in it (check_folder);
//   * a file is replaced by write_file_atomically():
//       1. create a temp file in that folder with O_CREAT|O_EXCL|O_NOFOLLOW
//          (so a symlink, FIFO or file planted at the temp name is never
//          opened: the next name is tried), mode set with fchmod,
//       2. fsync it and close it,
//       3. rename it onto the name,
//       4. fsync the folder, so that the rename itself is on disk;
//     a failure in steps 1-3 removes the temp file and leaves the file as
//     it was; a reader sees the old content or the new, never a mix;
//   * a file appended to or locked (the journal) is opened by
//     open_own_file(): no link followed, no block on a FIFO, and refused
//     unless it is a regular file owned by us and not writable by others;
//   * a read is bounded: read_fd_bounded() (the one read loop) and
//     read_file_bounded() never take more than the bound, and never block
//     on a FIFO put in a file's place.
#pragma once

#include "common/expected.hpp"

#include <cstddef>
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
  /// false: steps 2 and 4 do not fsync.  A reader still sees the old
  /// content or the new, never a mix, but after a power loss the file may
  /// be the old one or empty.  For the status file and the metrics
  /// textfile, which must go on being written while StateSaveLocation's
  /// storage stalls its syncs (issue 40), and are rewritten every few
  /// seconds anyway.
  bool durable = true;
};

/// Why a safe_file function failed.
struct AtomicWriteError {
  /// One line naming the path and why, e.g. "cannot create <path>: <strerror>"
  /// or "<folder>: owned by uid 1000, mode 0777: refused; ...".
  std::string message;
  int err = 0; ///< the errno of the failing call (EPERM for a refusal)
  /// True when only step 4 failed: the file already holds the new content,
  /// but the rename may not survive a power loss.  False: it is untouched.
  bool replaced = false;
};
using FileError = AtomicWriteError;

/// Checks that the folder `dir` may be written in as root or SlurmUser
/// (the rule above).  Error (err EPERM, or the errno of stat):
/// "<dir>: the folder is owned by uid N, mode 0777: refused; a folder
/// switch/lua writes in must be owned by root or uid M and not writable by
/// group or others (unless sticky)".
Expected<void, FileError> check_folder(const std::string &dir);

/// Replaces the file `dir`/`name` by `data` (steps 1 to 4 above), after
/// check_folder(dir).  `name` is a plain file name (no '/').  Errors: the
/// refusal of the folder, or the failing step, the path it was about and
/// errno.
Expected<void, FileError> write_file_atomically(const std::string &dir, const std::string &name,
                                                std::string_view data,
                                                const AtomicWriteOptions &opts = {});
/// The same for a path: write_file_atomically(folder_of(path), its name).
Expected<void, FileError> write_file_atomically(const std::string &path, std::string_view data,
                                                const AtomicWriteOptions &opts = {});

/// A file written and fsync'ed beside its final name but not yet renamed
/// onto it (stage_file()): the first two steps of write_file_atomically,
/// so that a caller can do them without its locks and the rename under
/// them.  `fd` stays open (O_WRONLY|O_APPEND), for what the caller appends
/// before the rename.
struct StagedFile {
  int fd = -1;
  std::string dir;  ///< folder_of(path)
  std::string name; ///< the final name in `dir`
  std::string tmp;  ///< the temp file's name in `dir`
};
/// Steps 1 and 2 of write_file_atomically(path, data, opts): the folder
/// checked, a temp file created (mode opts.mode), `data` written and the
/// file fsync'ed (opts.fsync_fn).  Errors as write_file_atomically's; on
/// error nothing is left behind.
Expected<StagedFile, FileError> stage_file(const std::string &path, std::string_view data,
                                           const AtomicWriteOptions &opts = {});
/// Step 3: renames the staged file onto its name; `s.fd` stays open (the
/// caller owns it).  On error the temp file is removed and `s.fd` closed.
/// Step 4 (the folder's fsync) is the caller's: fsync_folder().
Expected<void, FileError> commit_staged(StagedFile &s);
/// Removes a staged file that will not be committed and closes its fd.
void abandon_staged(StagedFile &s);
/// fsync(2) of folder `dir` (`fsync_fn` in its place when set): 0, or the
/// errno.
int fsync_folder(const std::string &dir, int (*fsync_fn)(int fd) = nullptr);

/// Opens `path` with `flags` (O_WRONLY|O_APPEND, O_RDWR|O_CREAT, ...) plus
/// O_NOFOLLOW|O_CLOEXEC|O_NOCTTY|O_NONBLOCK (O_NONBLOCK is cleared after
/// the checks), creating it with `mode` when `flags` has O_CREAT.  Returns
/// the descriptor (the caller closes it) only for a regular file owned by
/// the effective uid and not writable by group or others.  Errors: "cannot
/// open <path>: <strerror>" (ELOOP for a symlink), or "<path>: not a
/// regular file: refused" / "<path>: owned by uid N, mode 0666: refused;
/// ..." (err EPERM).
Expected<int, FileError> open_own_file(const std::string &path, int flags, mode_t mode = 0600);

/// Reads `fd` to its end, at most `max_bytes` bytes.  `what` names the file
/// in the messages.  Errors: "cannot read <what>: <strerror>" (EAGAIN when
/// a FIFO's writer has nothing to give), "<what>: larger than <max_bytes>
/// bytes: refused" (err EFBIG; no more than max_bytes + 1 bytes are read).
Expected<std::string, FileError> read_fd_bounded(int fd, std::size_t max_bytes,
                                                 std::string_view what);

/// Opens `path` read-only without blocking (O_NONBLOCK: a FIFO in its place
/// does not hang), checks it is a regular file, and reads at most
/// `max_bytes` bytes of it with read_fd_bounded().  Errors: "cannot open
/// <path>: <strerror>", "<path>: not a regular file: refused" (err EINVAL),
/// or those of read_fd_bounded().
Expected<std::string, FileError> read_file_bounded(const std::string &path, std::size_t max_bytes);

/// The folder part of `path`: "." for a bare name, "/" for a file in "/".
std::string folder_of(const std::string &path);

} // namespace switchlua
