// SPDX-License-Identifier: GPL-2.0-or-later
//
// test/e2e/shim/readonly.c: an LD_PRELOAD shim that makes one folder read
// only for the process on demand, as a file system remounted read-only
// under it would (issue 24: "StateSaveLocation made read-only and writable
// again", scripts/chaos --backup).  The kernel refuses to remount a file
// system read-only while a file on it is open for writing (EBUSY), and
// switch/lua keeps its journal open: this shim fails, with EROFS, what a
// read-only remount would fail, descriptors opened before included.
// Loaded into every slurmctld by `scripts/cluster config --ctld-preload`.
//
// Control file (default /tmp/switch-lua-readonly, or the path in
// SWITCHLUA_READONLY), looked at every 100 ms at most: while it exists and
// holds an absolute folder path (its first line), every call below that
// would change a file at or under that folder fails with EROFS:
//   open, openat, creat (for writing, creating or truncating),
//   write, pwrite, writev, pwritev, ftruncate, fsync, fdatasync (on a
//   descriptor of such a file opened for writing), truncate, rename,
//   renameat, renameat2, link, linkat, symlink, unlink, unlinkat, mkdir,
//   mkdirat, rmdir.
// Reads, and every other file, go to the C library.  A descriptor's file is
// found with readlink(2) of /proc/self/fd/N, only while the folder is read
// only.  Calls through the C library's own internals (fopen, for example)
// are not seen.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/// The C library's `name`, looked up once (a GNU C statement expression).
#define REAL(name)                                                                                 \
  ({                                                                                               \
    static __typeof__(&name) real_;                                                                \
    if (!real_)                                                                                    \
      real_ = (__typeof__(&name))dlsym(RTLD_NEXT, #name);                                          \
    real_;                                                                                         \
  })

/// The folder while read-only (first line of the control file), "" else.
static char folder[4096];
static atomic_int ro_on;
static atomic_llong checked_ms = -1000;

static const char *control_path(void) {
  const char *p = getenv("SWITCHLUA_READONLY");
  return p && *p ? p : "/tmp/switch-lua-readonly";
}

/// Whether the folder is read-only now (the control file read again when
/// 100 ms have passed; raw system calls, so as not to come back here).
static int active(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  long long now = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
  if (now - atomic_load(&checked_ms) < 100)
    return atomic_load(&ro_on);
  atomic_store(&checked_ms, now);
  int fd = (int)syscall(SYS_openat, AT_FDCWD, control_path(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    atomic_store(&ro_on, 0);
    return 0;
  }
  char buf[sizeof folder];
  ssize_t n = syscall(SYS_read, fd, buf, sizeof buf - 1);
  syscall(SYS_close, fd);
  if (n <= 0 || buf[0] != '/') {
    atomic_store(&ro_on, 0);
    return 0;
  }
  buf[n] = '\0';
  buf[strcspn(buf, "\n")] = '\0';
  size_t len = strlen(buf);
  while (len > 1 && buf[len - 1] == '/')
    buf[--len] = '\0';
  if (!atomic_load(&ro_on) || strcmp(buf, folder) != 0)
    memcpy(folder, buf, len + 1);
  atomic_store(&ro_on, 1);
  return 1;
}

/// Whether the absolute `path` is the folder or under it.
static int inside(const char *path) {
  size_t len = strlen(folder);
  return strncmp(path, folder, len) == 0 && (path[len] == '\0' || path[len] == '/');
}

/// `path` (relative to `dirfd` unless absolute) under the folder.
static int path_inside(int dirfd, const char *path) {
  if (!path)
    return 0;
  if (path[0] == '/')
    return inside(path);
  char base[4096];
  if (dirfd == AT_FDCWD) {
    if (!getcwd(base, sizeof base))
      return 0;
  } else {
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
    ssize_t n = readlink(link, base, sizeof base - 1);
    if (n <= 0)
      return 0;
    base[n] = '\0';
  }
  char full[8200];
  snprintf(full, sizeof full, "%s/%s", base, path);
  return inside(full);
}

/// Descriptor `fd` is a file under the folder, opened for writing.
static int fd_inside(int fd) {
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0 || path[0] != '/')
    return 0;
  path[n] = '\0';
  int fl = fcntl(fd, F_GETFL);
  return fl >= 0 && (fl & O_ACCMODE) != O_RDONLY && inside(path);
}

static int writes(int flags) {
  return (flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC)) != 0;
}

#define REFUSE(cond, fail)                                                                         \
  do {                                                                                             \
    if (active() && (cond)) {                                                                      \
      errno = EROFS;                                                                               \
      return fail;                                                                                 \
    }                                                                                              \
  } while (0)

