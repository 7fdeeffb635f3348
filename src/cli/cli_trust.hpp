// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: cli/cli_trust.hpp
//
// What `switch-lua check|simulate`, often run as root, trusts (issue 35,
// switch-lua(1) SECURITY):
//
//   * the helpers it starts (switch-lua-supervisor, switch-lua-runner) come
//     from one folder found from the running binary (/proc/self/exe), never
//     from a path compiled in at build time nor from the environment: the
//     installed libexec folder when the binary is the installed one, else
//     the build tree's src/supervisor beside its src/cli; the folder and the
//     file must be owned by root or the caller and not writable by group
//     or others;
//   * SlurmUser (who may own the script besides root) comes from
//     --slurm-user, else from the system's slurm.conf only ($SLURM_CONF or
//     /etc/slurm/slurm.conf, owned by root and not writable by group or
//     others); a slurm.conf beside the script is never looked at.
#pragma once

#include "common/expected.hpp"

#include <string>
#include <sys/types.h>

namespace switchlua {

/// The path of the helper `name` (the rule above).  Error: one line naming
/// the refused folder or file, its owner and mode.
Expected<std::string> helper_path(const std::string &name);

/// SlurmUser's uid from the system slurm.conf (the rule above): 0 (root
/// only) when the file is missing or sets none.  Error: one line, for a
/// slurm.conf not owned by root or writable by others, or an unknown user.
Expected<uid_t> system_slurm_user();

} // namespace switchlua
