// SPDX-License-Identifier: GPL-2.0-or-later
//
// The Prometheus text of the counters (ctld/metrics.hpp): a known sequence
// of call events gives known samples; every family has its HELP and TYPE
// lines and follows Prometheus' naming conventions; the histogram is
// cumulative up to +Inf with _sum and _count; an older document without a
// key gives 0; the textfile (switch_metrics_file) is written by the
// publisher with the same text; switch-lua(1) STATUS lists every family.
// Times are given, never measured.
#include "../source_lines.hpp"
#include "ctld/metrics.hpp"
#include "ctld/stats.hpp"
#include "stats_calls.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace switchlua;
using namespace switchlua::test;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

/// 2 job_start ok (batch, 3 and 30 ms, waited 4 ms each), 1 failed
/// (interactive, 1500 ms); 1 job_complete ok (teardown, 2 ms) and 1 timed
/// out (70 s); a requeue, 2 drains, a host fault, the breaker opened.
json sequence_json() {
  CtldStats st(1700000000);
  test::CallRecorder call{st};
  call(Hook::JobStart, Lane::Batch, 4ms, 3ms, returned(Hook::JobStart, 0, true));
  call(Hook::JobStart, Lane::Batch, 4ms, 30ms, returned(Hook::JobStart, 0, true));
  call(Hook::JobStart, Lane::Interactive, 0ms, 1500ms, returned(Hook::JobStart, -1, false));
  call(Hook::JobComplete, Lane::Teardown, 1ms, 2ms, returned(Hook::JobComplete, 0, false));
  Outcome timed;
  timed.kind = OutcomeKind::TimedOut;
  call(Hook::JobComplete, Lane::Teardown, 0ms, 70000ms, timed);
  st.action(ActionKind::Requeue);
  st.action(ActionKind::DrainNodes);
  st.action(ActionKind::DrainNodes);
  st.host_fault();
  st.breaker(true, 1700000100, "fabric manager down");
  st.set_jobs(2);
  st.set_journal_failure("cannot append: No space left on device (errno 28)");
  st.set_journal_waiting(2);
  return status_json(st.snapshot(), 1700000200, "/etc/slurm/switch.lua", 4096, 0);
}

std::vector<std::string> lines_of(const std::string &text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    out.push_back(l);
  return out;
}

bool has_line(const std::string &text, const std::string &line) {
  for (const std::string &l : lines_of(text))
    if (l == line)
      return true;
  return false;
}

} // namespace

TEST(Metrics, TheSequenceGivesItsExactSamples) {
  const std::string t = prometheus_text(sequence_json());
  for (const char *line : {
           R"(switchlua_hook_calls_total{hook="job_start",outcome="ok"} 2)",
           R"(switchlua_hook_calls_total{hook="job_start",outcome="failed"} 1)",
           R"(switchlua_hook_calls_total{hook="job_start",outcome="timed_out"} 0)",
           R"(switchlua_hook_calls_total{hook="job_complete",outcome="ok"} 1)",
           R"(switchlua_hook_calls_total{hook="job_complete",outcome="timed_out"} 1)",
           R"(switchlua_hook_round_trip_seconds_bucket{hook="job_start",le="0.005"} 1)",
           R"(switchlua_hook_round_trip_seconds_bucket{hook="job_start",le="0.05"} 2)",
           R"(switchlua_hook_round_trip_seconds_bucket{hook="job_start",le="1"} 2)",
           R"(switchlua_hook_round_trip_seconds_bucket{hook="job_start",le="2"} 3)",
           R"(switchlua_hook_round_trip_seconds_bucket{hook="job_start",le="60"} 3)",
           R"(switchlua_hook_round_trip_seconds_bucket{hook="job_start",le="+Inf"} 3)",
           R"(switchlua_hook_round_trip_seconds_sum{hook="job_start"} 1.533)",
           R"(switchlua_hook_round_trip_seconds_count{hook="job_start"} 3)",
           R"(switchlua_hook_round_trip_seconds_bucket{hook="job_complete",le="60"} 1)",
           R"(switchlua_hook_round_trip_seconds_bucket{hook="job_complete",le="+Inf"} 2)",
           R"(switchlua_hook_round_trip_seconds_sum{hook="job_complete"} 70.002)",
           "switchlua_calls_in_flight 0",
           "switchlua_jobs 2",
           "switchlua_timeouts_total 1",
           "switchlua_requeues_total 1",
           "switchlua_drains_total 2",
           "switchlua_cancels_total 0",
           "switchlua_retries_total 0",
           "switchlua_host_faults_total 1",
           R"(switchlua_lane_started_total{lane="batch"} 2)",
           R"(switchlua_lane_wait_seconds_total{lane="batch"} 0.008)",
           R"(switchlua_lane_wait_max_seconds{lane="batch"} 0.004)",
           R"(switchlua_lane_waiting{lane="teardown"} 0)",
           "switchlua_fabric_breaker_open 1",
           "switchlua_fabric_breaker_opens_total 1",
           "switchlua_fabric_breaker_last_change_timestamp_seconds 1700000100",
           "switchlua_journal_bytes 4096",
           "switchlua_journal_failing 1",
           "switchlua_journal_waiting_teardowns 2",
           "switchlua_counting_since_timestamp_seconds 1700000000",
           "switchlua_status_written_timestamp_seconds 1700000200",
       })
    EXPECT_TRUE(has_line(t, line)) << "no line: " << line << "\nin:\n" << t;
}

