// SPDX-License-Identifier: GPL-2.0-or-later
//
// adopt_result() (ctld/adopt_results.hpp).
#include "ctld/adopt_results.hpp"

#include "common/content_hash.hpp"

namespace switchlua {

std::optional<JournalRecord> adopt_result(const JournalTable &t, const ResultRecord &r) {
  const auto it = t.live.find(r.attempt);
  if (it == t.live.end())
    return std::nullopt; // over, or never started: nothing to prove
  const JournalEntry &e = it->second;
  if (e.job.job_id != r.job_id || e.job.submit_time != r.submit_time)
    return std::nullopt;
  if (r.outcome.kind != OutcomeKind::Returned)
    return std::nullopt;
  const HookReturn &ret = r.outcome.ret;
  JournalRecord rec{.attempt = r.attempt, .job_id = r.job_id, .submit_time = r.submit_time};
  if (r.hook == Hook::JobStart) {
    if (ret.rc != kSuccess || !ret.jobinfo || !ret.jobinfo_error.empty() || e.accepted ||
        e.teardown_started)
      return std::nullopt;
    rec.kind = JournalKind::SetupAccepted;
    rec.jobinfo = ret.jobinfo;
    return rec;
  }
  if (r.hook == Hook::JobComplete) {
    if (ret.rc < 0 || ret.rc == kEagain || !e.teardown_started || !e.jobinfo ||
        content_hash(*e.jobinfo) != r.jobinfo_given)
      return std::nullopt;
    rec.kind = JournalKind::Forgotten;
    return rec;
  }
  return std::nullopt;
}

} // namespace switchlua
