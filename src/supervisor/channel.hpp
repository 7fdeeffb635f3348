// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: supervisor/channel.hpp
//
// FrameChannel: one end of a socketpair carrying protocol frames, on an Asio
// io_context.  Used by the client (to the supervisor) and by the supervisor
// (to the client and to each runner).
//
//   auto ch = FrameChannel::adopt(io, fd);
//   ch->start([](Frame f) { ... }, [](std::optional<Error> why) { ... });
//   ch->send(encode_frame(LogFrame{...}));
//
// Reads run until EOF or an error; `on_frame` gets each decoded frame in
// order, then `on_closed` exactly once: nullopt for a clean EOF, or an Error
// (read error, protocol error, EOF inside a frame).  Writes are queued and
// written in order; a write error closes the channel the same way.  All
// callbacks run on the io_context's thread.  close() stops everything
// without calling `on_closed`.  The object keeps itself alive while an
// operation is pending (shared_ptr).
#pragma once

#include "common/expected.hpp"
#include "supervisor/protocol.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>

#include <array>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace switchlua {

/// Creates a connected pair of SOCK_STREAM Unix sockets, both close-on-exec.
/// Returns the two fds; Error with the errno text.
Expected<std::array<int, 2>> make_socketpair();

class FrameChannel : public std::enable_shared_from_this<FrameChannel> {
public:
  using OnFrame = std::function<void(Frame)>;
  using OnClosed = std::function<void(std::optional<Error>)>;

  /// Takes ownership of the connected socket `fd`.
  static std::shared_ptr<FrameChannel> adopt(boost::asio::io_context &io, int fd);

  /// Starts the read loop.  Call once.
  void start(OnFrame on_frame, OnClosed on_closed);
  /// Queues encoded frame bytes (from encode_frame) for writing.  Ignored once closed.
  void send(std::string bytes);
  /// Closes the socket and drops the callbacks; pending handlers do nothing.
  void close();
  /// Bytes queued by send() and not yet written (for backlog bounds).
  std::size_t queued_bytes() const { return queued_bytes_; }
  /// Bytes the peer wrote that the read loop has not taken yet (FIONREAD;
  /// 0 on error): non-zero means this side is behind, not the peer silent.
  std::size_t unread_bytes();
  /// Whether close() ran or the channel reported its end.
  bool closed() const { return closed_; }

  /// Prefer adopt(): start() needs the object owned by a shared_ptr.
  explicit FrameChannel(boost::asio::io_context &io, int fd);

private:
  void start_read();
  void on_read(const boost::system::error_code &ec, std::size_t n);
  void start_write();
  void finish(std::optional<Error> why);

  boost::asio::local::stream_protocol::socket socket_;
  FrameDecoder decoder_;
  std::array<char, 16384> rbuf_{};
  std::deque<std::string> wqueue_;
  std::size_t queued_bytes_ = 0;
  bool writing_ = false;
  bool closed_ = false;
  OnFrame on_frame_;
  OnClosed on_closed_;
};

} // namespace switchlua
