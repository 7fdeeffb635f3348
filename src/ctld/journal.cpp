// SPDX-License-Identifier: GPL-2.0-or-later
// The journal's record format (framing, CRC, msgpack bodies), the scan that
// reads a file back and the table its records replay into.  The file itself
// (appends, syncs, snapshots, the writer's lock) is journal_file.cpp.
#include "ctld/journal.hpp"

#include "common/msgpack_write.hpp"
#include "common/record.hpp"

#include <algorithm>
#include <array>
#include <fmt/format.h>
#include <msgpack.hpp>

namespace switchlua {
namespace {

constexpr std::string_view kMagic = "swlj";
constexpr std::size_t kFrameHead = 8; // u32 length + u32 crc

Error bad(std::string what) {
  return Error{"switch/lua journal: " + std::move(what)};
}

std::optional<std::string_view> bin_or_nil(const msgpack::object &o, bool &ok) {
  ok = true;
  if (o.type == msgpack::type::NIL)
    return std::nullopt;
  if (o.type != msgpack::type::BIN) {
    ok = false;
    return std::nullopt;
  }
  return std::string_view(o.via.bin.ptr, o.via.bin.size);
}

/// A msgpack integer that fits int64_t, into `out`; false if it is not one.
/// The last slot of a kind-6 record (version 2): bin msgpack
/// [failures, restart_count], into r.failures and r.restart_count.
Expected<void> decode_failure_count(const std::optional<std::string_view> &bytes,
                                    JournalRecord &r) {
  const Error e = bad("a 'setup failure counted' record with a bad count");
  if (!bytes)
    return Unexpected<Error>{bad("a 'setup failure counted' record without its count")};
  auto oh = unpack_one(*bytes, msgpack::unpack_limit(2, 0, 0, 0, 0, 2), "count");
  if (!oh)
    return Unexpected<Error>{e};
  const msgpack::object &c = oh->get();
  if (c.type != msgpack::type::ARRAY || c.via.array.size != 2)
    return Unexpected<Error>{e};
  const msgpack::object *v = c.via.array.ptr;
  for (int i = 0; i < 2; ++i)
    if (v[i].type != msgpack::type::POSITIVE_INTEGER || v[i].via.u64 > UINT32_MAX)
      return Unexpected<Error>{e};
  r.failures = static_cast<std::uint32_t>(v[0].via.u64);
  r.restart_count = static_cast<std::uint32_t>(v[1].via.u64);
  return {};
}

/// The last slot of a kind-8 record (version 3): bin msgpack [since], into
/// r.since.
Expected<void> decode_since(const std::optional<std::string_view> &bytes, JournalRecord &r) {
  const Error e = bad("a 'pools quarantined' record with a bad time");
  if (!bytes)
    return Unexpected<Error>{bad("a 'pools quarantined' record without its time")};
  auto oh = unpack_one(*bytes, msgpack::unpack_limit(1, 0, 0, 0, 0, 2), "since");
  if (!oh)
    return Unexpected<Error>{e};
  const msgpack::object &c = oh->get();
  if (c.type != msgpack::type::ARRAY || c.via.array.size != 1 ||
      !int64_of(c.via.array.ptr[0], r.since))
    return Unexpected<Error>{e};
  return {};
}

} // namespace

std::string_view journal_kind_name(JournalKind k) {
  switch (k) {
  case JournalKind::SetupStarted:
    return "setup started";
  case JournalKind::SetupAccepted:
    return "setup accepted";
  case JournalKind::LaunchReleased:
    return "launch released";
  case JournalKind::TeardownStarted:
    return "teardown started";
  case JournalKind::Forgotten:
    return "forgotten";
  case JournalKind::SetupFailureCounted:
    return "setup failure counted";
  case JournalKind::SetupFailuresCleared:
    return "setup failures cleared";
  case JournalKind::PoolsQuarantined:
    return "pools quarantined";
  case JournalKind::PoolsReleased:
    return "pools released";
  }
  return "unknown";
}

std::string encode_journal_body(const JournalRecord &r) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_array(8);
  const bool v2 =
      r.kind == JournalKind::SetupFailureCounted || r.kind == JournalKind::SetupFailuresCleared;
  const bool v3 = r.kind == JournalKind::PoolsQuarantined || r.kind == JournalKind::PoolsReleased ||
                  (r.job && !r.job->pools.empty());
  pack_str(pk, kMagic);
  pk.pack(static_cast<std::uint32_t>(v3 ? 3 : v2 ? 2 : 1));
  pk.pack(static_cast<std::uint32_t>(r.kind));
  pk.pack_int64(r.attempt);
  pk.pack_uint32(r.job_id);
  pk.pack_int64(r.submit_time);
  pack_opt_bin(pk, r.job ? std::optional<std::string>(r.job->to_msgpack()) : std::nullopt);
  if (r.kind == JournalKind::SetupFailureCounted) {
    msgpack::sbuffer cnt;
    msgpack::packer<msgpack::sbuffer> cp(cnt);
    cp.pack_array(2);
    cp.pack_uint32(r.failures);
    cp.pack_uint32(r.restart_count);
    pack_bin(pk, std::string_view(cnt.data(), cnt.size()));
  } else if (r.kind == JournalKind::PoolsQuarantined) {
    msgpack::sbuffer since;
    msgpack::packer<msgpack::sbuffer> sp(since);
    sp.pack_array(1);
    sp.pack_int64(r.since);
    pack_bin(pk, std::string_view(since.data(), since.size()));
  } else {
    pack_opt_bin(pk, r.jobinfo);
  }
  return std::string(buf.data(), buf.size());
}

