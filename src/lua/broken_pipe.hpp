// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: lua/broken_pipe.hpp
//
// A write to a pipe whose reader is gone (a script's io.popen(cmd, "w")
// helper that exited before reading) must be a Lua error the script can
// handle (file:write returns nil, "Broken pipe", 32), never the death of
// the process running the script (issue 19): not of switch-lua-runner, not
// of `switch-lua simulate|check`, not of slurmstepd.
#pragma once

namespace switchlua {

/// While one is alive, SIGPIPE does not kill this process: if its
/// disposition is SIG_DFL, an empty handler is installed, and the last
/// guard to end puts SIG_DFL back.  A write to a broken pipe then fails
/// with EPIPE instead.  A *caught* signal is reset to SIG_DFL across exec
/// (SIG_IGN would survive it), so the commands the script starts meanwhile
/// still die of SIGPIPE as usual (`yes | head` ends).  A disposition that
/// is already a handler or SIG_IGN is left alone: slurmstepd 24.11 catches
/// SIGPIPE itself (conmgr logs "Caught SIGPIPE. Ignoring."), so in slurmstepd
/// this changes nothing.  Thread-safe; nests.
class BrokenPipeIsAnError {
public:
  BrokenPipeIsAnError();
  ~BrokenPipeIsAnError();
  BrokenPipeIsAnError(const BrokenPipeIsAnError &) = delete;
  BrokenPipeIsAnError &operator=(const BrokenPipeIsAnError &) = delete;
};

/// For a process of our own that runs scripts (switch-lua-runner): SIGPIPE
/// caught by an empty handler for the rest of the process's life, with the
/// exec reset described above.
void catch_sigpipe_for_good();

} // namespace switchlua
