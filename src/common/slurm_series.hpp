// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: common/slurm_series.hpp
//
// What differs by Slurm series for switch/lua, in one table: the plugin
// (plugin/ctld_abi.cpp: slc_set_slurm_series(), from the series the glue
// was compiled for) and `switch-lua simulate --slurm` (cli/simulate.cpp)
// both read it, and test/unit/common/slurm_series_test.cpp checks
// switch.lua(5) SLURM VERSIONS against it.  The facts come from each
// series' sources (src/interfaces/switch.c, src/slurmd/slurmstepd/mgr.c,
// src/slurmctld/node_scheduler.c); see src/plugin/slurm_compat.h for the
// ABI rows, which only the C glue needs.
//
//   const SlurmSeries *s = find_slurm_series("26.05");
//   if (s && s->special_steps) ... // the batch step may run step_init
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace switchlua {

/// One Slurm series as switch/lua sees it.
struct SlurmSeries {
  std::string_view name; ///< "24.11": major.minor, as `--slurm` takes it
  unsigned number;       ///< 2411: major * 100 + minor (slurm_compat.h: SLURM_COMPAT_SERIES)
  /// switch.lua contract: setup_special_steps.  slurmstepd runs step_init
  /// for the batch and interactive steps when the script's
  /// setup_special_steps() returns true (mgr.c: job_manager), and slurmctld
  /// gives those steps a stepinfo.  False: the answer is ignored.
  bool special_steps;
  /// switch.lua contract: block_job_complete.  Who asks the two start-up
  /// questions (block_job_complete, setup_special_steps): slurmctld when
  /// it loads the plugin, and, when true, every slurmstepd too when it
  /// loads the script (its answer to block_job_complete is unused).
  bool stepd_asks_start_questions;
  /// select_nodes() calls switch_p_job_start twice, first with test_only
  /// true before it allocates the nodes (the plugin does nothing then).
  bool job_start_test_only;
  /// Slurm frees a job record's jobinfo itself (switch_p_*jobinfo_free).
  bool frees_jobinfo;
  /// A development snapshot of Slurm's master, not a release (the "kind"
  /// column of src/plugin/slurm_series): never simulate's default.
  bool snapshot = false;
};

/// Every series the plugin builds for, oldest first: the rows of
/// src/plugin/slurm_series (a test checks they match).
inline constexpr std::array<SlurmSeries, 5> kSlurmSeries{{
    {.name = "24.11",
     .number = 2411,
     .special_steps = false,
     .stepd_asks_start_questions = false,
     .job_start_test_only = false,
     .frees_jobinfo = false},
    {.name = "25.05",
     .number = 2505,
     .special_steps = false,
     .stepd_asks_start_questions = false,
     .job_start_test_only = false,
     .frees_jobinfo = true},
    {.name = "25.11",
     .number = 2511,
     .special_steps = true,
     .stepd_asks_start_questions = true,
     .job_start_test_only = true,
     .frees_jobinfo = true},
    {.name = "26.05",
     .number = 2605,
     .special_steps = true,
     .stepd_asks_start_questions = true,
     .job_start_test_only = true,
     .frees_jobinfo = true},
    {.name = "26.11",
     .number = 2611,
     .special_steps = true,
     .stepd_asks_start_questions = true,
     .job_start_test_only = true,
     .frees_jobinfo = true,
     .snapshot = true},
}};

/// The newest release (simulate's default): never a snapshot.
inline constexpr const SlurmSeries &newest_slurm_series() {
  for (auto it = kSlurmSeries.rbegin(); it != kSlurmSeries.rend(); ++it)
    if (!it->snapshot)
      return *it;
  return kSlurmSeries.front();
}

/// The series named `name` ("24.11"), or nullptr.
inline constexpr const SlurmSeries *find_slurm_series(std::string_view name) {
  for (const SlurmSeries &s : kSlurmSeries)
    if (s.name == name)
      return &s;
  return nullptr;
}

/// The series numbered `number` (2411), or nullptr.
inline constexpr const SlurmSeries *find_slurm_series(unsigned number) {
  for (const SlurmSeries &s : kSlurmSeries)
    if (s.number == number)
      return &s;
  return nullptr;
}

/// The info line slurmctld logs when the script's setup_special_steps()
/// returns true at plugin start (switch.lua contract: setup_special_steps):
/// taken on a series with special steps, ignored on the others.  Written
/// by the plugin (plugin/ctld_abi.cpp) and by `switch-lua simulate`.
inline constexpr std::string_view setup_special_steps_line(const SlurmSeries &s) {
  return s.special_steps
             ? "switch/lua: setup_special_steps() returned true: batch and interactive steps "
               "get a stepinfo and run step_init"
             : "switch/lua: setup_special_steps() returned true, but a Slurm older than 25.11 "
               "never calls the step init for batch or interactive steps: ignored";
}

static_assert(find_slurm_series("24.11") && !find_slurm_series("24.11")->special_steps);
static_assert(newest_slurm_series().special_steps);

} // namespace switchlua
