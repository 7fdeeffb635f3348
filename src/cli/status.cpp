// SPDX-License-Identifier: GPL-2.0-or-later
//
// switch-lua status (cli/status.hpp).
#include "cli/status.hpp"

#include "common/safe_file.hpp"
#include "ctld/metrics.hpp"
#include "ctld/stats.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>

namespace switchlua {

using json = nlohmann::json;

namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

std::string time_text(std::int64_t t) {
  const std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  ::localtime_r(&tt, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return buf;
}

/// A file older than this was not rewritten by a running switch/lua (it
/// rewrites at least every 30 s).
constexpr std::int64_t kStaleSeconds = 60;
/// The largest status file `switch-lua status` reads, bytes.
constexpr std::size_t kMaxStatusBytes = std::size_t{16} << 20;

std::uint64_t u(const json &j, const char *key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<std::uint64_t>() : 0;
}
std::int64_t i(const json &j, const char *key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<std::int64_t>() : 0;
}

std::string bound(std::int64_t b) {
  if (b < 0)
    return fmt::format("> {} ms", kRoundTripBoundsMs.back());
  return fmt::format("<= {} ms", b);
}

/// The control line (issue 40; switch.lua(5), HIGH AVAILABILITY); none in
/// a file of an older plugin.
void print_control(const json &j) {
  const json c = j.value("control", json::object());
  if (c.empty())
    return;
  const std::string state = c.value("state", std::string());
  const std::string why = c.value("why", std::string());
  fmt::print("Control:              {}{}{} (epoch {}; WAITING {} time{}, fenced takeovers {}, "
             "stale {})\n",
             state == "WAITING" ? "WAITING: new setups wait; retried every second" : state,
             why.empty() ? "" : ": ", why, u(c, "epoch"), u(c, "waits"),
             u(c, "waits") == 1 ? "" : "s", u(c, "fenced_takeovers"), u(c, "stale"));
}

/// The control line (print_control), then the journal's two lines: its
/// size, and whether it is written (issue 24; switch_lua.conf(5),
/// STATESAVELOCATION).
void print_journal(const json &j) {
  print_control(j);
  fmt::print("Journal size:         {} bytes\n", u(j, "journal_bytes"));
  const std::uint64_t waiting = u(j, "journal_waiting");
  if (const std::string jf = j.value("journal_failure", ""); !jf.empty())
    fmt::print("Journal:              FAILING: {} (new setups fail until it is written "
               "again; {} teardown{} wait{} for it, their jobs COMPLETING)\n",
               jf, waiting, waiting == 1 ? "" : "s", waiting == 1 ? "s" : "");
  else
    fmt::print("Journal:              writable\n");
  // Issue 40: a sync that does not return (a hung disk or NFS server).
  if (const std::int64_t since = i(j, "journal_stalled_since"); since > 0)
    fmt::print("Journal sync:         STALLED since {}: StateSaveLocation's storage has not "
               "returned an fdatasync; jobs with a network stay CONFIGURING until it does\n",
               time_text(since));
}

/// The fabric breaker's line (issue 20); none in a file of an older plugin.
void print_breaker(const json &j) {
  const json b = j.value("fabric_breaker", json::object());
  if (b.empty())
    return;
  const auto since = b.value("since", std::int64_t{0});
  if (b.value("open", false))
    fmt::print("Fabric breaker:       OPEN since {}: {}\n", time_text(since),
               b.value("why", std::string()));
  else
    fmt::print("Fabric breaker:       closed (opened {} time{}{})\n", u(b, "opens"),
               u(b, "opens") == 1 ? "" : "s",
               u(b, "opens") ? fmt::format(", last closed {}", time_text(since)) : "");
}

/// One line per fabric-ID pool (issue 38; switch.lua(5), POOLS); none
/// without a pool or in a file of an older plugin.
void print_pools(const json &j) {
  const json pools = j.value("pools", json::object());
  for (const auto &[name, p] : pools.items())
    fmt::print("Pool {:<16} {} of {} IDs free, {} taken, {} quarantined{}; {} setup{} refused "
               "for want of IDs; {} job{} PENDING for them\n",
               name + ":", u(p, "free"), u(p, "size"), u(p, "taken"), u(p, "quarantined"),
               u(p, "cooling") ? fmt::format(", {} in their reuse delay", u(p, "cooling")) : "",
               u(p, "refusals"), u(p, "refusals") == 1 ? "" : "s", u(p, "waiting"),
               u(p, "waiting") == 1 ? "" : "s");
  // The oldest quarantines, what switch-lua pool release frees.
  const json q = j.value("pool_quarantine", json::object());
  const json oldest = q.value("oldest", json::array());
  std::size_t shown = 0;
  for (const json &a : oldest) {
    if (shown++ == 10)
      break;
    std::string ids;
    const json idmap = a.value("ids", json::object());
    for (const auto &[name, list] : idmap.items())
      for (const json &id : list)
        ids += fmt::format("{}{} {}", ids.empty() ? "" : ", ", name, id.dump());
    fmt::print("Quarantined:          JobId={}: {} since {} (switch-lua pool release --job {})\n",
               u(a, "job_id"), ids, time_text(i(a, "since")), u(a, "job_id"));
  }
  if (u(q, "attempts") > std::min<std::uint64_t>(oldest.size(), 10))
    fmt::print("Quarantined:          ... {} attempts in all (--json lists the oldest {})\n",
               u(q, "attempts"), oldest.size());
}

void print_human(const json &j, const std::string &path, std::int64_t age) {
  const std::string stars(60, '*');
  fmt::print("{}\nswitch/lua status, from {}\n", stars, path);
  fmt::print("Written:              {} ({} s ago)\n", time_text(i(j, "written")), age);
  fmt::print("Counting since:       {} (counters start from zero when slurmctld loads "
             "switch/lua)\n",
             time_text(i(j, "counting_since")));
  fmt::print("slurmctld pid:        {}\n", i(j, "pid"));
  fmt::print("Script:               {}\n", j.value("script", ""));
  fmt::print("{}\n", stars);
  if (age > kStaleSeconds)
    fmt::print("WARNING: the file is {} s old; a running switch/lua rewrites it at least every "
               "30 s: slurmctld is stopped, or does not run switch/lua; the numbers are those "
               "of its last run\n",
               age);
  const json calls = j.value("calls", json::object());
  fmt::print("\nCalls in flight:      {} (running {})\n", u(calls, "in_flight"),
             u(calls, "running"));
  fmt::print("Jobs with switch state: {}\n", u(j, "jobs"));
  fmt::print("Timeouts:             {}\n", u(j, "timeouts"));
  fmt::print("Leftovers killed:     {}\n", u(j, "leftovers_killed"));
  fmt::print("Retries:              {}\n", u(j, "retries"));
  fmt::print("Drains:               {}\n", u(j, "drains"));
  fmt::print("Requeues:             {}\n", u(j, "requeues"));
  fmt::print("Cancels:              {}\n", u(j, "cancels"));
  fmt::print("Host faults:          {} (runners that could not be started, retried)\n",
             u(j, "host_faults"));
  print_breaker(j);
  print_pools(j);
  print_journal(j);
  const json hooks = j.value("hooks", json::object());
  fmt::print("\nHook calls by outcome:\n");
  for (const auto &[name, h] : hooks.items()) {
    fmt::print("  {:<20}{} call{}\n", name, u(h, "calls"), u(h, "calls") == 1 ? "" : "s");
    const json outcomes = h.value("outcomes", json::object());
    for (const auto &[cls, n] : outcomes.items())
      if (n.is_number() && n.get<std::uint64_t>() > 0)
        fmt::print("    {:<24}{}\n", cls, n.get<std::uint64_t>());
  }
  fmt::print("\nRound trip, submit to outcome (histogram bucket bounds):\n");
  for (const auto &[name, h] : hooks.items()) {
    const json rt = h.value("round_trip_ms", json::object());
    if (u(rt, "count") == 0) {
      fmt::print("  {:<20}no calls\n", name);
      continue;
    }
    fmt::print("  {:<20}p50 {}  p90 {}  p99 {}  max {} ms\n", name, bound(i(rt, "p50")),
               bound(i(rt, "p90")), bound(i(rt, "p99")), i(rt, "max"));
  }
  fmt::print("\nLanes (waiting now, calls started, time waited):\n");
  const json lanes = j.value("lanes", json::object());
  for (const auto &[name, l] : lanes.items())
    fmt::print("  {:<20}waiting {}  started {}  wait mean {} ms  max {} ms\n", name,
               u(l, "waiting"), u(l, "started"), i(l, "wait_ms_mean"), i(l, "wait_ms_max"));
}

} // namespace

std::optional<std::string> state_save_location(std::string_view text) {
  return slurm_conf_value(text, "StateSaveLocation");
}

std::optional<std::string> slurm_conf_value(std::string_view text, std::string_view name) {
  std::optional<std::string> out;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    if (auto hash = line.find('#'); hash != std::string::npos)
      line.erase(hash);
    const auto eq = line.find('=');
    if (eq == std::string::npos)
      continue;
    std::string key = line.substr(0, eq);
    key.erase(0, key.find_first_not_of(" \t"));
    key.erase(key.find_last_not_of(" \t") + 1);
    if (!iequals(key, name))
      continue;
    std::string value = line.substr(eq + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    value.erase(value.find_last_not_of(" \t\r") + 1);
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
      value = value.substr(1, value.size() - 2);
    if (!value.empty())
      out = value;
  }
  return out;
}

std::optional<std::string> status_file_path(const std::string &file) {
  if (!file.empty())
    return file;
  const char *env = std::getenv("SLURM_CONF");
  const std::string conf = env && env[0] ? env : "/etc/slurm/slurm.conf";
  auto text = read_file_bounded(conf, kMaxStatusBytes); // no FIFO hangs it
  if (!text) {
    std::cerr << fmt::format("switch-lua status: cannot read {} (SLURM_CONF) to find "
                             "StateSaveLocation ({}); name the file with --file PATH\n",
                             conf, text.error().message);
    return std::nullopt;
  }
  auto dir = state_save_location(*text);
  if (!dir) {
    std::cerr << fmt::format("switch-lua status: {} sets no StateSaveLocation; name the file "
                             "with --file PATH\n",
                             conf);
    return std::nullopt;
  }
  return *dir + "/switch_lua.status";
}

int run_status(const std::string &path, StatusFormat format) {
  // Bounded and non-blocking: the file may be one another user planted.
  auto text = read_file_bounded(path, kMaxStatusBytes);
  if (!text) {
    const FileError &e = text.error();
    std::cerr << fmt::format("switch-lua status: {}; slurmctld writes it when it runs "
                             "SwitchType=switch/lua\n",
                             e.message.ends_with(": refused")
                                 ? e.message
                                 : fmt::format("cannot read {}: {}", path, std::strerror(e.err)));
    return 1;
  }
  json j = json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("format") ||
      !j["format"].is_number_integer()) {
    std::cerr << fmt::format("switch-lua status: {} is not a switch/lua status file\n", path);
    return 1;
  }
  if (j["format"].get<int>() > kStatusFormat) {
    std::cerr << fmt::format("switch-lua status: {} has format {}, newer than this switch-lua's "
                             "{}\n",
                             path, j["format"].get<int>(), kStatusFormat);
    return 1;
  }
  const std::int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  const std::int64_t age = std::max<std::int64_t>(0, now - i(j, "written"));
  if (format == StatusFormat::Prometheus) {
    // The file's own numbers, as slurmctld writes them to switch_metrics_file;
    // its age is the sample switchlua_status_written_timestamp_seconds.
    fmt::print("{}", prometheus_text(j));
    return 0;
  }
  if (format == StatusFormat::Json) {
    j["file"] = path;
    j["age_seconds"] = age;
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  print_human(j, path, age);
  return 0;
}

} // namespace switchlua
