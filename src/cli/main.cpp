// SPDX-License-Identifier: GPL-2.0-or-later
//
// switch-lua: try a switch.lua before it touches a cluster.
//   switch-lua check FILE
//   switch-lua simulate FILE --network STR [options]
//   switch-lua status [--json | --format table|json|prometheus] [--file PATH]
//   switch-lua settings [PARAMS]
#include "cli/cli_trust.hpp"
#include "cli/pool.hpp"
#include "cli/simulate.hpp"
#include "cli/status.hpp"
#include "ctld/config.hpp"
#include "lua/trust.hpp"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace {

/// SlurmUser for the ownership rule (switch.lua(5)): --slurm-user NAME|UID,
/// else the system slurm.conf's SlurmUser (cli/cli_trust.hpp), else root
/// only.  nullopt (after a message) for an unknown name or an untrusted
/// slurm.conf.
std::optional<uid_t> slurm_user_for(const std::string &opt) {
  if (!opt.empty()) {
    if (opt.find_first_not_of("0123456789") == std::string::npos && opt.size() < 11)
      return static_cast<uid_t>(std::stoul(opt));
    if (const struct passwd *pw = ::getpwnam(opt.c_str()))
      return pw->pw_uid;
    std::cerr << "switch-lua: --slurm-user " << opt << ": no such user\n";
    return std::nullopt;
  }
  auto su = switchlua::system_slurm_user();
  if (!su) {
    std::cerr << "switch-lua: " << su.error().message << '\n';
    return std::nullopt;
  }
  return *su;
}

/// The helpers of simulate, which run as the caller (root, often): only from
/// the install's libexec, or the build tree this binary is in
/// (cli/cli_trust.hpp).  false after a message.
bool set_helpers(switchlua::SimulateOptions &so) {
  auto supervisor = switchlua::helper_path("switch-lua-supervisor");
  auto runner = supervisor ? switchlua::helper_path("switch-lua-runner") : supervisor;
  if (!runner) {
    std::cerr << "switch-lua simulate: " << runner.error().message << '\n';
    return false;
  }
  so.supervisor = *supervisor;
  so.runner = *runner;
  return true;
}

/// What the command line set, besides SimulateOptions.
struct CliArgs {
  std::string check_file;
  bool check_json = false;
  std::string slurm_user;
  int timeout = static_cast<int>(switchlua::CtldConfig{}.switch_timeout.count());
  int retries = static_cast<int>(switchlua::CtldConfig{}.switch_retries);
  int kill_grace = static_cast<int>(switchlua::CtldConfig{}.switch_kill_grace.count());
  std::string bjc = "auto";
  std::string drain = switchlua::slurmctld_setting("switch_drain_on_failure").default_value;
  std::string status_file;
  bool status_json = false;
  std::string status_format = "table";
  std::string settings_params;
  switchlua::PoolReleaseOptions pool;
  std::string slurm_series{switchlua::newest_slurm_series().name};
};

/// switch_drain_on_failure's words, {off, on}.
std::array<std::string_view, 2> drain_words() {
  return switchlua::slurmctld_setting("switch_drain_on_failure").words;
}

/// The CLI11 range check of an integer setting, from the settings table.
CLI::Range setting_range(std::string_view name) {
  const auto &s = switchlua::slurmctld_setting(name);
  return CLI::Range(static_cast<double>(s.lo), static_cast<double>(s.hi));
}

/// `switch-lua settings [PARAMS]`: the settings line the plugin logs at
/// start-up for SlurmctldParameters=PARAMS (the defaults without PARAMS), on
/// stdout; the warnings it would log, on stderr.  A bad value: its error
/// on stderr, exit status 1.
int run_settings(const std::string &params) {
  for (const std::string &w : switchlua::slurmctld_parameters_warnings(params))
    std::cerr << w << '\n';
  auto c = switchlua::parse_slurmctld_parameters(params);
  if (!c) {
    std::cerr << c.error().message << '\n';
    return 1;
  }
  std::cout << switchlua::describe(*c) << '\n';
  return 0;
}

CLI::App *add_settings(CLI::App &app, CliArgs &a) {
  auto *st = app.add_subcommand("settings", "print the switch_* settings line that slurmctld "
                                            "logs at start-up for these SlurmctldParameters");
  st->add_option("PARAMS", a.settings_params,
                 "a SlurmctldParameters value, e.g. switch_timeout=5,enable_configless "
                 "(default: none, the defaults)");
  return st;
}

const char *const kSlurmUserHelp =
    "SlurmUser (name or uid) who may own the script, the directories above it and its "
    "modules besides root (default: SlurmUser of the system slurm.conf, $SLURM_CONF or "
    "/etc/slurm/slurm.conf, when root owns it; else root only)";

CLI::App *add_check(CLI::App &app, CliArgs &a) {
  auto *check = app.add_subcommand("check", "compile and load a switch.lua, list its hooks");
  check->add_option("FILE", a.check_file, "the script")->required();
  check->add_flag("--json", a.check_json, "machine-readable output");
  check->add_option("--slurm-user", a.slurm_user, kSlurmUserHelp);
  return check;
}

