// SPDX-License-Identifier: GPL-2.0-or-later
//
// The two start-up questions (block_job_complete, setup_special_steps),
// asked through a supervised child, with the contract's fallback to false
// (ctld/core.hpp: ask_boolean_hook, ask_boolean_hook_or_false).
#include "ctld/core.hpp"

#include "common/log_stamp.hpp"

#include <condition_variable>
#include <fmt/format.h>
#include <memory>
#include <mutex>

namespace switchlua {

Expected<bool> ask_boolean_hook(SupervisorClient &client, const std::string &script, Hook h,
                                std::chrono::seconds timeout) {
  // Shared with the completion callback, which may run after a timed-out wait.
  struct Answer {
    std::mutex m;
    std::condition_variable cv;
    std::optional<Outcome> got;
  };
  auto answer = std::make_shared<Answer>();
  CallRequest req{
      .script = script, .hook = h, .job = {}, .jobinfo = std::nullopt, .timeout = timeout};
  auto id = client.submit(req, [answer](CallId, const Outcome &o) {
    std::lock_guard g(answer->m);
    answer->got = o;
    answer->cv.notify_all();
  });
  if (!id)
    return fail(fmt::format("{}: {}: {}", script, hook_name(h), id.error().message));
  std::unique_lock lk(answer->m);
  if (!answer->cv.wait_for(lk, timeout + std::chrono::seconds(5),
                           [&] { return answer->got.has_value(); }))
    return fail(fmt::format("{}: {}: no answer from the supervisor", script, hook_name(h)));
  if (answer->got->kind != OutcomeKind::Returned)
    return fail(fmt::format("{} {}", hook_name(h), describe(*answer->got)));
  return answer->got->ret.flag;
}

bool ask_boolean_hook_or_false(SupervisorClient &client, const std::string &script, Hook h,
                               std::chrono::seconds timeout,
                               const std::function<void(const std::string &)> &log_error) {
  auto answer = ask_boolean_hook(client, script, h, timeout);
  if (answer)
    return *answer;
  log_error(log_line({}, "{}; {} taken as false", answer.error().message, hook_name(h)));
  return false;
}

} // namespace switchlua
