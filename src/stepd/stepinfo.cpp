// SPDX-License-Identifier: GPL-2.0-or-later
#include "stepd/stepinfo.hpp"

#include "common/msgpack_write.hpp"
#include "common/record.hpp"

#include <cstdint>
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
  pk.pack_array(kStepinfoVersion == 1 ? 4 : 5);
  pack_str(pk, kMagic);
  pk.pack(kStepinfoVersion);
  pack_bin(pk, s.jobinfo);
  if (s.sluid)
    pack_str(pk, *s.sluid);
  else
    pk.pack_nil();
  if (kStepinfoVersion == 1) // an older node's build: no provenance yet
    return std::string(buf.data(), buf.size());
  pk.pack_map(2 + (s.attempt ? 1 : 0) + (s.restart_count ? 1 : 0) + (s.network ? 1 : 0) +
              (s.num_tasks ? 1 : 0) + (s.cluster_name ? 1 : 0));
  pack_str(pk, "script");
  pack_str(pk, s.script_hash);
  pack_str(pk, "mismatch");
  pack_str(pk, s.mismatch_fails ? "fail" : "warn");
  if (s.attempt) { // an older node ignores the key (the map's rule)
    pack_str(pk, "attempt");
    pk.pack_int64(s.attempt);
  }
  if (s.restart_count) {
    pack_str(pk, "restart_count");
    pk.pack(*s.restart_count);
  }
  if (s.network) {
    pack_str(pk, "network");
    pack_str(pk, *s.network);
  }
  if (s.num_tasks) {
    pack_str(pk, "num_tasks");
    pk.pack(*s.num_tasks);
  }
  if (s.cluster_name) {
    pack_str(pk, "cluster_name");
    pack_str(pk, *s.cluster_name);
  }
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
    // Fields of later versions are ignored; both of these are optional.
    MapReader r(a[4], "switch/lua stepinfo: provenance");
    if (auto script = r.opt_str("script"))
      s.script_hash = std::move(*script);
    const std::optional<std::string> mismatch = r.opt_str("mismatch");
    if (r.error)
      return fail(*r.error);
    if (mismatch && *mismatch != "fail" && *mismatch != "warn")
      return bad(fmt::format("provenance field 'mismatch' is '{}', not warn or fail", *mismatch));
    if (mismatch)
      s.mismatch_fails = *mismatch == "fail";
    if (r.get("attempt", false))
      s.attempt = r.i64("attempt");
    s.network = r.opt_str("network");
    s.cluster_name = r.opt_str("cluster_name");
    if (r.get("restart_count", false)) {
      const std::uint64_t c = r.u64("restart_count");
      if (!r.error && c > UINT32_MAX)
        return bad(fmt::format("field 'restart_count' is {}, more than 32 bits", c));
      s.restart_count = static_cast<std::uint32_t>(c);
    }
    if (r.get("num_tasks", false)) {
      const std::uint64_t n = r.u64("num_tasks");
      if (!r.error && n > UINT32_MAX)
        return bad(fmt::format("field 'num_tasks' is {}, more than 32 bits", n));
      s.num_tasks = static_cast<std::uint32_t>(n);
    }
    if (r.error)
      return fail(*r.error);
  }
  return s;
}

} // namespace switchlua
