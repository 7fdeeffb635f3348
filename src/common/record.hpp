// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: common/record.hpp
//
// The envelope shared by the project's persisted msgpack records (the job
// state of ctld/persist.hpp, the stepinfo of stepd/stepinfo.hpp):
//
//   [ <magic: str>, <version: uint >= 1>, <field>, ... ]
//
// `unpack_record()` checks the envelope strictly and hands back the
// fields; each record decodes its own fields.
#pragma once

#include "common/expected.hpp"
#include "common/msgpack_read.hpp"

#include <cstdint>
#include <fmt/format.h>
#include <msgpack.hpp>
#include <string>
#include <string_view>

namespace switchlua {

/// What a record's envelope must be.
struct RecordSpec {
  std::string_view what;       ///< error prefix: "switch/lua job state"
  std::string_view magic;      ///< first element: "swlua"
  std::uint32_t max_version;   ///< newest version this build reads
  std::uint32_t fields;        ///< array length, magic and version included
  msgpack::unpack_limit limit; ///< msgpack limits (depth, sizes)
  /// 0: the array has exactly `fields`; else from min_fields to `fields`
  /// (older versions had fewer; the record checks which version has how many).
  std::uint32_t min_fields = 0;
};

/// An unpacked record: keep `handle` alive while using `fields`.
struct Record {
  msgpack::object_handle handle;
  const msgpack::object *fields = nullptr; ///< fields[0..spec.fields)
  std::uint64_t version = 0;
};

/// Unpacks and checks the envelope.  Errors, each prefixed "<what>: ":
/// those of unpack_one() ("empty input", "truncated record (N bytes)",
/// "malformed record (...)", "N trailing bytes after the record"), "not a
/// switch/lua record", "... (bad magic)", "bad
/// version field", "record version 0 does not exist", "record version N is
/// newer than this plugin's M".
inline Expected<Record> unpack_record(std::string_view bytes, const RecordSpec &spec) {
  auto bad = [&](const std::string &m) { return fail(fmt::format("{}: {}", spec.what, m)); };
  Record r;
  auto oh = unpack_one(bytes, spec.limit, "record");
  if (!oh)
    return bad(oh.error().message);
  r.handle = std::move(*oh);
  const msgpack::object &o = r.handle.get();
  const std::uint32_t least = spec.min_fields ? spec.min_fields : spec.fields;
  if (o.type != msgpack::type::ARRAY || o.via.array.size > spec.fields || o.via.array.size < least)
    return bad("not a switch/lua record");
  r.fields = o.via.array.ptr;
  const msgpack::object &magic = r.fields[0];
  if (magic.type != msgpack::type::STR ||
      std::string_view(magic.via.str.ptr, magic.via.str.size) != spec.magic)
    return bad("not a switch/lua record (bad magic)");
  const msgpack::object &version = r.fields[1];
  if (version.type != msgpack::type::POSITIVE_INTEGER)
    return bad("bad version field");
  if (version.via.u64 == 0)
    return bad("record version 0 does not exist");
  if (version.via.u64 > spec.max_version)
    return bad(fmt::format("record version {} is newer than this plugin's {}", version.via.u64,
                           spec.max_version));
  r.version = version.via.u64;
  return r;
}

} // namespace switchlua
