// SPDX-License-Identifier: GPL-2.0-or-later
//
// The files of `switch-lua pool release` (ctld/pool_release.hpp).
#include "ctld/pool_release.hpp"

#include "common/safe_file.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace switchlua {

using json = nlohmann::json;

namespace {

bool token_ok(const std::string &t) {
  if (t.empty() || t.size() > 64)
    return false;
  for (char c : t)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-')
      return false;
  return true;
}

/// A pool name as switch_pool_NAME declares it: [a-z][a-z0-9_]{0,31}.
bool pool_name_ok(const std::string &n) {
  if (n.empty() || n.size() > 32 || n[0] < 'a' || n[0] > 'z')
    return false;
  for (char c : n)
    if (!(c >= 'a' && c <= 'z') && !(c >= '0' && c <= '9') && c != '_')
      return false;
  return true;
}

/// `j[key]` as a uint32 in [lo, hi] into `out`; false (and `error` naming
/// the field and its value) when present and not one.
bool u32_field(const json &j, const char *key, std::uint32_t lo, std::uint32_t &out,
               std::string &error) {
  auto it = j.find(key);
  if (it == j.end())
    return true;
  if (!it->is_number_unsigned() || it->get<std::uint64_t>() < lo ||
      it->get<std::uint64_t>() > UINT32_MAX) {
    error = fmt::format("field '{}' is not an integer from {} to {}: {}", key, lo, UINT32_MAX,
                        it->dump());
    return false;
  }
  out = it->get<std::uint32_t>();
  return true;
}

json ids_json(const PoolIds &ids) {
  json out = json::object();
  for (const auto &[name, list] : ids)
    out[name] = list;
  return out;
}

} // namespace

std::string encode_pool_release_request(const PoolReleaseRequest &r) {
  json j{{"token", r.token}};
  if (r.job_id != 0)
    j["job_id"] = r.job_id;
  if (!r.pool.empty()) {
    j["pool"] = r.pool;
    j["id"] = r.id;
  }
  return j.dump() + "\n";
}

std::optional<PoolReleaseRequest> parse_pool_release_request(std::string_view text,
                                                             std::string &error) {
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    error = "not a JSON object";
    return std::nullopt;
  }
  PoolReleaseRequest r;
  if (!j.contains("token") || !j["token"].is_string() ||
      !token_ok(r.token = j["token"].get<std::string>())) {
    error = fmt::format("field 'token' is not 1 to 64 of [0-9A-Za-z_-]: {}",
                        j.contains("token") ? j["token"].dump() : "absent");
    return std::nullopt;
  }
  if (!u32_field(j, "job_id", 1, r.job_id, error) || !u32_field(j, "id", 0, r.id, error))
    return std::nullopt;
  if (j.contains("pool")) {
    if (!j["pool"].is_string() || !pool_name_ok(r.pool = j["pool"].get<std::string>())) {
      error = fmt::format("field 'pool' is not a pool name ([a-z][a-z0-9_]{{0,31}}): {}",
                          j["pool"].dump());
      return std::nullopt;
    }
    if (!j.contains("id")) {
      error = "field 'pool' without field 'id'";
      return std::nullopt;
    }
  }
  if ((r.job_id != 0) == !r.pool.empty()) {
    error = "give either 'job_id' or 'pool' and 'id'";
    return std::nullopt;
  }
  return r;
}

std::string encode_pool_release_answer(const PoolReleaseAnswer &a) {
  json rel = json::array();
  for (const PoolReleased &r : a.released)
    rel.push_back({{"job_id", r.job_id},
                   {"attempt", r.attempt},
                   {"ids", ids_json(r.ids)},
                   {"since", r.since}});
  return json{{"token", a.token}, {"error", a.error}, {"released", rel}}.dump() + "\n";
}

std::optional<PoolReleaseAnswer> parse_pool_release_answer(std::string_view text,
                                                           std::string &error) {
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("token") || !j["token"].is_string() ||
      !j.contains("released") || !j["released"].is_array()) {
    error = "not an answer of switch/lua";
    return std::nullopt;
  }
  PoolReleaseAnswer a;
  a.token = j["token"].get<std::string>();
  a.error = j.value("error", std::string());
  for (const json &r : j["released"]) {
    PoolReleased p;
    p.job_id = r.value("job_id", std::uint32_t{0});
    p.attempt = r.value("attempt", std::int64_t{0});
    p.since = r.value("since", std::int64_t{0});
    if (r.contains("ids") && r["ids"].is_object())
      for (const auto &[name, list] : r["ids"].items())
        if (list.is_array())
          for (const json &id : list)
            if (id.is_number_unsigned())
              p.ids[name].push_back(id.get<std::uint32_t>());
    a.released.push_back(std::move(p));
  }
  return a;
}

std::string utc_text(std::int64_t t) {
  const std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  ::gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string pool_ids_text(const PoolIds &ids) {
  std::string out;
  for (const auto &[name, list] : ids) {
    out += fmt::format("{}{} ", out.empty() ? "" : ", ", name);
    for (std::size_t i = 0; i < list.size(); ++i)
      out += fmt::format("{}{}", i ? "+" : "", list[i]);
  }
  return out;
}

std::optional<std::string> read_pool_release_request(const std::string &path, std::string &error) {
  error.clear();
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    if (errno != ENOENT)
      error = fmt::format("cannot open {}: {}", path, std::strerror(errno));
    return std::nullopt;
  }
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    error = fmt::format("{}: not a regular file: refused", path);
  else if ((st.st_uid != 0 && st.st_uid != ::geteuid()) || (st.st_mode & 022) != 0)
    error = fmt::format("{}: owned by uid {}, mode {:04o}: refused; a request must be owned by "
                        "root or uid {} and not writable by group or others",
                        path, st.st_uid, st.st_mode & 07777, ::geteuid());
  std::optional<std::string> text;
  if (error.empty()) {
    auto r = read_fd_bounded(fd, kPoolReleaseMaxBytes, path);
    if (r)
      text = std::move(*r);
    else
      error = r.error().message;
  }
  ::close(fd);
  return text;
}

} // namespace switchlua