Expected<JournalRecord> decode_journal_body(std::string_view bytes) {
  if (bytes.size() > kJournalMaxRecord)
    return Unexpected<Error>{
        bad(fmt::format("record of {} bytes exceeds {}", bytes.size(), kJournalMaxRecord))};
  auto rec = unpack_record(
      bytes, {.what = "switch/lua journal",
              .magic = kMagic,
              .max_version = kJournalVersion,
              .fields = 8,
              .limit = msgpack::unpack_limit(16, 16, 4096, kJournalMaxRecord, 16, 4)});
  if (!rec)
    return Unexpected<Error>{rec.error()};
  const msgpack::object *a = rec->fields;
  JournalRecord r;
  const std::uint64_t max_kind = rec->version >= 3 ? 9 : rec->version >= 2 ? 7 : 5;
  if (a[2].type != msgpack::type::POSITIVE_INTEGER || a[2].via.u64 < 1 || a[2].via.u64 > max_kind)
    return Unexpected<Error>{bad(a[2].type == msgpack::type::POSITIVE_INTEGER
                                     ? fmt::format("unknown record kind {}", a[2].via.u64)
                                     : std::string("record kind is not a number"))};
  r.kind = static_cast<JournalKind>(a[2].via.u64);
  if (!int64_of(a[3], r.attempt))
    return Unexpected<Error>{bad("field 'attempt' is not an integer")};
  if (a[4].type != msgpack::type::POSITIVE_INTEGER || a[4].via.u64 > UINT32_MAX)
    return Unexpected<Error>{bad("field 'job_id' is not a 32-bit unsigned integer")};
  r.job_id = static_cast<std::uint32_t>(a[4].via.u64);
  if (!int64_of(a[5], r.submit_time))
    return Unexpected<Error>{bad("field 'submit_time' is not an integer")};
  bool ok = true;
  auto job = bin_or_nil(a[6], ok);
  if (!ok)
    return Unexpected<Error>{bad("field 'job' is neither binary nor nil")};
  if (job) {
    auto args = JobArgs::from_msgpack(*job);
    if (!args)
      return Unexpected<Error>{bad("field 'job': " + args.error().message)};
    r.job = std::move(*args);
  }
  auto ji = bin_or_nil(a[7], ok);
  if (!ok)
    return Unexpected<Error>{bad("field 'jobinfo' is neither binary nor nil")};
  if (r.kind == JournalKind::SetupFailureCounted) {
    if (auto c = decode_failure_count(ji, r); !c)
      return Unexpected<Error>{c.error()};
  } else if (r.kind == JournalKind::PoolsQuarantined) {
    if (auto c = decode_since(ji, r); !c)
      return Unexpected<Error>{c.error()};
  } else if (ji) {
    r.jobinfo = std::string(*ji);
  }
  if (r.kind == JournalKind::SetupStarted && !r.job)
    return Unexpected<Error>{bad("a 'setup started' record without its job")};
  if (r.kind == JournalKind::PoolsQuarantined && !r.job)
    return Unexpected<Error>{bad("a 'pools quarantined' record without its job")};
  if (r.kind == JournalKind::SetupAccepted && !r.jobinfo)
    return Unexpected<Error>{bad("a 'setup accepted' record without its jobinfo")};
  return r;
}

