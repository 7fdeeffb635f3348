// SPDX-License-Identifier: GPL-2.0-or-later
//
// CtldStats and StatusPublisher (ctld/stats.hpp).
#include "ctld/stats.hpp"

#include "common/log_stamp.hpp"
#include "common/safe_file.hpp"
#include "ctld/metrics.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

namespace switchlua {

using json = nlohmann::json;

std::string_view outcome_class(Hook h, const Outcome &o) {
  if (o.kind != OutcomeKind::Returned)
    return outcome_kind_name(o.kind);
  if (h == Hook::JobComplete) {
    if (o.ret.rc == kEagain)
      return "eagain";
    return o.ret.rc < 0 ? "failed" : "ok";
  }
  if (h == Hook::JobStart) {
    if (o.ret.rc != kSuccess || !o.ret.jobinfo_error.empty())
      return "failed";
    return o.ret.jobinfo ? "ok" : "declined";
  }
  return "ok"; // the boolean hooks: any return
}

const std::vector<std::string_view> &outcome_classes() {
  static const std::vector<std::string_view> all = {"ok",
                                                    "declined",
                                                    "eagain",
                                                    "failed",
                                                    "lua_error",
                                                    "bad_return",
                                                    "exited_without_return",
                                                    "signaled",
                                                    "timed_out",
                                                    "spawn_failed",
                                                    "abandoned",
                                                    "load_failed"};
  return all;
}

void RoundTrip::add(std::chrono::milliseconds d) {
  const std::int64_t ms = std::max<std::int64_t>(0, d.count());
  std::size_t i = 0;
  while (i < kRoundTripBoundsMs.size() && ms > kRoundTripBoundsMs[i])
    ++i;
  ++buckets[i];
  ++count;
  sum_ms += ms;
  max_ms = std::max(max_ms, ms);
}

std::int64_t RoundTrip::quantile_bound(double q) const {
  if (count == 0)
    return 0;
  const auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count)));
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    seen += buckets[i];
    if (seen >= std::max<std::uint64_t>(rank, 1))
      return i < kRoundTripBoundsMs.size() ? kRoundTripBoundsMs[i] : -1;
  }
  return -1;
}

CtldStats::CtldStats(std::int64_t started_at_unix) {
  s_.started_at = started_at_unix;
  for (Hook h : {Hook::JobStart, Hook::JobComplete}) {
    auto &m = s_.outcomes[std::string(hook_name(h))];
    for (std::string_view c : outcome_classes())
      m[std::string(c)] = 0;
    s_.round_trip[std::string(hook_name(h))];
  }
}

void CtldStats::call_submitted(CallId id, Hook h, Lane lane, Clock::time_point now) {
  std::lock_guard g(mu_);
  pending_[id] = Pending{h, lane, now, false};
  ++s_.lanes[static_cast<std::size_t>(lane)].waiting;
  ++s_.in_flight;
  ++version_;
}

void CtldStats::call_started(CallId id, std::chrono::milliseconds queued) {
  std::lock_guard g(mu_);
  auto it = pending_.find(id);
  if (it == pending_.end() || it->second.started)
    return;
  it->second.started = true;
  LaneStats &l = s_.lanes[static_cast<std::size_t>(it->second.lane)];
  --l.waiting;
  ++l.started;
  l.wait_ms_total += queued.count();
  l.wait_ms_max = std::max<std::int64_t>(l.wait_ms_max, queued.count());
  ++s_.running;
  ++version_;
}

void CtldStats::count_outcome(Hook h, const Outcome &o) {
  ++s_.outcomes[std::string(hook_name(h))][std::string(outcome_class(h, o))];
  if (o.kind == OutcomeKind::TimedOut)
    ++s_.timeouts;
  s_.leftovers_killed += o.escapees.size();
}

void CtldStats::call_done(CallId id, const Outcome &o, Clock::time_point now) {
  std::lock_guard g(mu_);
  auto it = pending_.find(id);
  if (it == pending_.end())
    return;
  const Pending p = it->second;
  pending_.erase(it);
  if (p.started)
    --s_.running;
  else
    --s_.lanes[static_cast<std::size_t>(p.lane)].waiting;
  --s_.in_flight;
  count_outcome(p.hook, o);
  s_.round_trip[std::string(hook_name(p.hook))].add(
      std::chrono::duration_cast<std::chrono::milliseconds>(now - p.submitted));
  ++version_;
}

void CtldStats::call_refused(Hook h, const Outcome &o) {
  std::lock_guard g(mu_);
  count_outcome(h, o);
  ++version_;
}

