// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: supervisor/protocol.hpp
//
// The wire format between the client (slurmctld), switch-lua-supervisor and
// switch-lua-runner: length-prefixed msgpack frames on a stream socket.
//
//   frame   = length (4 bytes, big-endian, of body) + body
//   body    = msgpack map {"v": kProtocolVersion, "t": "<type>", ...fields}
//
//   client -> supervisor : request   {id, script, hook, job, jobinfo, timeout_s, lane,
//                                     kill_grace_s, source, validate_only (optional)}
//   supervisor -> runner : request   (the same frame, forwarded)
//   runner -> supervisor : log       {id (0), level, text}   one per script line
//                          result    {kind, ret, message,    at most one
//                                     childless (optional)}
//   client -> supervisor : ping      {seq}                   watchdog heartbeat
//   supervisor -> client : pong      {seq}                   at once
//                          started   {id, queued_ms}         when the call's process
//                                                            got the request
//                          log       {id, level, text}       as they arrive
//                          outcome   {id, kind, ret, message, exit_status, signal,
//                                     late_return, late_exit, escapees, elapsed_ms,
//                                     queued_ms, script_hash (optional)}
//
//   std::string wire = encode_frame(LogFrame{.id = 7, .level = LogLevel::Info, .text = "hi"});
//   FrameDecoder d;
//   d.feed(wire);
//   auto f = d.next();   // Expected<std::optional<Frame>>: a frame, "need more", or an Error
//
// The decoder is strict: a length beyond kMaxFrameBytes, a truncated or
// malformed body, trailing bytes, another protocol version, an unknown type,
// a missing field or a field of the wrong msgpack type are each an Error
// naming the problem, never a crash or an exception.  Unknown extra fields are
// ignored.  After an Error the stream cannot be resynchronised: close it.
#pragma once

#include "common/expected.hpp"
#include "lua/contract.hpp"
#include "lua/runtime.hpp"
#include "supervisor/client.hpp"
#include "supervisor/outcome.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace switchlua {

/// Value of the "v" field of every frame; a frame with another value is refused.
/// 2: lanes (request "lane"), the started frame and the outcome's "queued_ms".
inline constexpr std::uint32_t kProtocolVersion = 2;
/// Largest accepted body, bytes (the 4-byte length prefix not counted).
inline constexpr std::size_t kMaxFrameBytes = 1024 * 1024;

/// The supervisor's waiting lines, served in this order (teardown first):
/// a teardown or an interactive setup never waits behind batch setups.
enum class Lane : std::uint8_t {
  Teardown,    ///< job_complete and the boolean hooks (block_job_complete, setup_special_steps)
  Interactive, ///< job_start of an allocation that is not a batch job (srun, salloc)
  Batch,       ///< job_start of a batch job (sbatch)
};
/// "teardown", "interactive", "batch".
std::string_view lane_name(Lane l);
/// The lane of a call: Batch for job_start of a batch job, Interactive for
/// job_start of any other job, Teardown for every other hook.
Lane lane_of(Hook h, bool batch_job);
/// Of `max_calls` slots, how many batch setups may not take (kept for the
/// teardown and interactive lanes): max(1, max_calls / 8), and 0 when
/// max_calls is 1 (every lane then shares the one slot).
std::uint32_t reserved_slots(std::uint32_t max_calls);
/// How much nicer (nice(2) increment) a batch setup's process runs than the
/// supervisor, so that when the CPU is short the lanes' order holds for it
/// too: teardowns, interactive setups, the supervisor and slurmctld itself
/// run first (issue 22: in a 1,000-job burst, a trivial job_complete waited
/// up to 0.9 s for the CPU behind 240 setups).  What the script starts
/// inherits it; the other lanes run at the supervisor's own nice value.
inline constexpr int kBatchLaneNice = 5;

