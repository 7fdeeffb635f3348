// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: ctld/metrics.hpp
//
// The controller's counters (ctld/stats.hpp) in the Prometheus text
// exposition format (version 0.0.4), for `switch-lua status --format
// prometheus` and for the textfile that slurmctld rewrites next to the
// status file when SlurmctldParameters=switch_metrics_file=PATH is set
// (node_exporter's textfile collector reads *.prom files of its folder):
//
//   status_json() ──▶ <StateSaveLocation>/switch_lua.status ──▶ switch-lua status --format
//   prometheus
//        │                                                          │
//        └──────────▶ prometheus_text() ◀───────────────────────────┘
//                          └─▶ switch_metrics_file (StatusPublisher, common/safe_file.hpp)
//
// Both go through the one JSON document, so the file, the command and the
// table of `switch-lua status` show the same numbers.  Every metric is a row
// of kMetrics (metrics.cpp): its name, type and help text come from there and
// nowhere else (switch-lua(1) STATUS lists them; a test checks that list).
// Names follow Prometheus' conventions: the prefix switchlua_, counters end
// in _total, durations are in seconds (_seconds), sizes in bytes (_bytes),
// timestamps are Unix seconds (_timestamp_seconds).  Counters start from zero
// when slurmctld loads switch/lua (Prometheus' rate() handles the reset).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace switchlua {

/// One metric family as it is exposed: name, TYPE ("counter", "gauge",
/// "histogram") and HELP text.
struct MetricFamily {
  std::string_view name;
  std::string_view type;
  std::string_view help;
};

/// Every family prometheus_text() writes, in its order.
std::vector<MetricFamily> metric_families();

/// The Prometheus text of a status document (status_json(), or the status
/// file as read): one "# HELP" and one "# TYPE" line per family, then its
/// samples; labels hook= and outcome= on the calls, hook= on the round-trip
/// histogram (buckets in seconds, cumulative, up to le="+Inf", then _sum and
/// _count), lane= on the lanes.  A key missing from `status` (an older file)
/// gives 0.  Ends with a newline.
std::string prometheus_text(const nlohmann::json &status);

} // namespace switchlua