void CtldStats::host_fault() {
  std::lock_guard g(mu_);
  ++s_.host_faults;
  ++version_;
}

void CtldStats::breaker(bool open, std::int64_t at, const std::string &why) {
  std::lock_guard g(mu_);
  if (open && !s_.breaker_open)
    ++s_.breaker_opens;
  s_.breaker_open = open;
  s_.breaker_since = at;
  s_.breaker_why = why;
  ++version_;
}

void CtldStats::action(ActionKind k) {
  std::lock_guard g(mu_);
  switch (k) {
  case ActionKind::Requeue:
    ++s_.requeues;
    break;
  case ActionKind::Cancel:
    ++s_.cancels;
    break;
  case ActionKind::DrainNodes:
    ++s_.drains;
    break;
  case ActionKind::ScheduleRetry:
    ++s_.retries;
    break;
  default:
    return;
  }
  ++version_;
}

void CtldStats::set_jobs(std::size_t n) {
  set_field(&StatsSnapshot::jobs, std::uint64_t{n});
}

void CtldStats::set_pools(std::map<std::string, PoolStats> pools,
                          std::vector<PoolReleased> quarantine,
                          std::uint64_t quarantined_attempts) {
  std::lock_guard g(mu_);
  if (s_.pools == pools && s_.quarantine == quarantine &&
      s_.quarantined_attempts == quarantined_attempts)
    return;
  s_.pools = std::move(pools);
  s_.quarantine = std::move(quarantine);
  s_.quarantined_attempts = quarantined_attempts;
  ++version_;
}

void CtldStats::set_journal_failure(const std::string &why) {
  set_field(&StatsSnapshot::journal_failure, why);
}

void CtldStats::set_journal_stall(std::int64_t since) {
  std::lock_guard g(mu_);
  if (s_.journal_stalled_since == since)
    return;
  if (since != 0)
    ++s_.journal_stalls;
  s_.journal_stalled_since = since;
  ++version_;
}

void CtldStats::set_control(const std::string &state, const std::string &why, std::uint64_t epoch) {
  std::lock_guard g(mu_);
  if (s_.control == state && s_.control_why == why && s_.epoch == epoch)
    return;
  s_.control = state;
  s_.control_why = why;
  s_.epoch = epoch;
  ++version_;
}

void CtldStats::count_control(std::uint64_t StatsSnapshot::*counter) {
  std::lock_guard g(mu_);
  ++(s_.*counter);
  ++version_;
}

void CtldStats::set_journal_waiting(std::size_t n) {
  set_field(&StatsSnapshot::journal_waiting, std::uint64_t{n});
}

StatsSnapshot CtldStats::snapshot() const {
  std::lock_guard g(mu_);
  return s_;
}

namespace {
/// The "fabric_breaker" object of the status file.
json breaker_json(const StatsSnapshot &s) {
  return {{"open", s.breaker_open},
          {"since", s.breaker_since},
          {"why", s.breaker_why},
          {"opens", s.breaker_opens}};
}

json lanes_json(const StatsSnapshot &s) {
  json lanes = json::object();
  for (Lane l : {Lane::Teardown, Lane::Interactive, Lane::Batch}) {
    const LaneStats &ls = s.lanes[static_cast<std::size_t>(l)];
    lanes[std::string(lane_name(l))] = {
        {"waiting", ls.waiting},
        {"started", ls.started},
        {"wait_ms_mean", ls.started ? ls.wait_ms_total / static_cast<std::int64_t>(ls.started) : 0},
        {"wait_ms_total", ls.wait_ms_total},
        {"wait_ms_max", ls.wait_ms_max}};
  }
  return lanes;
}

/// The "pools" object of the status file: one object per declared pool.
json pools_json(const StatsSnapshot &s) {
  json out = json::object();
  for (const auto &[name, p] : s.pools)
    out[name] = {{"size", p.ids.size},       {"free", p.ids.free},
                 {"taken", p.ids.taken},     {"quarantined", p.ids.quarantined},
                 {"cooling", p.ids.cooling}, {"refusals", p.refusals},
                 {"waiting", p.waiting}};
  return out;
}

/// The "pool_quarantine" object: the oldest quarantined attempts.
json quarantine_json(const StatsSnapshot &s) {
  json list = json::array();
  for (const PoolReleased &q : s.quarantine) {
    json ids = json::object();
    for (const auto &[name, l] : q.ids)
      ids[name] = l;
    list.push_back({{"job_id", q.job_id}, {"ids", ids}, {"since", q.since}});
  }
  return {{"attempts", s.quarantined_attempts}, {"oldest", list}};
}

json control_json(const StatsSnapshot &s) {
  return {{"state", s.control},
          {"why", s.control_why},
          {"epoch", s.epoch},
          {"waits", s.control_waits},
          {"fenced_takeovers", s.fenced_takeovers},
          {"stale", s.stale_periods}};
}
} // namespace

