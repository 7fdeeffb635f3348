// SPDX-License-Identifier: GPL-2.0-or-later
#include "ctld/persist.hpp"

#include "common/record.hpp"

#include <fmt/format.h>
#include <msgpack.hpp>

namespace switchlua {
namespace {

constexpr std::string_view kMagic = "swlua";

std::optional<JobState> state_from_name(std::string_view name) {
  for (int i = 0; i <= static_cast<int>(JobState::SetupUndoingEnded); ++i) {
    auto s = static_cast<JobState>(i);
    if (job_state_name(s) == name)
      return s;
  }
  return std::nullopt;
}

Error bad(std::string what) {
  return Error{"switch/lua job state: " + std::move(what)};
}

/// Reads map field `key` of the expected msgpack type, or an error.
Expected<const msgpack::object *> field(const msgpack::object_map &m, std::string_view key,
                                        msgpack::type::object_type type, bool nil_ok = false) {
  for (std::uint32_t i = 0; i < m.size; ++i) {
    const auto &kv = m.ptr[i];
    if (kv.key.type != msgpack::type::STR)
      continue;
    if (std::string_view(kv.key.via.str.ptr, kv.key.via.str.size) != key)
      continue;
    if (nil_ok && kv.val.type == msgpack::type::NIL)
      return &kv.val;
    if (kv.val.type != type)
      return Unexpected<Error>{bad(fmt::format("field '{}' has the wrong type", key))};
    return &kv.val;
  }
  return Unexpected<Error>{bad(fmt::format("field '{}' is missing", key))};
}

Expected<JobSwitchState> decode_v1(const msgpack::object_map &m) {
  JobSwitchState s;
  auto st = field(m, "state", msgpack::type::STR);
  if (!st)
    return Unexpected<Error>{st.error()};
  std::string_view name((*st)->via.str.ptr, (*st)->via.str.size);
  auto state = state_from_name(name);
  if (!state)
    return Unexpected<Error>{bad(fmt::format("field 'state': unknown state '{}'", name))};
  s.state = *state;
  auto job = field(m, "job", msgpack::type::BIN);
  if (!job)
    return Unexpected<Error>{job.error()};
  auto args = JobArgs::from_msgpack(std::string_view((*job)->via.bin.ptr, (*job)->via.bin.size));
  if (!args)
    return Unexpected<Error>{bad("field 'job': " + args.error().message)};
  s.job = *args;
  auto ji = field(m, "jobinfo", msgpack::type::BIN, true);
  if (!ji)
    return Unexpected<Error>{ji.error()};
  if ((*ji)->type == msgpack::type::BIN)
    s.jobinfo = std::string((*ji)->via.bin.ptr, (*ji)->via.bin.size);
  struct Flag {
    const char *key;
    bool *dst;
  };
  for (Flag f : {Flag{"requeue", &s.requeue_allowed}, Flag{"bjc", &s.block_job_complete},
                 Flag{"held", &s.nodes_held}}) {
    auto v = field(m, f.key, msgpack::type::BOOLEAN);
    if (!v)
      return Unexpected<Error>{v.error()};
    *f.dst = (*v)->via.boolean;
  }
  auto retries = field(m, "retries", msgpack::type::POSITIVE_INTEGER);
  if (!retries)
    return Unexpected<Error>{retries.error()};
  if ((*retries)->via.u64 > kMaxSwitchRetries)
    return Unexpected<Error>{
        bad(fmt::format("field 'retries': {} is out of range", (*retries)->via.u64))};
  s.retries = static_cast<std::uint32_t>((*retries)->via.u64);
  auto gen = field(m, "gen", msgpack::type::POSITIVE_INTEGER);
  if (!gen)
    return Unexpected<Error>{gen.error()};
  s.generation = (*gen)->via.u64;
  // Optional (records written before it have none): the job_start script's
  // content hash.
  if (auto sc = field(m, "script", msgpack::type::STR)) {
    s.script_hash.assign((*sc)->via.str.ptr, (*sc)->via.str.size);
  } else if (sc.error().message.find("is missing") == std::string::npos) {
    return Unexpected<Error>{sc.error()};
  }
  s.recovered = true;
  return s;
}

} // namespace

std::string encode_job_state(const JobSwitchState *s) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_array(3);
  pk.pack(kMagic);
  pk.pack(kPersistVersion);
  if (!s) {
    pk.pack_nil();
    return std::string(buf.data(), buf.size());
  }
  pk.pack_map(s->script_hash.empty() ? 8 : 9);
  pk.pack(std::string_view("state"));
  pk.pack(job_state_name(s->state));
  std::string job = s->job.to_msgpack();
  pk.pack(std::string_view("job"));
  pk.pack_bin(static_cast<std::uint32_t>(job.size()));
  pk.pack_bin_body(job.data(), static_cast<std::uint32_t>(job.size()));
  pk.pack(std::string_view("jobinfo"));
  if (s->jobinfo) {
    pk.pack_bin(static_cast<std::uint32_t>(s->jobinfo->size()));
    pk.pack_bin_body(s->jobinfo->data(), static_cast<std::uint32_t>(s->jobinfo->size()));
  } else {
    pk.pack_nil();
  }
  pk.pack(std::string_view("requeue"));
  pk.pack(s->requeue_allowed);
  pk.pack(std::string_view("bjc"));
  pk.pack(s->block_job_complete);
  pk.pack(std::string_view("held"));
  pk.pack(s->nodes_held);
  pk.pack(std::string_view("retries"));
  pk.pack(s->retries);
  pk.pack(std::string_view("gen"));
  pk.pack(s->generation);
  if (!s->script_hash.empty()) {
    pk.pack(std::string_view("script"));
    pk.pack(s->script_hash);
  }
  return std::string(buf.data(), buf.size());
}

Expected<std::optional<JobSwitchState>> decode_job_state(std::string_view bytes) {
  using Result = std::optional<JobSwitchState>;
  if (bytes.size() > kPersistMaxBytes)
    return Unexpected<Error>{
        bad(fmt::format("record of {} bytes exceeds {}", bytes.size(), kPersistMaxBytes))};
  // A record is 3 levels deep; refuse anything odd.
  auto rec =
      unpack_record(bytes, {.what = "switch/lua job state",
                            .magic = kMagic,
                            .max_version = kPersistVersion,
                            .fields = 3,
                            .limit = msgpack::unpack_limit(64, 64, 4096, kPersistMaxBytes, 16, 8)});
  if (!rec)
    return Unexpected<Error>{rec.error()};
  const msgpack::object *a = rec->fields;
  if (a[2].type == msgpack::type::NIL)
    return Result{};
  if (a[2].type != msgpack::type::MAP)
    return Unexpected<Error>{bad("payload is not a map")};
  auto s = decode_v1(a[2].via.map);
  if (!s)
    return Unexpected<Error>{s.error()};
  return Result{std::move(*s)};
}

} // namespace switchlua
