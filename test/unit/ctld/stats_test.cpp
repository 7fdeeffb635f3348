// SPDX-License-Identifier: GPL-2.0-or-later
//
// The controller's counters (ctld/stats.hpp): a known sequence of call
// events and actions gives known numbers, in the snapshot, the status
// file's JSON and the summary line.  Times are given, never measured.
#include "ctld/stats.hpp"
#include "stats_calls.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <memory>
#include <unistd.h>

using namespace switchlua;
using namespace switchlua::test;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

/// The sequence: 3 job_start ok (batch, 10/20/30 ms), 1 declined
/// (interactive), 1 failed rc=-1 (batch, 40 ms); 3 job_complete ok
/// (teardown), 1 EAGAIN, 1 timed out with 2 leftover processes killed; one
/// job_start refused by the client; one job_complete still running and one
/// batch job_start still waiting.
std::unique_ptr<CtldStats> sequence() {
  auto owned = std::make_unique<CtldStats>(1700000000);
  CtldStats &st = *owned;
  test::CallRecorder call{st};
  for (auto ms : {10ms, 20ms, 30ms})
    call(Hook::JobStart, Lane::Batch, 4ms, ms, returned(Hook::JobStart, 0, true));
  call(Hook::JobStart, Lane::Interactive, 0ms, 3ms, returned(Hook::JobStart, 0, false));
  call(Hook::JobStart, Lane::Batch, 8ms, 40ms, returned(Hook::JobStart, -1, false));
  for (int i = 0; i < 3; ++i)
    call(Hook::JobComplete, Lane::Teardown, 1ms, 5ms, returned(Hook::JobComplete, 0, false));
  call(Hook::JobComplete, Lane::Teardown, 2ms, 6ms, returned(Hook::JobComplete, kEagain, false));
  Outcome timed = of_kind(OutcomeKind::TimedOut);
  timed.escapees = {4242, 4243};
  call(Hook::JobComplete, Lane::Teardown, 0ms, 12000ms, timed);
  st.call_refused(Hook::JobStart, of_kind(OutcomeKind::SpawnFailed));
  st.call_submitted(100, Hook::JobComplete, Lane::Teardown, kT0);
  st.call_started(100, 7ms);
  st.call_submitted(101, Hook::JobStart, Lane::Batch, kT0);
  for (ActionKind k : {ActionKind::Requeue, ActionKind::Cancel, ActionKind::Cancel,
                       ActionKind::DrainNodes, ActionKind::ScheduleRetry, ActionKind::ScheduleRetry,
                       ActionKind::EndConfiguring, ActionKind::Log})
    st.action(k);
  st.set_jobs(5);
  return owned;
}

} // namespace

TEST(Stats, OutcomeClassesFollowTheContract) {
  EXPECT_EQ(outcome_class(Hook::JobStart, returned(Hook::JobStart, 0, true)), "ok");
  EXPECT_EQ(outcome_class(Hook::JobStart, returned(Hook::JobStart, 0, false)), "declined");
  EXPECT_EQ(outcome_class(Hook::JobStart, returned(Hook::JobStart, -1, false)), "failed");
  EXPECT_EQ(outcome_class(Hook::JobStart, returned(Hook::JobStart, 3, true)), "failed")
      << "job_start: any rc other than SUCCESS";
  Outcome unsaveable = returned(Hook::JobStart, 0, true);
  unsaveable.ret.jobinfo_error = "jobinfo.f: a function";
  EXPECT_EQ(outcome_class(Hook::JobStart, unsaveable), "failed");
  EXPECT_EQ(outcome_class(Hook::JobComplete, returned(Hook::JobComplete, 0, false)), "ok");
  EXPECT_EQ(outcome_class(Hook::JobComplete, returned(Hook::JobComplete, 5, false)), "ok");
  EXPECT_EQ(outcome_class(Hook::JobComplete, returned(Hook::JobComplete, kEagain, false)),
            "eagain");
  EXPECT_EQ(outcome_class(Hook::JobComplete, returned(Hook::JobComplete, -1, false)), "failed");
  EXPECT_EQ(outcome_class(Hook::JobComplete, of_kind(OutcomeKind::LuaError)), "lua_error");
  EXPECT_EQ(outcome_class(Hook::JobStart, of_kind(OutcomeKind::TimedOut)), "timed_out");
}

