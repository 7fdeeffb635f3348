// SPDX-License-Identifier: GPL-2.0-or-later
#include "stepd/stepinfo.hpp"

#include "common/record.hpp"

#include <fmt/format.h>
#include <msgpack.hpp>

namespace switchlua {
namespace {
constexpr std::string_view kMagic = "swlua-step";
Unexpected<Error> bad(std::string what) {
  return fail("switch/lua stepinfo: " + std::move(what));
}
} // namespace

std::string encode_stepinfo(const Stepinfo &s) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_array(5);
  pk.pack(kMagic);
  pk.pack(kStepinfoVersion);
  pk.pack_bin(static_cast<std::uint32_t>(s.jobinfo.size()));
  pk.pack_bin_body(s.jobinfo.data(), static_cast<std::uint32_t>(s.jobinfo.size()));
  if (s.sluid)
    pk.pack(*s.sluid);
  else
    pk.pack_nil();
  pk.pack_map(2);
  pk.pack(std::string_view("script"));
  pk.pack(s.script_hash);
  pk.pack(std::string_view("mismatch"));
  pk.pack(std::string_view(s.mismatch_fails ? "fail" : "warn"));
  return std::string(buf.data(), buf.size());
}

Expected<Stepinfo> decode_stepinfo(std::string_view bytes) {
  auto rec = unpack_record(bytes, {.what = "switch/lua stepinfo",
                                   .magic = kMagic,
                                   .max_version = kStepinfoVersion,
                                   .fields = 5,
                                   .limit = msgpack::unpack_limit(8, 8, 4096, 1 << 20, 8, 4),
                                   .min_fields = 4});
  if (!rec)
    return Unexpected<Error>{rec.error()};
  const msgpack::object *a = rec->fields;
  const std::uint32_t n = rec->handle.get().via.array.size;
  if (n != (rec->version == 1 ? 4u : 5u))
    return bad(fmt::format("a version {} record has {} fields", rec->version, n));
  if (a[2].type != msgpack::type::BIN)
    return bad("jobinfo field is not binary");
  Stepinfo s;
  s.jobinfo.assign(a[2].via.bin.ptr, a[2].via.bin.size);
  if (a[3].type == msgpack::type::STR)
    s.sluid = std::string(a[3].via.str.ptr, a[3].via.str.size);
  else if (a[3].type != msgpack::type::NIL)
    return bad("sluid field is neither text nor nil");
  if (n == 5) {
    if (a[4].type != msgpack::type::MAP)
      return bad("provenance field is not a map");
    const msgpack::object_map &m = a[4].via.map;
    for (std::uint32_t i = 0; i < m.size; ++i) {
      const msgpack::object &k = m.ptr[i].key, &v = m.ptr[i].val;
      if (k.type != msgpack::type::STR)
        continue;
      const std::string_view key(k.via.str.ptr, k.via.str.size);
      if (key != "script" && key != "mismatch")
        continue; // a later addition
      if (v.type != msgpack::type::STR)
        return bad(fmt::format("provenance field '{}' is not text", key));
      const std::string_view val(v.via.str.ptr, v.via.str.size);
      if (key == "script")
        s.script_hash = std::string(val);
      else if (val == "fail" || val == "warn")
        s.mismatch_fails = val == "fail";
      else
        return bad(fmt::format("provenance field 'mismatch' is '{}', not warn or fail", val));
    }
  }
  return s;
}

} // namespace switchlua