TEST(Metrics, EveryFamilyHasHelpAndTypeAndFollowsTheNamingConventions) {
  const std::string t = prometheus_text(sequence_json());
  const std::regex name(R"(^switchlua_[a-z_]+$)");
  std::set<std::string> names;
  for (const MetricFamily &f : metric_families()) {
    const std::string n(f.name);
    EXPECT_TRUE(names.insert(n).second) << n << " twice";
    EXPECT_TRUE(std::regex_match(n, name)) << n;
    EXPECT_TRUE(has_line(t, "# TYPE " + n + " " + std::string(f.type))) << n;
    EXPECT_NE(t.find("# HELP " + n + " "), std::string::npos) << n;
    EXPECT_FALSE(f.help.empty()) << n;
    EXPECT_EQ(f.type == "counter", n.ends_with("_total"))
        << n << ": a counter, and only a counter, ends in _total";
    if (f.type == "histogram") {
      EXPECT_TRUE(n.ends_with("_seconds")) << n << ": durations in seconds";
    }
    EXPECT_EQ(n.find("_ms"), std::string::npos) << n << ": seconds, not milliseconds";
  }
  // Every sample belongs to the family whose TYPE line came last.
  std::string family;
  for (const std::string &l : lines_of(t)) {
    if (l.starts_with("# TYPE ")) {
      family = l.substr(7, l.find(' ', 7) - 7);
      continue;
    }
    if (l.starts_with("#"))
      continue;
    ASSERT_FALSE(family.empty()) << l;
    const std::string sample = l.substr(0, l.find_first_of("{ "));
    EXPECT_TRUE(sample == family || sample == family + "_bucket" || sample == family + "_sum" ||
                sample == family + "_count")
        << l << " under " << family;
  }
  EXPECT_TRUE(t.ends_with("\n"));
}

TEST(Metrics, AnOlderDocumentWithoutAKeyGivesZero) {
  json j = sequence_json();
  j.erase("host_faults");
  j["hooks"]["job_start"]["round_trip_ms"].erase("sum");
  j.erase("journal_failure");
  j.erase("journal_waiting");
  const std::string t = prometheus_text(j);
  EXPECT_TRUE(has_line(t, "switchlua_host_faults_total 0")) << t;
  EXPECT_TRUE(has_line(t, R"(switchlua_hook_round_trip_seconds_sum{hook="job_start"} 0)")) << t;
  EXPECT_TRUE(has_line(t, "switchlua_journal_failing 0")) << t;
  EXPECT_TRUE(has_line(t, "switchlua_journal_waiting_teardowns 0")) << t;
  EXPECT_TRUE(has_line(prometheus_text(json::object()), "switchlua_jobs 0"));
}

TEST(Metrics, LabelValuesAreEscaped) {
  json j = json::object();
  j["lanes"]["a\"b\\c\nd"] = {{"waiting", 1}};
  EXPECT_TRUE(has_line(prometheus_text(j), R"(switchlua_lane_waiting{lane="a\"b\\c\nd"} 1)"))
      << prometheus_text(j);
}

TEST(Metrics, ThePublisherWritesTheTextfileWithTheSameText) {
  CtldStats st(1700000000);
  st.action(ActionKind::DrainNodes);
  const std::string dir =
      std::filesystem::temp_directory_path() / ("switch-lua-metrics-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string status = dir + "/switch_lua.status", prom = dir + "/switch_lua.prom";
  std::vector<std::string> lines;
  {
    StatusPublisher pub(st, status, "/etc/slurm/switch.lua", "",
                        [&](LogLevel, const std::string &l) { lines.push_back(l); });
    pub.publish();
    EXPECT_FALSE(std::filesystem::exists(prom)) << "no switch_metrics_file: no textfile";
    pub.set_metrics_path(prom);
    pub.publish();
    std::ifstream s(status), p(prom);
    std::stringstream text;
    text << p.rdbuf();
    EXPECT_EQ(text.str(), prometheus_text(json::parse(s)));
    EXPECT_TRUE(has_line(text.str(), "switchlua_drains_total 1")) << text.str();
    struct stat sb{};
    ASSERT_EQ(::stat(prom.c_str(), &sb), 0);
    EXPECT_EQ(sb.st_mode & 0777, 0644u) << "world-readable, for node_exporter";
    st.action(ActionKind::DrainNodes);
  } // the destructor writes a last time
  std::ifstream p(prom);
  std::stringstream text;
  text << p.rdbuf();
  EXPECT_TRUE(has_line(text.str(), "switchlua_drains_total 2")) << text.str();
  EXPECT_TRUE(lines.empty());
  std::filesystem::remove_all(dir);
}

TEST(Metrics, AnUnwritableTextfileIsLoggedOnce) {
  CtldStats st(1700000000);
  std::vector<std::string> lines;
  StatusPublisher pub(st, "", "s", "", [&](LogLevel, const std::string &l) { lines.push_back(l); });
  pub.set_metrics_path("/nonexistent-dir/switch_lua.prom");
  pub.publish();
  pub.publish();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "switch/lua: switch_metrics_file: cannot open the folder /nonexistent-dir: "
                      "No such file or directory; Prometheus sees no new counters until it can "
                      "be written");
}

TEST(Metrics, TheManPageListsEveryFamily) {
  // switch-lua(1) STATUS, --format prometheus: one ".B name" line per family,
  // in the table's order, and no other switchlua_ name.
  const auto lines = switchlua::test::read_lines(std::filesystem::path(SWITCHLUA_SOURCE_ROOT) /
                                                 "man" / "switch-lua.1");
  std::vector<std::string> listed;
  const std::regex entry(R"(^\.BR? (switchlua_[a-z_]+)( .*)?$)");
  for (const std::string &l : lines) {
    std::smatch m;
    if (std::regex_match(l, m, entry))
      listed.push_back(m[1].str());
  }
  std::vector<std::string> want;
  for (const MetricFamily &f : metric_families())
    want.push_back(std::string(f.name));
  EXPECT_EQ(listed, want);
}
