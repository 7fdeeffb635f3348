// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: common/crc32.hpp
//
// CRC-32 (IEEE 802.3, reflected polynomial 0xedb88320, as zlib's crc32) of
// a byte string: the checksum of each framed record of the journal
// (ctld/journal.hpp) and of the supervisor's results file
// (supervisor/results_log.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace switchlua {

/// CRC-32 of `bytes`, e.g. crc32_of("123456789") == 0xcbf43926.
inline std::uint32_t crc32_of(std::string_view bytes) {
  static const auto table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k)
        c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  std::uint32_t c = 0xffffffffu;
  for (unsigned char b : bytes)
    c = table[(c ^ b) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

} // namespace switchlua
