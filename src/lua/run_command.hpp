// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: lua/run_command.hpp
//
// slurm.run(argv[, opts]): a command run from a hook without a shell
// (issue 21; switch.lua(5), RUNNING COMMANDS).  The argument vector goes to
// execvp as it is, so a user's string in it (job.name, job.network, a node
// list) is one argument and never code.
//
//   local r, err = slurm.run({"/usr/sbin/fabric-ctl", "alloc", job.network},
//                            {stdin = payload, timeout = 5})
//   if not r then return slurm.ERROR, err end   -- not started: missing binary, ...
//   -- r.status: exit status (nil when killed by a signal: r.signal);
//   -- r.stdout, r.stderr: the output (each at most kRunOutputMax bytes,
//   -- r.truncated true when more was dropped); r.timed_out: killed at the
//   -- timeout.
//
// Rules:
//   - No shell: argv[1] is looked up in PATH as execvp does (an absolute
//     path is looked up nowhere); nothing is expanded or split.
//   - stdin: the string is written to the command's standard input, then it
//     is closed; without it the command reads /dev/null.
//   - Timeout: opts.timeout seconds, at most what is left of the call's own
//     (the supervisor's switch_timeout deadline, set_call_deadline()) less
//     kRunDeadlineMargin; by
//     default what is left of it, or kRunDefaultTimeout where the call has
//     no deadline (slurmstepd).  At the timeout the command gets SIGKILL.
//   - Process group: under the supervisor the command stays in the call's
//     process group, so what it leaves behind is killed with the call (the
//     leftover rules of switch.lua(5)); where there is no call group
//     (slurmstepd: set_run_own_group(true)) it gets a group of its own,
//     killed (SIGKILL) when slurm.run returns.
//   - slurm.run returns when the command itself exited (or was killed);
//     output a leftover child writes later is not waited for.
//   - Bad arguments (argv not a non-empty array of strings, an unknown
//     option, a timeout that is not a positive number) raise a Lua error;
//     a command that cannot be started returns nil and a message naming it:
//     "slurm.run: cannot run /usr/sbin/fabric-ctl: No such file or directory".
//
// Why a slurm.* function and not Debian's lua-posix (measured on the
// testbed, test/bench/run_slurm.lua and run_luaposix.lua, 200 runs of
// `true` and 1 MiB through `wc -c`, at the same moment: slurm.run 0.9 ms
// each and 2.0 ms, a careful lua-posix equivalent 1.9 ms and 8.5 ms).
// Speed is not the reason: with lua-posix every script carries some 70
// lines of fork, dup2, poll and wait of its own, a missing binary is only
// an exit status 127 from the child, it has no pidfd, so a leftover child
// that keeps the output pipe open holds the call until the timeout, and
// it knows neither the call's deadline nor slurmstepd's process group.
// One audited function serves every script; lua-posix stays usable for
// whatever else a site wants from it.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <poll.h>
#include <string>
#include <vector>

struct lua_State;

namespace switchlua {

/// Bytes of stdout (and of stderr) slurm.run keeps; the rest is read and
/// dropped (RunResult::truncated).
inline constexpr std::size_t kRunOutputMax = 8u << 20;
/// Timeout of slurm.run where the call has no deadline of its own.
inline constexpr std::chrono::milliseconds kRunDefaultTimeout{30000};
/// What a capped timeout leaves of the call's: time for the hook to return.
inline constexpr std::chrono::milliseconds kRunDeadlineMargin{250};

/// The deadline of the hook call in this process (the runner sets it from
/// RequestFrame::timeout_s before the hook runs); nullopt: none.
void set_call_deadline(std::optional<std::chrono::steady_clock::time_point> deadline);
/// true where no process group belongs to the call (slurmstepd): each
/// command gets one of its own, killed when slurm.run returns.
void set_run_own_group(bool own);

/// One command to run.
struct RunRequest {
  std::vector<std::string> argv;    ///< non-empty; argv[0] as execvp takes it
  std::optional<std::string> input; ///< standard input; nullopt: /dev/null
  std::chrono::milliseconds timeout{kRunDefaultTimeout};
  bool own_group = false;
  /// The whole environment ("NAME=value" each); nullopt: this process's.
  std::optional<std::vector<std::string>> env;
  /// The folder it starts in; nullopt: this process's.
  std::optional<std::string> cwd;
};

/// What became of it.
struct RunResult {
  bool started = false;
  std::string error;         ///< !started: why ("cannot run X: strerror")
  std::optional<int> status; ///< exit status
  std::optional<int> signal; ///< the signal that ended it
  bool timed_out = false;    ///< killed at the timeout
  /// Started, but poll(2) failed while it ran: killed, no status; `error`
  /// says why, and slurm.run returns nil and that message.
  bool unwatched = false;
  std::string out, err;   ///< captured, each at most kRunOutputMax
  bool truncated = false; ///< output beyond kRunOutputMax was dropped
  std::chrono::milliseconds elapsed{0};
};

/// Runs `req` to its end (see the rules above).  Never throws except on
/// OOM; a failure to start is RunResult::error.
RunResult run_command(const RunRequest &req);

/// The timeout slurm.run uses for `asked` (nullopt: none given): at most
/// what is left of the call's deadline.  nullopt: no time is left.
std::optional<std::chrono::milliseconds>
run_timeout(std::optional<std::chrono::milliseconds> asked);

/// Test seam: the poll(2) run_command() calls (nullptr: ::poll).
using PollFn = int (*)(pollfd *fds, nfds_t nfds, int timeout_ms);
void set_run_poll_for_tests(PollFn fn);

/// Registers slurm.run in the table at the top of L's stack.
void register_run(lua_State *L);

} // namespace switchlua
