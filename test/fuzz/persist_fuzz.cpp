// SPDX-License-Identifier: GPL-2.0-or-later
//
// libFuzzer target: the job state and stepinfo decoders must never crash,
// and whatever decodes must re-encode to a record that decodes the same.
#include "ctld/persist.hpp"
#include "stepd/stepinfo.hpp"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  auto d = switchlua::decode_job_state(bytes);
  if (d && d->has_value()) {
    auto again = switchlua::decode_job_state(switchlua::encode_job_state(&**d));
    if (!again || !again->has_value() || !(**again == **d))
      std::abort();
  }
  auto s = switchlua::decode_stepinfo(bytes);
  if (s) {
    auto again = switchlua::decode_stepinfo(switchlua::encode_stepinfo(*s));
    if (!again || !(*again == *s))
      std::abort();
  }
  return 0;
}
