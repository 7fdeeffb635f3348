// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: common/atomic_file.cpp
//
// write_file_atomically() (see atomic_file.hpp).
#include "common/atomic_file.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

namespace switchlua {
namespace {

Unexpected<AtomicWriteError> failed(std::string_view verb, std::string_view path, int err,
                                    bool replaced = false) {
  return {AtomicWriteError{fmt::format("cannot {} {}: {}", verb, path, std::strerror(err)), err,
                           replaced}};
}

/// Writes all of `data` to `fd`; false with errno set otherwise.
bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return false;
    if (n == 0) {
      errno = EIO; // no progress and no error: do not spin
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

} // namespace

std::string folder_of(const std::string &path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

Expected<void, AtomicWriteError> write_file_atomically(const std::string &path,
                                                       std::string_view data,
                                                       const AtomicWriteOptions &opts) {
  auto sync = [&](int fd) { return opts.fsync_fn ? opts.fsync_fn(fd) : ::fsync(fd); };
  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid()); // one per writer
  const int fd =
      ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, opts.mode);
  if (fd < 0)
    return failed("create", tmp, errno);
  // Each step that fails after the open closes the file and removes it.
  auto abandon = [&](std::string_view verb, int err) {
    if (fd >= 0)
      ::close(fd);
    ::unlink(tmp.c_str());
    return failed(verb, tmp, err);
  };
  if (!write_all(fd, data))
    return abandon("write", errno);
  if (::fchmod(fd, opts.mode) != 0) // an existing temp file keeps its mode otherwise
    return abandon("set the mode of", errno);
  if (sync(fd) != 0)
    return abandon("sync", errno);
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return failed("close", tmp, err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return failed("rename", fmt::format("{} to {}", tmp, path), err);
  }
  const std::string folder = folder_of(path);
  const int dfd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return failed("open the folder", folder, errno, true);
  if (sync(dfd) != 0) {
    const int err = errno;
    ::close(dfd);
    return failed("sync the folder", folder, err, true);
  }
  ::close(dfd);
  return {};
}

} // namespace switchlua
