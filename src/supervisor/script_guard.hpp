// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: supervisor/script_guard.hpp
//
// The last known good switch.lua, kept by switch-lua-supervisor.
//
//   before each dispatch:  guard.check(path)
//     file unchanged (stat) or its content is a version seen before
//                          -> nullopt: dispatch, with guard.good(path) bytes
//     a new content        -> Candidate: validate it first (the server runs
//                             it in a runner with validate_only: compile, top
//                             level, chunk return, hook types)
//   guard.settle(candidate, error)   error empty: the candidate becomes the
//                             good version; else it is remembered as refused,
//                             and the good version (if any) stays in use
//
// So a broken edit never reaches a call: calls keep running the bytes of
// the last version that passed, passed to the runner in the request, until
// a version that passes appears; a fixed edit is picked up by the next call.
// A script that has never passed has no good version: calls then read the
// file themselves and fail to load, as before any check.
//
// The copy.  With set_copy(PATH) the guard writes its state to PATH after
// every verdict (atomically, common/safe_file.hpp; mode 0600), and
// load_copy() seeds a fresh guard from it, so a supervisor started later
// (replaced by the watchdog, or in the slurmctld that `scontrol
// reconfigure` re-executes) keeps the last good version and does not log
// the same refusal again.  Whether a copy may be used at all is decided by
// the plugin at slurmctld init (keep_good_copy_at_init): only across a
// reconfigure; at a cold start the copy is removed, so a script that fails
// at start-up is refused as before.  The copy is
//   "switch-lua last good script 1\n"
//   "script <path>\n" "good <hash>\n" "refused <hash or ->\n" "\n"
//   <the good version's bytes>
#pragma once

#include "common/content_hash.hpp"
#include "common/expected.hpp"

#include <map>
#include <optional>
#include <string>
#include <sys/stat.h>

namespace switchlua {

// content_hash(): common/content_hash.hpp.

class ScriptGuard {
public:
  /// A content of the script that has not been validated yet.
  struct Candidate {
    std::string path;
    std::string bytes;
    std::string hash;
    /// Non-empty: the file breaks the ownership rule (lua/trust.hpp), this
    /// is why; the candidate is refused without running it.
    std::string refusal;
  };
  /// A validated version.
  struct Version {
    std::string bytes;
    std::string hash;
  };

  /// Stats `path` and, when it changed since the last check (content, mode,
  /// owner: any change of its ctime), checks the ownership rule on the
  /// opened file (lua/trust.hpp, against slurm_user()) and reads it.  A file
  /// that breaks the rule is a candidate with `refusal` set (hash
  /// "untrusted:<content hash>"), even when its content is the good one.
  /// Returns a candidate to validate, or nullopt when dispatching may go
  /// on.  A file that cannot be read is a candidate too (empty bytes): its
  /// validation fails with the open error, and the good version stays.
  std::optional<Candidate> check(const std::string &path);
  /// Records the validation of `c`: `error` empty = passed.  Returns the
  /// line to log ("" when there is nothing to say), e.g.
  /// "/etc/slurm/switch.lua changed (content fnv1a64:...) but is refused:
  ///  /etc/slurm/switch.lua:3: unexpected symbol near '='; calls keep
  ///  running the last good version (content fnv1a64:...)".
  std::string settle(const Candidate &c, const std::string &error);
  /// The version calls run, or nullptr before any version passed.
  const Version *good(const std::string &path) const;

  /// Keeps the state in the file `copy` from now on (see the file comment).
  void set_copy(std::string copy) { copy_ = std::move(copy); }
  /// Seeds the guard from the copy set by set_copy(), if there is one.
  /// Returns "" when there is none or it was used, else why it was not used
  /// (unreadable, breaks the ownership rule, malformed, hash mismatch), a
  /// line for the log.
  std::string load_copy();

private:
  struct Entry {
    bool seen = false;
    struct stat st{};
    std::optional<Version> good;
    std::string refused_hash;
  };
  std::map<std::string, Entry> entries_;
  std::string copy_;
  /// Writes entries_[path] to copy_ (when set and it has a good version);
  /// "" or the error line.
  std::string save_copy(const std::string &path, const Entry &e) const;
};

/// A copy of the guard's state as read back from disk.
struct GoodCopy {
  std::string script;  ///< the script's path
  std::string hash;    ///< content_hash(bytes), checked on reading
  std::string refused; ///< hash of the last refused content, "" for none
  std::string bytes;   ///< the last good version
};

/// Reads and checks a copy (the ownership rule of lua/trust.hpp against
/// slurm_user(), the header, the hash of the bytes).  Errors: a message
/// naming the file and what is wrong; "missing" as the message when the file
/// does not exist.
Expected<GoodCopy> read_good_copy(const std::string &copy);

/// Writes `c` to `copy` atomically, mode 0600 (common/safe_file.hpp: a
/// failure leaves the previous copy as it was).  Errors: "a newline in the
/// script's path", or write_file_atomically()'s message (the failing step,
/// the path and errno).
Expected<void> write_good_copy(const std::string &copy, const GoodCopy &c);

/// Environment variable with which a slurmctld tells the process that
/// `scontrol reconfigure` re-executes the hash of its last good script (the
/// mechanism of SWITCHLUA_GOOD_SLURMCTLD_PARAMETERS).
inline constexpr const char *kGoodScriptEnv = "SWITCHLUA_GOOD_SCRIPT";

/// At slurmctld init: whether the copy `copy` may seed the supervisors.
/// Only when `reconfigured` (SLURMCTLD_RECONF set) and `told_hash` (the
/// value of kGoodScriptEnv) is the hash of a valid copy for `script`;
/// otherwise the copy is removed (a cold start begins with no good
/// version).  Returns the line to log ("" when there is nothing to say).
std::string keep_good_copy_at_init(const std::string &copy, const std::string &script,
                                   bool reconfigured, const char *told_hash);

/// Before the re-exec of a reconfigure (switch_p_save): sets kGoodScriptEnv
/// to the hash of the valid copy `copy`, or unsets it when there is none.
void export_good_copy(const std::string &copy);

} // namespace switchlua
