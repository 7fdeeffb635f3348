// SPDX-License-Identifier: GPL-2.0-or-later
//
// The slurmctld half of the C ABI (switch_lua_core.h: slc_ctld_*, slc_free,
// slc_set_slurm_user) over the controller engine (ctld/core.hpp).  Every
// entry point runs in cabi::guarded() (abi_guard.hpp): nothing throws into
// slurmctld.  slc_ctld_pack/unpack also run in slurmd and slurmstepd, where
// records are kept as bytes and never interpreted.
#include "plugin/switch_lua_core.h"

#include "common/log_stamp.hpp"
#include "common/slurm_series.hpp"
#include "common/utf8.hpp"
#include "ctld/core.hpp"
#include "ctld/persist.hpp"
#include "lua/trust.hpp"
#include "plugin/abi_guard.hpp"
#include "plugin/ctld_args.hpp"
#include "stepd/stepinfo.hpp"
#include "supervisor/script_guard.hpp"

#include <cstdlib>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_set>

namespace switchlua {
namespace {

using cabi::copy_out;
using cabi::opt;

// recover_job()'s answer crosses the ABI as an int (switch_lua_core.h).
static_assert(static_cast<int>(Recovery::Nothing) == 0);
static_assert(static_cast<int>(Recovery::DelayLaunch) == 1);
static_assert(static_cast<int>(Recovery::ClearConfiguring) == 2);
static_assert(static_cast<int>(Recovery::LaunchNow) == 3);

constexpr std::uint64_t kHandleMagic = 0x73776c7561686e64ULL; // "swluahnd"

/// What job_ptr->switch_jobinfo points at.  In slurmctld: the job id (the
/// state lives in the core); elsewhere: the raw record, kept for a re-pack.
struct Handle {
  std::uint64_t magic = kHandleMagic;
  std::uint32_t job_id = 0;
  bool raw_only = false;
  std::string raw;
};

/// SlurmPort over the glue's C callbacks.
class CPort final : public SlurmPort {
public:
  explicit CPort(const slc_ctld_ops_t &ops) : ops_(ops) {}
  void lock() override { ops_.lock(); }
  void unlock() override { ops_.unlock(); }
  void end_configuring(std::uint32_t id) override { ops_.end_configuring(id); }
  // Every string handed to Slurm (reasons, log lines) is valid UTF-8, one
  // line, control characters escaped (log_escape, issue 21): untrusted.
  void requeue(std::uint32_t id, const std::string &r) override {
    ops_.requeue(id, log_escape(r).c_str());
  }
  void requeue_held(std::uint32_t id, const std::string &r) override {
    ops_.requeue_held(id, log_escape(r).c_str());
  }
  void cancel(std::uint32_t id, const std::string &r) override {
    ops_.cancel(id, log_escape(r).c_str());
  }
  void hold(std::uint32_t id, const std::string &n, bool nodes) override {
    ops_.hold(id, n.c_str(), nodes);
  }
  void release(std::uint32_t id, const std::string &n, bool nodes) override {
    ops_.release(id, n.c_str(), nodes);
  }
  void drain(const std::string &n, const std::string &r) override {
    ops_.drain(n.c_str(), log_escape(r).c_str());
  }
  void forget(std::uint32_t id) override;
  void save_state() override { ops_.save_state(); }
  bool job_may_run_on_nodes(std::uint32_t id, const std::string &nodes) override {
    return ops_.job_may_run && ops_.job_may_run(id, nodes.c_str());
  }
  bool stopping() override { return ops_.stopping && ops_.stopping(); }
  void schedule() override { ops_.schedule ? ops_.schedule() : void(); }
  void log(LogLevel l, const std::string &line) override {
    ops_.log(static_cast<int>(l), log_escape(line).c_str());
  }

private:
  slc_ctld_ops_t ops_;
};

struct Ctld {
  std::unique_ptr<CPort> port;
  std::unique_ptr<CtldCore> core;
  std::mutex handles_mu;
  std::map<std::uint32_t, Handle *> handles; // job id -> the handle slurmctld holds
  bool block_job_complete = false;
  bool setup_special_steps = false; ///< as answered at init, when Slurm honours it
  std::string good_copy; // the last good script's copy (script_guard.hpp), "" without a state dir
  std::string script;
  bool reconfigured = false; ///< started by a reconfigure (SLURMCTLD_RECONF)
  bool controlled = false;   ///< has held control in this process
};
Ctld *g_ctld = nullptr;

/// Every handle this core handed out and has not freed, in any process:
/// Slurm frees job records with their switch_jobinfo and job_array_split()
/// copies the pointer, so a pointer Slurm hands back is dereferenced only
/// once found here; who takes one out deletes it (retire(), slc_jobinfo_free).
std::mutex g_live_mu;
std::unordered_set<const Handle *> g_live;

Handle *track(Handle *h) {
  std::lock_guard g(g_live_mu);
  g_live.insert(h);
  return h;
}

/// Deletes h unless someone else took it out of g_live first.
void retire(Handle *h) {
  {
    std::lock_guard g(g_live_mu);
    if (g_live.erase(h) == 0)
      return;
  }
  delete h;
}

/// setup_special_steps() as slurmctld takes the script's answer: only where
/// Slurm honours it (slc_set_slurm_special_steps), logged either way when
/// true (switch.lua contract: setup_special_steps).
bool take_setup_special_steps(const slc_ctld_ops_t &ops, bool answer);

/// The stepmgr slurmstepd's settings (slc_stepmgr_init), while it is one.
struct Stepmgr {
  bool active = false;
  bool mismatch_fails = false;
  slc_log_fn log = nullptr;
};
Stepmgr g_stepmgr;

void CPort::forget(std::uint32_t id) {
  ops_.forget(id);
  Handle *h = nullptr;
  {
    std::lock_guard g(g_ctld->handles_mu);
    auto it = g_ctld->handles.find(id);
    if (it != g_ctld->handles.end()) {
      h = it->second;
      g_ctld->handles.erase(it);
    }
  }
  if (!h)
    return;
  retire(h);
  // One debug line per handle released (e2e t1303 counts them).
  log(LogLevel::Debug, log_line({.job_id = id, .hook = "jobinfo_free"},
                                ": jobinfo released (its teardown is over)"));
}

/// p as a handle if it is a live one of ours, else nullptr (*p unread).
Handle *handle_of(void *p) {
  auto *h = static_cast<Handle *>(p);
  std::lock_guard g(g_live_mu);
  return (g_live.count(h) && h->magic == kHandleMagic) ? h : nullptr;
}

Handle *new_handle(std::uint32_t job_id) {
  auto *h = track(new Handle{.job_id = job_id});
  Handle *old = nullptr;
  {
    std::lock_guard g(g_ctld->handles_mu);
    auto [it, fresh] = g_ctld->handles.emplace(job_id, h);
    if (!fresh) { // a new run of the same job: the old handle is replaced
      old = it->second;
      it->second = h;
    }
  }
  if (old)
    retire(old);
  return h;
}

/// One log line through the glue, from any entry point (before init: lost).
void ctld_log(const std::string &line) {
  if (g_ctld && g_ctld->port)
    g_ctld->port->log(LogLevel::Error, line);
}

/// Environment variable carrying the settings in force into the process
/// that `scontrol reconfigure` execs (Slurm 24.11 copies the environment).
constexpr const char *kGoodParamsVar = "SWITCHLUA_GOOD_SLURMCTLD_PARAMETERS";

/// The settings for init.  A bad value at a real start-up is an error (the
/// plugin refuses to load, as Slurm does for its own settings); at a
/// reconfigure (SLURMCTLD_RECONF, 24.11's re-exec) the previous settings,
/// in kGoodParamsVar, are kept and the error logged: a typo never stops it.
std::optional<CtldConfig> settings_at_init(const slc_ctld_ops_t *ops, const char *params) {
  auto cfg = parse_slurmctld_parameters(params ? params : "");
  std::optional<CtldConfig> out;
  if (cfg) {
    out = *cfg;
  } else {
    const char *reconf = std::getenv("SLURMCTLD_RECONF");
    const char *prev = std::getenv(kGoodParamsVar);
    auto kept = (reconf && prev) ? parse_slurmctld_parameters(prev) : cfg;
    if (!kept) {
      ops->log(SLC_LOG_ERROR, log_line({}, cfg.error().message).c_str());
      return std::nullopt;
    }
    ops->log(SLC_LOG_ERROR, log_line({},
                                     "{} at reconfigure; keeping the previous "
                                     "settings ({})",
                                     cfg.error().message, describe(*kept))
                                .c_str());
    out = *kept;
  }
  ::setenv(kGoodParamsVar, to_slurmctld_parameters(*out).c_str(), 1);
  return out;
}

bool take_setup_special_steps(const slc_ctld_ops_t &ops, bool answer) {
  // The line of the oldest or the newest series: the one table's words.
  if (answer)
    ops.log(SLC_LOG_INFO, std::string(setup_special_steps_line(cabi::slurm_special_steps()
                                                                   ? newest_slurm_series()
                                                                   : kSlurmSeries.front()))
                              .c_str());
  return answer && cabi::slurm_special_steps();
}

/// One error line of the stepmgr slurmstepd (slc_stepmgr_init's log).
void stepmgr_log(const std::string &line) {
  if (g_stepmgr.log)
    g_stepmgr.log(SLC_LOG_ERROR, log_escape(line).c_str());
}

/// The stepinfo of a step from the job's saved state `s` and what
/// slurmctld recorded of the step (`facts`, NULL: a batch or extern
/// credential), issue 21: the step's network and task count travel signed.
std::string step_record(const JobSwitchState &s, const slc_step_facts_t *facts,
                        bool mismatch_fails) {
  Stepinfo si{.jobinfo = *s.jobinfo,
              .sluid = s.job.sluid,
              .script_hash = s.script_hash,
              .mismatch_fails = mismatch_fails,
              .attempt = s.job.attempt,
              .restart_count = s.job.restart_count};
  si.network =
      (facts && facts->network && facts->network[0]) ? std::string(facts->network) : s.job.network;
  if (facts && facts->num_tasks)
    si.num_tasks = facts->num_tasks;
  si.cluster_name = s.job.cluster_name;
  return encode_stepinfo(si);
}

/// The stepinfo of a step the stepmgr slurmstepd creates, from the jobinfo
/// record slurmctld relayed (kept as bytes by slc_ctld_unpack): what
/// slurmctld's slc_ctld_stepinfo builds from its state, with this process's
/// switch_script_mismatch (slc_stepmgr_init).  RET as slc_ctld_stepinfo.
int stepmgr_stepinfo(Handle &h, const slc_step_facts_t *facts, char **buf, std::size_t *len) {
  auto s = decode_job_state(h.raw);
  if (!s) {
    stepmgr_log(log_line({}, "stepmgr: {}; the step gets no stepinfo", s.error().message));
    return 0;
  }
  if (!*s || !(*s)->jobinfo)
    return 0;
  h.job_id = (*s)->job.job_id;
  copy_out(step_record(**s, facts, g_stepmgr.mismatch_fails), buf, len);
  return 1;
}

/// The script's two start-up questions (block_job_complete,
/// setup_special_steps), asked once in a supervised child (no Lua in
/// slurmctld); sets o.block_job_complete and C's answers; a question the
/// script cannot answer is false, with an error line (switch.lua contract:
/// the boolean hooks).  Only in the process a reconfigure executed does its
/// supervisor get the last good copy (issue 24): nothing under
/// StateSaveLocation is written before this slurmctld holds control.
void ask_start_up_questions(Ctld &c, const slc_ctld_ops_t &ops, const char *script_path,
                            CoreOptions &o) {
  ClientOptions probe_opts = o.client;
  if (!c.reconfigured || !std::getenv(kGoodScriptEnv))
    probe_opts.good_copy.clear();
  SupervisorClient probe(
      probe_opts, [&](CallId, LogLevel l, std::string_view t) { c.port->log(l, log_line({}, t)); });
  auto log_error = [&](const std::string &line) { ops.log(SLC_LOG_ERROR, line.c_str()); };
  o.block_job_complete = ask_boolean_hook_or_false(probe, script_path, Hook::BlockJobComplete,
                                                   o.config.switch_timeout, log_error);
  c.block_job_complete = o.block_job_complete;
  bool sss = ask_boolean_hook_or_false(probe, script_path, Hook::SetupSpecialSteps,
                                       o.config.switch_timeout, log_error);
  c.setup_special_steps = take_setup_special_steps(ops, sss);
  probe.shutdown();
}

} // namespace

bool cabi::stepmgr_active() noexcept {
  return g_stepmgr.active;
}

} // namespace switchlua