CLI::App *add_status(CLI::App &app, CliArgs &a) {
  auto *st = app.add_subcommand("status", "print the controller's switch/lua counters "
                                          "(from the status file slurmctld writes)");
  st->add_option("--file", a.status_file,
                 "the status file (default: StateSaveLocation/switch_lua.status, from "
                 "$SLURM_CONF or /etc/slurm/slurm.conf)");
  st->add_flag("--json", a.status_json, "machine-readable output (--format json)");
  st->add_option("--format", a.status_format,
                 "table (default), json, or prometheus (the Prometheus text exposition format)")
      ->check(CLI::IsMember({"table", "json", "prometheus"}));
  return st;
}

CLI::App *add_pool(CLI::App &app, CliArgs &a) {
  auto *pool = app.add_subcommand("pool", "fabric-ID pools (switch_pool_NAME)");
  pool->require_subcommand(1);
  auto *rel = pool->add_subcommand(
      "release", "free quarantined IDs (kept out of use after a failed teardown); as root or "
                 "SlurmUser, answered by the slurmctld in control");
  auto *job = rel->add_option("--job", a.pool.job_id, "every quarantined ID of this JobId")
                  ->check(CLI::Range(1u, UINT32_MAX));
  auto *name = rel->add_option("--pool", a.pool.pool, "the pool of --id");
  auto *id = rel->add_option("--id", a.pool.id, "the ID: frees the quarantine that holds it");
  name->needs(id);
  id->needs(name);
  job->excludes(name);
  name->excludes(job);
  rel->add_option("--dir", a.pool.dir,
                  "StateSaveLocation (default: from $SLURM_CONF or /etc/slurm/slurm.conf)");
  rel->add_option("--timeout", a.pool.timeout_s, "seconds to wait for slurmctld's answer")
      ->check(CLI::Range(1, 600))
      ->capture_default_str();
  return rel;
}

/// `switch-lua pool release`, its options checked.
int run_pool(const switchlua::PoolReleaseOptions &o) {
  if (o.job_id == 0 && o.pool.empty()) {
    std::cerr << "switch-lua pool release: give --job JOBID, or --pool NAME and --id ID\n";
    return 1;
  }
  return switchlua::run_pool_release(o);
}

/// --time-limit: a number of minutes or UNLIMITED ("" when valid).
std::string time_limit_ok(const std::string &v) {
  if (v == "UNLIMITED" || v == "unlimited" ||
      (!v.empty() && v.size() <= 9 && v.find_first_not_of("0123456789") == std::string::npos))
    return "";
  return "must be a number of minutes or UNLIMITED";
}

/// simulate's faults, injected into the one job.
void add_simulate_faults(CLI::App &sim, switchlua::SimulateOptions &so) {
  sim.add_option("--restart-during", so.restart_during,
                 "restart the simulated slurmctld during the setup or the teardown")
      ->check(CLI::IsMember({"setup", "teardown"}));
  sim.add_flag("--cancel-during-setup", so.cancel_during_setup,
               "cancel the job while job_start runs");
  sim.add_option("--fail-node", so.fail_nodes,
                 "these nodes of the job (a host list, e.g. node2) fail after its steps: DOWN, "
                 "the job ends NODE_FAIL, job_complete gets job.failed_nodes");
}

/// simulate's settings: the switch_* ones it honours, and the Slurm series.
void add_simulate_settings(CLI::App &sim, CliArgs &a) {
  sim.add_option("--timeout", a.timeout, "switch_timeout, seconds")
      ->check(setting_range("switch_timeout"))
      ->capture_default_str();
  sim.add_option("--kill-grace", a.kill_grace,
                 "switch_kill_grace, seconds between SIGTERM and SIGKILL at the deadline")
      ->check(setting_range("switch_kill_grace"))
      ->capture_default_str();
  sim.add_option("--retries", a.retries, "switch_retries")
      ->check(setting_range("switch_retries"))
      ->capture_default_str();
  sim.add_option("--drain-on-failure", a.drain, "switch_drain_on_failure")
      ->check(CLI::IsMember({std::string(drain_words()[1]), std::string(drain_words()[0])}))
      ->capture_default_str();
  sim.add_option("--block-job-complete", a.bjc, "override the script's block_job_complete")
      ->check(CLI::IsMember({"auto", "true", "false"}))
      ->capture_default_str();
  std::vector<std::string> series;
  for (const switchlua::SlurmSeries &s : switchlua::kSlurmSeries)
    series.emplace_back(s.name);
  sim.add_option("--slurm", a.slurm_series,
                 "the Slurm series to behave as (special steps, who asks the start-up "
                 "questions)")
      ->check(CLI::IsMember(series))
      ->capture_default_str();
}

