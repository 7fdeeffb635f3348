// SPDX-License-Identifier: GPL-2.0-or-later
//
// The supervisor's lanes (protocol.hpp: Lane): which lane a call waits in
// and how many slots batch setups never take (switch_lua.conf(5),
// switch_max_calls: teardown > interactive > batch).
#include "supervisor/protocol.hpp"

#include <algorithm>

namespace switchlua {

std::string_view lane_name(Lane l) {
  switch (l) {
  case Lane::Teardown:
    return "teardown";
  case Lane::Interactive:
    return "interactive";
  case Lane::Batch:
    return "batch";
  }
  return "?";
}

Lane lane_of(Hook h, bool batch_job) {
  if (h != Hook::JobStart)
    return Lane::Teardown;
  return batch_job ? Lane::Batch : Lane::Interactive;
}

std::uint32_t reserved_slots(std::uint32_t max_calls) {
  if (max_calls <= 1)
    return 0;
  return std::max<std::uint32_t>(1, max_calls / 8);
}

} // namespace switchlua
