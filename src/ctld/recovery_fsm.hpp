// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: ctld/recovery_fsm.hpp
//
// The controller's decisions outside a job's state machine, as rows of
// sibling tables of the rule table (job_fsm_table.cpp) with ids like the
// others (switch.lua(5), Restart and Journal):
//   - what a restarted slurmctld makes of a job state Slurm saved, given
//     what the journal says of its attempt (R_RECOVER_*; CtldCore::adopt);
//   - the teardown of an attempt the journal says is not over and that no
//     job record carries any more (R_ORPHAN_*; CtldCore::reconcile_journal);
//   - the result of the extra job_complete of a late setup result
//     (R_LATE_RESULT).
// Pure, like job_fsm.hpp: the core executes what these return.  Every id
// is listed by rule_ids() (job_fsm.hpp).
#pragma once

#include "ctld/config.hpp"
#include "ctld/job_fsm.hpp"
#include "ctld/journal.hpp"
#include "supervisor/outcome.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace switchlua {

/// What the glue must do with a recovered job's launch (recover_job()).
enum class Recovery : int {
  Nothing = 0,          ///< nothing to do with the job's launch
  DelayLaunch = 1,      ///< a setup (or its undo) runs again: prolog_running++
  ClearConfiguring = 2, ///< the journal says the launch was released before
                        ///< the crash: end CONFIGURING without launching again
  LaunchNow = 3,        ///< the setup had returned but the launch was not
                        ///< released: end CONFIGURING and launch now
};

/// What adopt_decision() makes of a saved state.
struct AdoptDecision {
  std::string_view rule;        ///< R_RECOVER_* ("R_RECOVER_AS_SAVED": no journal fact applies)
  JobSwitchState next;          ///< the state to keep (marked recovered)
  std::optional<Recovery> hint; ///< what recover_job() then tells the glue, if set
  std::string log;              ///< the decision's info line after "switch/lua: "; empty: none
};

/// Merges a job state unpacked from Slurm's job state file (`saved`, whose
/// attempt is not 0) with what the journal says of that attempt: whether it
/// is among the finished ones (`forgotten`), and its live entry when that
/// entry is of the same job (job id and submit time match; else nullptr).
/// Slurm saves job state at most every few seconds, so the journal is newer
/// (switch.lua(5), Restart): an attempt it says is over is forgotten
/// (R_RECOVER_FORGOTTEN); a setup whose teardown had started with a jobinfo
/// resumes that teardown (R_RECOVER_TEARDOWN_STARTED); a setup that had
/// returned a jobinfo is restored as Running with it, its launch released
/// or not (R_RECOVER_ACCEPTED_LAUNCHED / R_RECOVER_ACCEPTED_LAUNCH_NOW);
/// anything else stays as Slurm saved it (R_RECOVER_AS_SAVED).
AdoptDecision adopt_decision(const JobSwitchState &saved, bool forgotten, const JournalEntry *live);

/// What to do with the result of a teardown outside a job's state (an
/// orphaned attempt's, or the extra call of a late setup result).
struct TeardownDecision {
  std::string_view rule; ///< R_ORPHAN_OK / R_ORPHAN_FAIL / R_LATE_RESULT
  bool error = false;    ///< its line is logged at error level (else info)
  bool drain = false;    ///< drain the attempt's nodes (unless switch_drain_on_failure=no)
  bool forget = false;   ///< the attempt is over: journal it Forgotten
  /// Why it failed, for the line and the drain reason ("returned rc=-1",
  /// "returned slurm.EAGAIN but its nodes cannot be held (job record gone)");
  /// outcome_text() of the result when it needs no more words.
  std::string what;
  PoolsFate pools = PoolsFate::Keep; ///< issue 38: the row's pools column
};

/// The line of R_ORPHAN_TEARDOWN after "switch/lua: ": the journal's
/// attempt `attempt` of entry `e`, torn down with its jobinfo (or nil).
std::string orphan_teardown_line(std::int64_t attempt, const JournalEntry &e, bool with_jobinfo);

/// When an orphan's teardown starts (issue 24, the lost start).  An
/// attempt whose launch was released before the crash and whose teardown
/// never started may still run on its nodes (Slurm lost the job's start:
/// its record came back PENDING, or is gone): while `nodes_may_run` it
/// waits (R_ORPHAN_WAIT_NODES, `wait` true); otherwise, and for every other
/// orphan, it is torn down now (R_ORPHAN_TEARDOWN).  `line` is the
/// decision's info line after "switch/lua: ".
struct OrphanStart {
  std::string_view rule;
  bool wait = false;
  std::string line;
};
OrphanStart orphan_start(std::int64_t attempt, const JournalEntry &e, bool nodes_may_run,
                         bool with_jobinfo);
/// Whether an orphan of entry `e` is of the kind that may still run on its
/// nodes (launch released, no teardown started): only those are asked about.
bool orphan_may_still_run(const JournalEntry &e);

/// The result of an orphan teardown.  switch.lua contract, job_complete:
/// SUCCESS or another positive value but EAGAIN ends it (R_ORPHAN_OK);
/// anything else is a failure that drains its job table's nodes
/// (R_ORPHAN_FAIL): EAGAIN and a kill from outside too, since a retry needs
/// the nodes held and no job record holds them any more.
TeardownDecision orphan_result(const Outcome &out);

/// The result of the extra job_complete of a late setup result
/// (R_LATE_RESULT; switch.lua contract, job_start timeout: "its result is
/// only logged"): at info level for SUCCESS or a positive value other than
/// EAGAIN, else at error level; never drained, never retried.
TeardownDecision late_result_decision(const Outcome *out);

} // namespace switchlua