json status_json(const StatsSnapshot &s, std::int64_t written, const std::string &script,
                 std::int64_t journal_bytes, std::uint32_t summary_interval) {
  json hooks = json::object();
  for (const auto &[hook, classes] : s.outcomes) {
    json h;
    std::uint64_t total = 0;
    json out = json::object();
    for (std::string_view c : outcome_classes()) {
      auto it = classes.find(std::string(c));
      const std::uint64_t n = it == classes.end() ? 0 : it->second;
      out[std::string(c)] = n;
      total += n;
    }
    h["calls"] = total;
    h["outcomes"] = out;
    auto rt = s.round_trip.find(hook);
    const RoundTrip r = rt == s.round_trip.end() ? RoundTrip{} : rt->second;
    json buckets = json::array();
    for (std::size_t i = 0; i < r.buckets.size(); ++i)
      buckets.push_back(
          {{"le_ms", i < kRoundTripBoundsMs.size() ? json(kRoundTripBoundsMs[i]) : json(nullptr)},
           {"count", r.buckets[i]}});
    h["round_trip_ms"] = {{"count", r.count},
                          {"sum", r.sum_ms},
                          {"p50", r.quantile_bound(0.5)},
                          {"p90", r.quantile_bound(0.9)},
                          {"p99", r.quantile_bound(0.99)},
                          {"max", r.max_ms},
                          {"buckets", buckets}};
    hooks[hook] = h;
  }
  return json{{"format", kStatusFormat},
              {"written", written},
              {"counting_since", s.started_at},
              {"pid", static_cast<std::int64_t>(::getpid())},
              {"script", script},
              {"switch_status_interval", summary_interval},
              {"calls", {{"in_flight", s.in_flight}, {"running", s.running}}},
              {"hooks", hooks},
              {"lanes", lanes_json(s)},
              {"timeouts", s.timeouts},
              {"leftovers_killed", s.leftovers_killed},
              {"retries", s.retries},
              {"drains", s.drains},
              {"requeues", s.requeues},
              {"cancels", s.cancels},
              {"host_faults", s.host_faults},
              {"fabric_breaker", breaker_json(s)},
              {"control", control_json(s)},
              {"pools", pools_json(s)},
              {"pool_quarantine", quarantine_json(s)},
              {"jobs", s.jobs},
              {"journal_bytes", journal_bytes},
              {"journal_failure", s.journal_failure},
              {"journal_waiting", s.journal_waiting},
              {"journal_stalled_since", s.journal_stalled_since},
              {"journal_stalls", s.journal_stalls}};
}

namespace {
std::uint64_t count_of(const StatsSnapshot &s, Hook h, std::string_view c) {
  auto it = s.outcomes.find(std::string(hook_name(h)));
  if (it == s.outcomes.end())
    return 0;
  auto jt = it->second.find(std::string(c));
  return jt == it->second.end() ? 0 : jt->second;
}
/// Calls of hook `h` that ended in a class other than those listed.
std::uint64_t others(const StatsSnapshot &s, Hook h, std::initializer_list<std::string_view> not_) {
  std::uint64_t n = 0;
  for (std::string_view c : outcome_classes())
    if (std::find(not_.begin(), not_.end(), c) == not_.end())
      n += count_of(s, h, c);
  return n;
}
std::string bound_text(std::int64_t b) {
  return b < 0 ? fmt::format(">{}", kRoundTripBoundsMs.back()) : fmt::format("<={}", b);
}
} // namespace

