// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/simulate.hpp"
#include "cli/simulate_report.hpp"

#include "lua/trust.hpp"

#include "cli/lint.hpp"
#include "cli/sim_cluster.hpp"
#include "common/log_stamp.hpp"
#include "common/safe_file.hpp"
#include "ctld/core.hpp"
#include "ctld/persist.hpp"
#include "lua/codec.hpp"
#include "stepd/step_hooks.hpp"
#include "supervisor/script_guard.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <lua.hpp>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

namespace switchlua {
namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

JobArgs make_job(const SimulateOptions &o) {
  JobArgs j;
  j.job_id = o.job_id;
  j.user_id = 1000;
  j.group_id = 1000;
  j.user_name = o.user;
  j.name = "sim";
  j.num_nodes = o.nodes;
  j.nodes = o.nodes == 1 ? std::string("node1") : fmt::format("node[1-{}]", o.nodes);
  for (std::uint32_t i = 1; i <= o.nodes; ++i)
    j.node_names.push_back(fmt::format("node{}", i));
  j.partition = o.partition;
  if (!o.network.empty())
    j.network = o.network;
  j.account = o.account;
  j.qos = o.qos;
  j.num_tasks = o.tasks.value_or(o.nodes);
  j.num_cpus = o.cpus.value_or(j.num_tasks);
  j.tres_per_node = o.tres_per_node;
  j.tres_per_task = o.tres_per_task;
  j.array_job_id = o.array_job_id;
  j.array_task_id = o.array_task_id;
  j.het_job_id = o.het_job_id;
  j.het_job_offset = o.het_job_offset;
  j.cluster_name = o.cluster_name;
  std::uint32_t minutes = 0;
  if (o.time_limit != "UNLIMITED" && o.time_limit != "unlimited") {
    auto [p, ec] =
        std::from_chars(o.time_limit.data(), o.time_limit.data() + o.time_limit.size(), minutes);
    if (ec == std::errc() && p == o.time_limit.data() + o.time_limit.size())
      j.time_limit = minutes;
  }
  j.batch = o.batch;
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  // As details->submit_time: the job record's key with job_id.
  j.submit_time = now_ms / 1000;
  // As Slurm 24.11 makes it when the job is submitted (sluid.c).
  j.sluid = sluid_text(make_sluid(kSimClusterId, static_cast<std::uint64_t>(now_ms), 0));
  return j;
}

/// Waits (bounded) until `done` holds; the core's worker meanwhile fires
/// the periodic retry check (its retry_interval, 200 ms here).
template <typename F> bool wait_for(F done, std::chrono::seconds limit) {
  auto end = Clock::now() + limit;
  while (Clock::now() < end) {
    if (done())
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

std::string jobinfo_json(const std::optional<MsgpackBytes> &ji) {
  if (!ji)
    return "nil";
  auto j = msgpack_to_json(*ji);
  return j ? *j : "<" + j.error().message + ">";
}

/// The script as one slurmstepd on `node` loads it (a fresh Lua state: each
/// slurmstepd loads the script for itself, so module-level variables are not
/// shared), with its log lines in the timeline.  On a series whose
/// slurmstepd asks the start-up questions, asks both as the plugin does
/// (plugin/stepd_abi.cpp: slc_stepd_init); `special_steps` gets the
/// node's answer to setup_special_steps (false elsewhere).  A script that
/// does not load: its line, why in `load_error`, and nullopt.
std::optional<StepHooks> load_on_node(const SimulateOptions &o, const std::string &node,
                                      SimCluster &sim, std::string &load_error,
                                      bool *special_steps = nullptr) {
  if (special_steps)
    *special_steps = false;
  auto hooks = StepHooks::load(o.script, [&sim, node](LogLevel l, std::string_view t) {
    if (l <= LogLevel::Verbose) // debug lines (tracebacks) stay out of the timeline
      sim.note(node, "log", log_line({}, t), l == LogLevel::Error);
  });
  if (!hooks) {
    load_error = hooks.error().message;
    sim.note(node, "log", log_line({}, "{}; the step hooks will not run", load_error), true);
    return std::nullopt;
  }
  if (o.slurm->stepd_asks_start_questions)
    for (Hook h : {Hook::BlockJobComplete, Hook::SetupSpecialSteps}) {
      auto r = hooks->script().call(h, nullptr, nullptr, nullptr);
      if (!r)
        sim.note(node, "log",
                 log_line({}, "{}: {}; taken as false", hook_name(h), r.error().message), true);
      else if (h == Hook::SetupSpecialSteps && special_steps)
        *special_steps = r->flag;
    }
  return std::move(*hooks);
}

/// A step of the managed job on a node whose script did not load: the
/// plugin's line, and the step fails (switch.lua(5), "When the script does
/// not load": a managed step never runs without its step hooks).
void fail_unloaded(const JobArgs &job, std::uint32_t step, const std::string &node,
                   std::string_view hook, const std::string &load_error, SimCluster &sim) {
  sim.note(node, "log",
           log_line({}, "{}",
                    managed_step_cannot_run(
                        job.job_id, step, node, hook,
                        fmt::format("this node's script did not load ({})", load_error), true)),
           true);
}

/// Slurm 25.11+ with setup_special_steps true (slurmctld's answer,
/// `special_steps`): the batch step's step_init on the batch host, node1,
/// before the batch script starts (mgr.c: job_manager; no preinit, no
/// postfini).  A failed init is a failed batch launch: slurmctld drains
/// the node ("batch job complete failure") and requeues the job if it may
/// be requeued, else it ends FAILED; no other step runs.  nullopt on a
/// series without special steps or when slurmctld's answer was false.
std::optional<StepReport> run_batch_step(const SimulateOptions &o, const JobArgs &job,
                                         const MsgpackBytes &jobinfo, bool special_steps,
                                         SimCluster &sim) {
  if (!o.batch || !o.slurm->special_steps || !special_steps)
    return std::nullopt;
  const std::string node = job.node_names[0];
  StepReport rep{.step_id = kBatchStepId};
  bool node_says = false;
  std::string load_error;
  auto hooks = load_on_node(o, node, sim, load_error, &node_says);
  if (!hooks) {
    fail_unloaded(job, kBatchStepId, node, "step_init", load_error, sim);
    rep.failed = true;
  } else if (node_says) {
    StepArgs a{.job_id = job.job_id,
               .step_id = kBatchStepId,
               .id = step_id_text(job.job_id, kBatchStepId),
               .sluid = job.sluid,
               .partition = std::nullopt, // nil on a batch step (switch.lua(5))
               .node_name = node,
               .node_id = 0,
               .num_nodes = job.num_nodes,
               .num_tasks = job.num_tasks,
               .user_id = job.user_id,
               .user_name = job.user_name,
               .nodes = job.nodes,
               .network = job.network,
               .batch = true,
               .attempt = job.attempt,
               .cluster_name = job.cluster_name};
    StepVerdict in = hooks->init(a, &jobinfo);
    if (in.kind == StepVerdict::Kind::FailStep)
      rep.failed = true;
    else
      rep.env[node] = in.env;
  }
  if (rep.failed)
    sim.batch_launch_failed(node, o.batch && !o.no_requeue);
  else
    sim.note("slurmd", "step",
             fmt::format("step {}: the batch script starts on {}",
                         step_id_text(job.job_id, kBatchStepId), node));
  return rep;
}

/// Runs each step's preinit / init / postfini on each node, in-process as
/// slurmstepd does: one fresh Lua state per step and node (load_on_node()).
std::vector<StepReport> run_steps(const SimulateOptions &o, const JobArgs &job,
                                  const MsgpackBytes &jobinfo, SimCluster &sim) {
  std::vector<StepReport> out;
  for (std::uint32_t s = 0; s < o.steps; ++s) {
    StepReport rep{.step_id = s};
    for (std::size_t i = 0; i < job.node_names.size(); ++i) {
      const std::string node = job.node_names[i];
      std::string load_error;
      auto hooks = load_on_node(o, node, sim, load_error);
      if (!hooks) {
        fail_unloaded(job, s, node, "step_preinit", load_error, sim);
        rep.failed = true; // mgr.c: a failed preinit skips init and postfini
        continue;
      }
      StepArgs a{.job_id = job.job_id,
                 .step_id = s,
                 .id = step_id_text(job.job_id, s),
                 .sluid = job.sluid,
                 .partition = job.partition,
                 .node_name = node,
                 .node_id = static_cast<std::uint32_t>(i),
                 .num_nodes = job.num_nodes,
                 .num_tasks = job.num_tasks,
                 .user_id = job.user_id,
                 .user_name = job.user_name,
                 .nodes = job.nodes,
                 .network = job.network,
                 .attempt = job.attempt,

                 .cluster_name = job.cluster_name};
      if (hooks->preinit(a, &jobinfo).kind == StepVerdict::Kind::FailStep) {
        rep.failed = true; // mgr.c: a failed preinit skips init and postfini
        continue;
      }
      StepVerdict in = hooks->init(a, &jobinfo);
      if (in.kind == StepVerdict::Kind::FailStep)
        rep.failed = true;
      else
        rep.env[node] = in.env;
      StepVerdict post = hooks->postfini(a, &jobinfo);
      if (post.kind == StepVerdict::Kind::DrainNode)
        sim.drain_node(node, post.reason);
    }
    sim.note("srun", "step",
             rep.failed ? fmt::format("step {}.{}: srun: error: Error configuring interconnect",
                                      job.job_id, s)
                        : fmt::format("step {}.{} ran on {}", job.job_id, s, *job.nodes),
             rep.failed);
    out.push_back(std::move(rep));
  }
  return out;
}

/// Simulates `kill -9 slurmctld` at this instant: from here on the core
/// applies no outcome (CtldCore::halt()), and the job's switch state as
/// slurmctld holds it now is what its state file keeps.  Call with the
/// simulated Slurm's locks held, so that no outcome can slip in between
/// the check that made the caller inject and the kill.  Returns the saved
/// record.
std::string kill_ctld(CtldCore &core, SimCluster &sim, std::uint32_t job_id) {
  core.halt();
  auto st = core.state_of(job_id);
  sim.note("slurmctld", "restart", "slurmctld killed (kill -9): supervised calls abandoned");
  return encode_job_state(st ? &*st : nullptr);
}

/// The restart after kill_ctld(): a new slurmctld recovers `record` (the
/// job state file); the calls in flight die with the old supervisor.
void restart(std::unique_ptr<CtldCore> &core, const CoreOptions &co, SimCluster &sim,
             std::uint32_t job_id, const std::string &record) {
  sim.attach(nullptr);
  core.reset();
  sim.forget_holds();
  core = std::make_unique<CtldCore>(co, sim);
  sim.attach(core.get());
  std::lock_guard g(sim.mutex());
  auto d = decode_job_state(record);
  if (!d) {
    sim.note("slurmctld", "restart", d.error().message, true);
    return;
  }
  if (!*d) {
    sim.note("slurmctld", "restart", "slurmctld restarted: no switch state saved for the job");
    return;
  }
  sim.note("slurmctld", "restart",
           fmt::format("slurmctld restarted: JobId={} switch state {} recovered", job_id,
                       job_state_name((*d)->state)));
  core->adopt(**d);
  if (sim.job_ended()) // read_config.c: COMPLETING jobs get job_complete again
    core->job_complete(job_id);
  core->recover_job(job_id, sim.job_configuring());
  core->reconcile_journal();
}

bool setup_pending(const CtldCore &core, std::uint32_t id) {
  auto s = core.state_of(id);
  return s && (s->state == JobState::SetupRunning || s->state == JobState::SetupRunningEnded ||
               s->state == JobState::SetupUndoing || s->state == JobState::SetupUndoingEnded);
}

/// Not finished: its state, a call in flight, or actions not carried out.
bool teardown_pending(const CtldCore &core, std::uint32_t id) {
  auto s = core.state_of(id);
  return (s && !is_terminal(s->state) && s->state != JobState::Running) ||
         core.calls_in_flight() > 0 || core.decisions_pending() > 0;
}

void print_header(const SimulateOptions &o, const JobArgs &job) {
  fmt::print("switch-lua simulate {}\n  JobId={} SLUID={} Network={} Nodes={} ({}) {} {} Slurm "
             "{}\n  {}\n\n",
             o.script, job.job_id, *job.sluid, o.network, *job.nodes, job.num_nodes,
             o.batch ? "batch" : "interactive", o.no_requeue || !o.batch ? "no-requeue" : "requeue",
             o.slurm->name, describe(o.config));
  std::fflush(stdout);
}

void print_entry(const TimelineEntry &e) {
  fmt::print("{:>7} ms  {:<10} {}{}\n", e.t_ms, e.source, e.error ? "! " : "", e.text);
  std::fflush(stdout);
}

} // namespace

/// slurmctld's answers to the start-up questions.
struct StartAnswers {
  bool block_job_complete = false;
  /// setup_special_steps() true and the series honours it (the batch step
  /// then carries a stepinfo and runs step_init).
  bool special_steps = false;
};

/// --block-job-complete, or the script's answer asked as the plugin asks
/// it at slurmctld start (switch.lua contract: block_job_complete).
/// setup_special_steps is asked too, and a true answer logged, taken or
/// ignored as the plugin does on the series simulated
/// (common/slurm_series.hpp: setup_special_steps_line()).
static StartAnswers start_answers(const SimulateOptions &o, const CoreOptions &co,
                                  SimCluster &sim) {
  SupervisorClient probe(co.client, [&](CallId, LogLevel l, std::string_view t) {
    sim.note("script", "log", log_line({}, t), l == LogLevel::Error);
  });
  auto log_error = [&](const std::string &line) { sim.note("slurmctld", "log", line, true); };
  bool answer = false;
  if (o.block_job_complete)
    answer = *o.block_job_complete;
  else
    answer = ask_boolean_hook_or_false(probe, o.script, Hook::BlockJobComplete,
                                       o.config.switch_timeout, log_error);
  StartAnswers out{.block_job_complete = answer};
  if (ask_boolean_hook_or_false(probe, o.script, Hook::SetupSpecialSteps, o.config.switch_timeout,
                                log_error)) {
    sim.note("slurmctld", "log", std::string(setup_special_steps_line(*o.slurm)));
    out.special_steps = o.slurm->special_steps;
  }
  probe.shutdown();
  return out;
}

/// Preflight: a script the controller refuses (switch-lua check) is not
/// simulated, its calls would only fail to load.  False after the message.
static bool controller_accepts(const std::string &script) {
  auto pre = Script::load(script, [](LogLevel, std::string_view) {}, Script::Host::InProcess);
  const auto errors = controller_errors(pre);
  if (errors.empty())
    return true;
  fmt::print(stderr, "switch-lua simulate: {} (content {})\n", join(errors),
             file_content_hash(script));
  return false;
}

/// The job's end after its steps, or the failure of --fail-node's nodes.
static void end_the_job(const SimulateOptions &o, const std::vector<StepReport> &steps,
                        SimCluster &sim) {
  sim.end_after_steps(o.batch, o.batch && !o.no_requeue,
                      std::any_of(steps.begin(), steps.end(),
                                  [](auto &s) { return s.failed && s.step_id != kBatchStepId; }));
}

/// The journal's folder, as slurmctld keeps it under StateSaveLocation: a
/// fresh one per run, removed at the end ("" when it could not be made).
struct StateDir {
  std::string dir = (std::filesystem::temp_directory_path() / "switch-lua-sim.XXXXXX").string();
  StateDir() {
    if (!::mkdtemp(dir.data()))
      dir.clear();
  }
  ~StateDir() {
    std::error_code ec;
    if (!dir.empty())
      std::filesystem::remove_all(dir, ec);
  }
};

/// The engine's options for a simulation, as the plugin sets them.
static CoreOptions core_options(const SimulateOptions &o, const StateDir &state) {
  CoreOptions co;
  co.script = o.script;
  co.config = o.config;
  co.client.supervisor = o.supervisor;
  co.client.runner = o.runner;
  // The supervisor and runners apply the ownership rule with our SlurmUser.
  co.client.child_env.push_back(fmt::format("{}={}", kSlurmUserEnv, slurm_user()));
  co.retry_interval = std::chrono::milliseconds(200); // the "periodic check", compressed
  if (!state.dir.empty())
    co.journal_path = state.dir + "/switch_lua.journal";
  return co;
}

/// slurmctld allocates the job and calls switch_p_job_start.  Whether the
/// job is ours (--network set); if not, its launch goes on at once.
static bool allocate(const SimulateOptions &o, const JobArgs &job, CtldCore &core,
                     SimCluster &sim) {
  std::lock_guard g(sim.mutex());
  sim.note("slurmctld", "action",
           fmt::format("JobId={} allocated {}: switch job_start", job.job_id, *job.nodes));
  const bool ours = core.job_start(job, o.batch && !o.no_requeue);
  if (!ours) {
    sim.note("slurmctld", "log",
             log_line({.job_id = job.job_id}, ": no --network, the job is not ours"));
    sim.end_configuring(job.job_id);
  }
  return ours;
}

/// The job's steps, when its setup left it running with a jobinfo (the
/// stepinfo); none otherwise (the contract: no stepinfo, no step hooks).
static std::vector<StepReport> steps_of_a_set_up_job(const SimulateOptions &o, const JobArgs &job,
                                                     bool special_steps, CtldCore &core,
                                                     SimCluster &sim) {
  auto st = core.state_of(job.job_id);
  if (st && st->state == JobState::Running && st->jobinfo) {
    sim.note("slurmctld", "log",
             fmt::format("jobinfo (stepinfo of every step) = {}", jobinfo_json(st->jobinfo)));
    JobArgs run = job;
    run.attempt = st->job.attempt; // what the stepinfo carries (step.attempt)
    std::vector<StepReport> steps;
    if (auto batch = run_batch_step(o, run, *st->jobinfo, special_steps, sim)) {
      steps.push_back(*batch);
      if (batch->failed)
        return steps; // the batch script never started: no other step
    }
    for (StepReport &r : run_steps(o, run, *st->jobinfo, sim))
      steps.push_back(std::move(r));
    return steps;
  }
  if (!sim.job_ended())
    sim.note("slurmctld", "log", "no stepinfo: the step hooks do not run for this job");
  return {};
}

enum class Phase { Setup, Teardown };

/// --restart-during: kills slurmctld now (kill_ctld) if the job's setup
/// (or teardown) is in flight, and returns the saved record for restart().
/// Deterministic: the caller holds the simulated Slurm's locks from the
/// event that started the call to this check, so the call cannot report in
/// between.  When there is nothing to interrupt (job_start already reported
/// within switch_interactive_wait, no teardown runs for the job), kills
/// nothing, says so in the timeline and returns nothing.
static std::optional<std::string> kill_during(CtldCore &core, SimCluster &sim, std::uint32_t job_id,
                                              Phase phase) {
  std::lock_guard g(sim.mutex());
  auto s = core.state_of(job_id);
  const bool in_flight = phase == Phase::Setup ? setup_pending(core, job_id)
                                               : s && (s->state == JobState::TeardownRunning ||
                                                       s->state == JobState::TeardownRetryWait);
  if (!in_flight) {
    sim.note("simulate", "restart",
             phase == Phase::Setup
                 ? "--restart-during setup: nothing injected: job_start had already reported"
                 : "--restart-during teardown: nothing injected: no job_complete runs for the job",
             true);
    return std::nullopt;
  }
  return kill_ctld(core, sim, job_id);
}

/// The allocation and job_start, with --restart-during setup and
/// --cancel-during-setup injected while it runs; returns once the setup is
/// over: decided and carried out (effects wait for the fdatasync and worker).
static void set_up(const SimulateOptions &o, const JobArgs &job, std::unique_ptr<CtldCore> &core,
                   const CoreOptions &co, SimCluster &sim) {
  bool ours = false;
  std::optional<std::string> saved; // the job state file at a kill -9
  {
    std::lock_guard g(sim.mutex());
    ours = allocate(o, job, *core, sim);
    if (ours && o.restart_during == "setup")
      saved = kill_during(*core, sim, job.job_id, Phase::Setup);
  }
  if (saved)
    restart(core, co, sim, job.job_id, *saved);
  if (ours && o.cancel_during_setup) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::lock_guard g(sim.mutex());
    if (setup_pending(*core, job.job_id))
      sim.user_cancel();
    else
      sim.note("simulate", "log",
               "--cancel-during-setup: nothing injected: job_start had already reported", true);
  }
  auto limit = o.config.switch_timeout + o.config.switch_kill_grace + std::chrono::seconds(10);
  wait_for([&] { return !setup_pending(*core, job.job_id) && !core->decisions_pending(); }, limit);
}

/// The job's end (unless it ended already) and its teardown, with
/// --restart-during teardown injected while job_complete runs; returns once
/// the teardown is over (retries included).
static void tear_down(const SimulateOptions &o, const JobArgs &job,
                      const std::vector<StepReport> &steps, std::unique_ptr<CtldCore> &core,
                      const CoreOptions &co, SimCluster &sim) {
  std::optional<std::string> saved;
  {
    // The job's end and the kill under the same locks: the job_complete
    // the end started is still running when slurmctld dies.
    std::lock_guard g(sim.mutex());
    if (!sim.job_ended())
      end_the_job(o, steps, sim);
    if (o.restart_during == "teardown")
      saved = kill_during(*core, sim, job.job_id, Phase::Teardown);
  }
  if (saved)
    restart(core, co, sim, job.job_id, *saved);
  wait_for([&] { return !teardown_pending(*core, job.job_id); },
           (o.config.switch_timeout + o.config.switch_kill_grace + std::chrono::seconds(1)) *
                   (o.config.switch_retries + 3) +
               std::chrono::seconds(5));
}

int run_simulate(const SimulateOptions &o) {
  if (!controller_accepts(o.script))
    return 1;
  JobArgs job = make_job(o);
  SimCluster sim(job);
  if (auto bad = sim.fail_after_steps(o.fail_nodes); !bad.empty()) {
    fmt::print(stderr, "switch-lua simulate: --fail-node {}: {}\n", o.fail_nodes, bad);
    return 1;
  }
  if (!o.json) {
    print_header(o, job);
    sim.stream_to(print_entry);
  }
  StateDir state_dir;
  CoreOptions co = core_options(o, state_dir);
  const StartAnswers answers = start_answers(o, co, sim);
  co.block_job_complete = answers.block_job_complete;
  auto core = std::make_unique<CtldCore>(co, sim);
  sim.attach(core.get());
  set_up(o, job, core, co, sim);
  const std::vector<StepReport> steps =
      steps_of_a_set_up_job(o, job, answers.special_steps, *core, sim);
  tear_down(o, job, steps, core, co, sim);
  core.reset();
  if (o.json)
    print_json(o, job, co.block_job_complete, sim, steps);
  else
    print_human(o, job, co.block_job_complete, sim, steps);
  return 0;
}

} // namespace switchlua
