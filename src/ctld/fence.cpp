// SPDX-License-Identifier: GPL-2.0-or-later
// The control fence (ctld/fence.hpp): the journal's lock, taken within a
// bound or fenced out, the epoch file, and the two stat(2) calls that tell
// a controller it is no longer in control.
#include "ctld/fence.hpp"

#include "common/epoch_file.hpp"
#include "common/log_stamp.hpp"
#include "common/safe_file.hpp"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <thread>
#include <unistd.h>

namespace switchlua {
namespace {

/// An OFD write lock on the whole file; false with errno set.
bool try_lock(int fd) {
  struct flock fl{};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  fl.l_pid = 0; // required by F_OFD_*
  return ::fcntl(fd, F_OFD_SETLK, &fl) == 0;
}

bool is_contention(int e) {
  return e == EAGAIN || e == EACCES || e == EINTR;
}

/// What the lock file says of its holder, without the trailing newline.
std::string holder_of(int fd) {
  std::string holder;
  char buf[256];
  ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n > 0)
    holder.assign(buf, static_cast<std::size_t>(n));
  while (!holder.empty() && (holder.back() == '\n' || holder.back() == '\0'))
    holder.pop_back();
  return holder.empty() ? "holder unknown" : holder;
}

/// "<host> pid <pid> since <unix seconds>" into the locked file (best
/// effort: only the next holder's line loses it).
void write_holder(int fd) {
  struct utsname u{};
  ::uname(&u);
  const std::string who = fmt::format("{} pid {} since {}\n", u.nodename, ::getpid(),
                                      std::chrono::duration_cast<std::chrono::seconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count());
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, who.data(), who.size(), 0) < 0) {
    // Only the note for the next holder's line is lost.
  }
}