std::string status_summary(const StatsSnapshot &s) {
  std::uint64_t waiting = 0;
  for (const LaneStats &l : s.lanes)
    waiting += l.waiting;
  auto rt = [&](Hook h) {
    auto it = s.round_trip.find(std::string(hook_name(h)));
    const RoundTrip r = it == s.round_trip.end() ? RoundTrip{} : it->second;
    return fmt::format("{} p50{} ms p99{} ms", hook_name(h), bound_text(r.quantile_bound(0.5)),
                       bound_text(r.quantile_bound(0.99)));
  };
  return log_line(
      {},
      "status: job_start {} ok, {} declined, {} failed, {} other; job_complete {} "
      "ok, {} eagain, {} failed, {} other; in flight {} (waiting {}); jobs {}; timeouts {}, "
      "leftovers killed {}, retries {}, drains {}, requeues {}, cancels {}; round trip {}, {}",
      count_of(s, Hook::JobStart, "ok"), count_of(s, Hook::JobStart, "declined"),
      count_of(s, Hook::JobStart, "failed"),
      others(s, Hook::JobStart, {"ok", "declined", "failed"}), count_of(s, Hook::JobComplete, "ok"),
      count_of(s, Hook::JobComplete, "eagain"), count_of(s, Hook::JobComplete, "failed"),
      others(s, Hook::JobComplete, {"ok", "eagain", "failed"}), s.in_flight, waiting, s.jobs,
      s.timeouts, s.leftovers_killed, s.retries, s.drains, s.requeues, s.cancels,
      rt(Hook::JobStart), rt(Hook::JobComplete));
}

StatusPublisher::StatusPublisher(const CtldStats &stats, std::string path, std::string script,
                                 std::string journal_path, LogFn log)
    : stats_(stats), path_(std::move(path)), script_(std::move(script)),
      journal_path_(std::move(journal_path)), log_(std::move(log)) {
  last_summary_ = std::chrono::steady_clock::now();
  thread_ = std::thread([this] { run(); });
}

StatusPublisher::~StatusPublisher() {
  {
    std::lock_guard g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  publish();
}

void StatusPublisher::set_metrics_path(const std::string &path) {
  std::lock_guard g(settings_mu_);
  if (path != metrics_path_)
    metrics_changed_ = true;
  metrics_path_ = path;
}

void StatusPublisher::publish() {
  std::lock_guard g(write_mu_);
  std::string metrics_path;
  {
    std::lock_guard s(settings_mu_);
    metrics_path = metrics_path_;
    if (metrics_changed_)
      metrics_failing_ = false;
    metrics_changed_ = false;
  }
  if (silenced_ || (path_.empty() && metrics_path.empty()))
    return;
  const std::uint64_t v = stats_.version();
  std::int64_t journal_bytes = 0;
  struct stat st{};
  if (!journal_path_.empty() && ::stat(journal_path_.c_str(), &st) == 0)
    journal_bytes = st.st_size;
  const auto written = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  const json j = status_json(stats_.snapshot(), written, script_, journal_bytes, interval_.load());
  // World-readable: `switch-lua status` runs as any user.  Only a reader's
  // view matters, so a folder that could not be synced counts as written.
  if (!path_.empty()) {
    const auto w = write_file_atomically(path_, j.dump(2) + "\n", {.mode = 0644, .durable = false});
    const bool ok = w || w.error().replaced;
    if (!ok && !failing_)
      log_(LogLevel::Error, log_line({},
                                     "status file: {}; switch-lua status cannot show the counters "
                                     "until it can be written",
                                     w.error().message));
    else if (ok && failing_)
      log_(LogLevel::Info, log_line({}, "status file {} written again", path_));
    failing_ = !ok;
  }
  if (!metrics_path.empty()) {
    const auto w =
        write_file_atomically(metrics_path, prometheus_text(j), {.mode = 0644, .durable = false});
    const bool ok = w || w.error().replaced;
    if (!ok && !metrics_failing_)
      log_(LogLevel::Error,
           log_line({},
                    "switch_metrics_file: {}; Prometheus sees no new counters until it can "
                    "be written",
                    w.error().message));
    else if (ok && metrics_failing_)
      log_(LogLevel::Info, log_line({}, "switch_metrics_file {} written again", metrics_path));
    metrics_failing_ = !ok;
  }
  written_version_ = v;
  last_write_ = std::chrono::steady_clock::now();
}

void StatusPublisher::run() {
  using namespace std::chrono_literals;
  std::unique_lock lk(mu_);
  while (!stop_) {
    cv_.wait_for(lk, 1s, [&] { return stop_; });
    if (stop_)
      break;
    lk.unlock();
    const auto now = std::chrono::steady_clock::now();
    if (stats_.version() != written_version_ || now - last_write_ >= 30s)
      publish();
    const std::uint32_t every = interval_.load();
    if (every > 0 && now - last_summary_ >= std::chrono::seconds(every)) {
      last_summary_ = now;
      log_(LogLevel::Info, status_summary(stats_.snapshot()));
    }
    lk.lock();
  }
}

} // namespace switchlua
