// SPDX-License-Identifier: GPL-2.0-or-later
//
// The fabric-ID pool allocator (ctld/pools.hpp; issue 38, switch.lua(5)
// POOLS).  Pure: the core makes it durable through the journal.
#include "ctld/pools.hpp"

#include <algorithm>

namespace switchlua {

Pools::Pools(std::vector<PoolSpec> specs) {
  for (PoolSpec &s : specs) {
    Pool p;
    for (const PoolRange &r : s.ranges)
      p.size += static_cast<std::size_t>(r.last) - r.first + 1;
    p.spec = std::move(s);
    std::string name = p.spec.name;
    pools_.emplace(std::move(name), std::move(p));
  }
}

std::vector<PoolSpec> Pools::specs() const {
  std::vector<PoolSpec> out;
  for (const auto &[name, p] : pools_)
    out.push_back(p.spec);
  return out;
}

bool Pools::in_ranges(const Pool &p, std::uint32_t id) {
  return std::any_of(p.spec.ranges.begin(), p.spec.ranges.end(),
                     [&](const PoolRange &r) { return id >= r.first && id <= r.last; });
}

std::uint32_t Pools::next_id(const Pool &p, std::optional<std::uint32_t> id) {
  const auto &rs = p.spec.ranges;
  if (!id)
    return rs.front().first;
  for (const PoolRange &r : rs) {
    if (*id < r.first)
      return r.first; // a cursor outside the ranges (restored): the next range
    if (*id < r.last)
      return *id + 1;
  }
  return rs.front().first; // past the last range: wrap
}

void Pools::hold(const PoolIds &ids) {
  for (const auto &[name, list] : ids) {
    auto it = pools_.find(name);
    if (it == pools_.end())
      continue;
    for (std::uint32_t id : list)
      if (it->second.used.insert(id).second && in_ranges(it->second, id))
        ++it->second.used_in_ranges;
  }
}

void Pools::unhold(const PoolIds &ids) {
  for (const auto &[name, list] : ids) {
    auto it = pools_.find(name);
    if (it == pools_.end())
      continue;
    for (std::uint32_t id : list)
      if (it->second.used.erase(id) && in_ranges(it->second, id))
        --it->second.used_in_ranges;
  }
}

void Pools::count_quarantined(const PoolIds &ids, int sign) {
  for (const auto &[name, list] : ids)
    if (auto it = pools_.find(name); it != pools_.end())
      it->second.quarantined =
          sign > 0 ? it->second.quarantined + list.size() : it->second.quarantined - list.size();
}

std::size_t Pools::held_ids(const Pool &p, PoolClock::time_point now) {
  return now < p.held_until ? p.size - p.used_in_ranges : 0;
}

std::size_t Pools::free_ids(const Pool &p, PoolClock::time_point now) {
  return p.size - p.used_in_ranges - held_ids(p, now);
}

void Pools::let_go(const PoolIds &ids, PoolClock::time_point now) {
  for (const auto &[name, list] : ids) {
    auto it = pools_.find(name);
    if (it == pools_.end())
      continue;
    Pool &p = it->second;
    if (p.spec.reuse_delay == 0) {
      unhold({{name, list}});
      continue;
    }
    const auto until = now + std::chrono::seconds(p.spec.reuse_delay);
    for (std::uint32_t id : list)
      if (p.used.contains(id))
        p.cooling.emplace_back(until, id);
  }
}

bool Pools::cool(PoolClock::time_point now) {
  bool freed = false;
  for (auto &[name, p] : pools_) {
    while (!p.cooling.empty() && p.cooling.front().first <= now) {
      const std::uint32_t id = p.cooling.front().second;
      p.cooling.pop_front();
      if (p.used.erase(id) && in_ranges(p, id))
        --p.used_in_ranges;
      freed = true;
    }
    if (p.held_until != PoolClock::time_point{} && p.held_until <= now) {
      p.held_until = {};
      freed = true;
    }
  }
  return freed;
}

void Pools::hold_free(PoolClock::time_point now) {
  for (auto &[name, p] : pools_)
    if (p.spec.reuse_delay > 0)
      p.held_until = now + std::chrono::seconds(p.spec.reuse_delay);
}

void Pools::carry_cooling(const Pools &old) {
  for (const auto &[name, o] : old.pools_) {
    auto it = pools_.find(name);
    if (it == pools_.end())
      continue;
    Pool &p = it->second;
    p.held_until = std::max(p.held_until, o.held_until);
    for (const auto &[until, id] : o.cooling)
      if (p.used.insert(id).second) {
        p.used_in_ranges += in_ranges(p, id) ? 1 : 0;
        p.cooling.emplace_back(until, id);
      }
  }
}

PoolTake Pools::take(std::int64_t attempt, PoolClock::time_point now) {
  if (auto held_ids = held(attempt); !held_ids.empty())
    return PoolTake{.ids = std::move(held_ids)};
  cool(now);
  if (auto s = shortage(now))
    return PoolTake{.shortage = std::move(*s)};
  PoolIds ids;
  for (auto &[name, p] : pools_) {
    auto &list = ids[name];
    std::optional<std::uint32_t> at = p.cursor;
    while (list.size() < p.spec.per_job) { // enough are free (checked above): it ends
      at = next_id(p, at);
      if (!p.used.insert(*at).second)
        continue;
      ++p.used_in_ranges;
      list.push_back(*at);
    }
    if (!list.empty())
      p.cursor = list.back();
  }
  if (!ids.empty())
    taken_[attempt] = ids;
  return PoolTake{.ids = std::move(ids)};
}

PoolIds Pools::held(std::int64_t attempt) const {
  if (auto it = taken_.find(attempt); it != taken_.end())
    return it->second;
  if (auto it = quarantined_.find(attempt); it != quarantined_.end())
    return it->second.ids;
  return {};
}

bool Pools::release(std::int64_t attempt, PoolClock::time_point now) {
  auto it = taken_.find(attempt);
  if (it == taken_.end())
    return false;
  let_go(it->second, now);
  taken_.erase(it);
  return true;
}

bool Pools::quarantine(std::int64_t attempt, std::int64_t now) {
  auto it = taken_.find(attempt);
  if (it == taken_.end())
    return false;
  count_quarantined(it->second, +1);
  quarantined_[attempt] = PoolQuarantine{std::move(it->second), now};
  taken_.erase(it);
  return true;
}

bool Pools::unquarantine(std::int64_t attempt, PoolClock::time_point now) {
  auto it = quarantined_.find(attempt);
  if (it == quarantined_.end())
    return false;
  count_quarantined(it->second.ids, -1);
  let_go(it->second.ids, now);
  quarantined_.erase(it);
  return true;
}

std::vector<std::string> Pools::restore(std::int64_t attempt, const PoolIds &ids,
                                        std::optional<std::int64_t> since) {
  // What the attempt holds already is replaced, not released: no reuse
  // delay for IDs it keeps holding.
  if (auto it = taken_.find(attempt); it != taken_.end()) {
    unhold(it->second);
    taken_.erase(it);
  }
  if (auto it = quarantined_.find(attempt); it != quarantined_.end()) {
    unhold(it->second.ids);
    count_quarantined(it->second.ids, -1);
    quarantined_.erase(it);
  }
  std::vector<std::string> dropped;
  PoolIds kept;
  for (const auto &[name, list] : ids) {
    if (!pools_.contains(name))
      dropped.push_back(name);
    else if (!list.empty())
      kept[name] = list;
  }
  if (kept.empty())
    return dropped;
  hold(kept);
  if (attempt >= newest_restored_) {
    newest_restored_ = attempt;
    for (const auto &[name, list] : kept)
      pools_.at(name).cursor = list.back();
  }
  if (since) {
    count_quarantined(kept, +1);
    quarantined_[attempt] = PoolQuarantine{std::move(kept), *since};
  } else
    taken_[attempt] = std::move(kept);
  return dropped;
}

std::size_t Pools::free_count(const std::string &pool) const {
  auto it = pools_.find(pool);
  return it == pools_.end() ? 0 : it->second.size - it->second.used_in_ranges;
}

std::optional<PoolShortage> Pools::shortage(PoolClock::time_point now) const {
  for (const auto &[name, p] : pools_)
    if (const std::size_t free = free_ids(p, now); free < p.spec.per_job)
      return PoolShortage{.pool = name,
                          .free = free,
                          .needed = p.spec.per_job,
                          .size = p.size,
                          .cooling = p.cooling.size() + held_ids(p, now)};
  return std::nullopt;
}

std::map<std::string, PoolCounts> Pools::counts(PoolClock::time_point now) const {
  std::map<std::string, PoolCounts> out;
  for (const auto &[name, p] : pools_)
    out[name] = PoolCounts{.size = p.size,
                           .free = free_ids(p, now),
                           .taken = p.used.size() - p.quarantined - p.cooling.size(),
                           .quarantined = p.quarantined,
                           .cooling = p.cooling.size() + held_ids(p, now)};
  return out;
}

} // namespace switchlua
