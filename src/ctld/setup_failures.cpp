// SPDX-License-Identifier: GPL-2.0-or-later
#include "ctld/setup_failures.hpp"

namespace switchlua {

std::uint32_t prior_setup_failures(const SetupFailureCounts &counts, const JobArgs &job) {
  auto f = counts.find(job.job_id);
  if (f == counts.end() || f->second.restart_count + 1 != job.restart_count)
    return 0;
  return f->second.failures;
}

std::optional<JournalRecord> count_setup_failures(SetupFailureCounts &counts, const CtldConfig &cfg,
                                                  const Event &e, const StepResult &r) {
  if (r.rule == "R_START_HOST_FAULT_EXPIRED" || r.rule == "R_START_FABRIC_DOWN")
    return std::nullopt; // a fault of the host or the fabric, never the job's (issue 20)
  if (e.kind == EventKind::SetupResult && e.outcome && e.outcome->kind == OutcomeKind::SpawnFailed)
    return std::nullopt; // the script never ran (a journal that cannot write, issue 24): not the
                         // job's
  const JobSwitchState &n = r.next;
  const std::uint32_t id = n.job.job_id;
  bool requeued = false, held = false;
  for (const Action &a : r.actions) {
    requeued = requeued || a.kind == ActionKind::Requeue;
    held = held || a.kind == ActionKind::RequeueHeld;
  }
  const bool over = e.kind == EventKind::SetupResult &&
                    (n.state == JobState::Running || n.state == JobState::Declined);
  JournalRecord rec{.attempt = n.job.attempt, .job_id = id, .submit_time = n.job.submit_time};
  if (requeued && cfg.max_setup_failures > 0) {
    SetupFailures f{.failures = n.setup_failures + 1,
                    .restart_count = n.job.restart_count,
                    .submit_time = n.job.submit_time};
    counts[id] = f;
    while (counts.size() > kJournalMaxFailureCounts)
      counts.erase(counts.begin());
    rec.kind = JournalKind::SetupFailureCounted;
    rec.failures = f.failures;
    rec.restart_count = f.restart_count;
    return rec;
  }
  if ((held || over) && counts.erase(id)) {
    rec.kind = JournalKind::SetupFailuresCleared;
    return rec;
  }
  return std::nullopt;
}

} // namespace switchlua
