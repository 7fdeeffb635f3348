// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: ctld/persist.hpp
//
// The versioned record of one job's switch state (JobSwitchState, jobinfo
// included) that the plugin packs into Slurm's job state file.  Slurm calls
// the plugin's pack for every job, with no switch state at all for most of
// them, so "absent" is a record too.
//
// Encoding (msgpack):
//   absent:  [ "swlua", <version>, nil ]
//   present: [ "swlua", <version>, {
//               "state": <JobState name>, "job": <bin: JobArgs::to_msgpack>,
//               "jobinfo": <bin: msgpack of the Lua table> | nil,
//               "requeue": bool, "bjc": bool, "held": bool,
//               "retries": uint, "gen": uint } ]
// Version 2 (kPersistVersion) adds the job's submit_time and attempt inside
// "job" and the states SetupUndoing / SetupUndoingEnded; version 1 records
// (no submit_time / attempt: read as 0) decode as before.  Any version may
// carry "script": <str>, the content hash of the script whose job_start
// returned the jobinfo (JobSwitchState::script_hash); a record without it
// reads as "" (unknown), and a plugin that predates it ignores the key, so
// it needs no new version in either direction.  A decoder of version N
// reads every version <= N; a newer version is refused with an error (the
// job's switch state is then lost and logged, never invented).
#pragma once

#include "common/expected.hpp"
#include "ctld/job_fsm.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace switchlua {

inline constexpr std::uint32_t kPersistVersion = 2;
/// Upper bound of one record, bytes (jobinfo is itself capped at 64 KiB).
inline constexpr std::size_t kPersistMaxBytes = 1 << 20;

/// Encodes a job's switch state; nullptr gives the "absent" record.
std::string encode_job_state(const JobSwitchState *s);

/// Decodes a record.  nullopt for "absent".  On return the state has
/// `recovered` set (no hook call survives a restart).  Errors name what is
/// wrong: "switch/lua job state: truncated record (12 bytes)", "... record
/// version 7 is newer than this plugin's 2", "... field 'state': unknown
/// state 'Foo'", "... field 'held' is nil, expected a boolean".
Expected<std::optional<JobSwitchState>> decode_job_state(std::string_view bytes);

} // namespace switchlua
