// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: ctld/config.hpp
//
// The controller settings of switch/lua, read from slurm.conf's
// SlurmctldParameters (a comma-separated list of key or key=value tokens):
//
//   switch_timeout=<seconds>        job_start / job_complete kill deadline;
//                                   integer 1..86400, default 10
//   switch_retries=<count>          job_complete EAGAIN retries before the
//                                   nodes are drained; integer 0..1000, default 3
//   switch_drain_on_failure=yes|no  drain the job's nodes when job_complete
//                                   fails; default yes
//   switch_kill_grace=<seconds>     at the deadline the call's process group
//                                   gets SIGTERM, then SIGKILL this much
//                                   later; integer 0..300, default 2
//   switch_max_calls=<count>        hook calls running at once; integer
//                                   1..4096, default 512
//   switch_max_queue=<count>        calls waiting per lane (teardown,
//                                   interactive, batch); integer 1..100000,
//                                   default 10000
//   switch_lua_memory=<MiB>         memory bound of the Lua state of each
//                                   job_start / job_complete call; integer
//                                   1..65536, default 256
//   switch_status_interval=<seconds> seconds between the one-line status
//                                   summaries in slurmctld.log; integer
//                                   0..86400, default 0 (none)
//   switch_script_mismatch=warn|fail what a slurmstepd does when the script it
//                                   loads is not the one that ran job_start:
//                                   log a warning (default) or fail the step
//   switch_interactive_wait=<ms>    how long the allocation of an interactive
//                                   job (srun, salloc) may wait, slurmctld's
//                                   locks held, for its job_start to return,
//                                   so that the job is never CONFIGURING;
//                                   integer 0..100, default 3, 0 = never
//   switch_max_setup_failures=<count>  after this many consecutive failed
//                                   setups a requeueable job is requeued
//                                   held (admin hold) instead; integer
//                                   0..1000, default 0 = off (the contract:
//                                   requeued without limit)
//
// switch_max_calls and switch_max_queue are read when the plugin starts
// (slurmctld's start and every reconfigure, which restarts it in 24.11):
// they size the supervisor, which is restarted then.
//
// Keys are matched as Slurm matches its own SlurmctldParameters keys
// (slurmctld uses xstrcasestr(): case-insensitive), spaces around a token
// ignored; yes/no values are case-insensitive too.  Tokens that are not ours
// are ignored, as Slurm ignores unknown tokens, but one that starts with
// "switch_" and is not ours gets a warning (slurmctld_parameters_warnings):
// a typo must not silently become the default.  A bad value of ours is an
// error naming the key and the value, at load and at reconfigure (the caller
// then keeps the previous configuration).
#pragma once

#include "common/expected.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace switchlua {

/// Defaults (documented in switch_lua.conf(5) / SlurmctldParameters).
inline constexpr std::chrono::seconds kDefaultSwitchTimeout{10};
inline constexpr std::uint32_t kDefaultSwitchRetries = 3;
inline constexpr std::chrono::seconds kMaxSwitchTimeout{86400};
inline constexpr std::uint32_t kMaxSwitchRetries = 1000;
inline constexpr std::uint32_t kDefaultSwitchMaxCalls = 512;
inline constexpr std::uint32_t kMaxSwitchMaxCalls = 4096;
inline constexpr std::uint32_t kDefaultSwitchMaxQueue = 10000;
inline constexpr std::uint32_t kMaxSwitchMaxQueue = 100000;
inline constexpr std::chrono::seconds kDefaultSwitchKillGrace{2};
inline constexpr std::chrono::seconds kMaxSwitchKillGrace{300};
inline constexpr std::uint32_t kDefaultSwitchLuaMemory = 256; ///< MiB (kDefaultCtldLuaMemoryLimit)
inline constexpr std::uint32_t kMaxSwitchLuaMemory = 65536;
inline constexpr std::uint32_t kMaxSwitchStatusInterval = 86400;
inline constexpr std::uint32_t kMaxSwitchMaxSetupFailures = 1000;
inline constexpr std::uint32_t kDefaultSwitchInteractiveWait = 3; ///< milliseconds
inline constexpr std::uint32_t kMaxSwitchInteractiveWait = 100;

/// The parsed settings.  A hook call keeps the timeout it started with
/// across a reconfigure (the supervisor gets it with the request).
struct CtldConfig {
  std::chrono::seconds switch_timeout = kDefaultSwitchTimeout;
  std::uint32_t switch_retries = kDefaultSwitchRetries;
  bool drain_on_failure = true;
  std::chrono::seconds switch_kill_grace = kDefaultSwitchKillGrace; ///< switch_kill_grace
  std::uint32_t max_calls = kDefaultSwitchMaxCalls;                 ///< switch_max_calls
  std::uint32_t max_queue = kDefaultSwitchMaxQueue;                 ///< switch_max_queue
  std::uint32_t lua_memory_mb = kDefaultSwitchLuaMemory; ///< switch_lua_memory, MiB per call
  std::uint32_t status_interval = 0; ///< switch_status_interval, seconds; 0: no summary lines
  /// switch_script_mismatch=fail: a step whose slurmstepd loads another
  /// script than the one that ran job_start fails (else: a warning).
  bool mismatch_fails = false;
  /// switch_max_setup_failures: consecutive failed setups of a job after
  /// which it is held rather than requeued again; 0 = no limit (default).
  std::uint32_t max_setup_failures = 0;
  /// switch_interactive_wait, milliseconds: how long switch_p_job_start of
  /// an interactive job waits for its job_start to return (0: never).
  std::uint32_t interactive_wait_ms = kDefaultSwitchInteractiveWait;
  bool operator==(const CtldConfig &) const = default;
};

/// Parses a SlurmctldParameters string ("enable_configless,switch_timeout=5").
/// Errors, e.g. `SlurmctldParameters: switch_timeout=0: must be an integer
/// number of seconds from 1 to 86400`: a value of 0, negative, not a
/// number, overflowing, out of range, or empty; a repeated key of ours with a
/// different value; switch_drain_on_failure other than yes/no.
Expected<CtldConfig> parse_slurmctld_parameters(std::string_view params);

/// One line per token that starts with "switch_" (any case) and is not a
/// setting of ours, e.g. "SlurmctldParameters: switch_timout is not a
/// switch/lua setting and is ignored (the settings are switch_timeout,
/// ...): check its spelling".  Empty when there is none.
std::vector<std::string> slurmctld_parameters_warnings(std::string_view params);

/// "switch_timeout=10 switch_retries=3 switch_drain_on_failure=yes
/// switch_kill_grace=2 switch_max_calls=512 switch_max_queue=10000 switch_lua_memory=256
/// switch_status_interval=0 switch_script_mismatch=warn".
std::string describe(const CtldConfig &c);

/// The same settings as a SlurmctldParameters string that
/// parse_slurmctld_parameters() reads back to `c`:
/// "switch_timeout=10,switch_retries=3,...,switch_lua_memory=256".
std::string to_slurmctld_parameters(const CtldConfig &c);

} // namespace switchlua
