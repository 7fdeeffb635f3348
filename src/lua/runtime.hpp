// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: lua/runtime.hpp
//
// One switch.lua script loaded into a fresh lua_State, and one call of a
// hook on it.  No Slurm headers: logging goes to a caller-supplied sink.
//
//   auto s = Script::load("/etc/slurm/switch.lua", sink);
//   if (!s) { report(s.error().message); return; }  // "file:line: message"
//   auto r = s->call(Hook::JobStart, &job, nullptr, nullptr);
//
// The sandbox: the standard Lua libraries (base, package, coroutine, table,
// io, os, string, math, utf8, debug) stay available — the script runs as
// root for a site administrator who owns it — plus the read-only `slurm`
// table:
//   slurm.log_error / log_info / log_verbose / log_debug / log_debug2 ..
//   log_debug5 (fmt, ...)   string.format semantics, to the sink
//   slurm.to_json(value)    JSON text, or raises with the path of a bad value
//   slurm.SUCCESS = 0, slurm.ERROR = -1, slurm.EAGAIN = 11
// `print(...)` goes to the sink at info level (tab-separated, like Lua's).
// Assigning to a field of `slurm` raises "slurm: attempt to set read-only
// field 'x'".
//
// `rawset(slurm, k, v)` can still add a field to the proxy (the script is
// the site's own code; the proxy guards against accidents, not attacks).
//
// Error handling decision (once, here): the C build of liblua5.4 raises by
// longjmp.  Every Lua C function in this library that may raise holds no
// object with a destructor at the point it raises; C++ exceptions never
// leave a C function called from Lua (sinks are noexcept, and are called
// inside try/catch anyway).  Script code, the library setup and decoding of
// msgpack into Lua run under lua_pcall.  The remaining C++-side Lua calls
// (pushing the job / step tables, reading returned values) raise only on a
// memory error, which ends in Lua's panic handler (abort).
#pragma once

#include "common/expected.hpp"
#include "lua/contract.hpp"

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

struct lua_State;

namespace switchlua {

/// Levels of slurm.log_*; map onto Slurm's error()/info()/verbose()/debug..().
enum class LogLevel : std::uint8_t { Error, Info, Verbose, Debug, Debug2, Debug3, Debug4, Debug5 };
/// "error", "info", "verbose", "debug", "debug2", ... "debug5".
std::string_view log_level_name(LogLevel l);

/// Receives each log line of the script: the level and the formatted text
/// (no trailing newline; may contain any bytes).  Must not throw.
using LogSink = std::function<void(LogLevel, std::string_view)>;

/// Why a hook call failed.
struct CallError {
  enum class Kind {
    LuaError,    ///< the hook raised: message is "file:line: message", then
                 ///< "\nstack traceback:\n..." (Lua's traceback); also a
                 ///< hook global that is set but is not a function
    BadReturn,   ///< the hook returned values that break the contract:
                 ///< "<path>: job_start returned ..." (see parse_hook_return)
    BadArgument, ///< `info` could not be decoded: "jobinfo: cannot decode:
                 ///< msgpack: truncated value (2 bytes)"; the hook was not called
  };
  Kind kind = Kind::LuaError;
  std::string message;
};

/// Memory bound of the Lua state of a step hook (slurmstepd, which Slurm
/// 24.11 makes immune to the OOM killer), fixed: 64 MiB.
inline constexpr std::size_t kStepLuaMemoryLimit = std::size_t{64} << 20;
/// Default memory bound of the Lua state of a job_start / job_complete
/// call (a switch-lua-runner): 256 MiB; SlurmctldParameters=switch_lua_memory.
inline constexpr std::size_t kDefaultCtldLuaMemoryLimit = std::size_t{256} << 20;

/// Environment variable of switch-lua-runner: its Lua memory bound in MiB
/// (the controller sets it from SlurmctldParameters=switch_lua_memory).
inline constexpr const char *kLuaMemoryEnv = "SWITCHLUA_LUA_MEMORY_MB";

/// A loaded script.  Move-only; owns its lua_State (closed on destruction).
/// Not thread-safe: one thread at a time.
class Script {
public:
  /// Loads `path` into a fresh lua_State: opens the libraries, installs the
  /// slurm table, compiles and runs the chunk (text only, no precompiled
  /// chunks), and checks its return value (switch.lua contract: nothing or
  /// slurm.SUCCESS loads; any other number refuses the script; other types,
  /// nil included, are refused too; 0.0 counts as slurm.SUCCESS).
  /// Errors, as complete messages:
  ///   "cannot open /etc/slurm/switch.lua: No such file or directory"
  ///   "/etc/slurm/switch.lua:3: unexpected symbol near '='"   (syntax)
  ///   "/etc/slurm/switch.lua:7: boom\nstack traceback:\n..."  (run time)
  ///   "/etc/slurm/switch.lua: the chunk returned -1, not slurm.SUCCESS:
  ///    script refused" (also `"x" (a string)`, `nil`, `0.5 (a float)`)
  /// Lua cuts file names in "file:line:" to 60 bytes ("...<tail>").
  /// The sink is kept for the life of the Script and receives every log
  /// line, during load too.
  static Expected<Script> load(const std::string &path, LogSink sink);