TEST(Stats, AKnownSequenceGivesKnownCounters) {
  const StatsSnapshot s = sequence()->snapshot();
  EXPECT_EQ(s.started_at, 1700000000);
  const auto &js = s.outcomes.at("job_start");
  EXPECT_EQ(js.at("ok"), 3u);
  EXPECT_EQ(js.at("declined"), 1u);
  EXPECT_EQ(js.at("failed"), 1u);
  EXPECT_EQ(js.at("spawn_failed"), 1u) << "the refused call";
  EXPECT_EQ(js.at("timed_out"), 0u);
  const auto &jc = s.outcomes.at("job_complete");
  EXPECT_EQ(jc.at("ok"), 3u);
  EXPECT_EQ(jc.at("eagain"), 1u);
  EXPECT_EQ(jc.at("timed_out"), 1u);
  EXPECT_EQ(jc.at("failed"), 0u);
  EXPECT_EQ(s.timeouts, 1u);
  EXPECT_EQ(s.leftovers_killed, 2u);
  EXPECT_EQ(s.requeues, 1u);
  EXPECT_EQ(s.cancels, 2u);
  EXPECT_EQ(s.drains, 1u);
  EXPECT_EQ(s.retries, 2u);
  EXPECT_EQ(s.jobs, 5u);
  EXPECT_EQ(s.in_flight, 2u);
  EXPECT_EQ(s.running, 1u);
  const LaneStats &batch = s.lanes[static_cast<std::size_t>(Lane::Batch)];
  EXPECT_EQ(batch.waiting, 1u);
  EXPECT_EQ(batch.started, 4u);
  EXPECT_EQ(batch.wait_ms_total, 4 + 4 + 4 + 8);
  EXPECT_EQ(batch.wait_ms_max, 8);
  const LaneStats &teardown = s.lanes[static_cast<std::size_t>(Lane::Teardown)];
  EXPECT_EQ(teardown.waiting, 0u);
  EXPECT_EQ(teardown.started, 6u);
  EXPECT_EQ(teardown.wait_ms_max, 7);
  EXPECT_EQ(s.lanes[static_cast<std::size_t>(Lane::Interactive)].started, 1u);
  // Round trips: job_start 3, 10, 20, 30, 40 ms; the refused call has none.
  const RoundTrip &rs = s.round_trip.at("job_start");
  EXPECT_EQ(rs.count, 5u);
  EXPECT_EQ(rs.max_ms, 40);
  EXPECT_EQ(rs.quantile_bound(0.5), 20);
  EXPECT_EQ(rs.quantile_bound(0.9), 50);
  EXPECT_EQ(rs.quantile_bound(0.2), 5);
  const RoundTrip &rc = s.round_trip.at("job_complete");
  EXPECT_EQ(rc.count, 5u);
  EXPECT_EQ(rc.quantile_bound(0.5), 5);
  EXPECT_EQ(rc.quantile_bound(0.99), 30000);
}

TEST(Stats, EventsOfUnknownCallsAndRepeatsAreIgnored) {
  CtldStats st(0);
  st.call_started(7, 5ms);
  st.call_done(7, returned(Hook::JobStart, 0, true));
  st.call_submitted(8, Hook::JobStart, Lane::Batch, kT0);
  st.call_started(8, 5ms);
  st.call_started(8, 9ms);
  const StatsSnapshot s = st.snapshot();
  EXPECT_EQ(s.outcomes.at("job_start").at("ok"), 0u);
  EXPECT_EQ(s.lanes[static_cast<std::size_t>(Lane::Batch)].started, 1u);
  EXPECT_EQ(s.lanes[static_cast<std::size_t>(Lane::Batch)].wait_ms_total, 5);
  EXPECT_EQ(s.running, 1u);
}

TEST(Stats, VersionMovesOnEveryChangeOnly) {
  CtldStats st(0);
  const auto v0 = st.version();
  st.set_jobs(0);
  EXPECT_EQ(st.version(), v0) << "no change";
  st.action(ActionKind::Log);
  EXPECT_EQ(st.version(), v0) << "not counted";
  st.action(ActionKind::Requeue);
  EXPECT_GT(st.version(), v0);
}

TEST(Stats, QuantileOfTheOpenBucketAndOfNothing) {
  RoundTrip r;
  EXPECT_EQ(r.quantile_bound(0.5), 0);
  r.add(70000ms);
  EXPECT_EQ(r.quantile_bound(0.5), -1) << "beyond the last bound";
  r.add(0ms);
  r.add(1ms);
  EXPECT_EQ(r.buckets[0], 2u) << "bounds are inclusive";
  EXPECT_EQ(r.quantile_bound(0.5), 1);
}

