// SPDX-License-Identifier: GPL-2.0-or-later
//
// libFuzzer target: the supervisor protocol's frame decoder (what a runner,
// the supervisor and the slurmctld client read from each other).  Any byte
// stream, cut anywhere, must never crash the incremental decoder; a body
// that decodes re-encodes to bytes that decode and re-encode the same (the
// encoding is canonical after one round).
#include "supervisor/protocol.hpp"

#include <cstdint>
#include <cstdlib>

using namespace switchlua;

namespace {

/// Re-encodes a decoded frame and checks the second round is stable.
void check_round_trip(const Frame &f) {
  std::string wire = encode_frame(f);
  if (wire.size() < 4)
    std::abort();
  if (wire.size() - 4 > kMaxFrameBytes)
    return; // encodable, refused by the peer by design
  auto again = decode_body(std::string_view(wire).substr(4));
  if (!again)
    std::abort(); // our own encoding must decode
  if (encode_frame(*again) != wire)
    std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  // One body, as decode_body sees it.
  if (auto f = decode_body(bytes))
    check_round_trip(*f);
  // A stream, fed in pieces whose size the first byte chooses.
  if (size == 0)
    return 0;
  std::size_t piece = 1 + data[0] % 17;
  FrameDecoder dec;
  for (std::size_t at = 1; at < size; at += piece) {
    dec.feed(bytes.substr(at, piece));
    for (;;) {
      auto next = dec.next();
      if (!next)
        return 0; // a bad stream: the decoder says so and is dropped
      if (!*next)
        break;
      check_round_trip(**next);
    }
  }
  return 0;
}
