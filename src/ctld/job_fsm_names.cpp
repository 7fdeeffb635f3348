// SPDX-License-Identifier: GPL-2.0-or-later
//
// The names of the state machine's states, events and actions, as the log
// lines and switch.lua(5) spell them (job_fsm.hpp).
#include "ctld/job_fsm.hpp"

#include <array>

namespace switchlua {

std::string_view job_state_name(JobState s) {
  static constexpr std::array<std::string_view, 12> names = {
      "None",         "SetupRunning",     "SetupRunningEnded", "Running",           "Declined",
      "SetupFailed",  "SetupAbandoned",   "TeardownRunning",   "TeardownRetryWait", "Done",
      "SetupUndoing", "SetupUndoingEnded"};
  return names.at(static_cast<std::size_t>(s));
}

bool is_terminal(JobState s) {
  return s == JobState::None || s == JobState::Declined || s == JobState::Done;
}

std::string_view event_kind_name(EventKind e) {
  static constexpr std::array<std::string_view, 7> names = {
      "SetupRequested", "SetupResult", "JobEnded",          "TeardownResult",
      "RetryTick",      "Recover",     "LateTeardownResult"};
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

} // namespace switchlua
