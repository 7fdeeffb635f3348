// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: lua/trust.hpp
//
// Who may change what runs as root: the ownership rule for switch.lua and
// the Lua modules it loads, and the one module search path.
//
// The rule (sshd's StrictModes rule for authorized_keys, switch.lua(5)):
// the script, every directory above it up to /, and every module it loads
// with `require` must be owned by root or by SlurmUser and not writable by
// group or others.  The one relaxation from sshd: a directory owned by root
// with the sticky bit (/tmp, mode 1777) is accepted although others may
// write it, because in such a directory only an entry's owner (or root) may
// rename or remove it, so nobody else can replace what lies below.  A
// group- or other-writable directory without the sticky bit, or one that
// is sticky but not owned by root, is refused.  The file must be a regular
// file.  Symbolic links are followed: both the directories of the path as
// written and those of the resolved path are checked.
//
//   set_slurm_user(slurm_conf.slurm_user_id);        // once, at start-up
//   auto bytes = read_trusted_file("/etc/slurm/switch.lua", slurm_user());
//   if (!bytes) log(bytes.error().message);
//   // "/etc/slurm/switch.lua: owned by uid 1000 (alice), mode 0666: refused;
//   //  it must be owned by root or SlurmUser (slurm) and not writable by
//   //  group or others (switch.lua(5))"
#pragma once

#include "common/expected.hpp"

#include <cstddef>
#include <string>
#include <sys/stat.h>
#include <sys/types.h>

struct lua_State;

namespace switchlua {

/// Environment variable of switch-lua-supervisor and switch-lua-runner:
/// SlurmUser's uid (decimal), set by the controller (slurm_conf.slurm_user_id)
/// and by `switch-lua simulate`.  Unset: the process's effective uid.
inline constexpr const char *kSlurmUserEnv = "SWITCHLUA_SLURM_USER_UID";

/// Sets the process-wide SlurmUser uid trusted besides root (0: root only).
/// Called once at start-up by each host (slurmctld/slurmstepd plugin init,
/// supervisor and runner from kSlurmUserEnv, `switch-lua` from its option).
void set_slurm_user(uid_t uid);
/// The uid set by set_slurm_user(), else kSlurmUserEnv when set to a valid
/// number, else geteuid().
uid_t slurm_user();

/// Checks `path` (already opened; `st` is fstat of the open file) and every
/// directory above it (path as written and resolved) against the rule.
/// Error: one complete message naming the refused file or directory, its
/// owner (uid and name) and its mode, e.g.
///   "/etc/slurm/switch.lua: owned by uid 1000 (alice), mode 0666: refused;
///    it must be owned by root or SlurmUser (slurm) and not writable by
///    group or others (switch.lua(5))"
///   "/etc/slurm/switch.lua: directory /etc/slurm above it is owned by uid
///    1000 (alice), mode 0755: refused; ..."
Expected<void> check_trusted(const std::string &path, const struct stat &st, uid_t slurm_user);

/// The largest script or module read_trusted_file() reads, bytes.
inline constexpr std::size_t kMaxScriptBytes = std::size_t{16} << 20;

/// Opens `path` (O_NONBLOCK: a FIFO does not hang), checks it with
/// check_trusted() on the open file (no race between the check and the
/// read; a refused file is not read at all), and returns its bytes, at most
/// kMaxScriptBytes (common/safe_file.hpp read_fd_bounded).  Errors:
///   "cannot open <path>: <strerror>" (as Lua's loadfile), "cannot read
///   <path>: <strerror>", "<path>: larger than 16777216 bytes: refused", or
///   the refusal of check_trusted().
Expected<std::string> read_trusted_file(const std::string &path, uid_t slurm_user);

/// The module search path of a script at `script_path` (switch.lua(5)):
/// "<dir>/?.lua;<dir>/?/init.lua;" then the system Lua 5.4 path
/// (LUA_PATH_DEFAULT of the Lua headers without its "./" entries), whatever
/// the caller's LUA_PATH.  <dir> is the script's directory made absolute.
std::string module_path(const std::string &script_path);
/// The C module search path: LUA_CPATH_DEFAULT without its "./" entries,
/// whatever the caller's LUA_CPATH.
std::string module_cpath();

/// Sets package.path / package.cpath of L to module_path(script_path) /
/// module_cpath() and makes every `require` that finds a file check it with
/// the rule first (against slurm_user()); a refused module raises the
/// refusal as the error of `require`.  Call under lua_pcall after
/// luaL_openlibs.
void install_module_rules(lua_State *L, const std::string &script_path);

} // namespace switchlua
