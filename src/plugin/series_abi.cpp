// SPDX-License-Identifier: GPL-2.0-or-later
//
// The Slurm series the glue was compiled for, as the core's table of
// per-series facts sees it (common/slurm_series.hpp): set once by init()
// in every process (slc_set_slurm_series()), read by the controller's and
// the node's halves of the C ABI (cabi::slurm_special_steps()).
#include "plugin/switch_lua_core.h"

#include "common/slurm_series.hpp"
#include "plugin/abi_guard.hpp"

#include <atomic>

namespace switchlua {
namespace {
/// slc_set_slurm_special_steps() / slc_set_slurm_series(); set at init().
std::atomic<bool> g_slurm_special_steps{false};
} // namespace

bool cabi::slurm_special_steps() noexcept {
  return g_slurm_special_steps.load(std::memory_order_relaxed);
}

} // namespace switchlua

using namespace switchlua;

extern "C" {

void slc_set_slurm_special_steps(bool supported) {
  g_slurm_special_steps = supported;
}

int slc_set_slurm_series(unsigned series) {
  const SlurmSeries *s = find_slurm_series(series);
  g_slurm_special_steps = s && s->special_steps;
  return s ? 0 : -1;
}

} // extern "C"
