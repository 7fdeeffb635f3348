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
  pk.pack_array(4);
  pk.pack(kMagic);
  pk.pack(kStepinfoVersion);
  pk.pack_bin(static_cast<std::uint32_t>(s.jobinfo.size()));
  pk.pack_bin_body(s.jobinfo.data(), static_cast<std::uint32_t>(s.jobinfo.size()));
  if (s.sluid)
    pk.pack(*s.sluid);
  else
    pk.pack_nil();
  return std::string(buf.data(), buf.size());
}

Expected<Stepinfo> decode_stepinfo(std::string_view bytes) {
  auto rec = unpack_record(bytes, {.what = "switch/lua stepinfo",
                                   .magic = kMagic,
                                   .max_version = kStepinfoVersion,
                                   .fields = 4,
                                   .limit = msgpack::unpack_limit(8, 8, 4096, 1 << 20, 8, 4)});
  if (!rec)
    return Unexpected<Error>{rec.error()};
  const msgpack::object *a = rec->fields;
  if (a[2].type != msgpack::type::BIN)
    return bad("jobinfo field is not binary");
  Stepinfo s;
  s.jobinfo.assign(a[2].via.bin.ptr, a[2].via.bin.size);
  if (a[3].type == msgpack::type::STR)
    s.sluid = std::string(a[3].via.str.ptr, a[3].via.str.size);
  else if (a[3].type != msgpack::type::NIL)
    return bad("sluid field is neither text nor nil");
  return s;
}

} // namespace switchlua
