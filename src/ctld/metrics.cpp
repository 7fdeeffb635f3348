// SPDX-License-Identifier: GPL-2.0-or-later
//
// prometheus_text() (ctld/metrics.hpp): one row of kMetrics per family.
#include "ctld/metrics.hpp"

#include "ctld/stats.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace switchlua {

using json = nlohmann::json;

namespace {

/// A number of the document at `j[key]`, 0 when absent or not a number.
double num(const json &j, std::string_view key) {
  if (!j.is_object())
    return 0;
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0;
}

/// An object of the document at `j[key]`, empty when absent.
const json &obj(const json &j, std::string_view key) {
  static const json empty = json::object();
  if (!j.is_object())
    return empty;
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? *it : empty;
}

/// A sample value as Prometheus reads it: integers without a fraction,
/// other numbers in the shortest form that reads back the same.
std::string value_text(double v) {
  return fmt::format("{}", v);
}

/// A label value, escaped as the exposition format says (\\, \", \n).
std::string label_value(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

/// Writes the samples of one family into `out`.
struct Sink {
  std::string &out;
  std::string_view name;
  void sample(std::string_view suffix, std::string_view labels, double v) {
    out += fmt::format("{}{}{}{}{} {}\n", name, suffix, labels.empty() ? "" : "{", labels,
                       labels.empty() ? "" : "}", value_text(v));
  }
};

std::string label(std::string_view k, std::string_view v) {
  return fmt::format("{}=\"{}\"", k, label_value(v));
}

using Samples = void (*)(const json &status, Sink &out);

/// One row per family: name, type, help, its samples.
struct Metric {
  MetricFamily family;
  Samples samples;
};

/// A plain number of the document as one unlabelled sample.
#define SWITCHLUA_SCALAR(path_expr) [](const json &s, Sink &o) { o.sample("", "", path_expr); }

void hook_calls(const json &s, Sink &o) {
  for (const auto &[hook, h] : obj(s, "hooks").items()) {
    const json &outcomes = obj(h, "outcomes");
    for (std::string_view c : outcome_classes())
      o.sample("", label("hook", hook) + "," + label("outcome", c), num(outcomes, c));
  }
}

void round_trip(const json &s, Sink &o) {
  for (const auto &[hook, h] : obj(s, "hooks").items()) {
    const json &rt = obj(h, "round_trip_ms");
    const json buckets =
        rt.contains("buckets") && rt["buckets"].is_array() ? rt["buckets"] : json::array();
    double cumulative = 0;
    for (std::size_t i = 0; i < kRoundTripBoundsMs.size(); ++i) {
      if (i < buckets.size())
        cumulative += num(buckets[i], "count");
      o.sample("_bucket",
               label("hook", hook) + "," +
                   label("le", value_text(static_cast<double>(kRoundTripBoundsMs[i]) / 1000.0)),
               cumulative);
    }
    o.sample("_bucket", label("hook", hook) + "," + label("le", "+Inf"), num(rt, "count"));
    o.sample("_sum", label("hook", hook), num(rt, "sum") / 1000.0);
    o.sample("_count", label("hook", hook), num(rt, "count"));
  }
}

template <int Field> void lanes(const json &s, Sink &o) {
  static constexpr const char *kKey[] = {"waiting", "started", "wait_ms_total", "wait_ms_max"};
  const double scale = Field >= 2 ? 1000.0 : 1.0;
  for (const auto &[lane, l] : obj(s, "lanes").items())
    o.sample("", label("lane", lane), num(l, kKey[Field]) / scale);
}

/// Issue 38: the IDs of each declared pool by state (free, taken,
/// quarantined, cooling); nothing without a pool.
void pool_ids(const json &s, Sink &o) {
  for (const auto &[pool, p] : obj(s, "pools").items())
    for (std::string_view state : {"free", "taken", "quarantined", "cooling"})
      o.sample("", label("pool", pool) + "," + label("state", state), num(p, state));
}

template <int Field> void pools(const json &s, Sink &o) {
  static constexpr const char *kKey[] = {"size", "refusals", "waiting"};
  for (const auto &[pool, p] : obj(s, "pools").items())
    o.sample("", label("pool", pool), num(p, kKey[Field]));
}

// clang-format off
const Metric kMetrics[] = {
  {{"switchlua_hook_calls_total", "counter",
    "Hook calls of switch/lua in slurmctld that ended, by hook and outcome class (switch-lua(1) STATUS)."},
   hook_calls},
  {{"switchlua_hook_round_trip_seconds", "histogram",
    "Time from submitting a hook call to its outcome, by hook."},
   round_trip},
  {{"switchlua_calls_in_flight", "gauge", "Hook calls submitted and not ended."},
   SWITCHLUA_SCALAR(num(obj(s, "calls"), "in_flight"))},
  {{"switchlua_calls_running", "gauge", "Hook calls whose runner process has the call."},
   SWITCHLUA_SCALAR(num(obj(s, "calls"), "running"))},
  {{"switchlua_jobs", "gauge", "Jobs with switch state."},
   SWITCHLUA_SCALAR(num(s, "jobs"))},
  {{"switchlua_timeouts_total", "counter", "Hook calls killed at switch_timeout."},
   SWITCHLUA_SCALAR(num(s, "timeouts"))},
  {{"switchlua_leftovers_killed_total", "counter",
    "Processes that left a hook call's process group, killed at its end."},
   SWITCHLUA_SCALAR(num(s, "leftovers_killed"))},
  {{"switchlua_retries_total", "counter", "job_complete runs scheduled again (EAGAIN, restarts)."},
   SWITCHLUA_SCALAR(num(s, "retries"))},
  {{"switchlua_drains_total", "counter", "Drains of a job's nodes asked of Slurm."},
   SWITCHLUA_SCALAR(num(s, "drains"))},
  {{"switchlua_requeues_total", "counter", "Requeues of a job asked of Slurm."},
   SWITCHLUA_SCALAR(num(s, "requeues"))},
  {{"switchlua_cancels_total", "counter", "Cancels of a job asked of Slurm."},
   SWITCHLUA_SCALAR(num(s, "cancels"))},
  {{"switchlua_host_faults_total", "counter",
    "Hook calls whose runner could not be started (fork/spawn failures, a full lane), retried."},
   SWITCHLUA_SCALAR(num(s, "host_faults"))},
  {{"switchlua_lane_waiting", "gauge", "Hook calls waiting in the supervisor's lane now."},
   lanes<0>},
  {{"switchlua_lane_started_total", "counter", "Hook calls that left the lane."},
   lanes<1>},
  {{"switchlua_lane_wait_seconds_total", "counter", "Time the calls that left the lane waited in it."},
   lanes<2>},
  {{"switchlua_lane_wait_max_seconds", "gauge", "The longest wait of a call in the lane."},
   lanes<3>},
  {{"switchlua_fabric_breaker_open", "gauge",
    "1 while the fabric breaker is open (new setups fail, teardowns are kept), else 0."},
   SWITCHLUA_SCALAR(obj(s, "fabric_breaker").value("open", false) ? 1.0 : 0.0)},
  {{"switchlua_fabric_breaker_opens_total", "counter", "Times the fabric breaker opened."},
   SWITCHLUA_SCALAR(num(obj(s, "fabric_breaker"), "opens"))},
  {{"switchlua_fabric_breaker_last_change_timestamp_seconds", "gauge",
    "Unix time the fabric breaker last opened or closed; 0: never."},
   SWITCHLUA_SCALAR(num(obj(s, "fabric_breaker"), "since"))},
  {{"switchlua_pool_size", "gauge",
    "IDs in the ranges of each fabric-ID pool (switch_pool_NAME), by pool."},
   pools<0>},
  {{"switchlua_pool_ids", "gauge",
    "IDs of each fabric-ID pool by state: free, taken (by setups not over), quarantined "
    "(kept out of use after a failed teardown), cooling (released, in the pool's reuse "
    "delay)."},
   pool_ids},
  {{"switchlua_pool_refusals_total", "counter",
    "Setups whose job_start did not run because a pool had too few free IDs, by pool."},
   pools<1>},
  {{"switchlua_pool_waiting_jobs", "gauge",
    "Jobs kept PENDING because a pool had too few free IDs (Slurm 25.11 and later), by pool."},
   pools<2>},
  {{"switchlua_control_epoch", "gauge",
    "The epoch of this slurmctld's last control period of the journal (0: never had control)."},
   SWITCHLUA_SCALAR(num(obj(s, "control"), "epoch"))},
  {{"switchlua_control_waiting", "gauge",
    "1 while Slurm made this slurmctld the controller and switch/lua could not take control "
    "of its journal yet (WAITING: new setups wait), else 0."},
   SWITCHLUA_SCALAR(obj(s, "control").value("state", std::string()) == "WAITING" ? 1.0 : 0.0)},
  {{"switchlua_control_waits_total", "counter",
    "Times taking control of the journal failed and switch/lua ran WAITING."},
   SWITCHLUA_SCALAR(num(obj(s, "control"), "waits"))},
  {{"switchlua_fenced_takeovers_total", "counter",
    "Times this slurmctld took control from a holder that still held the journal's lock."},
   SWITCHLUA_SCALAR(num(obj(s, "control"), "fenced_takeovers"))},
  {{"switchlua_journal_bytes", "gauge", "Size of StateSaveLocation/switch_lua.journal."},
   SWITCHLUA_SCALAR(num(s, "journal_bytes"))},
  {{"switchlua_journal_failing", "gauge",
    "1 while the journal cannot be written (new setups fail), else 0."},
   SWITCHLUA_SCALAR(s.is_object() && s.value("journal_failure", std::string()).empty() ? 0.0 : 1.0)},
  {{"switchlua_journal_stalled", "gauge",
    "1 while a journal fdatasync has not returned for 5 s or more (StateSaveLocation's storage "
    "stalls: setups wait for it), else 0."},
   SWITCHLUA_SCALAR(num(s, "journal_stalled_since") > 0 ? 1.0 : 0.0)},
  {{"switchlua_journal_stalls_total", "counter",
    "Journal fdatasyncs that stalled 5 s or more (reported by one line each)."},
   SWITCHLUA_SCALAR(num(s, "journal_stalls"))},
  {{"switchlua_journal_waiting_teardowns", "gauge",
    "Teardowns waiting for the journal to be written again, their jobs COMPLETING "
    "(switch_journal_failure=wait)."},
   SWITCHLUA_SCALAR(num(s, "journal_waiting"))},
  {{"switchlua_counting_since_timestamp_seconds", "gauge",
    "Unix time the counters started from zero (slurmctld loaded switch/lua)."},
   SWITCHLUA_SCALAR(num(s, "counting_since"))},
  {{"switchlua_status_written_timestamp_seconds", "gauge",
    "Unix time slurmctld last wrote these numbers."},
   SWITCHLUA_SCALAR(num(s, "written"))},
};
// clang-format on

#undef SWITCHLUA_SCALAR

/// HELP text escaped as the exposition format says (\\ and \n).
std::string help_text(std::string_view h) {
  std::string out;
  for (char c : h)
    out += c == '\\' ? "\\\\" : c == '\n' ? "\\n" : std::string(1, c);
  return out;
}

} // namespace

std::vector<MetricFamily> metric_families() {
  std::vector<MetricFamily> out;
  for (const Metric &m : kMetrics)
    out.push_back(m.family);
  return out;
}

std::string prometheus_text(const json &status) {
  std::string out;
  for (const Metric &m : kMetrics) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", m.family.name, help_text(m.family.help),
                       m.family.name, m.family.type);
    Sink sink{out, m.family.name};
    m.samples(status, sink);
  }
  return out;
}

} // namespace switchlua
