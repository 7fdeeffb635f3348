// SPDX-License-Identifier: GPL-2.0-or-later
//
// test/e2e/shim/fail_fsync.c: an LD_PRELOAD shim that makes fsync(2) and
// fdatasync(2) of switch/lua's journal fail with EIO on demand, as a disk
// whose writeback failed does (issue 24; the e2e test t0911 (e)).  Loaded
// into slurmctld by `scripts/cluster config --ctld-preload` (which builds
// it with the chroot's cc).
//
// It touches only descriptors whose file (readlink of /proc/self/fd/N) has
// a base name beginning "switch_lua.journal" other than the lock file: the
// journal and the temp file of its snapshot.  Every other descriptor, and
// every call while the control file is absent, goes to the C library.
//
// Control file (default /tmp/switch-lua-fail-fsync, or the path in
// SWITCHLUA_FAIL_FSYNC), read at each call on the journal:
//   absent or "0"   the call goes through
//   "always"        the call fails with EIO
//   N (1..)         the call fails with EIO and the file is rewritten N-1
//                   (so "1" fails the next call only), in place when the
//                   file is writable by slurmctld's user (else every call
//                   fails)
// Each call on the journal appends one line to <control file>.log (created
// by the first call): "<fsync|fdatasync> <path> <ok|EIO|errno N>", so a
// test can see which file the first sync after an injected failure was.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *control_path(void) {
  const char *p = getenv("SWITCHLUA_FAIL_FSYNC");
  return p && *p ? p : "/tmp/switch-lua-fail-fsync";
}

/// The path of `fd` into `buf` when it is one of the journal's files.
static int is_journal(int fd, char *buf, size_t size) {
  char link[64];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, buf, size - 1);
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  const char *base = strrchr(buf, '/');
  base = base ? base + 1 : buf;
  if (strncmp(base, "switch_lua.journal", 18) != 0)
    return 0;
  size_t len = strlen(base);
  return !(len >= 5 && strcmp(base + len - 5, ".lock") == 0);
}

/// Whether this call fails, by the control file (see the header).
static int inject(void) {
  const char *path = control_path();
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0)
    fd = open(path, O_RDONLY | O_CLOEXEC); // a count is then not used up
  if (fd < 0)
    return 0;
  char buf[32] = {0};
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  int fail = 0;
  if (n > 0 && strncmp(buf, "always", 6) == 0) {
    fail = 1;
  } else if (n > 0) {
    long left = strtol(buf, NULL, 10);
    if (left > 0) {
      fail = 1;
      char out[32];
      int len = snprintf(out, sizeof out, "%ld\n", left - 1);
      if (ftruncate(fd, 0) != 0 || pwrite(fd, out, (size_t)len, 0) != len) {
        // The next call fails too: the test sees it in the log.
      }
    }
  }
  close(fd);
  return fail;
}

static void note(const char *call, const char *file, const char *result) {
  char path[4096];
  snprintf(path, sizeof path, "%s.log", control_path());
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
  if (fd < 0)
    return;
  char line[4200];
  int len = snprintf(line, sizeof line, "%s %s %s\n", call, file, result);
  if (len > 0 && write(fd, line, (size_t)len) < 0) {
    // Only the note is lost.
  }
  close(fd);
}

static int sync_call(const char *name, int fd) {
  int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, name);
  char file[4096];
  if (!is_journal(fd, file, sizeof file))
    return real ? real(fd) : (errno = ENOSYS, -1);
  if (inject()) {
    note(name, file, "EIO");
    errno = EIO;
    return -1;
  }
  int rc = real ? real(fd) : (errno = ENOSYS, -1);
  int err = errno;
  char result[32];
  if (rc == 0)
    snprintf(result, sizeof result, "ok");
  else
    snprintf(result, sizeof result, "errno %d", err);
  note(name, file, result);
  errno = err;
  return rc;
}

int fsync(int fd) {
  return sync_call("fsync", fd);
}
int fdatasync(int fd) {
  return sync_call("fdatasync", fd);
}
