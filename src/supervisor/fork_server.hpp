// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: supervisor/fork_server.hpp
//
// The fork server: one switch-lua-runner started with --fork-server by the
// supervisor, which has loaded the runner's libraries and run the built-in
// warm-up script once (in a Lua state it closed), and from then on only
// forks: one child per request, with no exec, that is a runner for exactly
// one call.  What exec, the dynamic loader and the warm-up cost every runner
// (about 3.5 ms of CPU on the testbed, issue 22) is paid once per supervisor.
//
//   supervisor                      fork server (holds nothing of any call)
//   fork_runner(tag) ──request──>   clone(CLONE_PARENT): the child is the
//     (SOCK_SEQPACKET: the tag,     supervisor's own child, as an exec'd
//      the channel fd attached)     runner is; the server closes its copy
//   <──────────── pid ────────────  of the channel and forgets the child
//   setpgid(pid, pid)
//
// The child (become_call_process in fork_server.cpp) then does what the
// spawn of an exec'd runner does (spawn.hpp): setpgid(0, 0) (the supervisor
// does it too, so the group exists before the pid is used), the channel on
// fd 3 and every other fd closed, the parent-death signal, the call tag;
// stdio (/dev/null), signal dispositions (default, the runner's own
// handlers), the empty signal mask, the environment (exactly the clean set
// and SpawnSpec::env) and the resource limits are the fork server's, which
// got them as any runner does and never changes them.  The child then reads
// its request and loads its script into a fresh Lua state, as an exec'd
// runner does; its math.random is seeded from the kernel (runtime.cpp), not
// from an address that every child of one fork server shares.
//
// The child is made with clone(2)'s CLONE_PARENT, not fork(2), so that it
// is the supervisor's child: the supervisor reaps it, signals its group only
// while it is unreaped, and inherits its orphans, exactly as for an exec'd
// runner (call.hpp).  glibc's fork() is bypassed: its atfork handlers do not
// run (the fork server is single-threaded and registers none) and the thread
// id glibc keeps for the main thread is written by the kernel
// (CLONE_CHILD_SETTID) where glibc keeps it, when it can be found.
//
// The fork server is the host's, never a call's: when it cannot be started,
// dies, or does not answer within kForkReplyLimit, the supervisor kills it,
// execs this call's runner as before, and starts a new fork server for a
// later call.  One that failed before it ever answered is not started again
// (the runner binary does not speak the protocol): runners are exec'd from
// then on.  A runner is always the switch-lua-runner on disk now, as an
// exec'd one is: when that file is replaced (an upgrade) or removed, the
// fork server is retired before the next fork and a new one started (or,
// without the file, the runner cannot start: a host fault).
#pragma once

#include "common/expected.hpp"
#include "supervisor/call.hpp"

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <functional>
#include <sys/types.h>
#include <vector>

namespace switchlua {

/// The longest the supervisor waits for the fork server's answer.
inline constexpr std::chrono::milliseconds kForkReplyLimit{2000};

/// The fork server as the supervisor sees it.  Single-threaded (the
/// supervisor's loop).
class ForkServer {
public:
  explicit ForkServer(const RunnerConfig &config) : config_(config) {}
  ~ForkServer();
  ForkServer(const ForkServer &) = delete;
  ForkServer &operator=(const ForkServer &) = delete;

  /// A runner forked by the fork server, the leader of its own group, with
  /// the call tag `tag` (0: none yet); the caller owns it as any
  /// RunnerProcess.  Starts the fork server first when none runs.  Errors:
  /// no fork server (it could not be started, or is given up on), a failed
  /// fork; the caller then execs the runner itself (spawn_runner).
  Expected<RunnerProcess> fork_runner(boost::asio::io_context &io, CallId tag);

  /// Whether `pid` is a fork server of ours not reaped yet (the current one
  /// or one given up on): never a call's leftover.
  bool owns(pid_t pid) const;
  /// Every such pid.
  std::vector<pid_t> pids() const;
  /// The supervisor reaped `pid` (one of ours): forget it.
  void reaped(pid_t pid);

private:
  /// The runner file's identity (device, inode, size, mtime); "" when it
  /// cannot be read.
  std::string runner_identity() const;
  Expected<void> start(boost::asio::io_context &io);
  /// Closes the channel, SIGKILLs the process (reaped by the supervisor's
  /// SIGCHLD handler, which calls reaped()).
  void retire();
  /// retire(), and never again when it had not answered yet.
  void give_up();

  const RunnerConfig &config_;
  int fd_ = -1;                ///< our end of the control socket; -1: none running
  pid_t pid_ = -1;             ///< the current fork server
  std::string identity_;       ///< runner_identity() when it was started
  bool answered_ = false;      ///< the current one answered at least once
  bool never_again_ = false;   ///< one failed before answering: exec from now on
  std::vector<pid_t> retired_; ///< given up on, not yet reaped
};

/// The fork server's side (switch-lua-runner --fork-server): serves
/// requests on `control_fd` until the supervisor closes it, then exits 0.
/// In each child, after the set-up above, calls `run_call(kChildChannelFd)`
/// and _exits with its value.  Never returns.
[[noreturn]] void serve_forks(int control_fd, const std::function<int(int)> &run_call);

} // namespace switchlua
