// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: test/proc/harness.hpp
//
// Helpers of the supervisor process tests: paths from meson, a sample job,
// and SyncClient, which runs calls through a real SupervisorClient (real
// supervisor, real runners) and waits for their outcomes.
#pragma once

#include "supervisor/client.hpp"

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace switchlua::test {

/// Options pointing at the built supervisor and runner.
ClientOptions default_options();
/// Absolute path of test/fixtures/<name>.lua.
std::string fixture(const std::string &name);
/// A job_start request for fixture `name`.
CallRequest request(const std::string &name,
                    std::chrono::seconds timeout = std::chrono::seconds(10));
/// The JSON text of msgpack bytes (jobinfo), or "<bad: ...>".
std::string json(const std::optional<MsgpackBytes> &bytes);
/// The value of `key` in a flat JSON object of strings and numbers (the
/// fixtures' outputs): a string unescaped (\n, \", \\), a number as its
/// text; "" when the key is absent.
std::string field(const std::string &json, const std::string &key);
/// The non-empty lines of `s`, in order.
std::vector<std::string> lines(const std::string &s);
class SyncClient;
/// Runs fixture hang_with_grandchild (2 s timeout) through `c` and expects
/// it timed out with its whole process group, grandchild included, gone
/// (gtest assertions; the contract: leftovers are killed at switch_timeout).
void expect_hang_killed_with_its_group(SyncClient &c);
/// kill(pid, 0) succeeds (a zombie counts as existing).
bool process_exists(pid_t pid);
/// /proc/PID/cmdline with its NULs as spaces (read_proc_file: "" when the
/// process is gone; an ifstream throws from its buffer on the ESRCH of a
/// process exiting during the read, which once failed a test on a busy
/// machine).
std::string proc_cmdline(pid_t pid);
/// kill(-pgid, 0) succeeds: some process (zombies included) is in the group.
bool group_exists(pid_t pgid);
/// Number of processes of group `pgid` that are not zombies (from /proc).
int live_group_members(pid_t pgid);

/// One finished call.
struct CallResult {
  Outcome outcome;
  std::vector<std::string> logs; ///< the script's lines, in order
};

/// A SupervisorClient whose calls can be awaited.  Thread-safe.
class SyncClient {
public:
  explicit SyncClient(ClientOptions opts = default_options());
  ~SyncClient();

  /// Submits and returns the id (fails the test on a submit error).
  CallId submit(CallRequest req);
  /// Waits for call `id` (at most `limit`); nullopt on timeout.
  std::optional<CallResult> wait(CallId id, std::chrono::seconds limit = std::chrono::seconds(30));
  /// submit() + wait().
  CallResult run(CallRequest req);
  /// Waits until call `id` has logged a line containing `text`; false on timeout.
  bool wait_for_log(CallId id, const std::string &text,
                    std::chrono::seconds limit = std::chrono::seconds(10));
  /// Whether call `id` has completed.
  bool finished(CallId id);
  /// Ids of the calls whose process started, in the order the supervisor
  /// reported it (its dispatch order).
  std::vector<CallId> started_order();
  /// Called on the I/O thread for every log line (before it is stored).
  void set_log_observer(std::function<void(CallId, const std::string &)> f);

  SupervisorClient &client() { return *client_; }
  /// Destroys the SupervisorClient (shutdown).
  void destroy();

private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<CallId, std::vector<std::string>> logs_;
  std::map<CallId, Outcome> outcomes_;
  std::vector<CallId> started_;
  std::function<void(CallId, const std::string &)> observer_;
  std::unique_ptr<SupervisorClient> client_;
};

} // namespace switchlua::test