std::string frame_journal_record(const JournalRecord &r) {
  std::string body = encode_journal_body(r);
  std::string out;
  out.reserve(kFrameHead + body.size());
  put_u32_le(out, static_cast<std::uint32_t>(body.size()));
  put_u32_le(out, crc32_of(body));
  out += body;
  return out;
}

JournalScan scan_journal(std::string_view bytes) {
  JournalScan s;
  if (bytes.empty())
    return s;
  if (bytes.size() < kJournalHeader.size()) {
    // A crash while the header of a new file was written.
    if (kJournalHeader.substr(0, bytes.size()) == bytes) {
      s.status = JournalScan::Status::TornTail;
      s.error = fmt::format("the header is cut at {} bytes", bytes.size());
      return s;
    }
    s.status = JournalScan::Status::Corrupt;
    s.error = "not a switch/lua journal (bad header)";
    return s;
  }
  if (bytes.substr(0, kJournalHeader.size()) != kJournalHeader) {
    s.status = JournalScan::Status::Corrupt;
    s.error = "not a switch/lua journal (bad header)";
    return s;
  }
  std::size_t off = kJournalHeader.size();
  s.good_bytes = off;
  while (off < bytes.size()) {
    std::size_t left = bytes.size() - off;
    auto stop = [&](bool at_tail, std::string why) {
      s.status = at_tail ? JournalScan::Status::TornTail : JournalScan::Status::Corrupt;
      s.error = fmt::format("record at offset {}: {}", off, why);
    };
    if (left < kFrameHead) {
      stop(true, fmt::format("cut inside its length and checksum ({} bytes)", left));
      return s;
    }
    std::uint32_t len = get_u32_le(bytes, off);
    std::uint32_t crc = get_u32_le(bytes, off + 4);
    if (len > kJournalMaxRecord) {
      // A length that cannot be: the bytes after it cannot be trusted.
      stop(false, fmt::format("length {} exceeds {}", len, kJournalMaxRecord));
      return s;
    }
    if (left - kFrameHead < len) {
      stop(true, fmt::format("cut at {} of {} bytes", left - kFrameHead, len));
      return s;
    }
    std::string_view body = bytes.substr(off + kFrameHead, len);
    bool last = off + kFrameHead + len == bytes.size();
    if (crc32_of(body) != crc) {
      stop(last, "checksum mismatch");
      return s;
    }
    auto r = decode_journal_body(body);
    if (!r) {
      stop(false, r.error().message);
      return s;
    }
    s.records.push_back(std::move(*r));
    off += kFrameHead + len;
    s.good_bytes = off;
  }
  return s;
}

void JournalTable::apply(const JournalRecord &r) {
  if (r.kind == JournalKind::SetupFailureCounted) {
    failures[r.job_id] = SetupFailures{
        .failures = r.failures, .restart_count = r.restart_count, .submit_time = r.submit_time};
    while (failures.size() > kJournalMaxFailureCounts)
      failures.erase(failures.begin());
    return;
  }
  if (r.kind == JournalKind::SetupFailuresCleared) {
    failures.erase(r.job_id);
    return;
  }
  max_attempt = std::max(max_attempt, r.attempt);
  if (r.kind == JournalKind::PoolsQuarantined) {
    if (!r.job->pools.empty())
      quarantined[r.attempt] = {r.job_id, r.submit_time, r.job->pools, r.since};
    return;
  }
  if (r.kind == JournalKind::PoolsReleased) {
    quarantined.erase(r.attempt);
    return;
  }
  if (r.kind == JournalKind::Forgotten) {
    live.erase(r.attempt);
    forgotten.insert(r.attempt);
    while (forgotten.size() > kJournalTombstones)
      forgotten.erase(forgotten.begin());
    return;
  }
  if (r.kind == JournalKind::SetupStarted) {
    JournalEntry &e = live[r.attempt];
    e = JournalEntry{};
    e.job = *r.job;
    return;
  }
  auto it = live.find(r.attempt);
  if (it == live.end())
    return;
  JournalEntry &e = it->second;
  switch (r.kind) {
  case JournalKind::SetupAccepted:
    e.accepted = true;
    e.jobinfo = r.jobinfo;
    break;
  case JournalKind::LaunchReleased:
    e.launch_released = true;
    break;
  case JournalKind::TeardownStarted:
    e.teardown_started = true;
    e.jobinfo = r.jobinfo;
    break;
  default:
    break;
  }
}