void add_simulate(CLI::App &app, CliArgs &a, switchlua::SimulateOptions &so) {
  auto *sim = app.add_subcommand("simulate", "run one job through the script");
  sim->add_option("FILE", so.script, "the script")->required();
  sim->add_option("--network", so.network, "the job's --network string")->required();
  sim->add_option("--job-id", so.job_id, "JobId")->capture_default_str();
  // Issue 20: up to 65536 nodes (switch.lua(5), Bounds): a 10,000-node job tried offline.
  sim->add_option("--nodes", so.nodes, "number of nodes (node1..nodeN)")
      ->check(CLI::Range(1, 65536))
      ->capture_default_str();
  sim->add_option("--steps", so.steps, "number of job steps")
      ->check(CLI::Range(0, 32))
      ->capture_default_str();
  sim->add_flag("--batch", so.batch, "a batch job (sbatch): requeue-able");
  sim->add_flag("--no-requeue", so.no_requeue, "a batch job that may not be requeued");
  sim->add_option("--user", so.user, "user name")->capture_default_str();
  sim->add_option("--partition", so.partition, "partition")->capture_default_str();
  sim->add_option("--account", so.account, "job.account")->capture_default_str();
  sim->add_option("--qos", so.qos, "job.qos")->capture_default_str();
  sim->add_option("--time-limit", so.time_limit, "job.time_limit, minutes, or UNLIMITED (nil)")
      ->check(time_limit_ok, "MINUTES|UNLIMITED")
      ->capture_default_str();
  sim->add_option("--tasks", so.tasks,
                  "job.num_tasks and each step's num_tasks (default: one per node)");
  sim->add_option("--cpus", so.cpus, "job.num_cpus (default: one per task)");
  sim->add_option("--tres-per-node", so.tres_per_node, "job.tres_per_node, e.g. gres/gpu:2");
  sim->add_option("--tres-per-task", so.tres_per_task, "job.tres_per_task, e.g. cpu=2");
  sim->add_option("--cluster-name", so.cluster_name, "job.cluster_name and step.cluster_name")
      ->capture_default_str();
  auto *aj = sim->add_option("--array-job-id", so.array_job_id, "job.array_job_id");
  auto *at = sim->add_option("--array-task-id", so.array_task_id, "job.array_task_id");
  aj->needs(at);
  at->needs(aj);
  auto *hj = sim->add_option("--het-job-id", so.het_job_id, "job.het_job_id");
  auto *ho = sim->add_option("--het-job-offset", so.het_job_offset, "job.het_job_offset");
  hj->needs(ho);
  ho->needs(hj);
  add_simulate_settings(*sim, a);
  add_simulate_faults(*sim, so);
  sim->add_flag("--json", so.json, "machine-readable output");
  sim->add_option("--slurm-user", a.slurm_user, kSlurmUserHelp);
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"switch-lua: check and simulate a switch/lua script (switch.lua(5)), show the "
               "controller's counters"};
  app.require_subcommand(1);
  CliArgs a;
  switchlua::SimulateOptions so;
  auto *check = add_check(app, a);
  add_simulate(app, a, so);
  auto *status = add_status(app, a);
  auto *settings = add_settings(app, a);
  auto *pool_release = add_pool(app, a);

  CLI11_PARSE(app, argc, argv);

  if (settings->parsed())
    return run_settings(a.settings_params);

  if (pool_release->parsed())
    return run_pool(a.pool);

  if (status->parsed()) {
    auto path = switchlua::status_file_path(a.status_file);
    if (a.status_json && a.status_format != "table" && a.status_format != "json") {
      std::cerr << "switch-lua status: --json and --format " << a.status_format
                << " contradict each other\n";
      return 1;
    }
    const auto format = a.status_json || a.status_format == "json" ? switchlua::StatusFormat::Json
                        : a.status_format == "prometheus" ? switchlua::StatusFormat::Prometheus
                                                          : switchlua::StatusFormat::Table;
    return path ? switchlua::run_status(*path, format) : 1;
  }

  // One module search path whatever the caller's environment (switch.lua(5)).
  ::unsetenv("LUA_PATH");
  ::unsetenv("LUA_PATH_5_4");
  ::unsetenv("LUA_CPATH");
  ::unsetenv("LUA_CPATH_5_4");
  auto su = slurm_user_for(a.slurm_user);
  if (!su)
    return 2;
  switchlua::set_slurm_user(*su);

  if (check->parsed())
    return switchlua::run_check(a.check_file, a.check_json);

  so.config.switch_timeout = std::chrono::seconds(a.timeout);
  so.config.switch_retries = static_cast<std::uint32_t>(a.retries);
  so.config.switch_kill_grace = std::chrono::seconds(a.kill_grace);
  so.config.drain_on_failure = a.drain == drain_words()[1];
  if (so.no_requeue)
    so.batch = true;
  if (a.bjc != "auto")
    so.block_job_complete = a.bjc == "true";
  so.slurm = switchlua::find_slurm_series(a.slurm_series); // checked by IsMember
  if (!set_helpers(so))
    return 2;
  return switchlua::run_simulate(so);
}
