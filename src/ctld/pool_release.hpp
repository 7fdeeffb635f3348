// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: ctld/pool_release.hpp
//
// `switch-lua pool release` (issue 38; switch.lua(5), POOLS): how an
// administrator frees the quarantined IDs of a fabric-ID pool.  The command
// and slurmctld's switch/lua talk through two files in StateSaveLocation:
//
//   switch-lua pool release ──request──▶ <StateSaveLocation>/switch_lua.pool_release
//                                         (JSON, one at a time: created with link(2))
//   slurmctld, the status thread, every second, in control only:
//       reads it (a regular file of root or SlurmUser, not writable by
//       group or others), frees the matching quarantined attempts (a "pools
//       released" journal record each, one line each), writes the answer,
//       removes the request
//   switch-lua pool release ◀──answer── <StateSaveLocation>/switch_lua.pool_release.answer
//
// Both files are small JSON objects (below) carrying the request's token.
#pragma once

#include "ctld/pools.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace switchlua {

/// The request file's name in StateSaveLocation.
inline constexpr std::string_view kPoolReleaseRequest = "switch_lua.pool_release";
/// The answer file's name in StateSaveLocation.
inline constexpr std::string_view kPoolReleaseAnswer = "switch_lua.pool_release.answer";
/// The largest request or answer read, bytes.
inline constexpr std::size_t kPoolReleaseMaxBytes = 64 * 1024;

/// What to free: every quarantined attempt of JobId `job_id` (when not 0),
/// or the one holding ID `id` of pool `pool`.  E.g.
/// {"token":"5f0c...","job_id":1234} or {"token":"...","pool":"vni","id":1024}.
struct PoolReleaseRequest {
  std::string token; ///< 1 to 64 of [0-9a-zA-Z_-], chosen by the command
  std::uint32_t job_id = 0;
  std::string pool;
  std::uint32_t id = 0;
  bool operator==(const PoolReleaseRequest &) const = default;
};

/// One quarantined attempt freed.
struct PoolReleased {
  std::uint32_t job_id = 0;
  std::int64_t attempt = 0;
  PoolIds ids;
  std::int64_t since = 0; ///< when its quarantine began, Unix seconds
  bool operator==(const PoolReleased &) const = default;
};

/// The answer: the attempts freed (none when nothing matched), or why the
/// request was refused ("no pool is declared (switch_pool_NAME)").
struct PoolReleaseAnswer {
  std::string token;
  std::string error;
  std::vector<PoolReleased> released;
  bool operator==(const PoolReleaseAnswer &) const = default;
};

std::string encode_pool_release_request(const PoolReleaseRequest &r);
/// Parses a request; the error names the field and the value, e.g.
/// "field 'job_id' is not a JobId (1 to 4294967293): -3".
std::optional<PoolReleaseRequest> parse_pool_release_request(std::string_view text,
                                                             std::string &error);
std::string encode_pool_release_answer(const PoolReleaseAnswer &a);
std::optional<PoolReleaseAnswer> parse_pool_release_answer(std::string_view text,
                                                           std::string &error);

/// Unix seconds `t` as "2026-12-07T18:00:00Z" (UTC), for the release line
/// and the command's output.
std::string utc_text(std::int64_t t);

/// "vni 1024+1025, pkey 32769": the IDs of `ids` for logs and the command.
std::string pool_ids_text(const PoolIds &ids);

/// Reads the request file `path` if there is one: nullopt (and `error`
/// empty) when there is none; nullopt with `error` set when it is refused
/// (not a regular file, a symlink, owned by another uid than root or the
/// effective one, writable by group or others, larger than
/// kPoolReleaseMaxBytes) or cannot be read.  Never blocks on a FIFO.
std::optional<std::string> read_pool_release_request(const std::string &path, std::string &error);

} // namespace switchlua