/// client -> supervisor -> runner: run one hook.
struct RequestFrame {
  CallId id = 0;
  std::string script;                  ///< path of switch.lua
  Hook hook = Hook::JobStart;          ///< sent as hook_name()
  MsgpackBytes job;                    ///< JobArgs::to_msgpack()
  std::optional<MsgpackBytes> jobinfo; ///< nil when absent
  std::uint32_t timeout_s = 10;        ///< seconds, >= 1
  /// Seconds between SIGTERM and SIGKILL of the group at the deadline (0:
  /// SIGKILL at once); optional on the wire (absent: 2).
  std::uint32_t kill_grace_s = 2;
  /// supervisor -> runner: the validated bytes of the script to run instead
  /// of reading `script` (the chunk is still named after `script`); nullopt:
  /// the runner reads the file.  Optional on the wire.
  std::optional<std::string> source;
  /// supervisor -> runner: only load `source` and check the hooks' types,
  /// answer Returned (flag true) or LoadFailed.  Optional on the wire.
  bool validate_only = false;
  Lane lane = Lane::Batch; ///< sent as lane_name()
  /// client -> supervisor: the control epoch the call was submitted in and
  /// the epoch file (common/epoch_file.hpp).  When the file holds a greater
  /// epoch as the call is about to start, another slurmctld has taken
  /// control and the supervisor does not start it (issue 40; switch.lua(5),
  /// HIGH AVAILABILITY).  0: no fence (no journal).  Optional on the wire,
  /// sent only when non-zero.
  std::uint64_t epoch = 0;
  std::string epoch_file;
  /// client -> supervisor: where the supervisor records the result of a
  /// job_start or job_complete that returned, durably, before it sends the
  /// outcome (supervisor/results_log.hpp; issue 40: a call that ends while
  /// its slurmctld is stopped is not run again by the next controller).
  /// Empty: not recorded (no journal).  Optional on the wire, sent only when
  /// non-empty.
  std::string results_file;
};

/// supervisor -> client: call `id` left its lane and its process got the
/// request (its switch_timeout counts from now).
struct StartedFrame {
  CallId id = 0;
  std::int64_t queued_ms = 0; ///< time spent waiting in the supervisor's lane
};

/// A script log line.  `id` is 0 on the runner's channel (one call per channel).
struct LogFrame {
  CallId id = 0;
  LogLevel level = LogLevel::Info;
  std::string text;
};

/// runner -> supervisor: how the hook ended (at most one per call).
struct ResultFrame {
  enum class Kind : std::uint8_t { Returned, LuaError, BadReturn, LoadFailed };
  Kind kind = Kind::Returned;
  HookReturn ret;      ///< Returned only
  std::string message; ///< the other kinds
  /// The runner had no child process left, alive or dead and unwaited
  /// (waitid(P_ALL) said ECHILD), when it sent this frame: nothing the call
  /// started is below it any more.  Optional on the wire (absent: false).
  bool childless = false;
};

/// supervisor -> client: the classified outcome of call `id`.
struct OutcomeFrame {
  CallId id = 0;
  Outcome outcome;
};

/// client -> supervisor: are you there?  The supervisor answers with a
/// PongFrame carrying the same `seq` (the client's watchdog, client.hpp).
struct PingFrame {
  std::uint64_t seq = 0;
};
/// supervisor -> client: the answer to a PingFrame.
struct PongFrame {
  std::uint64_t seq = 0;
};

/// Any frame of the protocol.
using Frame = std::variant<RequestFrame, LogFrame, ResultFrame, OutcomeFrame, StartedFrame,
                           PingFrame, PongFrame>;

/// The complete wire bytes of `f` (length prefix included).  A body larger
/// than kMaxFrameBytes is still encoded; the peer's decoder refuses it.
std::string encode_frame(const Frame &f);

/// Decodes one body (without the length prefix).  Errors as described above,
/// e.g. "protocol: frame version 1, expected 2" or "protocol: log frame: field
/// 'text' missing".
Expected<Frame> decode_body(std::string_view body);

/// Incremental decoder of a byte stream into frames.  Not thread-safe.
class FrameDecoder {
public:
  /// Appends received bytes.
  void feed(std::string_view bytes);
  /// The next complete frame; nullopt when more bytes are needed; an Error on
  /// an oversized or undecodable frame (the stream is then unusable).
  Expected<std::optional<Frame>> next();
  /// Whether part of a frame is buffered (EOF now means a truncated frame).
  bool has_partial() const { return !buf_.empty(); }

private:
  std::string buf_;
};

} // namespace switchlua
