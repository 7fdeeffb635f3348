// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: supervisor/outcome.cpp
//
// classify(): Observation -> Outcome, and describe(): Outcome -> one line.
// Both pure; the rules are those documented in outcome.hpp.
#include "supervisor/outcome.hpp"
#include "supervisor/outcome_words.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <sys/wait.h>

namespace switchlua {

std::string_view outcome_kind_name(OutcomeKind k) {
  switch (k) {
  case OutcomeKind::Returned:
    return "returned";
  case OutcomeKind::LuaError:
    return "lua_error";
  case OutcomeKind::BadReturn:
    return "bad_return";
  case OutcomeKind::ExitedWithoutReturn:
    return "exited_without_return";
  case OutcomeKind::Signaled:
    return "signaled";
  case OutcomeKind::TimedOut:
    return "timed_out";
  case OutcomeKind::SpawnFailed:
    return "spawn_failed";
  case OutcomeKind::Abandoned:
    return "abandoned";
  case OutcomeKind::LoadFailed:
    return "load_failed";
  }
  return "unknown";
}

namespace {

Outcome make(OutcomeKind k, std::string message = {}) {
  Outcome o;
  o.kind = k;
  o.message = std::move(message);
  return o;
}

bool any_frame(const Observation &obs) {
  return obs.result || obs.lua_error || obs.bad_return || obs.load_error;
}

Outcome classify_timeout(const Observation &obs) {
  Outcome o = make(OutcomeKind::TimedOut);
  if (obs.result && obs.result_after_deadline)
    o.late_return = obs.result;
  // Our own kill is a SIGKILL: a normal exit means the child got out first.
  o.late_exit = !any_frame(obs) && WIFEXITED(obs.wait_status);
  if (o.late_exit)
    o.exit_status = WEXITSTATUS(obs.wait_status);
  return o;
}

} // namespace

Outcome classify(const Observation &obs) {
  if (!obs.spawned)
    return make(OutcomeKind::SpawnFailed, obs.spawn_error);
  if (obs.deadline_fired)
    return classify_timeout(obs);
  if (obs.result) {
    Outcome o = make(OutcomeKind::Returned);
    o.ret = *obs.result;
    return o;
  }
  if (obs.lua_error)
    return make(OutcomeKind::LuaError, *obs.lua_error);
  if (obs.bad_return)
    return make(OutcomeKind::BadReturn, *obs.bad_return);
  if (obs.load_error)
    return make(OutcomeKind::LoadFailed, *obs.load_error);
  if (WIFEXITED(obs.wait_status)) {
    Outcome o = make(OutcomeKind::ExitedWithoutReturn);
    o.exit_status = WEXITSTATUS(obs.wait_status);
    return o;
  }
  Outcome o = make(OutcomeKind::Signaled);
  o.signal = WIFSIGNALED(obs.wait_status) ? WTERMSIG(obs.wait_status) : 0;
  return o;
}

namespace {

std::string describe_return(const HookReturn &r) {
  switch (r.hook) {
  case Hook::BlockJobComplete:
  case Hook::SetupSpecialSteps:
    return r.flag ? "true" : "false";
  case Hook::JobStart:
    if (r.jobinfo)
      return fmt::format("rc={} with jobinfo", r.rc);
    if (!r.jobinfo_error.empty())
      return fmt::format("rc={} with {}", r.rc, jobinfo_unsaved_words(r.jobinfo_error));
    if (!r.message.empty())
      return fmt::format("rc={}: {}", r.rc, r.message);
    return fmt::format("rc={} without jobinfo", r.rc);
  default:
    return fmt::format("rc={}", r.rc);
  }
}

/// The log's words: outcome_words() and what only the log adds.
std::string describe_kind(const Outcome &o) {
  const std::string words = outcome_words(o);
  switch (o.kind) {
  case OutcomeKind::Returned:
    return fmt::format("{} {}", words, describe_return(o.ret));
  case OutcomeKind::Signaled:
    return words + ", not sent by the supervisor";
  case OutcomeKind::TimedOut:
    if (o.late_return)
      return fmt::format("{} (late result: {})", words, describe_return(*o.late_return));
    if (o.late_exit)
      return fmt::format("{} (late exit with status {} without returning)", words, o.exit_status);
    return words;
  default:
    return words;
  }
}

} // namespace

std::string describe(const Outcome &o) {
  std::string s = describe_kind(o);
  if (!o.escapees.empty())
    s += fmt::format("; killed {} process(es) that had left its process group (pid {})",
                     o.escapees.size(), fmt::join(o.escapees, ", "));
  if (!o.ret.warnings.empty() && o.kind == OutcomeKind::Returned)
    s += fmt::format("; {} warning(s)", o.ret.warnings.size());
  return s;
}

} // namespace switchlua
