// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: ctld/adopt_results.hpp
//
// What a result recorded by a supervisor (supervisor/results_log.hpp) adds
// to the journal of a slurmctld that takes control (issue 40; switch.lua(5),
// HIGH AVAILABILITY): the call ended while its own slurmctld was stopped,
// and that slurmctld was killed (or fenced out) before the result reached
// its journal.  Only a result that proves the journal's next step is
// adopted; anything else leaves the journal as it is, and the restart rules
// (R_RESTART_*, R_ORPHAN_*) apply as without it:
//
//   job_start returned SUCCESS with a jobinfo, for an attempt the journal
//     has started and not yet accepted nor begun to tear down
//       -> "setup accepted" with that jobinfo (R_RECOVER_ACCEPTED_*: not run
//          again; launched unless its launch was released);
//   job_complete returned success (rc >= 0, not EAGAIN) for an attempt whose
//     teardown the journal has started with a jobinfo, and the call got
//     that very jobinfo (its content hash)
//       -> "forgotten" (R_RECOVER_FORGOTTEN: not torn down again).
//
// A result of an attempt the journal no longer holds (over, or re-run since
// with a new attempt) or of another job with the same attempt id is
// ignored: a late result is never taken for a newer call.
#pragma once

#include "ctld/journal.hpp"
#include "supervisor/results_log.hpp"

#include <optional>

namespace switchlua {

/// The journal record `r` proves against `t`, or nullopt (see above).  Pure.
std::optional<JournalRecord> adopt_result(const JournalTable &t, const ResultRecord &r);

} // namespace switchlua
