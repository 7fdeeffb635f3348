// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: supervisor/channel.cpp
#include "supervisor/channel.hpp"

#include <boost/asio/write.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <sys/socket.h>

namespace switchlua {

namespace asio = boost::asio;

Expected<std::array<int, 2>> make_socketpair() {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return fail(fmt::format("socketpair: {}", std::strerror(errno)));
  return std::array<int, 2>{sv[0], sv[1]};
}

FrameChannel::FrameChannel(asio::io_context &io, int fd)
    : socket_(io, asio::local::stream_protocol(), fd) {}

std::shared_ptr<FrameChannel> FrameChannel::adopt(asio::io_context &io, int fd) {
  return std::make_shared<FrameChannel>(io, fd);
}

void FrameChannel::start(OnFrame on_frame, OnClosed on_closed) {
  on_frame_ = std::move(on_frame);
  on_closed_ = std::move(on_closed);
  start_read();
}

void FrameChannel::start_read() {
  socket_.async_read_some(asio::buffer(rbuf_),
                          [self = shared_from_this()](const boost::system::error_code &ec,
                                                      std::size_t n) { self->on_read(ec, n); });
}

void FrameChannel::on_read(const boost::system::error_code &ec, std::size_t n) {
  if (closed_)
    return;
  if (ec) {
    if (ec == asio::error::eof && !decoder_.has_partial())
      return finish(std::nullopt);
    if (ec == asio::error::eof)
      return finish(Error{"protocol: stream ended inside a frame"});
    return finish(Error{fmt::format("read: {}", ec.message())});
  }
  decoder_.feed(std::string_view(rbuf_.data(), n));
  for (;;) {
    auto f = decoder_.next();
    if (!f)
      return finish(f.error());
    if (!*f)
      break;
    if (on_frame_)
      on_frame_(std::move(**f));
    if (closed_)
      return;
  }
  start_read();
}

void FrameChannel::send(std::string bytes) {
  if (closed_)
    return;
  queued_bytes_ += bytes.size();
  wqueue_.push_back(std::move(bytes));
  if (!writing_)
    start_write();
}

void FrameChannel::start_write() {
  writing_ = true;
  asio::async_write(socket_, asio::buffer(wqueue_.front()),
                    [self = shared_from_this()](const boost::system::error_code &ec, std::size_t) {
                      self->writing_ = false;
                      if (self->closed_)
                        return;
                      if (ec)
                        return self->finish(Error{fmt::format("write: {}", ec.message())});
                      self->queued_bytes_ -= self->wqueue_.front().size();
                      self->wqueue_.pop_front();
                      if (!self->wqueue_.empty())
                        self->start_write();
                    });
}

void FrameChannel::finish(std::optional<Error> why) {
  OnClosed cb = std::move(on_closed_);
  close();
  if (cb)
    cb(std::move(why));
}

std::size_t FrameChannel::unread_bytes() {
  boost::system::error_code ec;
  const std::size_t n = closed_ ? 0 : socket_.available(ec);
  return ec ? 0 : n;
}

void FrameChannel::close() {
  if (closed_)
    return;
  closed_ = true;
  on_frame_ = nullptr;
  on_closed_ = nullptr;
  boost::system::error_code ignored;
  socket_.close(ignored); // pending operations complete with operation_aborted
}

} // namespace switchlua
