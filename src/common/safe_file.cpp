// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: common/safe_file.cpp
//
// The safe file functions (see safe_file.hpp).
#include "common/safe_file.hpp"

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

namespace switchlua {
namespace {

Unexpected<FileError> failed(std::string_view verb, std::string_view path, int err,
                             bool replaced = false) {
  return {
      FileError{fmt::format("cannot {} {}: {}", verb, path, std::strerror(err)), err, replaced}};
}

Unexpected<FileError> refused(std::string message, int err = EPERM) {
  return {FileError{std::move(message), err, false}};
}

/// Closes a descriptor at the end of a scope.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0)
      ::close(fd);
  }
};

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

bool trusted_owner(uid_t uid) {
  return uid == 0 || uid == ::geteuid();
}

/// The folder rule of safe_file.hpp on fstat's `st`.
Expected<void, FileError> folder_ok(const std::string &dir, const struct stat &st) {
  if (!S_ISDIR(st.st_mode))
    return refused(fmt::format("{}: not a folder: refused", dir), ENOTDIR);
  const bool others_write = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
  if (trusted_owner(st.st_uid) && (!others_write || (st.st_mode & S_ISVTX) != 0))
    return {};
  return refused(fmt::format("{}: the folder is owned by uid {}, mode {:04o}: refused; a folder "
                             "switch/lua writes in must be owned by root or uid {} and not "
                             "writable by group or others (unless sticky)",
                             dir, st.st_uid, st.st_mode & 07777, ::geteuid()));
}

/// A random suffix for a temp name, when the plain one is taken.
std::string random_suffix() {
  unsigned long long r = 0;
  if (::getrandom(&r, sizeof r, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof r))
    r = static_cast<unsigned long long>(::getpid()) * 2654435761ULL ^
        static_cast<unsigned long long>(::time(nullptr));
  return fmt::format(".{:016x}", r);
}

/// Step 1: creates a fresh temp file for `name` in the folder `dfd`; its
/// name in `tmp`.  The plain "<name>.tmp.<pid>" first; when something is
/// there already (a planted link or FIFO, a leftover), random names.
int create_temp(int dfd, const std::string &name, mode_t mode, std::string &tmp) {
  const std::string plain = fmt::format("{}.tmp.{}", name, ::getpid());
  for (int attempt = 0; attempt < 16; ++attempt) {
    tmp = attempt == 0 ? plain : plain + random_suffix();
    const int fd = ::openat(
        dfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode);
    if (fd >= 0 || errno != EEXIST)
      return fd;
  }
  errno = EEXIST;
  return -1;
}

std::string join(const std::string &dir, const std::string &name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

} // namespace

