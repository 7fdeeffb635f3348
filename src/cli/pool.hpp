// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: cli/pool.hpp
//
// `switch-lua pool release (--job JOBID | --pool NAME --id ID) [--dir DIR]
// [--timeout S]` (issue 38; switch-lua(1), POOL RELEASE): frees the
// quarantined IDs of a fabric-ID pool through the request and answer files
// of ctld/pool_release.hpp, served by the slurmctld in control.
#pragma once

#include <cstdint>
#include <string>

namespace switchlua {

struct PoolReleaseOptions {
  std::uint32_t job_id = 0; ///< every quarantined attempt of this JobId, or
  std::string pool;         ///< the one holding ID `id` of this pool
  std::uint32_t id = 0;
  /// StateSaveLocation ("": from $SLURM_CONF or /etc/slurm/slurm.conf).
  std::string dir;
  int timeout_s = 10; ///< how long to wait for slurmctld's answer, seconds
};

/// Writes the request, waits for its answer, prints it.  Exit status: 0
/// when IDs were released; 1 when nothing matched, the request was refused
/// or could not be written; 2 when slurmctld did not answer in time (the
/// request is then withdrawn when it was not taken yet).
int run_pool_release(const PoolReleaseOptions &o);

} // namespace switchlua
