// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: common/log_stamp.hpp
//
// The one stamp every line switch/lua logs starts with, in slurmctld,
// slurmstepd and `switch-lua simulate` alike: the plugin's name, then who
// the line is about, in Slurm's own spelling, so that one grep of
// "JobId=42" or "StepId=42.batch" finds the plugin's lines next to
// Slurm's.
//
//   log_line({}, "journal /x: compacted")
//       -> "switch/lua: journal /x: compacted"
//   log_line({.job_id = 42, .hook = "job_start"}, "started")
//       -> "switch/lua: JobId=42 job_start started"
//   log_line({.job_id = 42}, ": holding the job")
//       -> "switch/lua: JobId=42: holding the job"
//   log_line({.job_id = 42, .step_id = 0xFFFFFFFB, .node = "node1",
//             .hook = "step_init"}, ": cannot set X")
//       -> "switch/lua: JobId=42 StepId=42.batch node1 step_init: cannot set X"
//
// The stamp ends where the line's own words begin: text that starts with
// ':' is attached to the stamp, any other text follows one space.  The C
// glue gets the same subject through slc_log_subject() (switch_lua_core.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

namespace switchlua {

/// Every operator-facing line starts with this (grep 'switch/lua: ').
inline constexpr std::string_view kLogPrefix = "switch/lua: ";

/// Who a log line is about.  job_id 0 means no job (Slurm never hands out
/// JobId 0); step_id is Slurm's step_id.step_id (nullopt: not a step
/// line); node and hook are empty when they do not apply.
struct LogSubject {
  std::uint32_t job_id = 0;
  std::optional<std::uint32_t> step_id;
  std::string_view node;
  std::string_view hook;
};

/// "42.0", "42.batch", "42.extern", "42.interactive", "42.TBD": a step as
/// Slurm 24.11 writes it (slurm.h SLURM_{INTERACTIVE,BATCH,EXTERN}_{STEP,CONT},
/// SLURM_PENDING_STEP).
inline std::string step_id_text(std::uint32_t job_id, std::uint32_t step_id) {
  switch (step_id) {
  case 0xFFFFFFFA:
    return fmt::format("{}.interactive", job_id);
  case 0xFFFFFFFB:
    return fmt::format("{}.batch", job_id);
  case 0xFFFFFFFC:
    return fmt::format("{}.extern", job_id);
  case 0xFFFFFFFD:
    return fmt::format("{}.TBD", job_id);
  default:
    return fmt::format("{}.{}", job_id, step_id);
  }
}

/// The subject without the prefix: "JobId=42 StepId=42.0 node1 step_init";
/// empty for a line about no job.
inline std::string log_subject(const LogSubject &s) {
  std::string out;
  auto add = [&out](std::string_view part) {
    if (part.empty())
      return;
    if (!out.empty())
      out += ' ';
    out += part;
  };
  if (s.job_id != 0)
    add(fmt::format("JobId={}", s.job_id));
  if (s.job_id != 0 && s.step_id)
    add(fmt::format("StepId={}", step_id_text(s.job_id, *s.step_id)));
  add(s.node);
  add(s.hook);
  return out;
}

/// A whole line: kLogPrefix, the subject, then text (attached when it
/// starts with ':', after one space otherwise).
inline std::string log_line(const LogSubject &s, std::string_view text) {
  std::string out(kLogPrefix);
  out += log_subject(s);
  if (!text.empty() && text.front() != ':' && out.size() > kLogPrefix.size())
    out += ' ';
  out += text;
  return out;
}

/// log_line() with the text formatted by fmt.
template <typename... Args>
std::string log_line(const LogSubject &s, fmt::format_string<Args...> f, Args &&...args) {
  return log_line(s, std::string_view(fmt::format(f, std::forward<Args>(args)...)));
}

} // namespace switchlua