static mode_t mode_of(int flags, va_list ap) {
  return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

int open(const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_of(flags, ap);
  va_end(ap);
  REFUSE(writes(flags) && path_inside(AT_FDCWD, path), -1);
  return REAL(open)(path, flags, mode);
}
int open64(const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_of(flags, ap);
  va_end(ap);
  REFUSE(writes(flags) && path_inside(AT_FDCWD, path), -1);
  return REAL(open64)(path, flags, mode);
}
int openat(int dirfd, const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_of(flags, ap);
  va_end(ap);
  REFUSE(writes(flags) && path_inside(dirfd, path), -1);
  return REAL(openat)(dirfd, path, flags, mode);
}
int openat64(int dirfd, const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_of(flags, ap);
  va_end(ap);
  REFUSE(writes(flags) && path_inside(dirfd, path), -1);
  return REAL(openat64)(dirfd, path, flags, mode);
}
int creat(const char *path, mode_t mode) {
  REFUSE(path_inside(AT_FDCWD, path), -1);
  return REAL(creat)(path, mode);
}
int creat64(const char *path, mode_t mode) {
  REFUSE(path_inside(AT_FDCWD, path), -1);
  return REAL(creat64)(path, mode);
}
ssize_t write(int fd, const void *buf, size_t n) {
  REFUSE(fd_inside(fd), -1);
  return REAL(write)(fd, buf, n);
}
ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
  REFUSE(fd_inside(fd), -1);
  return REAL(pwrite)(fd, buf, n, off);
}
ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off) {
  REFUSE(fd_inside(fd), -1);
  return REAL(pwrite64)(fd, buf, n, off);
}
ssize_t writev(int fd, const struct iovec *iov, int cnt) {
  REFUSE(fd_inside(fd), -1);
  return REAL(writev)(fd, iov, cnt);
}
ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off) {
  REFUSE(fd_inside(fd), -1);
  return REAL(pwritev)(fd, iov, cnt, off);
}
int ftruncate(int fd, off_t len) {
  REFUSE(fd_inside(fd), -1);
  return REAL(ftruncate)(fd, len);
}
int ftruncate64(int fd, off64_t len) {
  REFUSE(fd_inside(fd), -1);
  return REAL(ftruncate64)(fd, len);
}
int fsync(int fd) {
  REFUSE(fd_inside(fd), -1);
  return REAL(fsync)(fd);
}
int fdatasync(int fd) {
  REFUSE(fd_inside(fd), -1);
  return REAL(fdatasync)(fd);
}
int truncate(const char *path, off_t len) {
  REFUSE(path_inside(AT_FDCWD, path), -1);
  return REAL(truncate)(path, len);
}
int rename(const char *from, const char *to) {
  REFUSE(path_inside(AT_FDCWD, from) || path_inside(AT_FDCWD, to), -1);
  return REAL(rename)(from, to);
}
int renameat(int fromfd, const char *from, int tofd, const char *to) {
  REFUSE(path_inside(fromfd, from) || path_inside(tofd, to), -1);
  return REAL(renameat)(fromfd, from, tofd, to);
}
int renameat2(int fromfd, const char *from, int tofd, const char *to, unsigned int flags) {
  REFUSE(path_inside(fromfd, from) || path_inside(tofd, to), -1);
  return REAL(renameat2)(fromfd, from, tofd, to, flags);
}
int link(const char *from, const char *to) {
  REFUSE(path_inside(AT_FDCWD, to), -1);
  return REAL(link)(from, to);
}
int linkat(int fromfd, const char *from, int tofd, const char *to, int flags) {
  REFUSE(path_inside(tofd, to), -1);
  return REAL(linkat)(fromfd, from, tofd, to, flags);
}
int symlink(const char *target, const char *path) {
  REFUSE(path_inside(AT_FDCWD, path), -1);
  return REAL(symlink)(target, path);
}
int unlink(const char *path) {
  REFUSE(path_inside(AT_FDCWD, path), -1);
  return REAL(unlink)(path);
}
int unlinkat(int dirfd, const char *path, int flags) {
  REFUSE(path_inside(dirfd, path), -1);
  return REAL(unlinkat)(dirfd, path, flags);
}
int mkdir(const char *path, mode_t mode) {
  REFUSE(path_inside(AT_FDCWD, path), -1);
  return REAL(mkdir)(path, mode);
}
int mkdirat(int dirfd, const char *path, mode_t mode) {
  REFUSE(path_inside(dirfd, path), -1);
  return REAL(mkdirat)(dirfd, path, mode);
}
int rmdir(const char *path) {
  REFUSE(path_inside(AT_FDCWD, path), -1);
  return REAL(rmdir)(path);
}
