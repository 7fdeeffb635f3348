// SPDX-License-Identifier: GPL-2.0-or-later
//
// Issue 20, per-node attribution (ctld/node_attribution.hpp): which of a
// job's nodes failed or were removed when it ended, and what a failed
// teardown drains.
#include "ctld/node_attribution.hpp"

#include <gtest/gtest.h>

using namespace switchlua;

namespace {

using V = std::vector<std::string>;

JobArgs three_nodes() {
  JobArgs j;
  j.job_id = 42;
  j.nodes = "node[1-3]";
  j.node_names = {"node1", "node2", "node3"};
  return j;
}

TEST(NodeAttribution, FailedNodesAreTheJobsInItsOrder) {
  EXPECT_EQ(V{}, failed_nodes_of(three_nodes(), {}));
  EXPECT_EQ(V{"node2"}, failed_nodes_of(three_nodes(), {.failed = "node2"}));
  // Slurm's list is sorted and may name nodes that are not the job's.
  EXPECT_EQ((V{"node1", "node3"}), failed_nodes_of(three_nodes(), {.failed = "node[3,1],login"}));
}

TEST(NodeAttribution, NodesRemovedFromANoKillJobHaveFailed) {
  EXPECT_EQ(V{"node2"}, failed_nodes_of(three_nodes(), {.nodes_now = "node[1,3]"}));
  EXPECT_EQ((V{"node2", "node3"}),
            failed_nodes_of(three_nodes(), {.nodes_now = "node1", .failed = "node2"}));
  EXPECT_EQ(V{}, failed_nodes_of(three_nodes(), {.nodes_now = "node[1-3]"}));
}

TEST(NodeAttribution, AJobTableWithoutNodeNamesExpandsItsNodes) {
  JobArgs j = three_nodes();
  j.node_names.clear(); // a journal record written without them
  EXPECT_EQ(V{"node3"}, failed_nodes_of(j, {.failed = "node3"}));
}

TEST(NodeAttribution, AListThatDoesNotParseCountsAsNoneAndSaysWhy) {
  std::string note = "stale";
  EXPECT_EQ(V{}, failed_nodes_of(three_nodes(), {.failed = "node[1-"}, &note));
  EXPECT_EQ(note.rfind("host list ", 0), 0u) << note;
  failed_nodes_of(three_nodes(), {.failed = "node1"}, &note);
  EXPECT_EQ(note, "");
}

Outcome naming(std::optional<V> nodes, Hook h = Hook::JobComplete) {
  Outcome o{.kind = OutcomeKind::Returned};
  o.ret.hook = h;
  o.ret.rc = -1;
  o.ret.nodes = std::move(nodes);
  return o;
}

TEST(NodeAttribution, ADrainIsOfTheNamedNodesAmongTheJobs) {
  const JobArgs j = three_nodes();
  Outcome o = naming(V{"node3", "node1", "node1", "login"});
  DrainTarget t = drain_target(j, &o);
  EXPECT_EQ(t.nodes, "node[1,3]");
  EXPECT_EQ(t.foreign, V{"login"});
  EXPECT_FALSE(t.none);
  EXPECT_EQ(drained_nodes(j, &o), "node[1,3]");
}

TEST(NodeAttribution, WithoutNamesTheJobsNodesAreDrained) {
  const JobArgs j = three_nodes();
  EXPECT_EQ(drain_target(j, nullptr).nodes, std::nullopt);
  Outcome o = naming(std::nullopt);
  EXPECT_EQ(drained_nodes(j, &o), "node[1-3]");
  o = naming(V{"login"}); // only foreign names: the job's nodes
  EXPECT_EQ(drained_nodes(j, &o), "node[1-3]");
  o = naming(V{"node1"}, Hook::JobStart); // only job_complete names nodes
  EXPECT_EQ(drained_nodes(j, &o), "node[1-3]");
  o = naming(V{"node1"});
  o.kind = OutcomeKind::LuaError;
  EXPECT_EQ(drained_nodes(j, &o), "node[1-3]");
}

TEST(NodeAttribution, AnEmptyListDrainsNothing) {
  Outcome o = naming(V{});
  EXPECT_TRUE(drain_target(three_nodes(), &o).none);
  EXPECT_EQ(drained_nodes(three_nodes(), &o), "");
}

} // namespace
