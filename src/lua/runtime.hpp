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
// Error handling decision (once, here): the C build of liblua5.4 raises by
// longjmp.  Every Lua C function in this library that may raise holds no
// object with a destructor at the point it raises; C++ exceptions never
// leave a C function called from Lua (sinks are noexcept).
#pragma once

#include "common/expected.hpp"
#include "lua/contract.hpp"

#include <functional>
#include <memory>
#include <string>
#include <string_view>

struct lua_State;

namespace switchlua {

/// Levels of slurm.log_*; map onto Slurm's error()/info()/verbose()/debug..().
enum class LogLevel : std::uint8_t { Error, Info, Verbose, Debug, Debug2, Debug3, Debug4, Debug5 };
/// "error", "info", "verbose", "debug", "debug2", ... "debug5".
std::string_view log_level_name(LogLevel l);

/// Receives each log line of the script.  Must not throw.
using LogSink = std::function<void(LogLevel, std::string_view)>;

/// Why a hook call failed.
struct CallError {
  enum class Kind {
    LuaError,  ///< the hook raised: message is "file:line: message" + traceback
    BadReturn, ///< the hook returned values that break the contract
  };
  Kind kind = Kind::LuaError;
  std::string message;
};

/// A loaded script.  Move-only; owns its lua_State (closed on destruction).
/// Not thread-safe: one thread at a time.
class Script {
public:
  /// Loads `path` into a fresh lua_State: opens the libraries, installs the
  /// slurm table, compiles and runs the chunk, and checks its return value
  /// (switch.lua contract: nothing or slurm.SUCCESS loads; any other number
  /// refuses the script; other types are refused too).
  /// Errors: unreadable file, syntax error, run-time error ("file:line:
  /// message"), or "returned N from the chunk; the script is refused".
  static Expected<Script> load(const std::string &path, LogSink sink);

  Script(Script &&) noexcept;
  Script &operator=(Script &&) noexcept;
  ~Script();

  /// Whether the script defines the hook's global function.
  bool has_hook(Hook h) const;
  /// Calls hook `h` with the arguments it takes (job for job_*, step for
  /// step_*, `info` = jobinfo / stepinfo msgpack or nullptr for nil) and
  /// parses what it returned.  A missing hook gives missing_hook_return(h).
  Expected<HookReturn, CallError> call(Hook h, const JobArgs *job, const StepArgs *step,
                                       const MsgpackBytes *info);

  const std::string &path() const;
  lua_State *state();

private:
  struct Impl;
  explicit Script(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Installs the `slurm` table and `print` into L (used by Script::load).
void install_slurm_table(lua_State *L, LogSink *sink);

} // namespace switchlua
