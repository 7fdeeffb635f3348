// SPDX-License-Identifier: GPL-2.0-or-later
//
// CtldCore's hook calls (core_impl.hpp): a job_start or job_complete handed
// to the supervisor client with the job's table and jobinfo, its "started"
// line when its process gets it, and the outcome line with the script's
// provenance when it ends; the outcome itself goes to the worker's queue.
#include "ctld/core_impl.hpp"

#include "common/log_stamp.hpp"
#include "lua/runtime.hpp"

#include <fmt/format.h>

namespace switchlua {

using namespace core_detail;

namespace {

/// Whether a call's outcome is a failure for its hook (switch.lua contract):
/// anything but a return; job_start: rc ~= SUCCESS or a jobinfo that cannot
/// be saved; job_complete: rc < 0.
bool outcome_is_failure(Hook h, const Outcome &o) {
  if (o.kind != OutcomeKind::Returned)
    return true;
  if (h == Hook::JobStart)
    return o.ret.rc != kSuccess || !o.ret.jobinfo_error.empty();
  return o.ret.rc < 0;
}

} // namespace

void CtldCore::Impl::rebuild_pools(bool taking) {
  const std::vector<std::string> dropped = pools.rebuild(cfg.pools, journal.get(), taking);
  for (const std::string &l : dropped)
    port.log(LogLevel::Info, log_line({}, l));
  if (!dropped.empty())
    wake_syncer(); // its compaction rewrites the file without them
}

void CtldCore::Impl::forget_orphan(std::int64_t attempt, const JobArgs &job, PoolsFate fate) {
  pools.end(attempt, job.job_id, job.submit_time, fate,
            std::chrono::duration_cast<std::chrono::seconds>(
                std::chrono::system_clock::now().time_since_epoch())
                .count());
  std::vector<JournalRecord> recs = std::exchange(pools.records, {});
  recs.push_back(journal_record(JournalKind::Forgotten, job));
  journal_append(recs);
}

std::string CtldCore::Impl::script_ref(const std::string &hash) const {
  if (hash.empty())
    return fmt::format("script {}", opts.script);
  return fmt::format("script {} content {}", opts.script, hash);
}

void CtldCore::Impl::submit(const JobSwitchState &s, Hook h, std::optional<MsgpackBytes> jobinfo,
                            EventKind result_kind, std::chrono::milliseconds waited) {
  if (!fence_ok()) { // issue 40: no hook runs once another slurmctld took control
    port.log(LogLevel::Verbose,
             log_line({.job_id = s.job.job_id, .hook = hook_name(h)},
                      "not started: this slurmctld does not hold control (any more)"));
    return;
  }
  CallRequest req{.script = opts.script,
                  .hook = h,
                  .job = s.job,
                  .jobinfo = std::move(jobinfo),
                  .timeout = cfg.switch_timeout,
                  .kill_grace = cfg.switch_kill_grace};
  const std::uint64_t seg = fence_request(req);
  std::uint32_t job_id = s.job.job_id;
  std::uint64_t gen = s.generation;
  const std::string late =
      result_kind == EventKind::LateTeardownResult ? " for a late setup result" : "";
  const auto timeout = cfg.switch_timeout.count();
  // "started" when the call's process gets the request, not when queued.
  auto on_started = [this, job_id, h, late, timeout, waited](CallId cid,
                                                             std::chrono::milliseconds queued) {
    queued += waited;
    {
      std::lock_guard g(mu); // after call_submitted()
      stats.call_started(cid, queued);
    }
    port.log(LogLevel::Info, log_line({.job_id = job_id, .hook = hook_name(h)},
                                      "started{} (queued {} ms, switch_timeout={} s)", late,
                                      queued.count(), timeout));
  };
  auto id = client.submit(
      std::move(req),
      [this, job_id, gen, result_kind, h, waited, seg](CallId cid, const Outcome &out) {
        Outcome o = out;
        o.queued += waited;
        call_ended(cid, {job_id, gen, result_kind, std::move(o), 0, seg}, h);
      },
      on_started);
  if (!id) {
    results_call_done(seg);
    Outcome o{.kind = OutcomeKind::SpawnFailed, .message = id.error().message};
    stats.call_refused(h, o);
    enqueue({job_id, gen, result_kind, o});
    return;
  }
  calls[*id] = {job_id, h};
  stats.call_submitted(*id, h, lane_of(h, s.job.batch));
}

void CtldCore::Impl::call_ended(CallId cid, Queued q, Hook h) {
  const Outcome &o = q.outcome;
  bool stopping_now;
  {
    std::lock_guard g(mu);
    calls.erase(cid);
    stats.call_done(cid, o);
    stopping_now = frozen;
    // A job_start as quick as switch_interactive_wait again: the wait
    // that ran out had another cause (the supervisor's first start).
    if (h == Hook::JobStart && o.kind == OutcomeKind::Returned &&
        o.queued + o.elapsed < std::chrono::milliseconds(cfg.interactive_wait_ms))
      inline_skip = 0;
  }
  if (stopping_now && o.kind == OutcomeKind::Abandoned)
    port.log(LogLevel::Verbose,
             log_line({.job_id = q.job_id, .hook = hook_name(h)},
                      "stopped with the supervisor: slurmctld is stopping or reconfiguring; the "
                      "next slurmctld recovers the call"));
  else if (h != Hook::JobComplete || o.kind != OutcomeKind::Returned) // the rule says it
    log_outcome(q.job_id, h, o);
  const std::uint64_t seg = q.results_seg;
  enqueue(std::move(q));
  // Only now: until it is queued, its results file segment must stay.
  std::lock_guard g(mu);
  results_call_done(seg);
}

std::uint64_t CtldCore::Impl::fence_request(CallRequest &req) {
  if (!fence)
    return 0;
  req.job.epoch = static_cast<std::uint32_t>(fence->epoch()); // job.epoch (issue 40)
  // The supervisor keeps starting queued calls while this slurmctld is
  // stopped: it checks the epoch file before each (issue 40) ...
  req.epoch = fence->epoch();
  req.epoch_file = fence->epoch_path();
  if (req.hook != Hook::JobStart && req.hook != Hook::JobComplete)
    return 0;
  // ... and records the result of each call that ends meanwhile, which the
  // next controller adopts should this one be killed before reading it.
  req.results_file = results_file_path(opts.journal_path, fence->epoch(), results_seg);
  ++results_calls[results_seg];
  return results_seg;
}

void CtldCore::Impl::results_call_done(std::uint64_t seg) {
  if (seg == 0)
    return;
  auto it = results_calls.find(seg);
  if (it != results_calls.end() && it->second > 0)
    --it->second;
}

void CtldCore::Impl::log_outcome(std::uint32_t job_id, Hook h, const Outcome &o) {
  // A runner that could not be started: its rule's line says so, rate-limited
  // (R_*_HOST_FAULT, issue 20); this one is for debugging only.
  const LogLevel level = o.kind == OutcomeKind::SpawnFailed ? LogLevel::Debug
                         : outcome_is_failure(h, o)         ? LogLevel::Error
                                                            : LogLevel::Info;
  port.log(level,
           log_line({.job_id = job_id, .hook = hook_name(h)}, "{} (queued {} ms, ran {} ms; {})",
                    describe(o), o.queued.count(), o.elapsed.count(), script_ref(o.script_hash)));
  if (o.kind != OutcomeKind::LuaError && o.kind != OutcomeKind::LoadFailed)
    return;
  std::string_view rest(o.message);
  const auto nl = rest.find('\n');
  if (nl == std::string_view::npos)
    return;
  rest.remove_prefix(nl + 1);
  while (!rest.empty()) {
    const auto end = rest.find('\n');
    std::string_view line = rest.substr(0, end);
    while (!line.empty() && line.front() == '\t') // luaL_traceback indents its frames
      line.remove_prefix(1);
    if (!line.empty())
      port.log(level, log_line({.job_id = job_id, .hook = hook_name(h)}, "traceback: {}", line));
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
  }
}

void CtldCore::Impl::start_setup(const JobSwitchState &s, const std::string &refuse,
                                 std::chrono::milliseconds waited) {
  const std::string short_of = refuse.empty() ? pools.refusal(s.job.attempt) : std::string();
  if (refuse.empty() && short_of.empty()) {
    submit(s, Hook::JobStart, std::nullopt, EventKind::SetupResult, waited);
    return;
  }
  if (!short_of.empty()) // issue 38: a failed setup, not a host fault to retry
    port.log(LogLevel::Error,
             log_line({.job_id = s.job.job_id, .hook = "job_start"}, "not started: {}", short_of));
  Outcome o{.kind = OutcomeKind::SpawnFailed,
            .message = short_of.empty() ? refuse : short_of,
            .refused = !short_of.empty()};
  stats.call_refused(Hook::JobStart, o);
  enqueue({s.job.job_id, s.generation, EventKind::SetupResult, o});
}

} // namespace switchlua
