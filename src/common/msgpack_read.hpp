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
//
// Once unpacked, a map of string keys (a frame, a job state, the stepinfo's
// provenance) is read field by field with `MapReader`, and a value's type
// is named in errors by `msgpack_type_name()` ("a string", "binary data").
#pragma once

#include "common/expected.hpp"

#include <cstddef>
#include <cstdint>
#include <fmt/format.h>
#include <msgpack.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

/// An integer of either sign within int64_t into `out`; false (out
/// untouched) for any other object.
inline bool int64_of(const msgpack::object &o, std::int64_t &out) {
  if (o.type == msgpack::type::POSITIVE_INTEGER && o.via.u64 <= INT64_MAX)
    out = static_cast<std::int64_t>(o.via.u64);
  else if (o.type == msgpack::type::NEGATIVE_INTEGER)
    out = o.via.i64;
  else
    return false;
  return true;
}

/// Limits no larger than `n` input bytes can describe (every container
/// element takes at least one byte), and at most `max_depth` levels below
/// the top.  For inputs whose size is the only bound.
inline msgpack::unpack_limit limits_for_size(std::size_t n, std::size_t max_depth) {
  return msgpack::unpack_limit(n, n / 2, n, n, n, max_depth + 1);
}

/// The words for a msgpack type in errors: "nil", "a boolean", "an integer"
/// (either sign), "a float", "a string", "binary data", "an array", "a map",
/// "an extension value".
std::string_view msgpack_type_name(msgpack::type::object_type t);

/// msgpack_type_name() of `o`'s type.
inline std::string_view msgpack_type_name(const msgpack::object &o) {
  return msgpack_type_name(o.type);
}

/// Typed access to the string-keyed fields of one msgpack map, for strict
/// decoders.  The first problem is kept in `error`, prefixed "<what>: ";
/// after it the getters go on returning defaults (0, false, ""), so that a
/// decoder reads every field and checks `error` once.  Keys that are not
/// strings and fields nobody asks for are ignored.  The object must outlive
/// the reader (it keeps a pointer into it).
///
/// Errors (after the prefix): "is <type>, expected a map" (the object),
/// "field '<key>' missing", "field '<key>' is <type>, expected <type>",
/// "field '<key>' is out of range" (i64(), i32()), and whatever the decoder
/// passes to set_error().
class MapReader {
public:
  /// `what` prefixes every error, e.g. "protocol: log frame".
  MapReader(const msgpack::object &map, std::string what);

  /// The first problem found, with its prefix; nullopt while there is none.
  std::optional<std::string> error;

  /// The value of field `key`, or nullptr when the map has none (an error
  /// when `required`).
  const msgpack::object *get(std::string_view key, bool required = true);

  /// The field when it is of msgpack type `t` (NEGATIVE_INTEGER accepts
  /// either sign), or nullptr: missing or of another type (an error), or
  /// nil when `nil_ok` (no error).
  const msgpack::object *typed(std::string_view key, msgpack::type::object_type t,
                               bool nil_ok = false);

  /// A required unsigned integer field; 0 on error.
  std::uint64_t u64(std::string_view key);
  /// A required integer field of either sign within int64_t; 0 on error.
  std::int64_t i64(std::string_view key);
  /// A required integer field within int; 0 on error.
  int i32(std::string_view key);
  /// A required boolean field; false on error.
  bool flag(std::string_view key);
  /// A required string field; "" on error.
  std::string str(std::string_view key);
  /// A required binary field; "" on error.
  std::string bin(std::string_view key);
  /// A required field that is binary data or nil; nullopt for nil or on error.
  std::optional<std::string> opt_bin(std::string_view key);
  /// An optional string field: nullopt when the map has none; an error when
  /// it is not a string.
  std::optional<std::string> opt_str(std::string_view key);
  /// The elements of a required array field (empty on error).
  std::vector<const msgpack::object *> array(std::string_view key);

  /// Keeps `what` (prefixed) unless an error is already kept.
  void set_error(std::string_view what);

private:
  std::string what_;
  const msgpack::object_map *map_ = nullptr;
};

} // namespace switchlua
