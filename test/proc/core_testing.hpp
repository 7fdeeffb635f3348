// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: test/proc/core_testing.hpp
//
// What the controller's HA process tests (core_ha, core_fence,
// core_fence_write) share: the options of a controller on a test
// StateSaveLocation, and a wait on a condition.
#pragma once

#include "ctld/core.hpp"
#include "harness.hpp"
#include "temp_dir.hpp"

#include <chrono>
#include <functional>
#include <string>
#include <thread>

namespace switchlua::test {

/// The options of a controller whose StateSaveLocation is `d` and whose
/// hooks are test/fixtures/`script`.lua: one that holds control from its
/// start (`in_control`), or a standby / a reconfigure's new process that
/// only ran the plugin's init.  Retries every 100 ms; waits 300 ms for
/// the journal lock before a fenced takeover.
inline CoreOptions ha_core_options(const TempDir &d, bool in_control, const std::string &script) {
  CoreOptions o;
  o.script = fixture(script);
  o.client = default_options();
  o.journal_path = d.journal();
  o.status_path = d.status();
  o.retry_interval = std::chrono::milliseconds(100);
  o.take_control_at_start = in_control;
  o.lock_wait = std::chrono::milliseconds(300);
  return o;
}

/// Polls `pred` every 10 ms until it holds, for at most `limit`; false if
/// it never does.  A wait on an event with a deadline, not a duration
/// asserted.
inline bool eventually(const std::function<bool()> &pred, std::chrono::milliseconds limit) {
  for (auto waited = std::chrono::milliseconds(0); waited < limit;
       waited += std::chrono::milliseconds(10)) {
    if (pred())
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pred();
}

} // namespace switchlua::test