  /// Where the script runs, which decides what os.exit() may do.
  enum class Host {
    /// A process of its own (switch-lua-runner): os.exit() ends the child,
    /// which the supervisor classifies as "exited without returning"
    /// (switch.lua contract: job_start / job_complete).
    OwnProcess,
    /// Inside a process that must survive the script: slurmstepd (step
    /// hooks) and `switch-lua check|simulate`.  os.exit() then raises
    /// "os.exit() is not allowed in <where>: ..." instead of ending it,
    /// so a step hook's os.exit() is a Lua error (fail-open), never the end
    /// of slurmstepd.
    InProcess,
  };
  /// As load(path, sink), for the given host, with the host's default
  /// memory limit (InProcess: kStepLuaMemoryLimit; OwnProcess:
  /// kDefaultCtldLuaMemoryLimit).
  static Expected<Script> load(const std::string &path, LogSink sink, Host host);
  /// As load(), from the script's bytes `source` instead of the file; the
  /// chunk is named after `path` (messages read "path:line: ...").  Used by
  /// the runner with the version the supervisor validated.  `memory_limit`
  /// as below; 0: default_memory_limit(host).
  static Expected<Script> load_source(const std::string &path, std::string_view source,
                                      LogSink sink, Host host, std::size_t memory_limit = 0);

  /// The hook globals that are set but are not functions, one message each:
  /// "<path>: slurm_switch_job_start is a string, not a function" (every
  /// call of such a hook would fail).  Empty for a script whose hooks are
  /// all functions or absent.
  std::vector<std::string> hook_type_errors() const;

  /// As load(path, sink, host), with the Lua state bounded to
  /// `memory_limit` bytes (Lua's own accounting: everything the state
  /// allocates).  An allocation past it fails; Lua raises "not enough
  /// memory", which the chunk or the hook gets like any Lua error (a
  /// CallError of kind LuaError, or a load failure); the host lives.
  static Expected<Script> load(const std::string &path, LogSink sink, Host host,
                               std::size_t memory_limit);

  /// The bound of a state loaded without one: kStepLuaMemoryLimit in
  /// slurmstepd (InProcess), kDefaultCtldLuaMemoryLimit otherwise.
  static std::size_t default_memory_limit(Host host);

  Script(Script &&) noexcept;
  Script &operator=(Script &&) noexcept;
  ~Script();

  /// Whether the script defines the hook's global function.
  bool has_hook(Hook h) const;
  /// Calls hook `h` with the arguments it takes and parses what it
  /// returned:
  ///   block_job_complete(), setup_special_steps()   (job, step, info unused)
  ///   job_start(job)                                (job required)
  ///   job_complete(job, jobinfo|nil)                (job required)
  ///   step_preinit / step_init / step_postfini(step, stepinfo|nil)
  /// `info` is the jobinfo / stepinfo msgpack (lua/codec.hpp), nullptr for
  /// nil.  A hook the script does not define gives missing_hook_return(h).
  /// Errors: CallError (see its kinds).  The Lua stack is as it was.
  Expected<HookReturn, CallError> call(Hook h, const JobArgs *job, const StepArgs *step,
                                       const MsgpackBytes *info);

  /// The path given to load().
  const std::string &path() const;
  /// content_hash() (common/content_hash.hpp) of the bytes loaded, e.g.
  /// "fnv1a64:9b1f0c2d4e5f6a7b": what `switch-lua check` prints and the
  /// step hooks compare with the stepinfo's (switch.lua(5), PROVENANCE).
  const std::string &hash() const;
  /// The script's state, for tests and tools; owned by the Script.
  lua_State *state();

private:
  struct Impl;
  explicit Script(std::unique_ptr<Impl> impl);
  static Expected<Script> load_impl(const std::string &path, const std::string_view *source,
                                    LogSink sink, Host host, std::size_t memory_limit);
  std::unique_ptr<Impl> impl_;
};

/// Installs the `slurm` table and `print` into L (used by Script::load).
/// Call after luaL_openlibs (it captures string.format) and under lua_pcall
/// (it raises on a memory error).  `sink` may be null (lines are dropped);
/// otherwise it must outlive L.
void install_slurm_table(lua_State *L, LogSink *sink);

} // namespace switchlua
