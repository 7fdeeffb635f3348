// SPDX-License-Identifier: GPL-2.0-or-later
//
// common/safe_file.hpp: the file is replaced whole or not at all, no temp
// file is left behind, the mode is the one asked for, and both the file and
// its folder are fsynced (seen through the fsync seam).
#include "common/safe_file.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <pwd.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace switchlua;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/atomic-file-test-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string &name = "f") const { return path + "/" + name; }
  /// The names in the folder, sorted.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto &e : fs::directory_iterator(path))
      out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
};

std::string read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// What the fsync seam saw: for each call, whether the fd was a folder and
/// its inode; `fail_at` (1-based) makes that call fail with EIO.
struct SyncLog {
  struct Call {
    bool folder;
    ino_t ino;
  };
  std::vector<Call> calls;
  int fail_at = 0;
};
SyncLog *g_sync = nullptr;

int logged_fsync(int fd) {
  struct stat st{};
  ::fstat(fd, &st);
  g_sync->calls.push_back({S_ISDIR(st.st_mode), st.st_ino});
  if (static_cast<int>(g_sync->calls.size()) == g_sync->fail_at) {
    errno = EIO;
    return -1;
  }
  return ::fsync(fd);
}

struct SyncSeam {
  SyncLog log;
  SyncSeam() { g_sync = &log; }
  ~SyncSeam() { g_sync = nullptr; }
};

ino_t inode_of(const std::string &path) {
  struct stat st{};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_ino;
}

} // namespace

TEST(AtomicFile, ReplacesTheFileAndLeavesNoTempFile) {
  TempDir d;
  ASSERT_TRUE(write_file_atomically(d.file(), "old"));
  ASSERT_TRUE(write_file_atomically(d.file(), std::string("new\0bytes", 9)));
  EXPECT_EQ(read_file(d.file()), std::string("new\0bytes", 9));
  EXPECT_EQ(d.names(), std::vector<std::string>{"f"});
}