TEST(Stats, StatusJsonHasEveryCounter) {
  const json j = status_json(sequence()->snapshot(), 1700000100, "/etc/slurm/switch.lua", 4096, 60);
  EXPECT_EQ(j["format"], kStatusFormat);
  EXPECT_EQ(j["written"], 1700000100);
  EXPECT_EQ(j["counting_since"], 1700000000);
  EXPECT_EQ(j["script"], "/etc/slurm/switch.lua");
  EXPECT_EQ(j["switch_status_interval"], 60);
  EXPECT_EQ(j["journal_bytes"], 4096);
  EXPECT_EQ(j["calls"]["in_flight"], 2);
  EXPECT_EQ(j["calls"]["running"], 1);
  EXPECT_EQ(j["hooks"]["job_start"]["calls"], 6);
  EXPECT_EQ(j["hooks"]["job_start"]["outcomes"]["ok"], 3);
  EXPECT_EQ(j["hooks"]["job_start"]["outcomes"]["lua_error"], 0) << "every class, zeros too";
  EXPECT_EQ(j["hooks"]["job_complete"]["calls"], 5);
  EXPECT_EQ(j["hooks"]["job_complete"]["round_trip_ms"]["p50"], 5);
  EXPECT_EQ(j["hooks"]["job_complete"]["round_trip_ms"]["max"], 12000);
  EXPECT_EQ(j["hooks"]["job_complete"]["round_trip_ms"]["buckets"].size(),
            kRoundTripBoundsMs.size() + 1);
  EXPECT_EQ(j["lanes"]["batch"]["waiting"], 1);
  EXPECT_EQ(j["lanes"]["batch"]["wait_ms_mean"], 5);
  EXPECT_EQ(j["lanes"]["teardown"]["wait_ms_max"], 7);
  EXPECT_EQ(j["timeouts"], 1);
  EXPECT_EQ(j["leftovers_killed"], 2);
  EXPECT_EQ(j["retries"], 2);
  EXPECT_EQ(j["drains"], 1);
  EXPECT_EQ(j["requeues"], 1);
  EXPECT_EQ(j["cancels"], 2);
  EXPECT_EQ(j["jobs"], 5);
}

// Issue 38: the pools object, empty without a pool; a change of the
// numbers is a new version (the publisher rewrites the file).
TEST(Stats, PoolsAreInTheStatusJsonAndChangeTheVersion) {
  auto st = sequence();
  EXPECT_EQ(status_json(st->snapshot(), 1, "s", 0, 0)["pools"], json::object());
  const std::uint64_t v = st->version();
  st->set_pools(
      {{"vni", PoolStats{.ids = {.size = 4, .free = 1, .taken = 2, .quarantined = 1, .cooling = 6},
                         .refusals = 3,
                         .waiting = 5}}});
  EXPECT_GT(st->version(), v);
  const json j = status_json(st->snapshot(), 1, "s", 0, 0)["pools"]["vni"];
  EXPECT_EQ(j, (json{{"size", 4},
                     {"free", 1},
                     {"taken", 2},
                     {"cooling", 6},
                     {"quarantined", 1},
                     {"refusals", 3},
                     {"waiting", 5}}));
  const std::uint64_t v2 = st->version();
  st->set_pools(
      {{"vni", PoolStats{.ids = {.size = 4, .free = 1, .taken = 2, .quarantined = 1, .cooling = 6},
                         .refusals = 3,
                         .waiting = 5}}});
  EXPECT_EQ(st->version(), v2) << "the same numbers: no rewrite";
}

TEST(Stats, SummaryLine) {
  EXPECT_EQ(status_summary(sequence()->snapshot()),
            "switch/lua: status: job_start 3 ok, 1 declined, 1 failed, 1 other; job_complete 3 "
            "ok, 1 eagain, 0 failed, 1 other; in flight 2 (waiting 1); jobs 5; timeouts 1, "
            "leftovers killed 2, retries 2, drains 1, requeues 1, cancels 2; round trip "
            "job_start p50<=20 ms p99<=50 ms, job_complete p50<=5 ms p99<=30000 ms");
}

TEST(Stats, PublisherWritesTheFileAtomically) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("switch-lua-stats-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "switch_lua.status").string();
  const std::string journal = (dir / "switch_lua.journal").string();
  std::ofstream(journal) << std::string(123, 'j');
  auto owned = sequence();
  CtldStats &st = *owned;
  std::vector<std::string> lines;
  {
    StatusPublisher pub(st, path, "/etc/slurm/switch.lua", journal,
                        [&](LogLevel, const std::string &l) { lines.push_back(l); });
    pub.publish();
    std::ifstream in(path);
    const json j = json::parse(in);
    EXPECT_EQ(j["hooks"]["job_start"]["outcomes"]["ok"], 3);
    EXPECT_EQ(j["journal_bytes"], 123);
    EXPECT_FALSE(std::filesystem::exists(path + ".tmp." + std::to_string(::getpid())))
        << "renamed into place";
    st.action(ActionKind::Requeue);
  } // the destructor writes a last time
  std::ifstream in(path);
  EXPECT_EQ(json::parse(in)["requeues"], 2);
  EXPECT_TRUE(lines.empty()) << "no summary with switch_status_interval=0, no error";
  std::filesystem::remove_all(dir);
}

TEST(Stats, PublisherSaysOnceWhyItCannotWrite) {
  CtldStats st(0);
  std::vector<std::string> lines;
  StatusPublisher pub(st, "/nonexistent-dir/switch_lua.status", "s", "",
                      [&](LogLevel, const std::string &l) { lines.push_back(l); });
  pub.publish();
  pub.publish();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "switch/lua: status file: cannot open the folder /nonexistent-dir: No such "
                      "file or directory; switch-lua status cannot show the counters until it can "
                      "be written");
}
