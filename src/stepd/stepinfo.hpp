// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: stepd/stepinfo.hpp
//
// The stepinfo record: what slurmctld hands every step of a managed job
// (switch_p_build_stepinfo) and each slurmstepd unpacks: the jobinfo that
// job_start returned, plus the job's SLUID text (24.11 has no step sluid;
// the controller copies it from the job at build time).
//
// Encoding (msgpack):
//   version 1: [ "swlua-step", 1, <bin: jobinfo msgpack>, <str: sluid> | nil ]
//   version 2: [ "swlua-step", 2, <bin: jobinfo msgpack>, <str: sluid> | nil,
//                { "script": <str: content hash>, "mismatch": "warn" | "fail",
//                  "attempt": <int: the setup attempt>,
//                  "restart_count": <uint: the job's, at that setup>,
//                  "network": <str>, "num_tasks": <uint>,
//                  "cluster_name": <str> } ]
// Version 2 adds the provenance of job_start's script (switch.lua(5),
// PROVENANCE); the map ignores keys it does not know, so later additions
// need no new version.  "network", "num_tasks" and "cluster_name" (issue
// 21) are the step's facts as slurmctld recorded them (step_record_t:
// network, step_layout->task_cnt; slurm_conf.cluster_name): the step
// table takes them from here, signed with the launch credential, never
// from the task environment or the unsigned part of the launch request.
// Each is optional (a record of an older controller has none).
// A decoder reads versions 1 and 2 (a version 1 record has no provenance:
// nothing to compare).  A slurmstepd whose plugin reads only older versions
// refuses a newer record, and a step of a managed job then fails ("Error
// configuring interconnect", with a line naming both versions): the
// documented order is slurmctld first, then the nodes, and a job started
// on a newer controller runs on an older node only once that node is
// upgraded (switch.lua(5), UPGRADES).
#pragma once

#include "common/expected.hpp"
#include "lua/contract.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace switchlua {

#ifndef SWITCHLUA_STEPINFO_VERSION
#define SWITCHLUA_STEPINFO_VERSION 2
#endif
/// The newest stepinfo version this build writes and reads: 2, except in
/// the plugin of an "older node" that the rolling-upgrade test builds with
/// meson's -Dstepinfo_version=1 (that build then writes version 1 records).
inline constexpr std::uint32_t kStepinfoVersion = SWITCHLUA_STEPINFO_VERSION;

struct Stepinfo {
  MsgpackBytes jobinfo;             ///< the Lua table job_start returned, msgpack
  std::optional<std::string> sluid; ///< the job's SLUID text
  /// content_hash() of the script whose job_start returned `jobinfo`; empty:
  /// unknown (a version 1 record, or a state restored without it).
  std::string script_hash;
  /// SlurmctldParameters switch_script_mismatch=fail: a slurmstepd whose
  /// script differs fails the step (else it warns).
  bool mismatch_fails = false;
  /// job.attempt of the job_start that returned `jobinfo` (the map's
  /// "attempt", issue 20); 0: unknown (a record without it).
  std::int64_t attempt = 0;
  /// job.restart_count of that job_start: the run of the job the attempt
  /// belongs to (the map's "restart_count", issue 20); a step whose job's
  /// restart count is higher now is of a run that is over.  nullopt: an
  /// older controller.
  std::optional<std::uint32_t> restart_count;
  /// The step's --network as slurmctld recorded it (step_record_t.network:
  /// srun's --network, else the job's); nullopt: an older controller.
  std::optional<std::string> network;
  /// The step's task count (step_layout->task_cnt); nullopt: not sent
  /// (an older controller, or a batch step's credential).
  std::optional<std::uint32_t> num_tasks;
  /// slurm_conf.cluster_name of the controller that built the record.
  std::optional<std::string> cluster_name;
  bool operator==(const Stepinfo &) const = default;
};

std::string encode_stepinfo(const Stepinfo &s);
/// Errors: truncated, corrupt, not a stepinfo record, newer version.
Expected<Stepinfo> decode_stepinfo(std::string_view bytes);

} // namespace switchlua
