// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: cli/status.hpp
//
// `switch-lua status [--json | --format table|json|prometheus] [--file PATH]`: prints the
// controller's counters from the status file slurmctld's switch/lua rewrites (ctld/stats.hpp), in
// an sdiag-like layout, with the file's age.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace switchlua {

/// StateSaveLocation's value in a slurm.conf text (key case-insensitive,
/// '#' comments ignored, the last one wins as Slurm reads it); nullopt if
/// absent.  Include lines are not followed.
std::optional<std::string> state_save_location(std::string_view slurm_conf_text);
/// The value of `name` (e.g. "SlurmUser") in a slurm.conf text, read as
/// state_save_location() reads StateSaveLocation.
std::optional<std::string> slurm_conf_value(std::string_view slurm_conf_text,
                                            std::string_view name);

/// The status file: `file` if given, else
/// <StateSaveLocation of $SLURM_CONF or /etc/slurm/slurm.conf>/switch_lua.status.
/// Errors (printed, nullopt) name the slurm.conf read.
std::optional<std::string> status_file_path(const std::string &file);

/// How `switch-lua status` prints: the sdiag-like table, the file's JSON
/// (with `file` and `age_seconds`), or the Prometheus text of its numbers
/// (ctld/metrics.hpp; the same text as switch_metrics_file).
enum class StatusFormat { Table, Json, Prometheus };

/// Prints the file at `path`; returns the exit status: 0, 1 when the file
/// cannot be read or is not a status file of a known format.
int run_status(const std::string &path, StatusFormat format);

} // namespace switchlua