using namespace switchlua;

extern "C" {

int slc_ctld_init(const slc_ctld_ops_t *ops, const char *script_path, const char *params,
                  const char *libexec_dir, const char *state_dir) {
  auto log = [ops](const std::string &line) { ops->log(SLC_LOG_ERROR, line.c_str()); };
  return cabi::guarded("init", "the plugin does not load", -1, log, [&] {
    auto cfg = settings_at_init(ops, params);
    if (!cfg)
      return -1;
    for (const std::string &w : slurmctld_parameters_warnings(params ? params : ""))
      ops->log(SLC_LOG_ERROR, log_line({}, w).c_str());
    auto *c = new Ctld;
    c->port = std::make_unique<CPort>(*ops);
    g_ctld = c;
    CoreOptions o;
    o.script = script_path;
    o.config = *cfg;
    o.client.supervisor = fmt::format("{}/switch-lua-supervisor", libexec_dir);
    o.client.runner = fmt::format("{}/switch-lua-runner", libexec_dir);
    c->script = script_path;
    c->reconfigured = std::getenv("SLURMCTLD_RECONF") != nullptr;
    // Issue 24: slurmctld initialises the plugin in a standby backup and in
    // a reconfigure's new process too: nothing under StateSaveLocation is
    // read or written here; the core takes control (journal, status file,
    // last good copy) from switch_p_restore (slc_ctld_take_control).
    o.take_control_at_start = false;
    // Issue 40: a holder keeping its lock past this is fenced out (fence.hpp).
    o.lock_wait = std::chrono::seconds(5);
    if (state_dir && state_dir[0]) {
      o.journal_path = fmt::format("{}/switch_lua.journal", state_dir);
      c->good_copy = o.client.good_copy = fmt::format("{}/switch_lua.good", state_dir);
      o.status_path = fmt::format("{}/switch_lua.status", state_dir);
    }
    if (const char *conf = std::getenv("SLURM_CONF"))
      o.client.child_env.push_back(fmt::format("SLURM_CONF={}", conf));
    // The ownership rule of the supervisor and runners (lua/trust.hpp).
    o.client.child_env.push_back(fmt::format("{}={}", kSlurmUserEnv, slurm_user()));
    ask_start_up_questions(*c, *ops, script_path, o);
    ops->log(SLC_LOG_INFO, log_line({}, "script {} ({}, block_job_complete={})", script_path,
                                    describe(o.config), o.block_job_complete ? "true" : "false")
                               .c_str());
    if (auto beyond = beyond_contract(o.config); !beyond.empty())
      ops->log(SLC_LOG_INFO,
               log_line({}, "beyond the switch.lua contract, as SlurmctldParameters set: {}",
                        fmt::join(beyond, "; "))
                   .c_str());
    c->core = std::make_unique<CtldCore>(std::move(o), *c->port);
    return 0;
  });
}

void slc_ctld_stop_children(void) {
  cabi::guarded_void("save", "calls in flight may outlive slurmctld", ctld_log, [] {
    if (!g_ctld || !g_ctld->core)
      return;
    const bool had = g_ctld->core->in_control();
    g_ctld->core->release_control(); // stops the children too
    if (had && !g_ctld->good_copy.empty())
      export_good_copy(g_ctld->good_copy); // for the process a reconfigure execs
  });
}

int slc_ctld_take_control(bool keep_jobs) {
  if (!g_ctld || !g_ctld->core)
    return 0;
  return cabi::guarded("restore", "this slurmctld does not take control", -1, ctld_log, [&] {
    if (g_ctld->core->in_control())
      return 0;
    if (!g_ctld->good_copy.empty()) {
      // The last good script survives a reconfigure (the new process's
      // first control, or the old one resuming after it failed), never a
      // cold start or a takeover.
      const bool reconf = keep_jobs || (g_ctld->reconfigured && !g_ctld->controlled);
      const std::string kept = keep_good_copy_at_init(g_ctld->good_copy, g_ctld->script, reconf,
                                                      std::getenv(kGoodScriptEnv));
      if (!kept.empty())
        g_ctld->port->log(kept.find(" is lost ") != std::string::npos ? LogLevel::Error
                                                                      : LogLevel::Info,
                          log_line({}, kept));
    }
    if (auto r = g_ctld->core->take_control(keep_jobs); !r)
      return 1; // logged: WAITING
    g_ctld->controlled = true;
    g_ctld->port->log(LogLevel::Info,
                      log_line({},
                               "this slurmctld holds control at epoch {}: journal read as "
                               "it is now{}",
                               g_ctld->core->epoch(),
                               keep_jobs ? " (resuming after a failed reconfigure)" : ""));
    return 0;
  });
}

int slc_ctld_retry_control(void) {
  if (!g_ctld || !g_ctld->core)
    return 0;
  return cabi::guarded("restore", "this slurmctld tries again", -1, ctld_log, [&] {
    if (!g_ctld->core->waiting_for_control())
      return g_ctld->core->in_control() ? 1 : 0;
    if (g_ctld->core->retry_control()) {
      g_ctld->controlled = true;
      g_ctld->port->log(LogLevel::Info,
                        log_line({},
                                 "this slurmctld holds control at epoch {} after WAITING: "
                                 "journal read as it is now",
                                 g_ctld->core->epoch()));
      return 1;
    }
    return g_ctld->core->waiting_for_control() ? -1 : 0;
  });
}

void slc_ctld_fini(void) {
  cabi::guarded_void("fini", "the supervisor may outlive slurmctld", ctld_log, [] {
    if (g_ctld)
      g_ctld->core.reset();
  });
}

bool slc_ctld_block_job_complete(void) {
  return g_ctld && g_ctld->block_job_complete;
}

bool slc_ctld_setup_special_steps(void) {
  return g_ctld && g_ctld->setup_special_steps;
}

void *slc_ctld_job_start(const slc_job_t *job) {
  if (!g_ctld || !g_ctld->core || !job)
    return nullptr;
  return cabi::guarded([&] { return log_subject({.job_id = job->job_id, .hook = "job_start"}); },
                       "the job is not managed by switch/lua", static_cast<void *>(nullptr),
                       ctld_log,
                       [&]() -> void * {
                         if (!g_ctld->core->job_start(job_args(*job), job->requeue_allowed))
                           return nullptr;
                         return new_handle(job->job_id);
                       });
}

bool slc_ctld_job_admit(uint32_t job_id) {
  return !g_ctld || !g_ctld->core ||
         cabi::guarded([&] { return log_subject({.job_id = job_id, .hook = "job_start"}); },
                       "the job is not kept PENDING", true, ctld_log,
                       [&] { return g_ctld->core->admit(job_id); });
}

bool slc_ctld_settle_setup(uint32_t job_id) {
  if (!g_ctld || !g_ctld->core)
    return false;
  return cabi::guarded([&] { return log_subject({.job_id = job_id, .hook = "job_start"}); },
                       "the launch is delayed until the setup is over", false, ctld_log,
                       [&] { return g_ctld->core->settle_setup(job_id); });
}

void slc_ctld_job_complete(uint32_t job_id, void *handle, const slc_job_end_t *end) {
  if (!g_ctld || !g_ctld->core || !handle_of(handle))
    return;
  const JobEnd e = job_end(end);
  cabi::guarded_void([&] { return log_subject({.job_id = job_id, .hook = "job_complete"}); },
                     "no teardown runs", ctld_log, [&] { g_ctld->core->job_complete(job_id, e); });
}

int slc_ctld_recover_job(uint32_t job_id, void *handle, bool configuring) {
  if (!g_ctld || !g_ctld->core || !handle_of(handle))
    return 0;
  return cabi::guarded(
      [&] { return log_subject({.job_id = job_id}) + " recovery"; },
      "the job's launch is left as is", 0, ctld_log,
      [&] { return static_cast<int>(g_ctld->core->recover_job(job_id, configuring)); });
}

void slc_ctld_reconcile(void) {
  if (!g_ctld || !g_ctld->core)
    return;
  cabi::guarded_void("journal reconcile", "attempts no job carries are not torn down", ctld_log,
                     [] { g_ctld->core->reconcile_journal(); });
}

void slc_ctld_pack(void *handle, char **buf, size_t *len) {
  *buf = nullptr;
  *len = 0;
  cabi::guarded_void("pack", "the job's switch state is not saved", ctld_log, [&] {
    Handle *h = handle_of(handle);
    if (h && h->raw_only) {
      copy_out(h->raw, buf, len);
      return;
    }
    std::optional<JobSwitchState> s;
    if (h && g_ctld && g_ctld->core)
      s = g_ctld->core->state_of(h->job_id);
    copy_out(encode_job_state(s ? &*s : nullptr), buf, len);
  });
}

int slc_ctld_unpack(const char *buf, size_t len, void **handle) {
  *handle = nullptr;
  return cabi::guarded("unpack", "the job keeps no switch state", -1, ctld_log, [&] {
    std::string_view bytes(buf ? buf : "", buf ? len : 0);
    if (!g_ctld || !g_ctld->core) { // slurmd / slurmstepd (stepmgr): keep, never interpret
      if (!bytes.empty())
        *handle = track(new Handle{.raw_only = true, .raw = std::string(bytes)});
      return 0;
    }
    auto s = decode_job_state(bytes);
    if (!s) {
      g_ctld->port->log(LogLevel::Error,
                        log_line({}, "{}; the job keeps no switch state", s.error().message));
      return -1;
    }
    if (!*s)
      return 0;
    std::uint32_t id = (*s)->job.job_id;
    g_ctld->port->log(LogLevel::Info,
                      log_line({.job_id = id}, "switch state {} recovered from the job state",
                               job_state_name((*s)->state)));
    g_ctld->core->adopt(std::move(**s));
    *handle = new_handle(id);
    return 0;
  });
}

int slc_ctld_stepinfo(void *handle, const slc_step_facts_t *facts, char **buf, size_t *len) {
  *buf = nullptr;
  *len = 0;
  return cabi::guarded("stepinfo", "the step gets no stepinfo", 0, ctld_log, [&] {
    Handle *h = handle_of(handle);
    if (h && h->raw_only && g_stepmgr.active) // the stepmgr slurmstepd
      return stepmgr_stepinfo(*h, facts, buf, len);
    if (!h || h->raw_only || !g_ctld || !g_ctld->core)
      return 0;
    auto s = g_ctld->core->state_of(h->job_id);
    if (!s || !s->jobinfo)
      return 0;
    copy_out(step_record(*s, facts, g_ctld->core->config().mismatch_fails), buf, len);
    return 1;
  });
}

int slc_jobinfo_free(void *handle, uint32_t job_id) {
  if (!handle)
    return 0;
  return cabi::guarded([&] { return log_subject({.job_id = job_id, .hook = "jobinfo_free"}); },
                       "the handle is kept", 0, ctld_log,
                       [&] {
                         auto *h = static_cast<Handle *>(handle);
                         {
                           std::lock_guard g(g_live_mu);
                           if (!g_live.count(h) || h->magic != kHandleMagic)
                             return 0; // never ours, or freed already: not read
                           if (!h->raw_only && h->job_id != job_id)
                             return 0; // another record's (job_array_split copied it)
                           g_live.erase(h);
                         }
                         if (g_ctld && !h->raw_only) {
                           std::lock_guard g(g_ctld->handles_mu);
                           auto it = g_ctld->handles.find(h->job_id);
                           if (it != g_ctld->handles.end() && it->second == h)
                             g_ctld->handles.erase(it);
                         }
                         delete h;
                         return 1;
                       });
}

uint32_t slc_jobinfo_job_id(void *handle) {
  Handle *h = handle_of(handle);
  return h ? h->job_id : 0;
}

int slc_stepmgr_init(const char *params, slc_log_fn log) {
  g_stepmgr.log = log;
  return cabi::guarded("stepmgr_init", "the steps of this stepmgr get no stepinfo", -1, stepmgr_log,
                       [&] {
                         auto cfg = parse_slurmctld_parameters(params ? params : "");
                         if (!cfg) {
                           stepmgr_log(log_line({},
                                                "stepmgr_init: {}; the steps of this stepmgr "
                                                "get no stepinfo",
                                                cfg.error().message));
                           return -1;
                         }
                         g_stepmgr.mismatch_fails = cfg->mismatch_fails;
                         g_stepmgr.active = true;
                         return 0;
                       });
}

void slc_stepmgr_fini(uint32_t /*job_id: named in the glue's log line*/) {
  g_stepmgr.active = false;
}

void slc_free(void *p) {
  std::free(p);
}

void slc_set_slurm_user(uint32_t uid) {
  set_slurm_user(static_cast<uid_t>(uid)); // noexcept: stores a number
}

} // extern "C"
