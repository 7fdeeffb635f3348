// SPDX-License-Identifier: GPL-2.0-or-later
//
// The SLUIDs of `switch-lua simulate` have the format of Slurm 24.11's
// (src/common/sluid.c: generate_sluid, sluid2str).  The expected texts were
// computed by hand from Slurm's algorithm: "s" + 13 Crockford base32 digits
// of (cluster << 52 | ms << 10 | seq), most significant first.
#include "cli/sim_cluster.hpp"

#include <gtest/gtest.h>

using namespace switchlua;

TEST(Sluid, TextAsSlurmPrintsIt) {
  EXPECT_EQ(sluid_text(0), "s0000000000000");
  EXPECT_EQ(sluid_text(~std::uint64_t{0}), "sFZZZZZZZZZZZZ");
  EXPECT_EQ(sluid_text(make_sluid(2, 1764556800000, 0)), "s009KBBWG00000");
  EXPECT_EQ(sluid_text(make_sluid(4095, 1764556800123, 5)), "sFZXKBBWG03V05");
}

TEST(Sluid, FieldsInTheirBits) {
  const std::uint64_t s = make_sluid(kSimClusterId, 1764556800123, 5);
  EXPECT_EQ(s >> 52, kSimClusterId);
  EXPECT_EQ((s >> 10) & ((std::uint64_t{1} << 42) - 1), 1764556800123u);
  EXPECT_EQ(s & 0x3ff, 5u);
}
