// SPDX-License-Identifier: GPL-2.0-or-later
//
// `switch-lua status` on a fixture status file (test/fixtures/status): the
// sdiag-like layout with the fixture's numbers, --json, the file found
// through SLURM_CONF's StateSaveLocation, the age warning, and the errors.
#include "run_cli.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

const fs::path kFixture =
    fs::path(SWITCHLUA_SOURCE_ROOT) / "test" / "fixtures" / "status" / "switch_lua.status";

using switchlua::test::CmdResult;

/// Runs switch-lua with `env` (NAME=VALUE ...) before it, TZ=UTC.
CmdResult run(const std::string &args, const std::string &env = "") {
  return switchlua::test::run_cli(args, "env TZ=UTC " + env + " ");
}

fs::path scratch() {
  fs::path d = fs::temp_directory_path() / ("switch-lua-status-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

json fixture() {
  std::ifstream in(kFixture);
  return json::parse(in);
}

} // namespace

TEST(StatusCli, PrintsTheCountersInAnSdiagLikeLayout) {
  auto r = run("status --file " + kFixture.string());
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char *line : {
           "Written:              2023-11-14T22:15:00 (",
           "Counting since:       2023-11-14T22:13:20 (counters start from zero when slurmctld "
           "loads switch/lua)\n",
           "slurmctld pid:        4242\n",
           "Script:               /etc/slurm/switch.lua\n",
           "Calls in flight:      2 (running 1)\n",
           "Jobs with switch state: 5\n",
           "Timeouts:             1\n",
           "Leftovers killed:     2\n",
           "Retries:              2\n",
           "Drains:               1\n",
           "Requeues:             1\n",
           "Cancels:              2\n",
           "Journal size:         4096 bytes\n",
           "  job_start           6 calls\n    declined                1\n    failed        "
           "          1\n    ok                      3\n    spawn_failed            1\n",
           "  job_complete        5 calls\n    eagain                  1\n",
           "  job_start           p50 <= 20 ms  p90 <= 50 ms  p99 <= 50 ms  max 40 ms\n",
           "  job_complete        p50 <= 5 ms  p90 <= 30000 ms  p99 <= 30000 ms  max 12000 ms\n",
           "  batch               waiting 1  started 4  wait mean 5 ms  max 8 ms\n",
           "  teardown            waiting 0  started 6  wait mean 1 ms  max 7 ms\n",
       })
    EXPECT_NE(r.out.find(line), std::string::npos) << "missing: " << line << "\nin:\n" << r.out;
  EXPECT_NE(r.out.find("WARNING: the file is "), std::string::npos)
      << "a file from 2023 is stale:\n"
      << r.out;
  EXPECT_EQ(r.out.find("lua_error"), std::string::npos) << "classes with 0 calls are not listed";
}

TEST(StatusCli, JsonIsTheFileWithItsPathAndAge) {
  auto r = run("status --json --file " + kFixture.string());
  ASSERT_EQ(r.status, 0) << r.out;
  json j = json::parse(r.out);
  EXPECT_EQ(j["file"], kFixture.string());
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  EXPECT_GE(j["age_seconds"].get<std::int64_t>(), now - 1700000100 - 5);
  j.erase("file");
  j.erase("age_seconds");
  EXPECT_EQ(j, fixture());
}

TEST(StatusCli, FindsTheFileUnderStateSaveLocationOfSlurmConf) {
  const fs::path d = scratch();
  fs::create_directories(d / "state");
  json j = fixture();
  j["written"] = std::chrono::duration_cast<std::chrono::seconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count();
  std::ofstream(d / "state" / "switch_lua.status") << j.dump();
  std::ofstream(d / "slurm.conf") << "# StateSaveLocation=/nowhere\n"
                                  << "ClusterName=tb\n"
                                  << "statesavelocation = /var/old # replaced below\n"
                                  << "StateSaveLocation=" << (d / "state").string() << "\n";
  auto r = run("status", "SLURM_CONF=" + (d / "slurm.conf").string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("switch/lua status, from " + (d / "state" / "switch_lua.status").string()),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("WARNING"), std::string::npos) << "a fresh file:\n" << r.out;
  std::ofstream(d / "empty.conf") << "ClusterName=tb\n";
  r = run("status", "SLURM_CONF=" + (d / "empty.conf").string());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("switch-lua status: " + (d / "empty.conf").string() +
                       " sets no StateSaveLocation; name the file with --file PATH"),
            std::string::npos)
      << r.out;
  fs::remove_all(d);
}

TEST(StatusCli, MissingOrForeignFilesAreErrors) {
  const fs::path d = scratch();
  auto r = run("status --file " + (d / "none").string());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("switch-lua status: cannot read " + (d / "none").string() +
                       ": No such file or directory; slurmctld writes it when it runs "
                       "SwitchType=switch/lua"),
            std::string::npos)
      << r.out;
  std::ofstream(d / "other") << "{\"hello\": 1}";
  r = run("status --file " + (d / "other").string());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("is not a switch/lua status file"), std::string::npos) << r.out;
  json j = fixture();
  j["format"] = 99;
  std::ofstream(d / "future") << j.dump();
  r = run("status --file " + (d / "future").string());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("has format 99, newer than this switch-lua's 1"), std::string::npos)
      << r.out;
  fs::remove_all(d);
}

