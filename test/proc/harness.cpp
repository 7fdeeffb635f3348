// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: test/proc/harness.cpp
#include "harness.hpp"

#include "lua/codec.hpp"
#include "supervisor/proc_scan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <sstream>

namespace switchlua::test {

ClientOptions default_options() {
  ClientOptions o;
  o.supervisor = SWITCHLUA_SUPERVISOR_PATH;
  o.runner = SWITCHLUA_RUNNER_PATH;
  return o;
}

std::string fixture(const std::string &name) {
  return std::string(SWITCHLUA_FIXTURES) + "/" + name + ".lua";
}

CallRequest request(const std::string &name, std::chrono::seconds timeout) {
  CallRequest r;
  r.script = fixture(name);
  r.hook = Hook::JobStart;
  r.job.job_id = 42;
  r.job.user_id = 1000;
  r.job.user_name = "alice";
  r.job.nodes = "node[1-2]";
  r.job.node_names = {"node1", "node2"};
  r.job.num_nodes = 2;
  r.job.network = "switchlua:test";
  r.timeout = timeout;
  return r;
}

std::string json(const std::optional<MsgpackBytes> &bytes) {
  if (!bytes)
    return "nil";
  auto j = msgpack_to_json(*bytes);
  return j ? *j : "<bad: " + j.error().message + ">";
}

bool process_exists(pid_t pid) {
  return ::kill(pid, 0) == 0;
}

std::string proc_cmdline(pid_t pid) {
  std::string s = read_proc_file("/proc/" + std::to_string(pid) + "/cmdline", 1 << 20);
  std::replace(s.begin(), s.end(), '\0', ' ');
  return s;
}

bool group_exists(pid_t pgid) {
  return ::kill(-pgid, 0) == 0;
}

int live_group_members(pid_t pgid) {
  int n = 0;
  for (const ProcEntry &e : scan_processes())
    n += e.pgrp == pgid && e.state != 'Z';
  return n;
}

SyncClient::SyncClient(ClientOptions opts) {
  client_ = std::make_unique<SupervisorClient>(
      std::move(opts), [this](CallId id, LogLevel, std::string_view text) {
        std::function<void(CallId, const std::string &)> obs;
        {
          std::lock_guard lock(mu_);
          obs = observer_;
        }
        if (obs)
          obs(id, std::string(text));
        std::lock_guard lock(mu_);
        logs_[id].emplace_back(text);
        cv_.notify_all();
      });
}

SyncClient::~SyncClient() {
  destroy();
}

void SyncClient::destroy() {
  client_.reset();
}

void SyncClient::set_log_observer(std::function<void(CallId, const std::string &)> f) {
  std::lock_guard lock(mu_);
  observer_ = std::move(f);
}

CallId SyncClient::submit(CallRequest req) {
  auto id = client_->submit(
      std::move(req),
      [this](CallId cid, const Outcome &o) {
        std::lock_guard lock(mu_);
        outcomes_[cid] = o;
        cv_.notify_all();
      },
      [this](CallId cid, std::chrono::milliseconds) {
        std::lock_guard lock(mu_);
        started_.push_back(cid);
        cv_.notify_all();
      });
  EXPECT_TRUE(id.has_value()) << (id ? "" : id.error().message);
  return id ? *id : 0;
}

std::optional<CallResult> SyncClient::wait(CallId id, std::chrono::seconds limit) {
  std::unique_lock lock(mu_);
  if (!cv_.wait_for(lock, limit, [&] { return outcomes_.count(id) != 0; }))
    return std::nullopt;
  return CallResult{outcomes_[id], logs_[id]};
}

CallResult SyncClient::run(CallRequest req) {
  const CallId id = submit(std::move(req));
  auto r = wait(id);
  EXPECT_TRUE(r.has_value()) << "call " << id << " did not finish in time";
  return r ? *r : CallResult{};
}

bool SyncClient::wait_for_log(CallId id, const std::string &text, std::chrono::seconds limit) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, limit, [&] {
    for (const std::string &l : logs_[id])
      if (l.find(text) != std::string::npos)
        return true;
    return false;
  });
}

std::vector<CallId> SyncClient::started_order() {
  std::lock_guard lock(mu_);
  return started_;
}

bool SyncClient::finished(CallId id) {
  std::lock_guard lock(mu_);
  return outcomes_.count(id) != 0;
}

std::string field(const std::string &json, const std::string &key) {
  const std::string k = "\"" + key + "\":";
  auto p = json.find(k);
  if (p == std::string::npos)
    return {};
  p += k.size();
  if (json[p] != '"')
    return json.substr(p, json.find_first_of(",}", p) - p);
  std::string out;
  for (++p; p < json.size() && json[p] != '"'; ++p) {
    if (json[p] == '\\' && json[p + 1] == 'n') {
      out += '\n';
      ++p;
    } else if (json[p] == '\\') {
      out += json[++p];
    } else {
      out += json[p];
    }
  }
  return out;
}

std::vector<std::string> lines(const std::string &s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);)
    if (!l.empty())
      out.push_back(l);
  return out;
}

void expect_hang_killed_with_its_group(SyncClient &c) {
  CallResult r = c.run(request("hang_with_grandchild", std::chrono::seconds(2)));
  ASSERT_EQ(r.outcome.kind, OutcomeKind::TimedOut) << describe(r.outcome);
  ASSERT_EQ(r.logs.size(), 1u);
  int pgid = 0, grandchild = 0;
  ASSERT_EQ(std::sscanf(r.logs[0].c_str(), "pgid=%d grandchild=%d", &pgid, &grandchild), 2)
      << r.logs[0];
  EXPECT_FALSE(group_exists(pgid)) << "a process of group " << pgid << " survived";
  EXPECT_FALSE(process_exists(grandchild));
}

} // namespace switchlua::test
