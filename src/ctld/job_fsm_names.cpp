// SPDX-License-Identifier: GPL-2.0-or-later
//
// The names of the state machine's states, events and actions, and the words
// for a call's outcome, as the log lines, reasons and switch.lua(5) spell
// them (job_fsm.hpp).
#include "ctld/job_fsm.hpp"
#include "supervisor/outcome_words.hpp"

#include <array>
#include <fmt/format.h>

namespace switchlua {

std::string_view job_state_name(JobState s) {
  static constexpr std::array<std::string_view, 13> names = {
      "None",         "SetupRunning",      "SetupRunningEnded", "Running",           "Declined",
      "SetupFailed",  "SetupAbandoned",    "TeardownRunning",   "TeardownRetryWait", "Done",
      "SetupUndoing", "SetupUndoingEnded", "SetupWaitOrphan"};
  return names.at(static_cast<std::size_t>(s));
}

bool is_terminal(JobState s) {
  return s == JobState::None || s == JobState::Declined || s == JobState::Done;
}

std::string_view event_kind_name(EventKind e) {
  static constexpr std::array<std::string_view, 8> names = {
      "SetupRequested", "SetupResult", "JobEnded",           "TeardownResult",
      "RetryTick",      "Recover",     "LateTeardownResult", "OrphanGone"};
  return names.at(static_cast<std::size_t>(e));
}

std::string_view action_kind_name(ActionKind a) {
  static constexpr std::array<std::string_view, 12> names = {
      "RunJobStart",    "RunJobComplete", "RunLateJobComplete",
      "EndConfiguring", "Requeue",        "RequeueHeld",
      "Cancel",         "HoldNodes",      "ReleaseNodes",
      "DrainNodes",     "ScheduleRetry",  "Log"};
  return names.at(static_cast<std::size_t>(a));
}

namespace {

/// The rc of a job_start / job_complete return, in words.
std::string rc_text(std::int64_t rc) {
  if (rc == kSuccess)
    return "rc=0 (slurm.SUCCESS)";
  if (rc == kEagain)
    return "rc=11 (slurm.EAGAIN)";
  return fmt::format("rc={}", rc);
}

} // namespace

/// What a call ended with, for reasons and the decision lines ("returned
/// rc=-1", "raised an error: switch.lua:12: boom", "timed out after 10004 ms
/// and was killed with its process group"): outcome_words(), the words the
/// call's log line uses too (supervisor/outcome_words.hpp), and what only a
/// reason adds.
std::string outcome_text(const Outcome &o) {
  const std::string words = outcome_words(o);
  switch (o.kind) {
  case OutcomeKind::Returned:
    if (!o.ret.jobinfo_error.empty())
      return fmt::format("{} {}", words, jobinfo_unsaved_words(o.ret.jobinfo_error));
    if ((o.ret.hook == Hook::JobStart || o.ret.hook == Hook::JobComplete) && o.ret.rc != kSuccess &&
        !o.ret.message.empty())
      return fmt::format("{} {}: {}", words, rc_text(o.ret.rc), o.ret.message);
    return fmt::format("{} {}", words, rc_text(o.ret.rc));
  case OutcomeKind::TimedOut:
    return words + " and was killed with its process group";
  default:
    return words;
  }
}

} // namespace switchlua
