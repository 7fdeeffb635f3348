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
//   "hang S"        a storage stall of S seconds (issue 40; the hang phase
//                   of scripts/bench --cluster): the first call opens the
//                   window and rewrites the file in place to
//                   "until START END" (unix seconds, START = now, END =
//                   START + S); every call on the journal that comes before
//                   END, the first included, blocks until END, then goes
//                   through to the C library.  Calls after END go through at
//                   once: one arming, one stall.  When the file cannot be
//                   rewritten (not writable by slurmctld's user) every call
//                   blocks S seconds.
// Each call on the journal appends one line to <control file>.log (created
// by the first call): "<fsync|fdatasync> <path> <ok|EIO|errno N>", so a
// test can see which file the first sync after an injected failure was; a
// call that blocks also appends "<call> <path> blocked until END" before it
// blocks, and its result line ends " after N ms".
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

static double now_unix(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/// Rewrites the open control file `fd` to `text`; 0 when it could not.
/// Written over the old text first, then cut to its length: a call of
/// another thread that reads it meanwhile sees the new text (or the old
/// one), never an empty file that would let its sync through.
static int rewrite(int fd, const char *text, int len) {
  return pwrite(fd, text, (size_t)len, 0) == len && ftruncate(fd, len) == 0;
}

/// The hang modes of the control file `buf` (open as `fd`): the unix time
/// until which this call blocks ("hang S" opens the window, "until START
/// END" is one that is open or over), or 0 when it does not block.
static double hang_until(int fd, const char *buf) {
  double start, end, secs;
  if (sscanf(buf, "until %lf %lf", &start, &end) == 2)
    return end > now_unix() ? end : 0;
  if (sscanf(buf, "hang %lf", &secs) != 1 || secs <= 0)
    return 0;
  start = now_unix();
  end = start + secs;
  char out[64];
  int len = snprintf(out, sizeof out, "until %.6f %.6f\n", start, end);
  if (!rewrite(fd, out, len)) {
    // Not writable: every call opens a window of its own.
  }
  return end;
}

/// Blocks the calling thread until the unix time `end`.
static void block_until(double end) {
  struct timespec ts;
  ts.tv_sec = (time_t)end;
  ts.tv_nsec = (long)((end - (double)ts.tv_sec) * 1e9);
  while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) == EINTR) {
  }
}

/// Whether this call fails, by the control file (see the header); `*hang`
/// is set to the unix time until which it blocks first (0: it does not).
static int inject(double *hang) {
  const char *path = control_path();
  *hang = 0;
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0)
    fd = open(path, O_RDONLY | O_CLOEXEC); // a count is then not used up
  if (fd < 0)
    return 0;
  char buf[64] = {0};
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  int fail = 0;
  if (n > 0 && (strncmp(buf, "hang ", 5) == 0 || strncmp(buf, "until ", 6) == 0)) {
    *hang = hang_until(fd, buf);
  } else if (n > 0 && strncmp(buf, "always", 6) == 0) {
    fail = 1;
  } else if (n > 0) {
    long left = strtol(buf, NULL, 10);
    if (left > 0) {
      fail = 1;
      char out[32];
      int len = snprintf(out, sizeof out, "%ld\n", left - 1);
      if (!rewrite(fd, out, len)) {
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
  double hang;
  if (inject(&hang)) {
    note(name, file, "EIO");
    errno = EIO;
    return -1;
  }
  char after[48] = "";
  if (hang > 0) {
    char blocked[48];
    snprintf(blocked, sizeof blocked, "blocked until %.6f", hang);
    note(name, file, blocked);
    const double began = now_unix();
    block_until(hang);
    snprintf(after, sizeof after, " after %.0f ms", (now_unix() - began) * 1000);
  }
  int rc = real ? real(fd) : (errno = ENOSYS, -1);
  int err = errno;
  char result[96];
  if (rc == 0)
    snprintf(result, sizeof result, "ok%s", after);
  else
    snprintf(result, sizeof result, "errno %d%s", err, after);
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
