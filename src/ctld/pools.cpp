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

PoolTake Pools::take(std::int64_t attempt) {
  if (auto held_ids = held(attempt); !held_ids.empty())
    return PoolTake{.ids = std::move(held_ids)};
  if (auto s = shortage())
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

bool Pools::release(std::int64_t attempt) {
  auto it = taken_.find(attempt);
  if (it == taken_.end())
    return false;
  unhold(it->second);
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

bool Pools::unquarantine(std::int64_t attempt) {
  auto it = quarantined_.find(attempt);
  if (it == quarantined_.end())
    return false;
  unhold(it->second.ids);
  count_quarantined(it->second.ids, -1);
  quarantined_.erase(it);
  return true;
}

std::vector<std::string> Pools::restore(std::int64_t attempt, const PoolIds &ids,
                                        std::optional<std::int64_t> since) {
  release(attempt);
  unquarantine(attempt);
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

std::optional<PoolShortage> Pools::shortage() const {
  for (const auto &[name, p] : pools_)
    if (const std::size_t free = p.size - p.used_in_ranges; free < p.spec.per_job)
      return PoolShortage{.pool = name, .free = free, .needed = p.spec.per_job, .size = p.size};
  return std::nullopt;
}

std::map<std::string, PoolCounts> Pools::counts() const {
  std::map<std::string, PoolCounts> out;
  for (const auto &[name, p] : pools_)
    out[name] = PoolCounts{.size = p.size,
                           .free = p.size - p.used_in_ranges,
                           .taken = p.used.size() - p.quarantined,
                           .quarantined = p.quarantined};
  return out;
}

} // namespace switchlua
