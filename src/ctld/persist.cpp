// SPDX-License-Identifier: GPL-2.0-or-later
#include "ctld/persist.hpp"

#include "common/msgpack_write.hpp"
#include "common/record.hpp"

#include <fmt/format.h>
#include <msgpack.hpp>

namespace switchlua {
namespace {

constexpr std::string_view kMagic = "swlua";

std::optional<JobState> state_from_name(std::string_view name) {
  for (int i = 0; i <= static_cast<int>(JobState::SetupWaitOrphan); ++i) {
    auto s = static_cast<JobState>(i);
    if (job_state_name(s) == name)
      return s;
  }
  return std::nullopt;
}

Error bad(std::string what) {
  return Error{"switch/lua job state: " + std::move(what)};
}

Expected<JobSwitchState> decode_v1(const msgpack::object &payload) {
  MapReader r(payload, "switch/lua job state");
  JobSwitchState s;
  const std::string name = r.str("state");
  const std::string job = r.bin("job");
  s.jobinfo = r.opt_bin("jobinfo");
  s.requeue_allowed = r.flag("requeue");
  s.block_job_complete = r.flag("bjc");
  s.nodes_held = r.flag("held");
  const std::uint64_t retries = r.u64("retries");
  s.generation = r.u64("gen");
  // Optional (records written before it have none): the job_start script's
  // content hash.
  s.script_hash = r.opt_str("script").value_or("");
  if (r.error)
    return fail(*r.error);
  auto state = state_from_name(name);
  if (!state)
    return Unexpected<Error>{bad(fmt::format("field 'state': unknown state '{}'", name))};
  s.state = *state;
  auto args = JobArgs::from_msgpack(job);
  if (!args)
    return Unexpected<Error>{bad("field 'job': " + args.error().message)};
  s.job = std::move(*args); // 10,000 node names are not copied under Slurm's locks
  if (retries > kMaxSwitchRetries)
    return Unexpected<Error>{bad(fmt::format("field 'retries': {} is out of range", retries))};
  s.retries = static_cast<std::uint32_t>(retries);
  s.recovered = true;
  return s;
}

} // namespace

std::string encode_job_state(const JobSwitchState *s) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_array(3);
  pack_str(pk, kMagic);
  pk.pack(kPersistVersion);
  if (!s) {
    pk.pack_nil();
    return std::string(buf.data(), buf.size());
  }
  pk.pack_map(s->script_hash.empty() ? 8 : 9);
  pack_str(pk, "state");
  pack_str(pk, job_state_name(s->state));
  pack_str(pk, "job");
  pack_bin(pk, s->job.to_msgpack());
  pack_str(pk, "jobinfo");
  pack_opt_bin(pk, s->jobinfo);
  pack_str(pk, "requeue");
  pk.pack(s->requeue_allowed);
  pack_str(pk, "bjc");
  pk.pack(s->block_job_complete);
  pack_str(pk, "held");
  pk.pack(s->nodes_held);
  pack_str(pk, "retries");
  pk.pack(s->retries);
  pack_str(pk, "gen");
  pk.pack(s->generation);
  if (!s->script_hash.empty()) {
    pack_str(pk, "script");
    pack_str(pk, s->script_hash);
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
  auto s = decode_v1(a[2]);
  if (!s)
    return Unexpected<Error>{s.error()};
  return Result{std::move(*s)};
}

} // namespace switchlua
