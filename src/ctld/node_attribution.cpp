// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: ctld/node_attribution.cpp
//
// Issue 20, per-node attribution (node_attribution.hpp).
#include "ctld/node_attribution.hpp"

#include "common/hostlist.hpp"

#include <set>

namespace switchlua {

std::vector<std::string> job_node_list(const JobArgs &job) {
  if (!job.node_names.empty() || !job.nodes)
    return job.node_names.list();
  auto names = expand_hostlist(*job.nodes);
  return names ? *names : std::vector<std::string>{};
}

std::vector<std::string> failed_nodes_of(const JobArgs &job, const JobEnd &end, std::string *note) {
  if (note)
    note->clear();
  const std::vector<std::string> mine = job_node_list(job);
  std::set<std::string> failed;
  if (auto f = expand_hostlist(end.failed))
    failed.insert(f->begin(), f->end());
  else if (note)
    *note = f.error().message;
  if (end.nodes_now) {
    auto now = expand_hostlist(*end.nodes_now);
    if (now) {
      const std::set<std::string> kept(now->begin(), now->end());
      for (const std::string &n : mine)
        if (!kept.count(n))
          failed.insert(n); // removed from the job (--no-kill)
    } else if (note) {
      *note = now.error().message;
    }
  }
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const std::string &n : mine)
    if (failed.count(n) && seen.insert(n).second)
      out.push_back(n);
  return out;
}

DrainTarget drain_target(const JobArgs &job, const Outcome *o) {
  DrainTarget t;
  if (!o || o->kind != OutcomeKind::Returned || o->ret.hook != Hook::JobComplete || !o->ret.nodes)
    return t;
  const std::vector<std::string> &named = *o->ret.nodes;
  if (named.empty()) {
    t.none = true;
    return t;
  }
  const std::vector<std::string> mine = job_node_list(job);
  const std::set<std::string> named_set(named.begin(), named.end()),
      mine_set(mine.begin(), mine.end());
  std::vector<std::string> within;
  std::set<std::string> seen;
  for (const std::string &n : mine)
    if (named_set.count(n) && seen.insert(n).second)
      within.push_back(n);
  for (const std::string &n : named)
    if (!mine_set.count(n) && seen.insert(n).second)
      t.foreign.push_back(n);
  if (!within.empty())
    t.nodes = compress_hostlist(within);
  return t;
}

std::string drained_nodes(const JobArgs &job, const Outcome *o) {
  const DrainTarget t = drain_target(job, o);
  return t.none ? std::string() : t.nodes.value_or(job.nodes.value_or(""));
}

} // namespace switchlua
