// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: cli/lint.hpp
//
// luacheck (Debian: lua-check) on a switch.lua for `switch-lua check`, with
// the configuration the package installs (lua/switchlua.luacheckrc.in: the
// standard "switchlua" built from the API definitions, so the hooks and the
// slurm table are known and a misspelt slurm.* name, an accidental global or
// an unused local are reported).  luacheck is optional: without it check
// says so and goes on.
#pragma once

#include <string>
#include <vector>

namespace switchlua {

/// What luacheck said about one script.
struct LintResult {
  bool ran = false;    ///< luacheck was found and ran to its end
  std::string why_not; ///< !ran: why, e.g. "luacheck is not installed (Debian: lua-check)"
  std::string config;  ///< the luacheck configuration used
  std::vector<std::string> warnings; ///< "FILE:LINE:COL: (W143) accessing undefined field ..."
};

/// The luacheck configuration: $SWITCHLUA_LUACHECKRC, else the build tree's
/// when this switch-lua is not the installed binary (found from
/// /proc/self/exe, owned by root or the caller, not writable by others),
/// else the installed one.
std::string luacheck_config();

/// Runs `luacheck --config luacheck_config() --formatter plain --codes
/// --no-color SCRIPT` when luacheck is in an absolute folder of $PATH (an
/// empty or relative entry is skipped; 60 s at most), in /, with a fixed
/// environment (PATH=/usr/local/bin:/usr/bin:/bin, LC_ALL=C.UTF-8,
/// HOME=/nonexistent; nothing of the caller's: no LUA_PATH, LUA_INIT).
/// Never throws but on OOM.
LintResult run_luacheck(const std::string &script);

} // namespace switchlua
