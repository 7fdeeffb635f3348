// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: supervisor/protocol.cpp
//
// Encoder and strict decoder of the supervisor's frames (see protocol.hpp).
// decode_body() reads a body with common/msgpack_read.hpp's unpack_one() and
// turns every exception of msgpack-cxx's conversions into an Error.
#include "supervisor/protocol.hpp"

#include "common/msgpack_read.hpp"
#include "common/msgpack_write.hpp"

#include <fmt/format.h>
#include <msgpack.hpp>

#include <algorithm>
#include <limits>

namespace switchlua {
namespace {

using Packer = msgpack::packer<StringSink>;

/// Starts a frame map of `n` fields besides "v" and "t".
void pack_header(Packer &pk, std::string_view type, std::uint32_t n) {
  pk.pack_map(n + 2);
  pack_str(pk, "v");
  pk.pack(kProtocolVersion);
  pack_str(pk, "t");
  pack_str(pk, type);
}

void pack_hook_return(Packer &pk, const HookReturn &r) {
  // "message" only when the hook gave one, "nodes" only when job_complete
  // named some (issue 20): a frame without them is the frame of before.
  pk.pack_map(8 + (r.message.empty() ? 0 : 1) + (r.nodes ? 1 : 0));
  pack_str(pk, "hook");
  pack_str(pk, hook_name(r.hook));
  pack_str(pk, "rc");
  pk.pack(r.rc);
  pack_str(pk, "flag");
  pk.pack(r.flag);
  pack_str(pk, "jobinfo");
  pack_opt_bin(pk, r.jobinfo);
  pack_str(pk, "jobinfo_error");
  pack_str(pk, r.jobinfo_error);
  pack_str(pk, "has_env");
  pk.pack(r.has_env);
  pack_str(pk, "env");
  pk.pack_array(static_cast<std::uint32_t>(r.env.size()));
  for (const EnvOp &op : r.env) {
    pk.pack_array(3);
    pack_str(pk, op.kind == EnvOp::Kind::Set ? "set" : "unset");
    pack_str(pk, op.name);
    pack_str(pk, op.value);
  }
  pack_str(pk, "warnings");
  pk.pack_array(static_cast<std::uint32_t>(r.warnings.size()));
  for (const std::string &w : r.warnings)
    pack_str(pk, w);
  if (!r.message.empty()) {
    pack_str(pk, "message");
    pack_str(pk, r.message);
  }
  if (r.nodes) {
    pack_str(pk, "nodes");
    pk.pack_array(static_cast<std::uint32_t>(r.nodes->size()));
    for (const std::string &n : *r.nodes)
      pack_str(pk, n);
  }
}

std::string_view result_kind_name(ResultFrame::Kind k) {
  switch (k) {
  case ResultFrame::Kind::Returned:
    return "returned";
  case ResultFrame::Kind::LuaError:
    return "lua_error";
  case ResultFrame::Kind::BadReturn:
    return "bad_return";
  case ResultFrame::Kind::LoadFailed:
    return "load_failed";
  }
  return "?";
}

void pack_frame(Packer &pk, const RequestFrame &f) {
  pack_header(pk, "request",
              8 + (f.source ? 1 : 0) + (f.validate_only ? 1 : 0) + (f.epoch != 0 ? 2 : 0) +
                  (f.results_file.empty() ? 0 : 1));
  pack_str(pk, "id");
  pk.pack(f.id);
  pack_str(pk, "script");
  pack_str(pk, f.script);
  pack_str(pk, "hook");
  pack_str(pk, hook_name(f.hook));
  pack_str(pk, "job");
  pack_bin(pk, f.job);
  pack_str(pk, "jobinfo");
  pack_opt_bin(pk, f.jobinfo);
  pack_str(pk, "timeout_s");
  pk.pack(f.timeout_s);
  pack_str(pk, "kill_grace_s");
  pk.pack(f.kill_grace_s);
  if (f.source) {
    pack_str(pk, "source");
    pack_bin(pk, *f.source);
  }
  if (f.validate_only) {
    pack_str(pk, "validate_only");
    pk.pack(true);
  }
  pack_str(pk, "lane");
  pack_str(pk, lane_name(f.lane));
  if (f.epoch != 0) {
    pack_str(pk, "epoch");
    pk.pack(f.epoch);
    pack_str(pk, "epoch_file");
    pack_str(pk, f.epoch_file);
  }
  if (!f.results_file.empty()) {
    pack_str(pk, "results_file");
    pack_str(pk, f.results_file);
  }
}

void pack_frame(Packer &pk, const StartedFrame &f) {
  pack_header(pk, "started", 2);
  pack_str(pk, "id");
  pk.pack(f.id);
  pack_str(pk, "queued_ms");
  pk.pack(f.queued_ms);
}

void pack_frame(Packer &pk, const LogFrame &f) {
  pack_header(pk, "log", 3);
  pack_str(pk, "id");
  pk.pack(f.id);
  pack_str(pk, "level");
  pack_str(pk, log_level_name(f.level));
  pack_str(pk, "text");
  pack_str(pk, f.text);
}

void pack_frame(Packer &pk, const ResultFrame &f) {
  pack_header(pk, "result", f.childless ? 4 : 3);
  pack_str(pk, "kind");
  pack_str(pk, result_kind_name(f.kind));
  pack_str(pk, "ret");
  pack_hook_return(pk, f.ret);
  pack_str(pk, "message");
  pack_str(pk, f.message);
  if (f.childless) {
    pack_str(pk, "childless");
    pk.pack(true);
  }
}

void pack_frame(Packer &pk, const OutcomeFrame &f) {
  const Outcome &o = f.outcome;
  pack_header(pk, "outcome", o.script_hash.empty() ? 11 : 12);
  pack_str(pk, "id");
  pk.pack(f.id);
  pack_str(pk, "kind");
  pack_str(pk, outcome_kind_name(o.kind));
  pack_str(pk, "ret");
  pack_hook_return(pk, o.ret);
  pack_str(pk, "message");
  pack_str(pk, o.message);
  pack_str(pk, "exit_status");
  pk.pack(o.exit_status);
  pack_str(pk, "signal");
  pk.pack(o.signal);
  pack_str(pk, "late_return");
  if (o.late_return)
    pack_hook_return(pk, *o.late_return);
  else
    pk.pack_nil();
  pack_str(pk, "late_exit");
  pk.pack(o.late_exit);
  pack_str(pk, "escapees");
  pk.pack_array(static_cast<std::uint32_t>(o.escapees.size()));
  for (pid_t p : o.escapees)
    pk.pack(static_cast<std::int64_t>(p));
  pack_str(pk, "elapsed_ms");
  pk.pack(static_cast<std::int64_t>(o.elapsed.count()));
  pack_str(pk, "queued_ms");
  pk.pack(static_cast<std::int64_t>(o.queued.count()));
  if (!o.script_hash.empty()) {
    pack_str(pk, "script_hash");
    pack_str(pk, o.script_hash);
  }
}

void pack_frame(Packer &pk, const PingFrame &f) {
  pack_header(pk, "ping", 1);
  pack_str(pk, "seq");
  pk.pack(f.seq);
}

void pack_frame(Packer &pk, const PongFrame &f) {
  pack_header(pk, "pong", 1);
  pack_str(pk, "seq");
  pk.pack(f.seq);
}

} // namespace

std::string encode_frame(const Frame &f) {
  // The body is packed behind its 4-byte length, into one buffer sized for
  // a request's job table and script (no copy, no doubling).
  StringSink out;
  std::size_t estimate = 4 + 512;
  if (const auto *r = std::get_if<RequestFrame>(&f))
    estimate += r->job.size() + r->script.size() + (r->source ? r->source->size() : 0) +
                (r->jobinfo ? r->jobinfo->size() : 0);
  out.bytes.reserve(estimate);
  out.bytes.assign(4, '\0');
  Packer pk(out);
  std::visit([&pk](const auto &x) { pack_frame(pk, x); }, f);
  const auto n = static_cast<std::uint32_t>(out.bytes.size() - 4);
  for (int i = 0; i < 4; ++i)
    out.bytes[i] = static_cast<char>((n >> (24 - 8 * i)) & 0xff);
  return std::move(out.bytes);
}

// ----------------------------------------------------------------- decoding

namespace {

std::string as_string(const msgpack::object &o) {
  return o.type == msgpack::type::STR ? std::string(o.via.str.ptr, o.via.str.size) : std::string();
}

HookReturn read_hook_return(MapReader &parent, const msgpack::object &o, const std::string &where) {
  MapReader r(o, "protocol: " + where);
  HookReturn ret;
  const std::string hook = r.str("hook");
  if (auto h = hook_from_name(hook))
    ret.hook = *h;
  else
    r.set_error(fmt::format("unknown hook '{}'", hook));
  ret.rc = r.i64("rc");
  ret.flag = r.flag("flag");
  ret.jobinfo = r.opt_bin("jobinfo");
  ret.jobinfo_error = r.str("jobinfo_error");
  ret.has_env = r.flag("has_env");
  if (auto m = r.opt_str("message"))
    ret.message = std::move(*m);
  for (const msgpack::object *e : r.array("env")) {
    const bool ok = e->type == msgpack::type::ARRAY && e->via.array.size == 3;
    const msgpack::object *f = ok ? e->via.array.ptr : nullptr;
    const std::string kind = ok ? as_string(f[0]) : std::string();
    if (!ok || (kind != "set" && kind != "unset") || f[1].type != msgpack::type::STR ||
        f[2].type != msgpack::type::STR) {
      r.set_error("env entry is not [\"set\"|\"unset\", name, value]");
      break;
    }
    ret.env.push_back(
        {kind == "set" ? EnvOp::Kind::Set : EnvOp::Kind::Unset, as_string(f[1]), as_string(f[2])});
  }
  if (r.get("nodes", false)) {
    ret.nodes.emplace();
    for (const msgpack::object *n : r.array("nodes")) {
      if (n->type != msgpack::type::STR) {
        r.set_error("a node is not a string");
        break;
      }
      ret.nodes->push_back(as_string(*n));
    }
  }
  for (const msgpack::object *w : r.array("warnings")) {
    if (w->type != msgpack::type::STR) {
      r.set_error("warning is not a string");
      break;
    }
    ret.warnings.push_back(as_string(*w));
  }
  if (r.error)
    parent.error = r.error;
  return ret;
}

Expected<Frame> finish(MapReader &r, Frame f) {
  if (r.error)
    return fail(*r.error);
  return f;
}

Expected<Frame> read_request(MapReader &r) {
  RequestFrame f;
  f.id = r.u64("id");
  f.script = r.str("script");
  const std::string hook = r.str("hook");
  if (auto h = hook_from_name(hook))
    f.hook = *h;
  else
    r.set_error(fmt::format("unknown hook '{}'", hook));
  f.job = r.bin("job");
  f.jobinfo = r.opt_bin("jobinfo");
  const std::uint64_t t = r.u64("timeout_s");
  if (t < 1 || t > std::numeric_limits<std::uint32_t>::max())
    r.set_error(fmt::format("timeout_s {} out of range", t));
  f.timeout_s = static_cast<std::uint32_t>(t);
  if (r.get("kill_grace_s", false) != nullptr) {
    const std::uint64_t g = r.u64("kill_grace_s");
    if (g > std::numeric_limits<std::uint32_t>::max())
      r.set_error(fmt::format("kill_grace_s {} out of range", g));
    f.kill_grace_s = static_cast<std::uint32_t>(g);
  }
  if (r.get("source", false) != nullptr)
    f.source = r.bin("source");
  if (r.get("validate_only", false) != nullptr)
    f.validate_only = r.flag("validate_only");
  if (r.get("epoch", false) != nullptr) {
    f.epoch = r.u64("epoch");
    f.epoch_file = r.str("epoch_file");
  }
  if (r.get("results_file", false) != nullptr)
    f.results_file = r.str("results_file");
  const std::string lane = r.str("lane");
  bool known = false;
  for (Lane l : {Lane::Teardown, Lane::Interactive, Lane::Batch})
    if (lane_name(l) == lane) {
      f.lane = l;
      known = true;
    }
  if (!known && !r.error)
    r.set_error(fmt::format("unknown lane '{}'", lane));
  return finish(r, f);
}

Expected<Frame> read_started(MapReader &r) {
  StartedFrame f;
  f.id = r.u64("id");
  f.queued_ms = r.i64("queued_ms");
  return finish(r, f);
}

std::optional<LogLevel> level_from_name(std::string_view s) {
  for (int i = 0; i <= static_cast<int>(LogLevel::Debug5); ++i)
    if (log_level_name(static_cast<LogLevel>(i)) == s)
      return static_cast<LogLevel>(i);
  return std::nullopt;
}

Expected<Frame> read_log(MapReader &r) {
  LogFrame f;
  f.id = r.u64("id");
  const std::string level = r.str("level");
  if (auto l = level_from_name(level))
    f.level = *l;
  else
    r.set_error(fmt::format("unknown log level '{}'", level));
  f.text = r.str("text");
  return finish(r, f);
}

Expected<Frame> read_result(MapReader &r) {
  ResultFrame f;
  const std::string kind = r.str("kind");
  bool known = false;
  for (auto k : {ResultFrame::Kind::Returned, ResultFrame::Kind::LuaError,
                 ResultFrame::Kind::BadReturn, ResultFrame::Kind::LoadFailed})
    if (result_kind_name(k) == kind) {
      f.kind = k;
      known = true;
    }
  if (!known)
    r.set_error(fmt::format("unknown result kind '{}'", kind));
  if (const msgpack::object *o = r.get("ret"))
    f.ret = read_hook_return(r, *o, "result frame: ret");
  f.message = r.str("message");
  if (r.get("childless", false) != nullptr)
    f.childless = r.flag("childless");
  return finish(r, f);
}

Expected<Frame> read_outcome(MapReader &r) {
  OutcomeFrame f;
  Outcome &o = f.outcome;
  f.id = r.u64("id");
  const std::string kind = r.str("kind");
  bool known = false;
  for (int i = 0; i <= static_cast<int>(OutcomeKind::LoadFailed); ++i)
    if (outcome_kind_name(static_cast<OutcomeKind>(i)) == kind) {
      o.kind = static_cast<OutcomeKind>(i);
      known = true;
    }
  if (!known)
    r.set_error(fmt::format("unknown outcome kind '{}'", kind));
  if (const msgpack::object *ret = r.get("ret"))
    o.ret = read_hook_return(r, *ret, "outcome frame: ret");
  o.message = r.str("message");
  o.exit_status = r.i32("exit_status");
  o.signal = r.i32("signal");
  const msgpack::object *late = r.get("late_return");
  if (late != nullptr && late->type != msgpack::type::NIL)
    o.late_return = read_hook_return(r, *late, "outcome frame: late_return");
  o.late_exit = r.flag("late_exit");
  for (const msgpack::object *p : r.array("escapees")) {
    if (p->type != msgpack::type::POSITIVE_INTEGER || p->via.u64 > 0x7fffffff) {
      r.set_error("escapee is not a pid");
      break;
    }
    o.escapees.push_back(static_cast<pid_t>(p->via.u64));
  }
  o.elapsed = std::chrono::milliseconds(r.i64("elapsed_ms"));
  o.queued = std::chrono::milliseconds(r.i64("queued_ms"));
  if (r.get("script_hash", false) != nullptr)
    o.script_hash = r.str("script_hash");
  return finish(r, f);
}

Expected<Frame> read_frame(const msgpack::object &root) {
  MapReader r(root, "protocol: frame");
  const std::uint64_t v = r.u64("v");
  if (r.error)
    return fail(*r.error);
  if (v != kProtocolVersion)
    return fail(fmt::format("protocol: frame version {}, expected {}", v, kProtocolVersion));
  const std::string t = r.str("t");
  if (r.error)
    return fail(*r.error);
  MapReader body(root, fmt::format("protocol: {} frame", t));
  if (t == "request")
    return read_request(body);
  if (t == "log")
    return read_log(body);
  if (t == "result")
    return read_result(body);
  if (t == "outcome")
    return read_outcome(body);
  if (t == "started")
    return read_started(body);
  if (t == "ping")
    return finish(body, PingFrame{body.u64("seq")});
  if (t == "pong")
    return finish(body, PongFrame{body.u64("seq")});
  return fail(fmt::format("protocol: unknown frame type '{}'", t));
}

} // namespace

Expected<Frame> decode_body(std::string_view body) {
  if (body.size() > kMaxFrameBytes)
    return fail(fmt::format("protocol: frame of {} bytes, limit {}", body.size(), kMaxFrameBytes));
  // Bounds keep a hostile length field from allocating much: no container in
  // a valid frame comes near them.
  const msgpack::unpack_limit limit(65536, 64, kMaxFrameBytes, kMaxFrameBytes, 0, 16);
  auto oh = unpack_one(body, limit, "frame");
  if (!oh)
    return fail("protocol: " + oh.error().message);
  try {
    return read_frame(oh->get());
  } catch (const std::exception &e) { // msgpack-cxx's conversions throw on a wrong type
    return fail(fmt::format("protocol: malformed frame ({})", e.what()));
  }
}

void FrameDecoder::feed(std::string_view bytes) {
  buf_.append(bytes);
}

Expected<std::optional<Frame>> FrameDecoder::next() {
  if (buf_.size() < 4)
    return std::optional<Frame>();
  const auto *p = reinterpret_cast<const unsigned char *>(buf_.data());
  const std::size_t n = (std::size_t{p[0]} << 24) | (std::size_t{p[1]} << 16) |
                        (std::size_t{p[2]} << 8) | std::size_t{p[3]};
  if (n > kMaxFrameBytes)
    return fail(fmt::format("protocol: frame of {} bytes announced, limit {}", n, kMaxFrameBytes));
  if (buf_.size() < 4 + n)
    return std::optional<Frame>();
  Expected<Frame> f = decode_body(std::string_view(buf_).substr(4, n));
  buf_.erase(0, 4 + n);
  if (!f)
    return fail(f.error().message);
  return std::optional<Frame>(std::move(*f));
}

} // namespace switchlua
