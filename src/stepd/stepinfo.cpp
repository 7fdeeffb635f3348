// SPDX-License-Identifier: GPL-2.0-or-later
#include "stepd/stepinfo.hpp"

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
  msgpack::object_handle oh;
  try {
    std::size_t off = 0;
    msgpack::unpack_limit limit(8, 8, 4096, 1 << 20, 8, 4);
    oh = msgpack::unpack(bytes.data(), bytes.size(), off, nullptr, nullptr, limit);
    if (off != bytes.size())
      return bad("trailing bytes after the record");
  } catch (const msgpack::insufficient_bytes &) {
    return bad(fmt::format("truncated record ({} bytes)", bytes.size()));
  } catch (const std::exception &e) {
    return bad(fmt::format("corrupt record: {}", e.what()));
  }
  const msgpack::object &o = oh.get();
  if (o.type != msgpack::type::ARRAY || o.via.array.size != 4)
    return bad("not a stepinfo record");
  const msgpack::object *a = o.via.array.ptr;
  if (a[0].type != msgpack::type::STR ||
      std::string_view(a[0].via.str.ptr, a[0].via.str.size) != kMagic)
    return bad("not a stepinfo record (bad magic)");
  if (a[1].type != msgpack::type::POSITIVE_INTEGER || a[1].via.u64 == 0)
    return bad("bad version field");
  if (a[1].via.u64 > kStepinfoVersion)
    return bad(fmt::format("record version {} is newer than this plugin's {}", a[1].via.u64,
                           kStepinfoVersion));
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
