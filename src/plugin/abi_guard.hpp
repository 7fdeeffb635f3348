// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: plugin/abi_guard.hpp
//
// What the two halves of the C ABI (ctld_abi.cpp, stepd_abi.cpp) share: the
// one guard every extern "C" entry point of switch_lua_core.h runs its body
// in, and the small conversions from C to the core's types.  No exception
// crosses into slurmctld or slurmstepd.
#pragma once

#include "plugin/switch_lua_core.h"

#include "common/log_stamp.hpp"
#include "lua/runtime.hpp"

#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace switchlua::cabi {

/// What slc_set_slurm_special_steps() was told (series_abi.cpp): whether the
/// Slurm built for runs job_init for batch and interactive steps.
bool slurm_special_steps() noexcept;
/// Whether this process is the job's stepmgr slurmstepd now
/// (slc_stepmgr_init .. slc_stepmgr_fini; ctld_abi.cpp).
bool stepmgr_active() noexcept;

/// Runs `body` for the extern "C" entry point `entry` (a string such as
/// "reconfigure", or a callable making one, e.g. "JobId=42 job_start", so
/// that building it happens inside the guard).  Any exception becomes one
/// error line through `log`,
/// "switch/lua: <entry>: <what>; <consequence>", and the entry's failure
/// value `on_error` (its contract: NULL / -1 on the slurmctld side, 0
/// "proceed" for the step hooks, which fail open).  `log` takes the
/// finished line; a throwing log is swallowed.
template <class R, class Entry, class Log, class Body>
R guarded(Entry &&entry, std::string_view consequence, R on_error, Log &&log,
          Body &&body) noexcept {
  auto report = [&](std::string_view what) noexcept {
    try {
      if constexpr (std::is_invocable_v<Entry>)
        log(log_line({}, "{}: {}; {}", entry(), what, consequence));
      else
        log(log_line({}, "{}: {}; {}", std::string_view(entry), what, consequence));
    } catch (...) {
    }
  };
  try {
    return body();
  } catch (const std::exception &e) {
    report(e.what());
  } catch (...) {
    report("unknown exception");
  }
  return on_error;
}

/// guarded() for an entry point that returns nothing.
template <class Entry, class Log, class Body>
void guarded_void(Entry &&entry, std::string_view consequence, Log &&log, Body &&body) noexcept {
  guarded(std::forward<Entry>(entry), consequence, 0, std::forward<Log>(log), [&] {
    body();
    return 0;
  });
}

/// A C string as an optional (NULL = nil in Lua).
inline std::optional<std::string> opt(const char *s) {
  if (!s)
    return std::nullopt;
  return std::string(s);
}

/// `bytes` into a malloc'd buffer for the glue (freed with slc_free); on
/// allocation failure *buf is NULL and *len 0.
inline void copy_out(const std::string &bytes, char **buf, size_t *len) {
  *buf = static_cast<char *>(std::malloc(bytes.size() ? bytes.size() : 1));
  if (*buf)
    std::memcpy(*buf, bytes.data(), bytes.size());
  *len = *buf ? bytes.size() : 0;
}

// The C and C++ log levels are one scale: the glue maps SLC_LOG_* to
// Slurm's error() ... debug5() and the core logs LogLevel values through it.
static_assert(static_cast<int>(LogLevel::Error) == SLC_LOG_ERROR);
static_assert(static_cast<int>(LogLevel::Info) == SLC_LOG_INFO);
static_assert(static_cast<int>(LogLevel::Verbose) == SLC_LOG_VERBOSE);
static_assert(static_cast<int>(LogLevel::Debug) == SLC_LOG_DEBUG);
static_assert(static_cast<int>(LogLevel::Debug2) == SLC_LOG_DEBUG2);
static_assert(static_cast<int>(LogLevel::Debug3) == SLC_LOG_DEBUG3);
static_assert(static_cast<int>(LogLevel::Debug4) == SLC_LOG_DEBUG4);
static_assert(static_cast<int>(LogLevel::Debug5) == SLC_LOG_DEBUG5);

} // namespace switchlua::cabi
