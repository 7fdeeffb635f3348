// SPDX-License-Identifier: GPL-2.0-or-later
//
// CtldCore's admission gate (issue 38; switch.lua(5), POOLS and Fabric
// outages): Slurm 25.11 and later ask switch_p_job_start(job,
// test_only=true) before they allocate a job's nodes, and keep the job
// PENDING when the answer is not SLURM_SUCCESS.  The gate answers from
// memory, under Slurm's locks: a job waits while a pool is short of IDs,
// or while the fabric breaker is open (one job every
// CoreOptions::breaker_probe is let through: its job_start is the probe
// whose success closes the breaker).
#include "common/log_stamp.hpp"
#include "ctld/core_impl.hpp"

#include <fmt/format.h>

namespace switchlua {

bool CtldCore::admit(std::uint32_t job_id) {
  Impl &im = *impl_;
  if (!im.pools.declared.load(std::memory_order_relaxed) &&
      !im.breaker.gate.load(std::memory_order_relaxed))
    return true; // nothing to wait for, and no lock taken
  std::lock_guard g(im.mu);
  if (!im.in_control)
    return true; // WAITING, stale or standby: job_start() decides
  const auto now = std::chrono::steady_clock::now();
  const auto probe = im.opts.breaker_probe;
  std::string why, until, key;
  const auto mono = im.pools.mono();
  im.pools.alloc.cool(mono); // the reuse delays over by now
  if (const auto short_of = im.pools.alloc.shortage(mono)) {
    why = pool_shortage_text(*short_of);
    until = "its pools have IDs free";
    key = short_of->pool;
  } else if (im.breaker.open && now - im.breaker.probe_at < probe) {
    why = im.breaker.why;
    until = "the fabric breaker closes";
  } else if (im.breaker.open) {
    im.breaker.probe_at = now;
    im.port.log(LogLevel::Info,
                log_line({.job_id = job_id, .hook = "job_start"},
                         "runs to probe the fabric while the fabric breaker is open (one job "
                         "every {:g} s; its success closes the breaker)",
                         static_cast<double>(probe.count()) / 1000));
  }
  const bool changed = why.empty() ? im.pools.admitted(job_id) : im.pools.wait(job_id, key, now);
  if (changed)
    im.pools.publish(im.stats); // the waiting counts (status, metrics)
  if (why.empty())
    return true;
  if (changed)
    im.port.log(LogLevel::Info,
                log_line({.job_id = job_id, .hook = "job_start"},
                         "waits: the job stays PENDING (Reason=Resources) until {}: {}", until,
                         why));
  return false;
}

} // namespace switchlua
