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
#pragma once

#include "common/content_hash.hpp"

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

private:
  struct Entry {
    bool seen = false;
    struct stat st {};
    std::optional<Version> good;
    std::string refused_hash;
  };
  std::map<std::string, Entry> entries_;
};

} // namespace switchlua
