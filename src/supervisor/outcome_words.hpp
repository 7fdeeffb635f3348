// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: supervisor/outcome_words.hpp
//
// The words of each outcome of a job_start / job_complete call, in one
// place.  The log line of the call (describe(), supervisor/outcome.cpp: what
// slurmctld.log and `switch-lua simulate` show) and the job's reason or the
// nodes' drain reason (outcome_text(), ctld/job_fsm_names.cpp: what squeue
// and sinfo -R show) both begin their outcome with outcome_words(), so one
// outcome reads the same everywhere: "died on signal 11 (SIGSEGV)" in the
// log and in the reason (issue 19: they once said "killed by signal" and
// "died on signal").  Each may add what only it says after these words
// (the log: ", not sent by the supervisor", the late result; the reason:
// "and was killed with its process group").
#pragma once

#include "supervisor/outcome.hpp"

#include <cstring>
#include <fmt/format.h>
#include <string>
#include <string_view>

namespace switchlua {

/// "11 (SIGSEGV)"; the number alone for a signal without a name (0).
inline std::string signal_text(int sig) {
  const char *abbrev = sig > 0 ? sigabbrev_np(sig) : nullptr;
  return abbrev ? fmt::format("{} (SIG{})", sig, abbrev) : std::to_string(sig);
}

/// The first line of a message (a Lua error may carry a traceback).  The
/// lines after it are logged as "traceback:" lines of the call
/// (ctld/core_calls.cpp), each escaped (common/utf8.hpp log_escape).
inline std::string_view outcome_first_line(std::string_view s) {
  return s.substr(0, s.find('\n'));
}

/// The words of `o`'s outcome with its one detail, e.g. "raised an error:
/// switch.lua:12: boom", "exited with status 3 without returning", "died on
/// signal 11 (SIGSEGV)", "timed out after 10004 ms", "was abandoned: ...".
/// For Returned it is "returned": the rc that follows is worded by each
/// side (the log names the jobinfo, the reason slurm.SUCCESS / EAGAIN).
inline std::string outcome_words(const Outcome &o) {
  const std::string_view first = outcome_first_line(o.message);
  switch (o.kind) {
  case OutcomeKind::Returned:
    return "returned";
  case OutcomeKind::LuaError:
    return fmt::format("raised an error: {}", first);
  case OutcomeKind::BadReturn:
    return fmt::format("broke the return convention: {}", first);
  case OutcomeKind::LoadFailed:
    return fmt::format("could not load the script: {}", first);
  case OutcomeKind::SpawnFailed:
    return fmt::format("could not be started: {}", first);
  case OutcomeKind::ExitedWithoutReturn:
    return fmt::format("exited with status {} without returning", o.exit_status);
  case OutcomeKind::Signaled:
    return fmt::format("died on signal {}", signal_text(o.signal));
  case OutcomeKind::TimedOut:
    return fmt::format("timed out after {} ms", o.elapsed.count());
  case OutcomeKind::Abandoned:
    return fmt::format("was abandoned: {}", first);
  }
  return "ended";
}

/// A job_start that returned a jobinfo the plugin cannot store, in both the
/// log and the reason: "a jobinfo that cannot be saved: <why>".
inline std::string jobinfo_unsaved_words(std::string_view why) {
  return fmt::format("a jobinfo that cannot be saved: {}", outcome_first_line(why));
}

} // namespace switchlua
