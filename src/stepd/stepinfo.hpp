// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: stepd/stepinfo.hpp
//
// The stepinfo record: what slurmctld hands every step of a managed job
// (switch_p_build_stepinfo) and each slurmstepd unpacks: the jobinfo that
// job_start returned, plus the job's SLUID text (24.11 has no step sluid;
// the controller copies it from the job at build time).
//
// Encoding (msgpack): [ "swlua-step", <version>, <bin: jobinfo msgpack>, <str: sluid> | nil ]
#pragma once

#include "common/expected.hpp"
#include "lua/contract.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace switchlua {

inline constexpr std::uint32_t kStepinfoVersion = 1;

struct Stepinfo {
  MsgpackBytes jobinfo;             ///< the Lua table job_start returned, msgpack
  std::optional<std::string> sluid; ///< the job's SLUID text
  bool operator==(const Stepinfo &) const = default;
};

std::string encode_stepinfo(const Stepinfo &s);
/// Errors: truncated, corrupt, not a stepinfo record, newer version.
Expected<Stepinfo> decode_stepinfo(std::string_view bytes);

} // namespace switchlua
