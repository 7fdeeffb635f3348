// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: supervisor/outcome.hpp
//
// The classified outcome of one supervised hook call (job_start or
// job_complete run in its own child process), and the pure function that
// classifies it from what the supervisor observed.  Each class is distinct:
// a spawn failure is not an exit status, a signal is not 128+N, and a SIGKILL
// is a timeout only when the supervisor's own deadline sent it.
#pragma once

#include "lua/contract.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace switchlua {

/// The outcome classes (switch.lua contract, job_start / job_complete).
enum class OutcomeKind : std::uint8_t {
  Returned,            ///< the hook returned; `ret` holds its parsed values
  LuaError,            ///< the hook raised; `message` is "file:line: msg"
  BadReturn,           ///< the hook returned values that break the contract
  ExitedWithoutReturn, ///< the child exited (os.exit) before reporting; `exit_status`
  Signaled,            ///< the child died on a signal it was not sent by us; `signal`
  TimedOut,            ///< the deadline fired; the process group was killed
  SpawnFailed,         ///< the runner could not be started; `message`
  Abandoned,           ///< the supervisor died with the call in flight
  LoadFailed,          ///< the script did not load (syntax, chunk error/return)
};

/// "returned", "lua_error", ...
std::string_view outcome_kind_name(OutcomeKind k);

/// What one call ended with.
struct Outcome {
  OutcomeKind kind = OutcomeKind::SpawnFailed;
  HookReturn ret;      ///< Returned
  std::string message; ///< LuaError, BadReturn, SpawnFailed, Abandoned, LoadFailed
  /// SpawnFailed only: the controller refused to start the call (issue 38:
  /// a pool short of IDs): a failed setup, never a host fault retried.
  bool refused = false;
  int exit_status = 0; ///< ExitedWithoutReturn, and TimedOut with late_exit: the exit code
  int signal = 0;      ///< Signaled: the signal number
  /// TimedOut only: the result the child still reported after the deadline
  /// fired ("late", switch.lua contract: job_start timeout) ...
  std::optional<HookReturn> late_return;
  /// ... or that it exited without returning after the deadline fired.
  bool late_exit = false;
  /// Pids of processes that had left the call's process group (setsid) and
  /// were found and killed when the call ended.
  std::vector<pid_t> escapees;
  std::chrono::milliseconds elapsed{0}; ///< process got the request (dispatch) to reap
  std::chrono::milliseconds queued{0};  ///< waited in the supervisor's lane before that
  /// content_hash() of the script bytes the call ran (the supervisor's last
  /// good version, supervisor/script_guard.hpp); empty when no version had
  /// passed (the runner read the file itself) or the call never started.
  std::string script_hash;
};

/// What the supervisor saw of one finished call; input of classify().
struct Observation {
  bool spawned = false; ///< false: spawn_error holds why
  std::string spawn_error;
  /// The deadline passed before the runner reported (a frame or its exit) and
  /// the supervisor killed the group.  The supervisor notices the deadline in
  /// its timer and also in any later event of the call, whichever runs first,
  /// so a result that was only read after the deadline counts as late.
  bool deadline_fired = false;
  /// Frames received from the runner, in order of arrival relative to the
  /// deadline.
  std::optional<HookReturn> result;      ///< a Returned frame
  std::optional<std::string> lua_error;  ///< a LuaError frame
  std::optional<std::string> bad_return; ///< a BadReturn frame
  std::optional<std::string> load_error; ///< a LoadFailed frame
  bool result_after_deadline = false;    ///< the frame came after the deadline fired
  /// The leader's wait status (as from waitpid).
  int wait_status = 0;
};

/// Classifies an observation.  Pure; the rules:
///  - not spawned -> SpawnFailed;
///  - deadline fired -> TimedOut, with late_return when a Returned frame came
///    after the deadline and late_exit when the leader exited normally
///    (not by our SIGKILL) without a frame;
///  - a frame (returned / lua error / bad return / load failure) -> its class,
///    whatever the exit status (the runner reported before exiting);
///  - no frame, exited -> ExitedWithoutReturn; killed by a signal -> Signaled.
Outcome classify(const Observation &obs);

/// One-line description for logs and timelines, e.g.
/// "timed out after 2000 ms (late result: rc=0 with jobinfo)".
std::string describe(const Outcome &o);

} // namespace switchlua
