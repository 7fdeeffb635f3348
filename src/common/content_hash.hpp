// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: common/content_hash.hpp
//
// The content id of a switch.lua: "fnv1a64:" and 16 lowercase hex digits of
// the FNV-1a 64-bit hash of its bytes.  One function for every place that
// names a script's content: the supervisor's last-good guard, the outcome
// lines in slurmctld's log, `switch-lua check`, the stepinfo the controller
// hands each step and the comparison slurmstepd makes with the script it
// loads.  It identifies a version (a stale copy on one node); it is not a
// security measure (the ownership rule of lua/trust.hpp is).
#pragma once

#include <cstdint>
#include <fmt/format.h>
#include <string>
#include <string_view>

namespace switchlua {

/// "fnv1a64:" and 16 hex digits of the FNV-1a 64-bit hash of `bytes`, e.g.
/// content_hash("") == "fnv1a64:cbf29ce484222325".
inline std::string content_hash(std::string_view bytes) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return fmt::format("fnv1a64:{:016x}", h);
}

} // namespace switchlua