std::string folder_of(const std::string &path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

Expected<void, FileError> check_folder(const std::string &dir) {
  struct stat st{};
  if (::stat(dir.c_str(), &st) != 0)
    return failed("check the folder", dir, errno);
  return folder_ok(dir, st);
}

Expected<void, FileError> write_file_atomically(const std::string &dir, const std::string &name,
                                                std::string_view data,
                                                const AtomicWriteOptions &opts) {
  auto sync = [&](int fd) {
    if (!opts.durable)
      return 0;
    return opts.fsync_fn ? opts.fsync_fn(fd) : ::fsync(fd);
  };
  if (name.empty() || name.find('/') != std::string::npos)
    return refused(fmt::format("{}: not a file name", name), EINVAL);
  const FdCloser d{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (d.fd < 0)
    return failed("open the folder", dir, errno);
  struct stat dst{};
  if (::fstat(d.fd, &dst) != 0)
    return failed("check the folder", dir, errno);
  if (auto ok = folder_ok(dir, dst); !ok)
    return ok;
  std::string tmp;
  const int fd = create_temp(d.fd, name, opts.mode, tmp);
  const std::string tmp_path = join(dir, tmp);
  if (fd < 0)
    return failed("create", tmp_path, errno);
  // Each step that fails after the open closes the file and removes it.
  bool open = true;
  auto abandon = [&](std::string_view verb, int err) {
    if (open)
      ::close(fd);
    ::unlinkat(d.fd, tmp.c_str(), 0);
    return failed(verb, tmp_path, err);
  };
  if (!write_all(fd, data))
    return abandon("write", errno);
  if (::fchmod(fd, opts.mode) != 0) // the umask narrowed the mode of the open
    return abandon("set the mode of", errno);
  if (sync(fd) != 0)
    return abandon("sync", errno);
  open = false;
  if (::close(fd) != 0)
    return abandon("close", errno);
  if (::renameat(d.fd, tmp.c_str(), d.fd, name.c_str()) != 0) {
    const int err = errno;
    ::unlinkat(d.fd, tmp.c_str(), 0);
    return failed("rename", fmt::format("{} to {}", tmp_path, join(dir, name)), err);
  }
  if (sync(d.fd) != 0)
    return failed("sync the folder", dir, errno, true);
  return {};
}

Expected<void, FileError> write_file_atomically(const std::string &path, std::string_view data,
                                                const AtomicWriteOptions &opts) {
  const auto slash = path.rfind('/');
  return write_file_atomically(
      folder_of(path), slash == std::string::npos ? path : path.substr(slash + 1), data, opts);
}

Expected<StagedFile, FileError> stage_file(const std::string &path, std::string_view data,
                                           const AtomicWriteOptions &opts) {
  const auto slash = path.rfind('/');
  StagedFile s{.dir = folder_of(path),
               .name = slash == std::string::npos ? path : path.substr(slash + 1)};
  const FdCloser d{::open(s.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (d.fd < 0)
    return failed("open the folder", s.dir, errno);
  struct stat dst{};
  if (::fstat(d.fd, &dst) != 0)
    return failed("check the folder", s.dir, errno);
  if (auto ok = folder_ok(s.dir, dst); !ok)
    return Unexpected<FileError>{ok.error()};
  s.fd = create_temp(d.fd, s.name, opts.mode, s.tmp);
  if (s.fd < 0)
    return failed("create", join(s.dir, s.tmp), errno);
  const int fl = ::fcntl(s.fd, F_GETFL);
  int err = 0;
  if (!write_all(s.fd, data))
    err = errno;
  else if (::fchmod(s.fd, opts.mode) != 0)
    err = errno;
  else if ((opts.fsync_fn ? opts.fsync_fn(s.fd) : ::fsync(s.fd)) != 0)
    err = errno;
  else if (fl < 0 || ::fcntl(s.fd, F_SETFL, (fl & ~O_NONBLOCK) | O_APPEND) != 0)
    err = errno;
  if (err != 0) {
    const std::string tmp_path = join(s.dir, s.tmp);
    abandon_staged(s);
    return failed("write and sync", tmp_path, err);
  }
  return s;
}

Expected<void, FileError> commit_staged(StagedFile &s) {
  const std::string from = join(s.dir, s.tmp), to = join(s.dir, s.name);
  if (::rename(from.c_str(), to.c_str()) != 0) {
    const int err = errno;
    abandon_staged(s);
    return failed("rename", fmt::format("{} to {}", from, to), err);
  }
  return {};
}

void abandon_staged(StagedFile &s) {
  if (s.fd >= 0)
    ::close(s.fd);
  s.fd = -1;
  if (!s.tmp.empty())
    ::unlink(join(s.dir, s.tmp).c_str());
  s.tmp.clear();
}

int fsync_folder(const std::string &dir, int (*fsync_fn)(int fd)) {
  const FdCloser d{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (d.fd < 0)
    return errno;
  return (fsync_fn ? fsync_fn(d.fd) : ::fsync(d.fd)) == 0 ? 0 : errno;
}

Expected<int, FileError> open_own_file(const std::string &path, int flags, mode_t mode) {
  const int fd = ::open(path.c_str(), flags | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, mode);
  if (fd < 0)
    return failed("open", path, errno);
  FdCloser guard{fd};
  struct stat st{};
  if (::fstat(fd, &st) != 0)
    return failed("check", path, errno);
  if (!S_ISREG(st.st_mode))
    return refused(fmt::format("{}: not a regular file: refused", path));
  if (st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return refused(fmt::format("{}: owned by uid {}, mode {:04o}: refused; switch/lua only "
                               "writes a file owned by uid {} and not writable by group or others",
                               path, st.st_uid, st.st_mode & 07777, ::geteuid()));
  const int fl = ::fcntl(fd, F_GETFL);
  if (fl < 0 || ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0)
    return failed("set up", path, errno);
  guard.fd = -1;
  return fd;
}

Expected<std::string, FileError> read_fd_bounded(int fd, std::size_t max_bytes,
                                                 std::string_view what) {
  std::string bytes;
  char buf[65536];
  for (;;) {
    // At most one byte past the bound: enough to know the file is larger.
    const std::size_t room = max_bytes + 1 - bytes.size();
    const ssize_t n = ::read(fd, buf, room < sizeof buf ? room : sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return failed("read", what, errno);
    if (n == 0)
      return bytes;
    bytes.append(buf, static_cast<std::size_t>(n));
    if (bytes.size() > max_bytes)
      return refused(fmt::format("{}: larger than {} bytes: refused", what, max_bytes), EFBIG);
  }
}

Expected<std::string, FileError> read_file_bounded(const std::string &path, std::size_t max_bytes) {
  const FdCloser f{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)};
  if (f.fd < 0)
    return failed("open", path, errno);
  struct stat st{};
  if (::fstat(f.fd, &st) != 0)
    return failed("read", path, errno);
  if (!S_ISREG(st.st_mode))
    return refused(fmt::format("{}: not a regular file: refused", path), EINVAL);
  return read_fd_bounded(f.fd, max_bytes, path);
}

} // namespace switchlua
