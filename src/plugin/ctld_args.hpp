// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: plugin/ctld_args.hpp
//
// What the slurmctld glue hands the core in plain C (switch_lua_core.h),
// as the core's types: the job table of job_start (slc_job_t -> JobArgs)
// and what slurmctld says of the job's nodes when it ends (slc_job_end_t
// -> JobEnd, issue 20).  Internal to the plugin's C ABI (ctld_abi.cpp).
#pragma once

#include "ctld/node_attribution.hpp"
#include "lua/contract.hpp"
#include "plugin/switch_lua_core.h"

namespace switchlua {

/// The job table of `j`, every string copied; Slurm's NO_VAL and INFINITE
/// time limits are nil, the array and het fields only when the job is one.
JobArgs job_args(const slc_job_t &j);

/// `end` as the core reads it; NULL, and NULL members, say nothing.
JobEnd job_end(const slc_job_end_t *end);

} // namespace switchlua
