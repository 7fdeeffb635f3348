// SPDX-License-Identifier: GPL-2.0-or-later
//
// Host list expressions (common/hostlist.hpp): Slurm's syntax, expanded and
// compressed, and the expressions refused.
#include "common/hostlist.hpp"

#include <gtest/gtest.h>

using namespace switchlua;

namespace {

std::vector<std::string> names(std::string_view expr) {
  auto r = expand_hostlist(expr);
  EXPECT_TRUE(r) << expr << ": " << (r ? "" : r.error().message);
  return r ? *r : std::vector<std::string>{};
}

using V = std::vector<std::string>;

TEST(Hostlist, ExpandsNamesRangesAndPadding) {
  EXPECT_EQ(V{}, names(""));
  EXPECT_EQ(V{}, names("  "));
  EXPECT_EQ(V{"node1"}, names("node1"));
  EXPECT_EQ((V{"node1", "node2", "node3"}), names("node[1-3]"));
  EXPECT_EQ((V{"node1", "node2", "node3", "node7", "login"}), names("node[1-3,7],login"));
  EXPECT_EQ((V{"gpu07", "gpu08", "gpu09", "gpu10"}), names("gpu[07-10]"));
  EXPECT_EQ((V{"n9", "n10"}), names("n[9-10]"));
  EXPECT_EQ((V{"a1", "b2"}), names("a1 b2"));
  EXPECT_EQ((V{"a1", "b2"}), names("a1,,b2,")); // empty entries skipped, as Slurm does
  EXPECT_EQ((V{"n1-ib", "n2-ib"}), names("n[1-2]-ib"));
}

TEST(Hostlist, SeveralBracketsAreEveryCombinationLeftmostSlowest) {
  EXPECT_EQ((V{"r1n1", "r1n2", "r2n1", "r2n2"}), names("r[1-2]n[1-2]"));
}

TEST(Hostlist, DuplicatesAndOrderAreKept) {
  EXPECT_EQ((V{"node3", "node1", "node3"}), names("node[3,1],node3"));
}

TEST(Hostlist, RefusesBrokenExpressions) {
  for (std::string_view bad : {"node[1-3", "node1-3]", "node[]", "node[a-b]", "node[3-1]",
                               "node[1-]", "node[[1]]", "node[-2]"}) {
    auto r = expand_hostlist(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(0u, r.error().message.rfind("host list ", 0)) << r.error().message;
  }
}

TEST(Hostlist, RefusesMoreNamesThanSlurmAccepts) {
  auto r = expand_hostlist("n[0-999999999]");
  ASSERT_FALSE(r);
  EXPECT_NE(std::string::npos, r.error().message.find("more than 131072 names"))
      << r.error().message;
  EXPECT_TRUE(expand_hostlist("n[1-65536]"));
}

TEST(Hostlist, CompressesRunsOfNumberedNames) {
  EXPECT_EQ("", compress_hostlist({}));
  EXPECT_EQ("node1", compress_hostlist({"node1"}));
  EXPECT_EQ("node[1-3,5]", compress_hostlist({"node1", "node2", "node3", "node5"}));
  EXPECT_EQ("gpu[08-10]", compress_hostlist({"gpu08", "gpu09", "gpu10"}));
  EXPECT_EQ("n[9-10]", compress_hostlist({"n9", "n10"}));
  EXPECT_EQ("node1,login,node2", compress_hostlist({"node1", "login", "node2"}));
  EXPECT_EQ("n5,n[05-06]", compress_hostlist({"n5", "n05", "n06"}));
}

TEST(Hostlist, CompressThenExpandGivesTheNamesBack) {
  const V cases[] = {
      {"node1", "node2", "node3", "node5"},
      {"gpu08", "gpu09", "gpu10", "gpu1"},
      {"n3", "n1", "n1", "x", "n10-ib", "n11-ib"},
      {"a", "b01", "b2", "b003"},
  };
  for (const V &v : cases)
    EXPECT_EQ(v, names(compress_hostlist(v))) << compress_hostlist(v);
}

} // namespace
