// SPDX-License-Identifier: GPL-2.0-or-later
//
// CtldCore's fabric breaker (issue 20; switch.lua(5), Fabric outages) and
// the rate limit of its host-fault lines: what apply() (core.cpp) counts,
// opens and closes.  The shared insides: core_impl.hpp.
#include "ctld/core_impl.hpp"

#include "common/log_stamp.hpp"

#include <fmt/format.h>

#include <set>

namespace switchlua {

using namespace core_detail;

bool CtldCore::Impl::host_fault_line(std::string &line) {
  constexpr auto kHostFaultLinePeriod = std::chrono::seconds(10);
  const auto now = std::chrono::steady_clock::now();
  if (host_fault_line_at != std::chrono::steady_clock::time_point{} &&
      now - host_fault_line_at < kHostFaultLinePeriod) {
    ++host_fault_lines_held;
    return false;
  }
  if (host_fault_lines_held)
    line += fmt::format(
        " ({} more host fault{} in the {} s since the last such line: see "
        "Host faults in switch-lua status)",
        host_fault_lines_held, host_fault_lines_held == 1 ? "" : "s",
        std::chrono::duration_cast<std::chrono::seconds>(now - host_fault_line_at).count());
  host_fault_line_at = now;
  host_fault_lines_held = 0;
  return true;
}

bool core_detail::is_failed_teardown(std::string_view rule) {
  return rule == "R_COMPLETE_FAIL" || rule == "R_COMPLETE_EAGAIN_EXHAUSTED" ||
         rule == "R_COMPLETE_EAGAIN_UNHELD" || rule == "R_COMPLETE_KILLED_EXHAUSTED" ||
         rule == "R_COMPLETE_KILLED_UNHELD";
}

bool CtldCore::Impl::breaker_counts(std::uint32_t job_id) {
  if (cfg.breaker_failures == 0)
    return false;
  const auto now = std::chrono::steady_clock::now();
  const auto window = std::chrono::seconds(cfg.breaker_window_s);
  breaker.failures.emplace_back(now, job_id);
  while (!breaker.failures.empty() && now - breaker.failures.front().first > window)
    breaker.failures.pop_front();
  std::set<std::uint32_t> distinct;
  for (const auto &[at, id] : breaker.failures)
    distinct.insert(id);
  return distinct.size() >= cfg.breaker_failures;
}

void CtldCore::Impl::open_breaker(const std::string &why) {
  breaker.open = true;
  breaker.gate = true;
  breaker.why = why;
  breaker.since = std::chrono::steady_clock::now();
  breaker.probe_at = breaker.since; // the gate's first probe: breaker_probe from now
  breaker.failures.clear();
  stats.breaker(true, unix_now(), why);
  port.log(LogLevel::Error,
           log_line({},
                    "fabric breaker OPEN: {}: the fabric as a whole is taken to be "
                    "unavailable; until a hook succeeds again, failed teardowns are kept and "
                    "run again (held nodes stay held, none is drained for it) and failed "
                    "setups are requeued naming the outage",
                    why));
}

void CtldCore::Impl::close_breaker(std::uint32_t job_id, std::string_view hook) {
  breaker.open = false;
  breaker.gate = false;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> kept;
  for (const auto &[id, s] : jobs)
    if (s.kept > 0 && (s.state == JobState::TeardownRetryWait ||
                       s.state == JobState::SetupUndoing || s.state == JobState::SetupUndoingEnded))
      kept.emplace_back(id, s.generation);
  const auto open_for = std::chrono::duration_cast<std::chrono::seconds>(
      std::chrono::steady_clock::now() - breaker.since);
  stats.breaker(false, unix_now(), "");
  port.log(LogLevel::Error,
           log_line({},
                    "fabric breaker closed after {} s open: JobId={} {} succeeded; running "
                    "the {} kept teardown{} now",
                    open_for.count(), job_id, hook, kept.size(), kept.size() == 1 ? "" : "s"));
  for (const auto &[id, gen] : kept)
    arm_timer(std::chrono::milliseconds(1), {.job_id = id, .generation = gen});
  if (!pools.waiting.empty())
    port.schedule(); // the jobs the gate kept PENDING (Slurm 25.11+)
}

bool CtldCore::Impl::breaker_step(std::uint32_t job_id, const Event &e, JobSwitchState &s,
                                  StepResult &r) {
  // This failed teardown is the switch_breaker_failures-th of different
  // jobs within the window, or a hook says the fabric is down: open the
  // breaker (this teardown is kept too: the step again, fabric down) ...
  const bool returned = e.outcome && e.outcome->kind == OutcomeKind::Returned;
  if (!breaker.open && e.kind == EventKind::TeardownResult && is_failed_teardown(r.rule) &&
      breaker_counts(job_id)) {
    open_breaker(fmt::format("{} teardowns of different jobs failed within {} s "
                             "(switch_breaker_failures={}, switch_breaker_window={}), the last "
                             "JobId={}",
                             cfg.breaker_failures, cfg.breaker_window_s, cfg.breaker_failures,
                             cfg.breaker_window_s, job_id));
    s.fabric_down = true;
    r = step(s, e, cfg);
  } else if (!breaker.open && returned && e.outcome->ret.rc == kFabricDown) {
    open_breaker(fmt::format("JobId={} {} returned slurm.FABRIC_DOWN", job_id, event_hook(e)));
  }
  // ... and a hook that succeeds closes it (the caller, at the end of
  // apply()).
  return breaker.open && returned && e.outcome->ret.rc == kSuccess &&
         (e.kind == EventKind::SetupResult || e.kind == EventKind::TeardownResult);
}

} // namespace switchlua
