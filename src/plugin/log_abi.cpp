// SPDX-License-Identifier: GPL-2.0-or-later
//
// The log stamp for the C glue (switch_lua_core.h: slc_log_subject): the C
// files write their lines through sl_job_*() / sl_step_*()
// (switch_lua_glue.h), which take the subject from here, so that slurmctld's
// and slurmstepd's lines name a job and a step exactly as the C++ core's do
// (common/log_stamp.hpp), "StepId=42.batch" included.
#include "plugin/switch_lua_core.h"

#include "common/log_stamp.hpp"
#include "plugin/abi_guard.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

extern "C" const char *slc_log_subject(char *buf, size_t len, uint32_t job_id, uint32_t step_id,
                                       const char *hook) {
  if (!buf || len == 0)
    return "";
  buf[0] = '\0';
  // The guard's log is a no-op: this is the logger's own helper, and a line
  // without its subject (std::bad_alloc) beats no line.
  return switchlua::cabi::guarded(
      "log subject", "the line goes without its subject", static_cast<const char *>(buf),
      [](const std::string &) {},
      [&] {
        const std::string s = switchlua::log_subject(
            {.job_id = job_id,
             .step_id = step_id == SLC_NO_STEP ? std::nullopt : std::optional<uint32_t>(step_id),
             .hook = hook ? std::string_view(hook) : std::string_view()});
        const size_t n = std::min(s.size(), len - 1);
        std::memcpy(buf, s.data(), n);
        buf[n] = '\0';
        return static_cast<const char *>(buf);
      });
}
