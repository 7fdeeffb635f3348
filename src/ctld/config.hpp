// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: ctld/config.hpp
//
// The controller settings of switch/lua, read from slurm.conf's
// SlurmctldParameters (a comma-separated list of key or key=value tokens).
// The settings, their ranges, units and defaults are the rows of the table
// kKeys in config.cpp and nothing else: slurmctld_settings() gives them to
// the CLI (`switch-lua settings`), to the e2e tests and to the test that
// checks their entries in switch_lua.conf(5) (test/unit/ctld/settings_man_test.cpp),
// where each setting is explained.
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
#include "ctld/pools.hpp"

#include <array>
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
/// The fabric breaker (issue 20): failed teardowns of different jobs within
/// the window that open it; 0 = only a script's slurm.FABRIC_DOWN does.
/// Default 0 (issue 36): counting failures into an outage keeps teardowns
/// from draining, which the switch.lua contract does not name: opt-in.
inline constexpr std::uint32_t kDefaultSwitchBreakerFailures = 0;
inline constexpr std::uint32_t kMaxSwitchBreakerFailures = 100000;
inline constexpr std::uint32_t kDefaultSwitchBreakerWindow = 60; ///< seconds
inline constexpr std::uint32_t kMaxSwitchBreakerWindow = 86400;

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
  /// switch_breaker_failures / switch_breaker_window (seconds): this many
  /// failed teardowns of different jobs within the window open the fabric
  /// breaker (switch.lua(5), Fabric outages); 0 failures: only a script's
  /// slurm.FABRIC_DOWN opens it.
  std::uint32_t breaker_failures = kDefaultSwitchBreakerFailures;
  std::uint32_t breaker_window_s = kDefaultSwitchBreakerWindow;
  /// switch_journal_failure (issue 24; switch_lua.conf(5),
  /// STATESAVELOCATION): while the journal cannot be written, a teardown
  /// whose "teardown started" record is not on disk waits, its nodes held,
  /// until a fresh snapshot holds it (wait, the default: a crash or
  /// takeover meanwhile never runs it twice), or runs at once (run: safe to
  /// repeat by the switch.lua contract, and run again after such a crash).
  bool journal_failure_waits = true;
  /// switch_metrics_file: an absolute path where slurmctld rewrites the
  /// counters in the Prometheus text format (ctld/metrics.hpp) within a
  /// second of a change; empty (written "none"): no such file.
  std::string metrics_file;
  /// switch_pool_NAME=RANGES[:PER_JOB[:REUSE_DELAY]] (issue 38; switch.lua(5), POOLS):
  /// the declared fabric-ID pools, by name; none (the default): no job
  /// table gets pools and the journal holds nothing about them.
  std::vector<PoolSpec> pools;
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

/// Every setting as KEY=VALUE in table order, separated by spaces, as the
/// plugin logs it at start-up ("switch_timeout=10 switch_retries=3
/// switch_drain_on_failure=yes ..."; `switch-lua settings` prints it).
std::string describe(const CtldConfig &c);

/// The settings of `c` that change what the switch.lua contract says
/// happens, each as "KEY=VALUE: what it changes" (e.g.
/// "switch_breaker_failures=5: failed teardowns counted into a fabric
/// outage are kept and run again, not drained"); empty with the defaults,
/// which are the contract (issue 36).  The plugin logs them at start-up.
std::vector<std::string> beyond_contract(const CtldConfig &c);

/// The same settings as a SlurmctldParameters string that
/// parse_slurmctld_parameters() reads back to `c`:
/// "switch_timeout=10,switch_retries=3,...,switch_lua_memory=256".
std::string to_slurmctld_parameters(const CtldConfig &c);

/// One row of the settings table (config.cpp), as switch_lua.conf(5)
/// documents it.  An integer setting is valid in [lo, hi] and counts `unit`
/// ("seconds", "count", "MiB", "milliseconds"); a word setting (`is_word`)
/// takes words[1] (on) or words[0] (off), e.g. yes/no, fail/warn; a path
/// setting (`is_path`) takes an absolute path without spaces or commas, or
/// "none".  `default_value` is the default as describe() writes it ("10",
/// "yes", "none").
struct SettingSpec {
  std::string_view name;
  bool is_word;
  std::uint64_t lo, hi;
  std::string_view unit;
  std::array<std::string_view, 2> words;
  std::string default_value;
  bool is_path = false;
  /// The family switch_pool_NAME (issue 38): `name` is the prefix
  /// "switch_pool_", `unit` "RANGES[:PER_JOB[:REUSE_DELAY]]", default "none" (no pool).
  bool is_pool = false;
};

/// Every setting of the table, in table (and describe()) order.
std::vector<SettingSpec> slurmctld_settings();

/// The row of `name` (exact, lower case, e.g. "switch_timeout"); throws
/// std::out_of_range for a name that is not in the table (a programming
/// error: callers name settings of ours).
const SettingSpec &slurmctld_setting(std::string_view name);

} // namespace switchlua
