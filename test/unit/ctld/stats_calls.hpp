// SPDX-License-Identifier: GPL-2.0-or-later
//
// What the counters' tests (stats_test.cpp, metrics_test.cpp) feed
// CtldStats: outcomes of a given hook and rc, and calls with given queue and
// round-trip times (never measured: every call starts at kT0).
#pragma once

#include "ctld/stats.hpp"

#include <chrono>
#include <cstdint>
#include <string>

namespace switchlua::test {

/// An outcome: the hook returned RC, with a jobinfo when JOBINFO.
inline Outcome returned(Hook h, std::int64_t rc, bool jobinfo) {
  Outcome o;
  o.kind = OutcomeKind::Returned;
  o.ret.hook = h;
  o.ret.rc = rc;
  if (jobinfo)
    o.ret.jobinfo = std::string("\x80");
  return o;
}

/// An outcome of kind K with nothing else set.
inline Outcome of_kind(OutcomeKind k) {
  Outcome o;
  o.kind = k;
  return o;
}

/// The time every recorded call is submitted at.
inline const CtldStats::Clock::time_point kT0{};

/// Records whole calls into a CtldStats, with call ids 1, 2, ...
struct CallRecorder {
  CtldStats &st;
  CallId next = 1;
  /// One call of hook H in lane L: submitted at kT0, started after QUEUED,
  /// done with O after ROUND_TRIP.
  void operator()(Hook h, Lane l, std::chrono::milliseconds queued,
                  std::chrono::milliseconds round_trip, const Outcome &o) {
    const CallId c = next++;
    st.call_submitted(c, h, l, kT0);
    st.call_started(c, queued);
    st.call_done(c, o, kT0 + round_trip);
  }
};

} // namespace switchlua::test
