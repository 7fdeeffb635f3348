// SPDX-License-Identifier: GPL-2.0-or-later
//
// Issue 38, the files of `switch-lua pool release` (ctld/pool_release.hpp):
// what a request may say, and what slurmctld refuses to read.
#include "ctld/pool_release.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace switchlua;

namespace {

std::string refused(std::string_view text) {
  std::string error;
  EXPECT_FALSE(parse_pool_release_request(text, error)) << text;
  return error;
}

TEST(PoolRelease, ARequestRoundTrips) {
  for (const PoolReleaseRequest &r :
       {PoolReleaseRequest{.token = "a1", .job_id = 7},
        PoolReleaseRequest{.token = "b-2_c", .pool = "vni", .id = 1024}}) {
    std::string error;
    auto back = parse_pool_release_request(encode_pool_release_request(r), error);
    ASSERT_TRUE(back) << error;
    EXPECT_EQ(*back, r);
  }
}

TEST(PoolRelease, BadRequestsNameTheFieldAndTheValue) {
  EXPECT_EQ(refused("[]"), "not a JSON object");
  EXPECT_EQ(refused(R"({"job_id":7})"), "field 'token' is not 1 to 64 of [0-9A-Za-z_-]: absent");
  EXPECT_EQ(refused(R"({"token":"a/b","job_id":7})"),
            "field 'token' is not 1 to 64 of [0-9A-Za-z_-]: \"a/b\"");
  EXPECT_EQ(refused(R"({"token":"t","job_id":-3})"),
            "field 'job_id' is not an integer from 1 to 4294967295: -3");
  EXPECT_EQ(refused(R"({"token":"t","job_id":0})"),
            "field 'job_id' is not an integer from 1 to 4294967295: 0");
  EXPECT_EQ(refused(R"({"token":"t","pool":"../x","id":1})"),
            "field 'pool' is not a pool name ([a-z][a-z0-9_]{0,31}): \"../x\"");
  EXPECT_EQ(refused(R"({"token":"t","pool":"vni"})"), "field 'pool' without field 'id'");
  EXPECT_EQ(refused(R"({"token":"t"})"), "give either 'job_id' or 'pool' and 'id'");
  EXPECT_EQ(refused(R"({"token":"t","job_id":7,"pool":"vni","id":1})"),
            "give either 'job_id' or 'pool' and 'id'");
}

TEST(PoolRelease, AnAnswerRoundTripsAndNamesItsIds) {
  PoolReleaseAnswer a{.token = "t",
                      .released = {{.job_id = 7,
                                    .attempt = 1700000000000001,
                                    .ids = {{"pkey", {32769}}, {"vni", {1, 2}}},
                                    .since = 1700000400}}};
  std::string error;
  auto back = parse_pool_release_answer(encode_pool_release_answer(a), error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(*back, a);
  EXPECT_EQ(pool_ids_text(a.released[0].ids), "pkey 32769, vni 1+2");
}

// slurmctld reads only a regular file of root or its own uid that group
// and others cannot write; never through a symlink, never blocking on a
// FIFO; no file is no request and no error.
TEST(PoolRelease, OnlyASafeRequestFileIsRead) {
  namespace fs = std::filesystem;
  const fs::path d = fs::temp_directory_path() / ("pool-release-" + std::to_string(::getpid()));
  fs::create_directories(d);
  const std::string p = (d / "switch_lua.pool_release").string();
  std::string error;
  EXPECT_FALSE(read_pool_release_request(p, error));
  EXPECT_EQ(error, "");
  std::ofstream(p) << "{}";
  ::chmod(p.c_str(), 0600);
  auto text = read_pool_release_request(p, error);
  ASSERT_TRUE(text) << error;
  EXPECT_EQ(*text, "{}");
  ::chmod(p.c_str(), 0622);
  EXPECT_FALSE(read_pool_release_request(p, error));
  EXPECT_NE(error.find("mode 0622: refused"), std::string::npos) << error;
  fs::remove(p);
  fs::create_symlink("/etc/passwd", p);
  EXPECT_FALSE(read_pool_release_request(p, error));
  EXPECT_NE(error.find("cannot open"), std::string::npos) << error;
  fs::remove(p);
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
  EXPECT_FALSE(read_pool_release_request(p, error));
  EXPECT_NE(error.find("not a regular file: refused"), std::string::npos) << error;
  fs::remove_all(d);
}

} // namespace
