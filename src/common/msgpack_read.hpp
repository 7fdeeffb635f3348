// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: common/msgpack_read.hpp
//
// The one way the project reads msgpack bytes it did not just write: the
// supervisor protocol's frames, the persisted records (job state, journal,
// stepinfo), a JobArgs map and the Lua codec's values all go through
// `unpack_one()`, so each refuses an empty, truncated, malformed or too
// deep input and trailing bytes the same way, with the same words.
// msgpack-cxx throws on malformed input: this is the boundary that turns
// its exceptions into an Error.
#pragma once

#include "common/expected.hpp"

#include <cstddef>
#include <fmt/format.h>
#include <msgpack.hpp>
#include <optional>
#include <string_view>

namespace switchlua {

/// Unpacks exactly one msgpack value filling all of `bytes`, within
/// `limit` (msgpack-cxx's bounds on array, map, string, binary and
/// extension sizes and on depth: they keep a forged length from allocating
/// more than the caller allows).  `noun` names the value in errors.
/// Errors (no prefix; callers add theirs, e.g. "protocol: "):
///   "empty input", "truncated <noun> (N bytes)", "K trailing bytes after
///   the <noun>", "nested deeper than D levels" (when `max_depth` is set
///   and the limit's depth was hit), "malformed <noun> (<msgpack-cxx's
///   words>)".
inline Expected<msgpack::object_handle> unpack_one(std::string_view bytes,
                                                   const msgpack::unpack_limit &limit,
                                                   std::string_view noun,
                                                   std::optional<std::size_t> max_depth = {}) {
  try {
    std::size_t off = 0;
    auto oh = msgpack::unpack(bytes.data(), bytes.size(), off, nullptr, nullptr, limit);
    if (off != bytes.size())
      return fail(fmt::format("{} trailing bytes after the {}", bytes.size() - off, noun));
    return oh;
  } catch (const msgpack::insufficient_bytes &) {
    if (bytes.empty())
      return fail("empty input");
    return fail(fmt::format("truncated {} ({} bytes)", noun, bytes.size()));
  } catch (const msgpack::depth_size_overflow &e) {
    if (max_depth)
      return fail(fmt::format("nested deeper than {} levels", *max_depth));
    return fail(fmt::format("malformed {} ({})", noun, e.what()));
  } catch (const std::exception &e) {
    return fail(fmt::format("malformed {} ({})", noun, e.what()));
  }
}

/// Limits no larger than `n` input bytes can describe (every container
/// element takes at least one byte), and at most `max_depth` levels below
/// the top.  For inputs whose size is the only bound.
inline msgpack::unpack_limit limits_for_size(std::size_t n, std::size_t max_depth) {
  return msgpack::unpack_limit(n, n / 2, n, n, n, max_depth + 1);
}

} // namespace switchlua
