// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: supervisor/spawn.hpp
//
// Starting one child process (the supervisor from the client, a runner from
// the supervisor) with Boost.Process v2's vfork launcher: the parent's page
// tables are not copied, which matters in a large slurmctld.  The child is
// prepared by small initializers, one concern each (see spawn.cpp):
//
//   new_process_group   setpgid(0, 0): the child leads its own group, so the
//                       whole group can be killed, and terminal signals of the
//                       parent's group do not reach it
//   null_stdio          stdin, stdout, stderr on /dev/null
//   inherit_channel     the channel socket as fd 3; every other fd is closed
//   default_signals     all dispositions SIG_DFL, empty signal mask
//   clean_environment   exactly SpawnSpec::env
//   parent_death_signal PR_SET_PDEATHSIG, set before exec, so it cannot race
//                       the parent's death
//
//   SpawnSpec spec{.path = runner, .args = {"--channel-fd=3"}, .channel_fd = sv[1],
//                  .env = {"PATH=...", "LANG=C"}, .death_signal = SIGTERM};
//   Expected<pid_t> pid = spawn_child(io, spec);  // caller reaps the pid
//
// A failed exec is an Error carrying the errno text ("cannot execute
// /x/switch-lua-runner: No such file or directory"), never an exit status;
// the short-lived child of a failed exec is reaped before returning.
#pragma once

#include "common/expected.hpp"

#include <boost/asio/io_context.hpp>

#include <string>
#include <sys/types.h>
#include <vector>

namespace switchlua {

/// The fd number the channel socket has in every child.
inline constexpr int kChildChannelFd = 3;

/// The fixed part of every child's environment; callers append to it.
std::vector<std::string> base_child_env();

/// What to start.
struct SpawnSpec {
  std::string path;              ///< absolute path of the executable
  std::vector<std::string> args; ///< argv[1..]; argv[0] is `path`
  int channel_fd = -1;           ///< parent's fd to pass as kChildChannelFd; must be > 2
  std::vector<std::string> env;  ///< the child's complete environment, "NAME=value"
  int death_signal = 0;          ///< PR_SET_PDEATHSIG signal; 0 for none
};

/// Starts `spec` and returns the child's pid.  The caller owns the pid: it
/// must reap it (waitpid/waitid); Boost.Process never waits for it.  Call
/// from the thread that runs `io` (the launcher notifies it of the fork).
/// The thread's signal mask is unchanged on return.  Errors: /dev/null or the
/// channel unusable, vfork failed, exec failed (errno text).
Expected<pid_t> spawn_child(boost::asio::io_context &io, const SpawnSpec &spec);

} // namespace switchlua
