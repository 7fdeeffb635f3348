// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: common/crc32.hpp
//
// The framing of the journal's records (ctld/journal.hpp) and of the
// supervisor's results files (supervisor/results_log.hpp): a u32
// little-endian length, the u32 little-endian CRC-32 (IEEE 802.3, reflected
// polynomial 0xedb88320, as zlib's crc32) of the body, the body.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
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

/// Appends `v` to `out` as 4 little-endian bytes.
inline void put_u32_le(std::string &out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

/// The little-endian u32 at `off` in `b` (the caller checks off + 4 <= size).
inline std::uint32_t get_u32_le(std::string_view b, std::size_t off) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= static_cast<std::uint32_t>(static_cast<unsigned char>(b[off + i])) << (8 * i);
  return v;
}

} // namespace switchlua