/// Waits up to `wait` for the lock on `fd`: 0, or the errno of the last try.
int lock_within(int fd, std::chrono::milliseconds wait) {
  const auto end = std::chrono::steady_clock::now() + wait;
  for (;;) {
    if (try_lock(fd))
      return 0;
    const int e = errno;
    if (!is_contention(e) || std::chrono::steady_clock::now() >= end)
      return e;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

} // namespace

std::uint64_t ControlFence::read_epoch(const std::string &epoch_path) {
  return read_epoch_file(epoch_path); // bounded, never blocking (common/epoch_file.hpp)
}

Expected<void> ControlFence::fence_out(const std::string &journal,
                                       const std::function<void(std::string_view)> &at) {
  auto err = [&](std::string what, int e) {
    return Unexpected<Error>{
        Error{log_line({}, "journal {}: {}: {}", journal, what, std::strerror(e))}};
  };
  // The fenced takeover: a fresh lock file, locked, renamed onto the name.
  at("fence-create");
  static std::atomic<unsigned> fresh_files{0};
  const std::string fresh = fmt::format("{}.{}.{}", lock_path_, ::getpid(), ++fresh_files);
  ::unlink(fresh.c_str());
  auto opened = open_own_file(fresh, O_RDWR | O_CREAT | O_EXCL, 0600);
  if (!opened)
    return err(fmt::format("cannot create the fresh lock file: {}", opened.error().message),
               opened.error().err);
  fd_ = *opened;
  if (!try_lock(fd_)) {
    const int le = errno;
    ::unlink(fresh.c_str());
    return err(fmt::format("cannot lock the fresh lock file {}", fresh), le);
  }
  at("fence-rename");
  if (::rename(fresh.c_str(), lock_path_.c_str()) != 0) {
    const int re = errno;
    ::unlink(fresh.c_str());
    return err(fmt::format("cannot rename {} onto {}", fresh, lock_path_), re);
  }
  if (const int se = fsync_folder(folder_of(lock_path_)); se != 0)
    return err(fmt::format("cannot sync the folder of {}", lock_path_), se);
  return {};
}

Expected<void> ControlFence::identify(const std::string &journal) {
  auto err = [&](std::string what) {
    return Unexpected<Error>{Error{log_line({}, "journal {}: {}", journal, what)}};
  };
  struct stat mine{}, named{}, ep{};
  if (::fstat(fd_, &mine) != 0 || ::stat(lock_path_.c_str(), &named) != 0 ||
      mine.st_dev != named.st_dev || mine.st_ino != named.st_ino)
    return err(fmt::format("lost the lock file {} while taking control (removed, or replaced "
                           "by another slurmctld's takeover)",
                           lock_path_));
  if (::stat(epoch_path_.c_str(), &ep) != 0 || read_epoch(epoch_path_) != epoch_)
    return err(fmt::format("the epoch {} changed while taking control (now {}): another "
                           "slurmctld took control at the same time",
                           epoch_, read_epoch(epoch_path_)));
  lock_dev_ = mine.st_dev;
  lock_ino_ = mine.st_ino;
  epoch_dev_ = ep.st_dev;
  epoch_ino_ = ep.st_ino;
  return {};
}

Expected<std::unique_ptr<ControlFence>> ControlFence::take(const std::string &journal,
                                                           std::chrono::milliseconds wait,
                                                           const FenceStepHook &step,
                                                           bool may_fence) {
  auto at = [&](std::string_view s) {
    if (step)
      step(s);
  };
  std::unique_ptr<ControlFence> f(new ControlFence);
  f->lock_path_ = journal + ".lock";
  f->epoch_path_ = journal + ".epoch";
  auto err = [&](std::string what, int e) {
    return Unexpected<Error>{Error{log_line({}, "journal {}: {}{}", journal, what,
                                            e ? fmt::format(": {}", std::strerror(e)) : "")}};
  };
  at("lock");
  // The lock, the fresh lock and the epoch are written as root or
  // SlurmUser: only in a folder no one else can write in (safe_file).
  if (auto ok = check_folder(folder_of(f->lock_path_)); !ok)
    return err(ok.error().message, 0);
  auto opened = open_own_file(f->lock_path_, O_RDWR | O_CREAT, 0600);
  if (!opened)
    return err(fmt::format("cannot open the lock file: {}", opened.error().message), 0);
  f->fd_ = *opened;
  if (const int e = lock_within(f->fd_, wait); e != 0) {
    if (!is_contention(e))
      return err(fmt::format("cannot lock {}", f->lock_path_), e);
    const std::string holder = holder_of(f->fd_);
    if (!may_fence)
      return err(fmt::format("another slurmctld ({}) holds the lock {} and took control after "
                             "this one last tried; waiting for it to be released",
                             holder, f->lock_path_),
                 0);
    ::close(f->fd_);
    f->fd_ = -1;
    if (auto r = f->fence_out(journal, at); !r)
      return Unexpected<Error>{r.error()};
    f->fenced_holder_ = holder;
  }
  write_holder(f->fd_);
  at("epoch-read");
  const std::uint64_t old = read_epoch(f->epoch_path_);
  f->epoch_ = old + 1;
  at("epoch-write");
  if (auto w = write_file_atomically(f->epoch_path_, fmt::format("{}\n", f->epoch_)); !w)
    return err(fmt::format("cannot write the epoch {}: {}", f->epoch_, w.error().message), 0);
  at("identify");
  if (auto r = f->identify(journal); !r)
    return Unexpected<Error>{r.error()};
  return f;
}

ControlFence::~ControlFence() {
  if (fd_ >= 0)
    ::close(fd_); // releases the OFD lock
}

std::optional<FenceStale> ControlFence::check() const {
  struct stat st{};
  if (::stat(epoch_path_.c_str(), &st) != 0 || st.st_dev != epoch_dev_ || st.st_ino != epoch_ino_) {
    const std::uint64_t now = read_epoch(epoch_path_);
    if (now != epoch_)
      return FenceStale{.epoch = epoch_,
                        .now = now,
                        .why = fmt::format("{} rewrote the epoch file {}",
                                           now > epoch_ ? "another slurmctld took control and"
                                                        : "something outside switch/lua",
                                           epoch_path_)};
  }
  if (::stat(lock_path_.c_str(), &st) != 0)
    return FenceStale{
        .epoch = epoch_,
        .now = read_epoch(epoch_path_),
        .why = fmt::format("its lock file {} was removed ({})", lock_path_, std::strerror(errno))};
  if (st.st_dev != lock_dev_ || st.st_ino != lock_ino_)
    return FenceStale{.epoch = epoch_,
                      .now = read_epoch(epoch_path_),
                      .why = fmt::format("its lock file {} was replaced (another slurmctld's "
                                         "fenced takeover)",
                                         lock_path_)};
  return std::nullopt;
}

} // namespace switchlua