// Issue 24: a journal that cannot be written is in the status; the
// fixture, of a plugin that predates the field, reads as writable.
TEST(StatusCli, SaysWhenTheJournalIsFailing) {
  const fs::path d = scratch();
  auto r = run("status --file " + kFixture.string());
  EXPECT_NE(r.out.find("Journal:              writable\n"), std::string::npos) << r.out;
  json j = fixture();
  j["journal_failure"] = "cannot append: No space left on device (errno 28)";
  j["journal_waiting"] = 3;
  {
    std::ofstream(d / "failing") << j.dump();
  }
  r = run("status --file " + (d / "failing").string());
  EXPECT_NE(r.out.find("Journal:              FAILING: cannot append: No space left on device "
                       "(errno 28) (new setups fail until it is written again; 3 teardowns wait "
                       "for it, their jobs COMPLETING)\n"),
            std::string::npos)
      << r.out;
}

TEST(StatusCli, FormatPrometheusPrintsTheFilesNumbersAsMetrics) {
  auto r = run("status --format prometheus --file " + kFixture.string());
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char *line :
       {"# TYPE switchlua_hook_calls_total counter\n",
        "switchlua_hook_calls_total{hook=\"job_start\",outcome=\"ok\"} 3\n",
        "switchlua_hook_calls_total{hook=\"job_start\",outcome=\"spawn_failed\"} 1\n",
        "switchlua_drains_total 1\n", "# TYPE switchlua_hook_round_trip_seconds histogram\n"})
    EXPECT_NE(r.out.find(line), std::string::npos) << "no " << line << " in:\n" << r.out;
  EXPECT_EQ(r.out.find("Written:"), std::string::npos) << "no table";
  auto both = run("status --json --format prometheus --file " + kFixture.string());
  EXPECT_EQ(both.status, 256) << both.out; // exit status 1
  auto bad = run("status --format xml --file " + kFixture.string());
  EXPECT_NE(bad.status, 0) << bad.out;
}

// Issue 38: one line per fabric-ID pool, and its samples; none without one
// (the fixture has no "pools", as a file of a plugin before pools).
TEST(StatusCli, ShowsEachPoolOnlyWhenOneIsDeclared) {
  auto r = run("status --file " + kFixture.string());
  EXPECT_EQ(r.out.find("Pool "), std::string::npos) << r.out;
  const fs::path d = scratch();
  json j = fixture();
  j["pools"] = {{"vni",
                 {{"size", 4},
                  {"free", 1},
                  {"taken", 2},
                  {"quarantined", 1},
                  {"refusals", 3},
                  {"waiting", 2}}},
                {"pkey",
                 {{"size", 4},
                  {"free", 0},
                  {"taken", 2},
                  {"quarantined", 0},
                  {"cooling", 2},
                  {"refusals", 0},
                  {"waiting", 1}}}};
  j["pool_quarantine"] = {
      {"attempts", 1},
      {"oldest", {{{"job_id", 7}, {"ids", {{"vni", {1}}}}, {"since", 1700000000}}}}};
  {
    std::ofstream(d / "pools") << j.dump();
  }
  r = run("status --file " + (d / "pools").string());
  EXPECT_NE(r.out.find("Quarantined:          JobId=7: vni 1 since 2023-11-14T22:13:20 "
                       "(switch-lua pool release --job 7)\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Pool vni:             1 of 4 IDs free, 2 taken, 1 quarantined; 3 setups "
                       "refused for want of IDs; 2 jobs PENDING for them\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Pool pkey:            0 of 4 IDs free, 2 taken, 0 quarantined, 2 in "
                       "their reuse delay; 0 setups refused for want of IDs; 1 job PENDING for "
                       "them\n"),
            std::string::npos)
      << r.out;
  r = run("status --format prometheus --file " + (d / "pools").string());
  for (const char *line : {"switchlua_pool_size{pool=\"vni\"} 4\n",
                           "switchlua_pool_ids{pool=\"vni\",state=\"free\"} 1\n",
                           "switchlua_pool_ids{pool=\"vni\",state=\"taken\"} 2\n",
                           "switchlua_pool_ids{pool=\"vni\",state=\"quarantined\"} 1\n",
                           "switchlua_pool_ids{pool=\"vni\",state=\"cooling\"} 0\n",
                           "switchlua_pool_ids{pool=\"pkey\",state=\"cooling\"} 2\n",
                           "switchlua_pool_refusals_total{pool=\"vni\"} 3\n",
                           "switchlua_pool_waiting_jobs{pool=\"vni\"} 2\n"})
    EXPECT_NE(r.out.find(line), std::string::npos) << "no " << line << " in:\n" << r.out;
}