JournalRecord pools_quarantined_record(std::int64_t attempt, std::uint32_t job_id,
                                       std::int64_t submit_time, const JobPools &pools,
                                       std::int64_t since) {
  JournalRecord r{.kind = JournalKind::PoolsQuarantined,
                  .attempt = attempt,
                  .job_id = job_id,
                  .submit_time = submit_time,
                  .since = since};
  r.job = JobArgs{};
  r.job->job_id = job_id;
  r.job->submit_time = submit_time;
  r.job->attempt = attempt;
  r.job->pools = pools;
  return r;
}

std::vector<std::string> JournalTable::keep_pools(const std::set<std::string> &declared) {
  std::set<std::string> dropped;
  auto strip = [&](JobPools &p) {
    for (auto it = p.begin(); it != p.end();)
      if (declared.contains(it->first)) {
        ++it;
      } else {
        dropped.insert(it->first);
        it = p.erase(it);
      }
  };
  for (auto &[attempt, e] : live)
    strip(e.job.pools);
  for (auto it = quarantined.begin(); it != quarantined.end();) {
    strip(it->second.pools);
    it = it->second.pools.empty() ? quarantined.erase(it) : std::next(it);
  }
  return {dropped.begin(), dropped.end()};
}

std::vector<JournalRecord> JournalTable::snapshot() const {
  std::vector<JournalRecord> out;
  for (std::int64_t a : forgotten)
    out.push_back({.kind = JournalKind::Forgotten, .attempt = a});
  for (const auto &[attempt, e] : live) {
    JournalRecord base{
        .attempt = attempt, .job_id = e.job.job_id, .submit_time = e.job.submit_time};
    JournalRecord st = base;
    st.kind = JournalKind::SetupStarted;
    st.job = e.job;
    out.push_back(st);
    if (e.accepted) {
      JournalRecord acc = base;
      acc.kind = JournalKind::SetupAccepted;
      // A teardown may have replaced e.jobinfo; accepted always had one.
      acc.jobinfo = e.jobinfo ? e.jobinfo : std::optional<MsgpackBytes>("\xc0");
      out.push_back(acc);
    }
    if (e.launch_released) {
      JournalRecord rel = base;
      rel.kind = JournalKind::LaunchReleased;
      out.push_back(rel);
    }
    if (e.teardown_started) {
      JournalRecord td = base;
      td.kind = JournalKind::TeardownStarted;
      td.jobinfo = e.jobinfo;
      out.push_back(td);
    }
  }
  for (const auto &[attempt, q] : quarantined)
    out.push_back(pools_quarantined_record(attempt, q.job_id, q.submit_time, q.pools, q.since));
  for (const auto &[job_id, f] : failures)
    out.push_back({.kind = JournalKind::SetupFailureCounted,
                   .job_id = job_id,
                   .submit_time = f.submit_time,
                   .failures = f.failures,
                   .restart_count = f.restart_count});
  // The newest attempt id survives even if it was forgotten and trimmed.
  if (max_attempt != 0 && (forgotten.empty() || *forgotten.rbegin() < max_attempt) &&
      live.find(max_attempt) == live.end())
    out.push_back({.kind = JournalKind::Forgotten, .attempt = max_attempt});
  return out;
}

} // namespace switchlua
