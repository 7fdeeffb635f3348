// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: common/msgpack_write.hpp
//
// The one way the project writes msgpack strings and byte strings: the
// supervisor protocol's frames, the persisted records (job state, journal,
// stepinfo), a JobArgs map and the Lua codec all pack text as msgpack str
// and opaque bytes (jobinfo, scripts, nested records) as msgpack bin
// through these, so the length header and the body always agree.
//
//   msgpack::sbuffer buf;
//   msgpack::packer<msgpack::sbuffer> pk(buf);
//   pack_str(pk, "state");           // str 5 "state"
//   pack_opt_bin(pk, std::nullopt);  // nil
#pragma once

#include <cstdint>
#include <msgpack.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace switchlua {

/// A msgpack stream that appends to a std::string: the packed bytes are
/// the result, with no copy out of a msgpack::sbuffer, and a caller that
/// knows about how long they will be reserves it first (a 10,000-node job
/// table is ~100 KiB; an sbuffer grows to it by doubling from 8 KiB).
///
///   StringSink out;
///   out.bytes.reserve(estimate);
///   msgpack::packer<StringSink> pk(out);
///   ...; return std::move(out.bytes);
struct StringSink {
  std::string bytes;
  void write(const char *p, std::size_t n) { bytes.append(p, n); }
};

/// Packs `s` as one msgpack str (header and body).  `s.size()` must fit in
/// 32 bits: every caller's input is bounded far below 4 GiB.
template <typename Stream> void pack_str(msgpack::packer<Stream> &pk, std::string_view s) {
  const auto n = static_cast<std::uint32_t>(s.size());
  pk.pack_str(n);
  pk.pack_str_body(s.data(), n);
}

/// Packs `b` as one msgpack bin (header and body); the same size bound as
/// pack_str().
template <typename Stream> void pack_bin(msgpack::packer<Stream> &pk, std::string_view b) {
  const auto n = static_cast<std::uint32_t>(b.size());
  pk.pack_bin(n);
  pk.pack_bin_body(b.data(), n);
}

/// Packs `b` as a msgpack bin, or nil when it is empty (std::nullopt).
template <typename Stream>
void pack_opt_bin(msgpack::packer<Stream> &pk, const std::optional<std::string> &b) {
  if (b)
    pack_bin(pk, *b);
  else
    pk.pack_nil();
}

} // namespace switchlua