TEST(AtomicFile, SetsTheModeAskedForWhateverTheUmask) {
  TempDir d;
  const mode_t old = ::umask(077);
  auto r = write_file_atomically(d.file(), "x", {.mode = 0644});
  ::umask(old);
  ASSERT_TRUE(r) << r.error().message;
  struct stat st{};
  ASSERT_EQ(::stat(d.file().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
}

TEST(AtomicFile, FsyncsTheFileThenItsFolder) {
  TempDir d;
  SyncSeam seam;
  ASSERT_TRUE(write_file_atomically(d.file(), "data", {.fsync_fn = logged_fsync}));
  ASSERT_EQ(seam.log.calls.size(), 2u);
  EXPECT_FALSE(seam.log.calls[0].folder);
  EXPECT_EQ(seam.log.calls[0].ino, inode_of(d.file())) << "the temp file, renamed afterwards";
  EXPECT_TRUE(seam.log.calls[1].folder);
  EXPECT_EQ(seam.log.calls[1].ino, inode_of(d.path));
}

// Issue 40: the status file and the metrics textfile go on being written
// while StateSaveLocation's storage stalls its syncs: durable = false never
// syncs, and still replaces the file by rename.
TEST(AtomicFile, ANonDurableWriteNeverSyncsAndStillReplacesTheFile) {
  TempDir d;
  ASSERT_TRUE(write_file_atomically(d.file(), "old"));
  SyncSeam seam;
  ASSERT_TRUE(write_file_atomically(d.file(), "new", {.fsync_fn = logged_fsync, .durable = false}));
  EXPECT_EQ(seam.log.calls.size(), 0u);
  EXPECT_EQ(read_file(d.file()), "new");
  EXPECT_EQ(d.names(), std::vector<std::string>{"f"});
}

TEST(AtomicFile, AFailedFileSyncKeepsTheOldFileAndRemovesTheTempFile) {
  TempDir d;
  ASSERT_TRUE(write_file_atomically(d.file(), "old"));
  SyncSeam seam;
  seam.log.fail_at = 1;
  auto r = write_file_atomically(d.file(), "new", {.fsync_fn = logged_fsync});
  ASSERT_FALSE(r);
  EXPECT_FALSE(r.error().replaced);
  EXPECT_EQ(r.error().err, EIO);
  EXPECT_EQ(r.error().message, "cannot sync " + d.file() + ".tmp." + std::to_string(::getpid()) +
                                   ": " + std::strerror(EIO));
  EXPECT_EQ(read_file(d.file()), "old");
  EXPECT_EQ(d.names(), std::vector<std::string>{"f"});
}

TEST(AtomicFile, AFailedRenameKeepsTheTargetAndRemovesTheTempFile) {
  TempDir d;
  fs::create_directory(d.file("target"));
  std::ofstream(d.file("target") + "/keep") << "x"; // a non-empty folder cannot be replaced
  auto r = write_file_atomically(d.file("target"), "new");
  ASSERT_FALSE(r);
  EXPECT_FALSE(r.error().replaced);
  EXPECT_NE(r.error().message.find("cannot rename " + d.file("target") + ".tmp."),
            std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find(" to " + d.file("target") + ": "), std::string::npos);
  EXPECT_TRUE(fs::is_directory(d.file("target")));
  EXPECT_EQ(d.names(), std::vector<std::string>{"target"});
}

TEST(AtomicFile, AFailedFolderSyncSaysTheFileIsReplaced) {
  TempDir d;
  SyncSeam seam;
  seam.log.fail_at = 2;
  auto r = write_file_atomically(d.file(), "new", {.fsync_fn = logged_fsync});
  ASSERT_FALSE(r);
  EXPECT_TRUE(r.error().replaced);
  EXPECT_EQ(r.error().message,
            "cannot sync the folder " + d.path + ": " + std::string(std::strerror(EIO)));
  EXPECT_EQ(read_file(d.file()), "new");
}

TEST(AtomicFile, AMissingFolderIsAnErrorNamingTheFolder) {
  auto r = write_file_atomically("/nonexistent-dir/f", "x");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().err, ENOENT);
  EXPECT_EQ(r.error().message,
            "cannot open the folder /nonexistent-dir: No such file or directory");
}

TEST(AtomicFile, ASymlinkPlantedAtTheTempNameIsNeitherFollowedNorInTheWay) {
  TempDir d;
  std::ofstream(d.file("victim")) << "victim";
  const std::string planted = d.file() + ".tmp." + std::to_string(::getpid());
  fs::create_symlink(d.file("victim"), planted);
  auto r = write_file_atomically(d.file(), "x");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(read_file(d.file("victim")), "victim");
  EXPECT_EQ(read_file(d.file()), "x");
  EXPECT_TRUE(fs::is_symlink(planted)) << "left alone";
}

TEST(AtomicFile, AFifoPlantedAtTheTempNameDoesNotBlock) {
  TempDir d;
  ASSERT_EQ(::mkfifo((d.file() + ".tmp." + std::to_string(::getpid())).c_str(), 0666), 0);
  // In a child with a deadline: the old writer opened the FIFO and blocked.
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::alarm(60);
    ::_exit(write_file_atomically(d.file(), "x") ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(read_file(d.file()), "x");
}

TEST(AtomicFile, AFolderOthersCanWriteIsRefused) {
  TempDir d;
  ASSERT_EQ(::chmod(d.path.c_str(), 0777), 0);
  auto r = write_file_atomically(d.file(), "x");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().err, EPERM);
  EXPECT_NE(r.error().message.find(d.path + ": the folder is owned by uid"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("mode 0777: refused"), std::string::npos) << r.error().message;
  EXPECT_TRUE(d.names().empty());
  ASSERT_EQ(::chmod(d.path.c_str(), 0770), 0);
  EXPECT_FALSE(write_file_atomically(d.file(), "x")) << "group-writable";
  ASSERT_EQ(::chmod(d.path.c_str(), 01777), 0);
  EXPECT_TRUE(write_file_atomically(d.file(), "x")) << "sticky and ours, like /tmp";
}

/// The uid of nobody, or -1.
long nobody_uid() {
  const struct passwd *pw = ::getpwnam("nobody");
  return pw != nullptr ? static_cast<long>(pw->pw_uid) : -1;
}

TEST(AtomicFile, AFolderOwnedByAnotherUserIsRefused) {
  if (::geteuid() != 0 || nobody_uid() < 0)
    GTEST_SKIP() << "needs root and a user nobody";
  TempDir d;
  ASSERT_EQ(::chown(d.path.c_str(), static_cast<uid_t>(nobody_uid()), 0), 0);
  auto r = write_file_atomically(d.file(), "x");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().err, EPERM);
  EXPECT_TRUE(d.names().empty());
}

TEST(OpenOwnFile, OpensOurRegularFileAndCreatesIt) {
  TempDir d;
  auto fd = open_own_file(d.file(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  ASSERT_TRUE(fd) << fd.error().message;
  EXPECT_EQ(::write(*fd, "ab", 2), 2);
  ::close(*fd);
  EXPECT_EQ(read_file(d.file()), "ab");
}

TEST(OpenOwnFile, RefusesASymlinkAFifoAndAFileOthersCanWrite) {
  TempDir d;
  std::ofstream(d.file("victim")) << "victim";
  fs::create_symlink(d.file("victim"), d.file("link"));
  auto l = open_own_file(d.file("link"), O_WRONLY | O_APPEND);
  ASSERT_FALSE(l);
  EXPECT_EQ(l.error().err, ELOOP);
  ASSERT_EQ(::mkfifo(d.file("fifo").c_str(), 0600), 0);
  auto f = open_own_file(d.file("fifo"), O_RDWR);
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().message, d.file("fifo") + ": not a regular file: refused");
  ASSERT_EQ(::chmod(d.file("victim").c_str(), 0666), 0);
  auto w = open_own_file(d.file("victim"), O_WRONLY | O_APPEND);
  ASSERT_FALSE(w);
  EXPECT_NE(w.error().message.find("mode 0666: refused"), std::string::npos);
  EXPECT_EQ(read_file(d.file("victim")), "victim");
}

TEST(OpenOwnFile, RefusesAFileOwnedByAnotherUid) {
  if (::geteuid() != 0 || nobody_uid() < 0)
    GTEST_SKIP() << "needs root and a user nobody";
  TempDir d;
  std::ofstream(d.file()) << "theirs";
  ASSERT_EQ(::chown(d.file().c_str(), static_cast<uid_t>(nobody_uid()), 0), 0);
  auto r = open_own_file(d.file(), O_WRONLY | O_APPEND);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().err, EPERM);
  EXPECT_NE(r.error().message.find(d.file() + ": owned by uid " + std::to_string(nobody_uid())),
            std::string::npos)
      << r.error().message;
}

TEST(ReadBounded, ReadsUpToTheBoundAndRefusesMore) {
  TempDir d;
  std::ofstream(d.file()) << "12345";
  auto ok = read_file_bounded(d.file(), 5);
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(*ok, "12345");
  auto big = read_file_bounded(d.file(), 4);
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().err, EFBIG);
  EXPECT_EQ(big.error().message, d.file() + ": larger than 4 bytes: refused");
}

TEST(ReadBounded, DevZeroAndAFifoAreRefusedWithoutReadingOrBlocking) {
  auto z = read_file_bounded("/dev/zero", 1024);
  ASSERT_FALSE(z);
  EXPECT_EQ(z.error().message, "/dev/zero: not a regular file: refused");
  TempDir d;
  ASSERT_EQ(::mkfifo(d.file().c_str(), 0600), 0);
  auto f = read_file_bounded(d.file(), 1024);
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().err, EINVAL);
}

TEST(ReadBounded, AnEndlessDescriptorStopsAtTheBound) {
  const int fd = ::open("/dev/zero", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  auto r = read_fd_bounded(fd, 100000, "/dev/zero");
  ::close(fd);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().err, EFBIG);
}

TEST(AtomicFile, FolderOf) {
  EXPECT_EQ(folder_of("a"), ".");
  EXPECT_EQ(folder_of("/a"), "/");
  EXPECT_EQ(folder_of("/x/y/a"), "/x/y");
  EXPECT_EQ(folder_of("x/a"), "x");
}
