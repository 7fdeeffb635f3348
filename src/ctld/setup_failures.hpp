// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: ctld/setup_failures.hpp
//
// switch_max_setup_failures (R_SETUP_FAILURES_HELD): each job's count of
// consecutive failed setups, kept by the core in memory and in its journal
// (JournalKind::SetupFailureCounted / SetupFailuresCleared), so that it
// survives a slurmctld restart.  A requeue after a failed setup counts one
// more; a hold (the job's count is then spent: `scontrol release` starts
// again from 0), or a setup that succeeded or declined, ends the count.
#pragma once

#include "ctld/config.hpp"
#include "ctld/job_fsm.hpp"
#include "ctld/journal.hpp"

#include <cstdint>
#include <map>
#include <optional>

namespace switchlua {

/// By job id (bounded: kJournalMaxFailureCounts).
using SetupFailureCounts = std::map<std::uint32_t, SetupFailures>;

/// The job's consecutive failed setups before this run's: 0 unless the
/// last counted one was in the run this one is the requeue of (Slurm's
/// restart_count one less), so a reused job id starts from 0.
std::uint32_t prior_setup_failures(const SetupFailureCounts &counts, const JobArgs &job);

/// Updates `counts` after one step of the state machine (`r`, for event
/// `e`) and returns the journal record that says so, if any.  Counts only
/// while cfg.max_setup_failures is on.
std::optional<JournalRecord> count_setup_failures(SetupFailureCounts &counts, const CtldConfig &cfg,
                                                  const Event &e, const StepResult &r);

} // namespace switchlua
