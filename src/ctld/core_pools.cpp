// SPDX-License-Identifier: GPL-2.0-or-later
//
// The controller's fabric-ID pools (ctld/core_pools.hpp; issue 38,
// switch.lua(5) POOLS).
#include "ctld/core_pools.hpp"

#include "ctld/job_fsm.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <set>

namespace switchlua {

std::string pool_shortage_text(const PoolShortage &s) {
  return fmt::format(
      "pool {} has {} of {} IDs free{}, {} needed (switch_pool_{})", s.pool, s.free, s.size,
      s.cooling ? fmt::format(" ({} more in their reuse delay)", s.cooling) : "", s.needed, s.pool);
}

std::vector<std::string> CorePools::rebuild(const std::vector<PoolSpec> &specs, Journal *journal,
                                            bool taking) {
  Pools old = std::exchange(alloc, Pools(specs));
  declared = alloc.any();
  refused.clear();
  records.clear();
  quarantined_jobs.clear();
  waiting.clear();
  waiting_for.clear();
  std::vector<std::string> lines;
  if (journal)
    lines = restore_from(specs, *journal);
  if (taking)
    alloc.hold_free(mono());
  else
    alloc.carry_cooling(old);
  return lines;
}

std::vector<std::string> CorePools::restore_from(const std::vector<PoolSpec> &specs,
                                                 Journal &journal) {
  std::vector<std::string> lines;
  std::set<std::string> declared;
  for (const PoolSpec &p : specs)
    declared.insert(p.name);
  std::map<std::string, std::size_t> held_by; // dropped pool -> attempts that held it
  for (const auto &[attempt, e] : journal.table().live)
    for (const auto &[name, ids] : e.job.pools)
      held_by[name] += declared.contains(name) ? 0 : 1;
  for (const auto &[attempt, q] : journal.table().quarantined)
    for (const auto &[name, ids] : q.pools)
      held_by[name] += declared.contains(name) ? 0 : 1;
  for (const std::string &name : journal.keep_pools(declared))
    lines.push_back(fmt::format("pool {} is no longer declared (switch_pool_{}): the IDs of it "
                                "that {} attempt(s) held are dropped from the journal",
                                name, name, held_by[name]));
  for (const auto &[attempt, e] : journal.table().live)
    alloc.restore(attempt, e.job.pools);
  for (const auto &[attempt, q] : journal.table().quarantined) {
    alloc.restore(attempt, q.pools, q.since);
    quarantined_jobs[attempt] = q.job_id;
  }
  return lines;
}

namespace {

bool over(JobState s) {
  return is_terminal(s) || s == JobState::SetupFailed;
}

} // namespace

void CorePools::step(const JobSwitchState &old, const Event &e, StepResult &r, std::int64_t now) {
  records.clear();
  if (!alloc.any())
    return;
  const JobSwitchState &n = r.next;
  bool starts = false;
  for (const Action &a : r.actions)
    starts = starts || a.kind == ActionKind::RunJobStart;
  // The attempts this step forgets, as journal_step() writes them: the
  // row's pools column says what becomes of their IDs.
  if (starts && old.job.attempt != 0 && old.job.attempt != n.job.attempt && !over(old.state))
    end(old.job.attempt, old.job.job_id, old.job.submit_time, r.pools, now); // R_UNDO_OK
  if (over(n.state) && (!over(old.state) || e.kind == EventKind::SetupRequested))
    end(n.job.attempt, n.job.job_id, n.job.submit_time, r.pools, now);
  if (!starts || n.job.attempt == 0)
    return;
  PoolTake t = alloc.take(n.job.attempt, mono());
  if (t.ids) {
    r.next.job.pools = std::move(*t.ids);
    return;
  }
  ++refusals[t.shortage->pool];
  refused[n.job.attempt] = pool_shortage_text(*t.shortage);
}

bool CorePools::wait(std::uint32_t job_id, const std::string &pool,
                     std::chrono::steady_clock::time_point now) {
  if (now - waiting_pruned >= std::chrono::minutes(1)) {
    waiting_pruned = now;
    std::erase_if(waiting, [&](const auto &w) {
      const bool stale = now - w.second.at >= kWaitingForgotten;
      waiting_for[w.second.pool] -= stale ? 1 : 0;
      return stale;
    });
  }
  auto [it, added] = waiting.try_emplace(job_id, Waiting{.pool = pool, .at = now});
  const bool changed = added || it->second.pool != pool;
  if (changed && !added)
    --waiting_for[it->second.pool];
  if (changed)
    ++waiting_for[pool];
  it->second = Waiting{.pool = pool, .at = now};
  return changed;
}

bool CorePools::admitted(std::uint32_t job_id) {
  auto it = waiting.find(job_id);
  if (it == waiting.end())
    return false;
  --waiting_for[it->second.pool];
  waiting.erase(it);
  return true;
}

void CorePools::adopt(const JobSwitchState &s, bool forgotten) {
  if (alloc.any() && s.job.attempt != 0 && !s.job.pools.empty() && !forgotten && !over(s.state) &&
      alloc.held(s.job.attempt).empty())
    alloc.restore(s.job.attempt, s.job.pools);
}

void CorePools::end(std::int64_t attempt, std::uint32_t job_id, std::int64_t submit_time,
                    PoolsFate fate, std::int64_t now) {
  refused.erase(attempt);
  if (fate != PoolsFate::Quarantine) {
    wake = (alloc.release(attempt, mono()) && !waiting.empty()) || wake;
    return;
  }
  const PoolIds ids = alloc.held(attempt);
  if (alloc.quarantine(attempt, now)) {
    records.push_back(pools_quarantined_record(attempt, job_id, submit_time, ids, now));
    quarantined_jobs[attempt] = job_id;
  }
}

std::string CorePools::refusal(std::int64_t attempt) const {
  auto it = refused.find(attempt);
  return it == refused.end() ? std::string() : it->second;
}

std::vector<PoolReleased> CorePools::release(const PoolReleaseRequest &r) {
  std::vector<PoolReleased> out;
  for (const auto &[attempt, q] : alloc.quarantined()) {
    auto job = quarantined_jobs.find(attempt);
    const std::uint32_t job_id = job == quarantined_jobs.end() ? 0 : job->second;
    bool match = r.job_id != 0 && job_id == r.job_id;
    if (auto it = q.ids.find(r.pool); r.job_id == 0 && it != q.ids.end())
      match = std::find(it->second.begin(), it->second.end(), r.id) != it->second.end();
    if (match)
      out.push_back(PoolReleased{job_id, attempt, q.ids, q.since});
  }
  for (const PoolReleased &p : out) {
    alloc.unquarantine(p.attempt, mono());
    quarantined_jobs.erase(p.attempt);
    records.push_back(
        {.kind = JournalKind::PoolsReleased, .attempt = p.attempt, .job_id = p.job_id});
  }
  return out;
}

std::vector<PoolReleased> CorePools::quarantine_list(std::size_t limit) const {
  std::vector<PoolReleased> out;
  for (const auto &[attempt, q] : alloc.quarantined()) {
    auto job = quarantined_jobs.find(attempt);
    out.push_back({job == quarantined_jobs.end() ? 0 : job->second, attempt, q.ids, q.since});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const PoolReleased &a, const PoolReleased &b) { return a.since < b.since; });
  if (out.size() > limit)
    out.resize(limit);
  return out;
}

std::map<std::string, PoolStats> CorePools::stats() const {
  std::map<std::string, PoolStats> out;
  for (const auto &[name, c] : alloc.counts(mono())) {
    auto r = refusals.find(name);
    out[name] = PoolStats{.ids = c, .refusals = r == refusals.end() ? 0 : r->second};
  }
  for (const auto &[pool, n] : waiting_for)
    if (auto it = out.find(pool); it != out.end())
      it->second.waiting = n;
  return out;
}

} // namespace switchlua
