#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# scripts/bench_cluster.py: the side-by-side cluster benchmark behind
# `scripts/bench --cluster [--quick] [--reps N] [--configs A,B,C]
# [--phases srun,array,burst,big,wide,hang] [--results FILE]`.  Run it through
# scripts/bench.  --configs and --phases run only those configurations and
# phases (the rows of the others stay "-"); --results FILE keeps each
# configuration's results of each repetition as it ends, and a run given the
# file of an earlier one (same sizes) runs only what is missing and prints
# the table of them all, so the five full-size repetitions can be spread
# over several runs.
#
# On the project's own cluster (scripts/cluster, 3 nodes, 240 job slots with
# OverSubscribe=FORCE:40, Epilog=/bin/true and SlurmctldDebug=info for every
# configuration, and its slurmd at nice NODE_NICE), in ONE run, with the
# configurations rotated over the repetitions:
#   A   no switch plugin
#   B   PrologSlurmctld=/bin/true (srun and array phases); for the burst the
#       cluster is booted again with a PrologSlurmctld sh script that sleeps
#       3 s for jobs named sleep3 (the same work as C's hook)
#   C   SwitchType=switch/lua, a trivial script (sleeps 3 s in job_start for
#       jobs named sleep3), jobs with --network
#   C0  the C cluster, jobs without --network
# it measures
#   srun       sequential `srun -v -N1 true`: wall time (median, p90) and the
#              share that made srun's first readiness poll (no "Waiting for
#              resource configuration" line)
#   array      a burst array of trivial jobs: submit -> all done
#   burst3     a 240-task array whose setup takes 3 s: setups at once (max
#              overlap of the hooks' start/end marks), setup latency (submit ->
#              hook end, median and max), whole burst, an interactive srun
#              started 2 s in (allocation -> ready), and for switch/lua the
#              slot waits the log reports ("queued N ms") of job_complete and
#              of the interactive job_start
#   burst1k    the same with 1,000 tasks (4 rounds of the 240 slots)
#   wide       the cluster booted again with 100 nodes (--quick) or 300, one
#              slurmd process each: srun -N<all> printenv, 3 times, each on
#              free nodes (its wall time; then, apart, how long its nodes
#              took to be released), and for switch/lua the share of nodes
#              whose task saw the env of step_init (the step hooks ran in
#              every slurmstepd)
#   cpu        controller CPU per job over the srun phase, the array and the
#              bursts: slurmctld and all its descendants (supervisor,
#              runners, slurmscriptd, prologs, and what they waited for),
#              and in the bursts split by process: slurmctld itself,
#              slurmscriptd and its prologs, the supervisor and its runners
#   ping       during the bursts: `scontrol ping` every 0.2 s, its wall time
#              (median, max): how late the controller answers
#   round trip during the bursts: Slurm's "_job_complete: JobId=N done" line
#              to switch/lua's "JobId=N job_complete returned" line, from
#              slurmctld.log's millisecond timestamps
#   commands   the setup's shell line alone (sh, two date, sleep 0), run 200
#              times by posix_spawn in a runner's environment: what B's prolog
#              and C's hook spend on the work itself; after the table, per
#              burst, what each spends beyond it, and the C/B that calls
#              costing nothing would reach (C's slurmctld + the commands, over
#              B's whole)
#   locked     after the table: the time under Slurm's locks per entry
#              point for jobs of 3, 100, 1,000 and 10,000 nodes (synthetic job
#              tables), from the process benchmark proc_locked_time_test of
#              the testbed build
#   memory     during the bursts: the supervisor's VmRSS and PSS, the
#              runners' total RSS and PSS, and the PSS per runner at the
#              sample with the most runners (PSS: shared pages divided among
#              the processes that map them, what the runners really cost)
#   hang       A and C only, each booted again with the fault shim
#              test/e2e/shim/fail_fsync.c preloaded into slurmctld (it only
#              touches switch_lua.journal* files, so A runs it too, under
#              the same conditions): its control file armed with "hang 30",
#              so in C the journal's first sync after the arming (the
#              record of the job submitted with it) and every one after it
#              block until 30 s after that first one, as a stalled NFS
#              server or disk under StateSaveLocation would.  Meanwhile
#              `scontrol ping` and `squeue` every 0.2 s (wall time, median
#              and max over the stall) and a job every 5 s (sbatch's wall
#              time), then 6 jobs at its end: how many started and submit
#              -> task start; and, polled every 0.2 s in both
#              configurations alike, the time from the arming to
#              slurmctld.log's stall line (its own timestamp), to the
#              metric switchlua_journal_stalled 1 (`switch-lua status
#              --format prometheus`), to `switch-lua status` saying
#              STALLED, and to the line saying the sync returned; the
#              first three also from the blocked sync itself (the stall's
#              start, from which the plugin's 5 s threshold counts)
# and prints one table of medians with the per-repetition ratios C/A and C/B.
# Numbers only: nothing here asserts a time.
#
# The host part (this file, run with python3 on the host) drives
# scripts/cluster; the measuring part runs inside the chroot (the same file,
# copied there, `inner ...`), so srun is timed where it runs.
import argparse
import datetime
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CL = os.environ.get("SWITCHLUA_CLUSTER_DIR", "/var/tmp/switch-lua-cluster")
OUT = CL + "/out"  # inside the chroot, mode 1777
MARKS = OUT + "/bench-marks"
NOT_READY = "Waiting for resource configuration"

# The setup's work, in both B (the prolog) and C (the hook): marks and a 3 s
# sleep, as shell commands: %(id)s is the job's id, %(secs)s the sleep.  One
# source for the prolog, the hook and their cost measured apart (setup_cmd).
SETUP_SH = ("echo %(id)s start $(date +%%s.%%N) >> %(marks)s; sleep %(secs)s; "
            "echo %(id)s end $(date +%%s.%%N) >> %(marks)s")

HOOK_LUA = """-- switch/lua script of scripts/bench --cluster (written by it)
local setup = [[%(setup)s]]
function slurm_switch_job_start(job)
  if job.name == "sleep3" then
    os.execute((setup:gsub("JOBID", tostring(job.job_id))))
  end
  return slurm.SUCCESS, { bench = true }
end

function slurm_switch_job_complete(job, jobinfo)
  return slurm.SUCCESS
end

function slurm_switch_step_init(step, stepinfo)
  if stepinfo ~= nil and stepinfo.bench then
    return slurm.SUCCESS, { BENCH_STEP = "1" }
  end
  return slurm.SUCCESS, nil
end
""" % {"setup": SETUP_SH % {"id": "JOBID", "secs": 3, "marks": MARKS}}

PROLOG_SH = """#!/bin/sh
# PrologSlurmctld of scripts/bench --cluster (written by it)
case "$SLURM_JOB_NAME" in
sleep3)
    %(setup)s
    ;;
esac
exit 0
""" % {"setup": SETUP_SH % {"id": "$SLURM_JOB_ID", "secs": 3, "marks": MARKS}}

# The environment switch/lua's runners give the commands a hook starts
# (supervisor/spawn.cpp base_child_env; test/bench/runner_env_test.py fails
# when the two differ).
RUNNER_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C"}


# ===================================================================== inner
def proc_stat(pid):
    """(comm, ppid, utime+stime+cutime+cstime ticks) or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
    except OSError:
        return None
    comm = s[s.index("(") + 1:s.rindex(")")]
    rest = s[s.rindex(")") + 2:].split()
    ppid = int(rest[1])
    ticks = sum(int(x) for x in rest[11:15])
    return comm, ppid, ticks


def ctld_tree():
    """{pid: (comm, ticks, part)} of slurmctld and its descendants; part is
    the process's share of the controller by its top ancestor below
    slurmctld: "slurmctld", "scriptd" (slurmscriptd, its prologs),
    "switchlua" (the supervisor, its runners) or "other"."""
    with open(CL + "/run/slurmctld.pid") as f:
        root = int(f.read().strip())
    procs = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            st = proc_stat(int(d))
            if st:
                procs[int(d)] = st
    keep, frontier = {}, [(root, "slurmctld")]
    children = {}
    for pid, (comm, ppid, ticks) in procs.items():
        children.setdefault(ppid, []).append(pid)
    while frontier:
        p, part = frontier.pop()
        if p in procs and p not in keep:
            comm = procs[p][0]
            if p != root and part == "slurmctld":
                part = ("scriptd" if comm.startswith("slurmscriptd") else
                        "switchlua" if comm.startswith("switch-lua") else "other")
            keep[p] = (comm, procs[p][2], part)
            frontier.extend((c, part) for c in children.get(p, []))
    return keep


def cpu_parts():
    """Controller CPU seconds by part (ctld_tree()), and "total"."""
    out = {"slurmctld": 0.0, "scriptd": 0.0, "switchlua": 0.0, "other": 0.0}
    for _, ticks, part in ctld_tree().values():
        out[part] += ticks / os.sysconf("SC_CLK_TCK")
    out["total"] = sum(out.values())
    return out


def cpu_seconds():
    return cpu_parts()["total"]


def proc_kib(pid, name, key):
    """The "KEY: N kB" line of /proc/PID/NAME, in KiB; 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/{name}") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def pss_kib(pid):
    return proc_kib(pid, "smaps_rollup", "Pss")


def rss_kib(pid):
    return proc_kib(pid, "status", "VmRSS")


def squeue_count():
    r = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True)
    return len(r.stdout.split())


def wait_empty(limit=300):
    t0 = time.monotonic()
    while squeue_count() > 0 and time.monotonic() - t0 < limit:
        time.sleep(0.05)


def timed_srun(args):
    """Runs srun -v ARGS; (wall s, made first poll, alloc->ready s or None)."""
    t0 = time.monotonic()
    p = subprocess.Popen(["srun", "-v"] + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True)
    t_alloc, t_ready, missed = None, None, False
    for line in p.stderr:
        now = time.monotonic()
        if "has been allocated resources" in line or "jobid" in line and "alloc" in line:
            t_alloc = t_alloc or now
        if NOT_READY in line:
            missed = True
        if "are ready for job" in line:
            t_ready = now
    p.wait()
    wall = time.monotonic() - t0
    ready = (t_ready - (t_alloc or t0)) if t_ready else None
    return wall, not missed, ready


def inner_srun(n, net):
    args = (["--network=bench"] if net else []) + ["-N1", "true"]
    timed_srun(args)  # warm up
    c0 = cpu_seconds()
    walls, first = [], 0
    for _ in range(n):
        w, ok, _ = timed_srun(args)
        walls.append(w)
        first += ok
    wait_empty()
    cpu = (cpu_seconds() - c0) / n
    return {"walls": walls, "first_poll": first / n, "cpu_per_job": cpu}


def submit_array(n, name, net):
    args = ["sbatch", "--parsable", f"--array=1-{n}", "-J", name, "-o", "/dev/null", "--wrap",
            "true"] + (["--network=bench"] if net else [])
    return subprocess.run(args, capture_output=True, text=True, check=True).stdout.strip()


def inner_array(n, net):
    t0 = time.monotonic()
    c0 = cpu_seconds()
    submit_array(n, "arr", net)
    wait_empty()
    return {"array_s": time.monotonic() - t0, "array_cpu_per_job": (cpu_seconds() - c0) / n}


# The wide phase's sruns, each on free nodes (also in --results' sizes).
WIDE_RUNS = 3


def inner_wide(n, net):
    """srun -N n over the whole large cluster, WIDE_RUNS times: wall times, and the
    share of the nodes whose task saw step_init's BENCH_STEP (switch/lua's
    step hooks ran on every node).  Each srun starts on a cluster whose
    nodes are all free again, and its wall is its own: the time until the
    nodes are released after it (300 slurmd on two cores: a child that
    ends before its parent slurmstepd of the reverse tree has started
    reports to slurmctld instead, and the parent waits 60 s for it, Slurm's
    REVERSE_TREE_CHILDREN_TIMEOUT) is measured apart, not charged to the
    next srun's wall as it was."""
    args = ["srun", f"-N{n}", "--ntasks-per-node=1"] + (["--network=bench"] if net else []) + \
        ["printenv", "BENCH_STEP"]
    walls, seen, released, hung = [], [], [], 0
    for _ in range(WIDE_RUNS):
        wait_empty()
        t0 = time.monotonic()
        try:
            r = subprocess.run(args, capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:  # a node drained or down: counted, not timed
            hung += 1
            subprocess.run(["scancel", "-u", str(os.getuid())])
            continue
        t1 = time.monotonic()
        walls.append(t1 - t0)
        seen.append(r.stdout.split().count("1") / n)
        wait_empty()
        released.append(time.monotonic() - t1)
    wait_empty()
    return {"wide_med": med(walls), "wide_max": max(walls) if walls else None,
            "wide_release": med(released), "wide_hooks": min(seen) if net and seen else None,
            "wide_hung": hung}


# The hang phase: the fault shim test/e2e/shim/fail_fsync.c, preloaded into
# slurmctld in A and C alike, and its control file (inside the chroot).
HANG_SHIM = "test/e2e/shim/fail_fsync.c"
HANG_CTL = "/tmp/switch-lua-fail-fsync"
HANG_MARKS = OUT + "/bench-hang-marks"
HANG_SUBMIT_EVERY = 5.0  # s between the jobs submitted during the hang
HANG_AFTER_JOBS = 6  # jobs submitted at once after it
HANG_JOB_DEADLINE = 180.0  # s after the hang for its jobs to start (else not counted)
STALL_LINE = re.compile(r"switch/lua: journal \S+: fdatasync has not returned for \d+ ms")
STALL_BACK = re.compile(r"switch/lua: journal \S+: the fdatasync that stalled returned after")
STALL_METRIC = re.compile(r"^switchlua_journal_stalled(?:\{[^}]*\})? 1(?:\.0*)?$", re.M)
STALL_STATUS = re.compile(r"^Journal sync: +STALLED since", re.M)


def switch_lua_cli():
    """The switch-lua that goes with the plugin slurmctld loads: PREFIX/bin's
    when PluginDir's first folder is PREFIX/lib/slurm (a meson install,
    SWITCHLUA_PLUGIN_DIR), else the one on PATH (the package)."""
    try:
        with open("/etc/slurm/slurm.conf") as f:
            dirs = [ln.split("=", 1)[1].strip() for ln in f if ln.startswith("PluginDir=")]
    except OSError:
        dirs = []
    first = dirs[-1].split(":")[0] if dirs else ""
    if first.endswith("/lib/slurm"):
        cli = first[:-len("/lib/slurm")] + "/bin/switch-lua"
        if os.access(cli, os.X_OK):
            return cli
    return "switch-lua"


def timed_loop(cmd, stop, out):
    """cmd every 0.2 s until stop is set: (unix start, wall s) into out."""
    while not stop.is_set():
        t0, m0 = time.time(), time.monotonic()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        out.append((t0, time.monotonic() - m0))
        stop.wait(0.2)


def stall_watch(stop, log, log_off, found):
    """Every 0.2 s until stop is set: slurmctld.log's new lines, `switch-lua
    status` and its Prometheus text; the unix time each first showed the
    stall into found (the log line: its own timestamp).  Run in A too, where
    nothing shows it, so both configurations carry the same load."""
    cli = switch_lua_cli()
    tail = ""
    while not stop.is_set():
        with open(log, errors="replace") as f:
            f.seek(log_off)
            chunk = f.read()
            log_off = f.tell()
        tail += chunk
        *lines, tail = tail.split("\n")
        for line in lines:
            for key, rx in (("line", STALL_LINE), ("back", STALL_BACK)):
                if key not in found and rx.search(line):
                    found[key] = log_time(line) or time.time()
        for key, args, rx in (("status", [], STALL_STATUS),
                              ("metric", ["--format", "prometheus"], STALL_METRIC)):
            r = subprocess.run([cli, "status"] + args, capture_output=True, text=True)
            if key not in found and rx.search(r.stdout):
                found[key] = time.time()
        stop.wait(0.2)


def hang_submit(net, jobs):
    """sbatch of one trivial job that appends "JOBID unix-time" to HANG_MARKS
    when its task starts: (job id, unix submit time, sbatch wall s) into jobs."""
    t0, m0 = time.time(), time.monotonic()
    r = subprocess.run(["sbatch", "--parsable", "-J", "hang", "-o", "/dev/null"] +
                       (["--network=bench"] if net else []) +
                       ["--wrap", f"echo $SLURM_JOB_ID $(date +%s.%N) >> {HANG_MARKS}"],
                       capture_output=True, text=True)
    jobs.append((r.stdout.strip().split(";")[0] if r.returncode == 0 else None, t0,
                 time.monotonic() - m0))


def hang_marks():
    """{job id: unix time its task started} from HANG_MARKS."""
    out = {}
    with open(HANG_MARKS) as f:
        for line in f:
            w = line.split()
            if len(w) == 2:
                out[w[0]] = float(w[1])
    return out


def hang_disarm(prefix=""):
    """No control file (every sync goes through) and no shim log, under
    prefix (the chroot's root, from the host)."""
    for p in (HANG_CTL, HANG_CTL + ".new", HANG_CTL + ".log"):
        if os.path.exists(prefix + p):
            os.unlink(prefix + p)


def inner_hang(secs, net):
    try:
        return hang_measure(secs, net)
    finally:
        hang_disarm()


def hang_measure(secs, net):
    """A storage stall of `secs` s under StateSaveLocation (issue 40): the
    shim's control file armed with "hang SECS" (the journal's first sync
    after it, and every one until it ends, blocks; A has no journal: nothing
    blocks), and meanwhile `scontrol ping` and `squeue` every 0.2 s (wall
    time), a job submitted every HANG_SUBMIT_EVERY s, then HANG_AFTER_JOBS
    jobs at its end (submit -> task start), and when each of slurmctld.log,
    the stall metric and `switch-lua status` first showed the stall."""
    with open(CL + "/run/slurmctld.pid") as f:
        pid = f.read().split()[0]
    with open(f"/proc/{pid}/maps") as f:
        if "fail_fsync" not in f.read():
            raise SystemExit("bench: slurmctld has not loaded the shim (config --ctld-preload)")
    hang_disarm()
    open(HANG_MARKS, "w").close()
    os.chmod(HANG_MARKS, 0o666)
    log = CL + "/log/slurmctld.log"
    pings, squeues, found, jobs = [], [], {}, []
    stop, stop_watch = threading.Event(), threading.Event()
    threads = [threading.Thread(target=timed_loop, args=(["scontrol", "ping"], stop, pings)),
               threading.Thread(target=timed_loop, args=(["squeue"], stop, squeues))]
    watcher = threading.Thread(target=stall_watch,
                               args=(stop_watch, log, os.path.getsize(log), found))
    for t in threads + [watcher]:
        t.start()
    # Armed: slurmctld's user (SlurmUser) rewrites it when the stall begins.
    with open(HANG_CTL + ".new", "w") as f:
        f.write(f"hang {secs}\n")
    os.chmod(HANG_CTL + ".new", 0o666)
    os.replace(HANG_CTL + ".new", HANG_CTL)
    armed = time.time()
    # The first job's setup record is the journal's first sync after the
    # arming (C): the stall begins with it.
    k = 0
    while time.time() < armed + secs:
        if time.time() >= armed + k * HANG_SUBMIT_EVERY:
            hang_submit(net, jobs)
            k += 1
        stop.wait(min(0.05, max(0.0, armed + secs - time.time())))
    # Its end: the END the shim wrote when it began (C), else the arming's
    # secs (A: no journal, no stall).
    began = end = None
    with open(HANG_CTL) as f:
        w = f.read().split()
    if len(w) == 3 and w[0] == "until":
        began, end = float(w[1]), float(w[2])
    end = end or armed + secs
    stop.wait(max(0.0, end - time.time()))
    stop.set()
    for t in threads:
        t.join()
    n_during = len(jobs)
    for _ in range(HANG_AFTER_JOBS):
        hang_submit(net, jobs)
    ids = {j for j, _, _ in jobs if j}
    while not ids <= set(hang_marks()) and time.time() < end + HANG_JOB_DEADLINE:
        time.sleep(0.2)
    while net and "back" not in found and time.time() < end + 30:
        time.sleep(0.2)
    stop_watch.set()
    watcher.join()
    marks = hang_marks()
    wait = [marks[j] - t if j in marks else None for j, t, _ in jobs]
    during, after = wait[:n_during], wait[n_during:]
    ping_in = [d for t, d in pings if armed <= t < end]
    sq_in = [d for t, d in squeues if armed <= t < end]
    sb_in = [d for _, _, d in jobs[:n_during]]

    # The shim's word on how long the first blocked sync took (C).
    blocked = None
    if os.path.exists(HANG_CTL + ".log"):
        with open(HANG_CTL + ".log") as f:
            m = re.search(r" after (\d+) ms$", f.read(), re.M)
        blocked = int(m.group(1)) / 1000 if m else None

    def since(key, t0=armed):
        return found[key] - t0 if key in found and t0 else None

    return {"hang_began_s": began - armed if began else None,
            "hang_blocked_s": blocked,
            "hang_ping_med_s": med(ping_in), "hang_ping_max_s": max(ping_in, default=None),
            "hang_squeue_med_s": med(sq_in), "hang_squeue_max_s": max(sq_in, default=None),
            "hang_sbatch_med_s": med(sb_in), "hang_sbatch_max_s": max(sb_in, default=None),
            "hang_during_jobs": n_during,
            "hang_during_started": sum(w is not None for w in during),
            "hang_during_start_med_s": med(during),
            "hang_during_start_max_s": max((w for w in during if w is not None), default=None),
            "hang_after_jobs": len(after),
            "hang_after_started": sum(w is not None for w in after),
            "hang_after_start_med_s": med(after),
            "hang_after_start_max_s": max((w for w in after if w is not None), default=None),
            "hang_stall_line_s": since("line"), "hang_stall_metric_s": since("metric"),
            "hang_stall_status_s": since("status"), "hang_back_line_s": since("back"),
            # The same from the stall's start (the blocked sync), what the
            # plugin's 5 s threshold counts from.
            "hang_began_line_s": since("line", began), "hang_began_metric_s": since("metric", began),
            "hang_began_status_s": since("status", began)}


def sample_memory():
    """{sup_rss, sup_pss, run_rss, run_pss, runners}: the supervisor's and
    the runners' (total) memory now, in KiB, and how many runners."""
    m = {"sup_rss": 0, "sup_pss": 0, "run_rss": 0, "run_pss": 0, "runners": 0}
    for pid, (comm, _, _) in ctld_tree().items():
        if comm.startswith("switch-lua-supe"):
            m["sup_rss"] = max(m["sup_rss"], rss_kib(pid))
            m["sup_pss"] = max(m["sup_pss"], pss_kib(pid))
        elif comm.startswith("switch-lua-runn"):
            m["run_rss"] += rss_kib(pid)
            m["run_pss"] += pss_kib(pid)
            m["runners"] += 1
    return m


def ping_loop(stop, out):
    """`scontrol ping` every 0.2 s until stop is set: wall times into out."""
    while not stop.is_set():
        t0 = time.monotonic()
        subprocess.run(["scontrol", "ping"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        out.append(time.monotonic() - t0)
        stop.wait(0.2)


LOG_STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)\]")
SLURM_DONE = re.compile(r"_job_complete: JobId=(?:\d+_\d+\((\d+)\)|(\d+)) done")
LUA_DONE = re.compile(r"JobId=(\d+) job_complete returned")


def log_time(line):
    m = LOG_STAMP.match(line)
    if not m:
        return None
    s = m.group(1)
    fmt_ = "%Y-%m-%dT%H:%M:%S.%f" if "." in s else "%Y-%m-%dT%H:%M:%S"
    return datetime.datetime.strptime(s, fmt_).timestamp()


def inner_burst3(n, net):
    open(MARKS, "w").close()
    os.chmod(MARKS, 0o666)
    log = CL + "/log/slurmctld.log"
    log_off = os.path.getsize(log)
    t0_wall = time.time()
    t0 = time.monotonic()
    p0 = cpu_parts()
    submit_array(n, "sleep3", net)
    peak = {"sup_rss": 0, "sup_pss": 0, "run_rss": 0, "run_pss": 0}
    most_runners, pss_per_runner = 0, None
    pings, stop = [], threading.Event()
    pinger = threading.Thread(target=ping_loop, args=(stop, pings))
    pinger.start()
    srun = None
    while True:
        el = time.monotonic() - t0
        if srun is None and el >= 2.0:
            srun = subprocess.Popen([sys.executable, os.path.abspath(__file__), "inner",
                                     "one_srun", "1" if net else "0"], stdout=subprocess.PIPE,
                                    text=True)
        m = sample_memory()
        for k in peak:
            peak[k] = max(peak[k], m[k])
        if m["runners"] > most_runners:
            most_runners, pss_per_runner = m["runners"], m["run_pss"] / m["runners"]
        if el > 2.5 and squeue_count() == 0:
            break
        if el > 600:
            break
        time.sleep(0.25)
    burst = time.monotonic() - t0
    stop.set()
    pinger.join()
    inter = json.loads(srun.communicate()[0]) if srun else {}
    p1 = cpu_parts()
    burst_cpu = (p1["total"] - p0["total"]) / n
    parts = {f"burst_cpu_{k}": (p1[k] - p0[k]) / n for k in ("slurmctld", "scriptd", "switchlua")}
    # Marks: hook start/end per job (wall clock).
    ev = []
    ends = []
    with open(MARKS) as f:
        for line in f:
            w = line.split()
            if len(w) == 3:
                t = float(w[2])
                ev.append((t, 1 if w[1] == "start" else -1))
                if w[1] == "end":
                    ends.append(t - t0_wall)
    ev.sort()
    cur = most = 0
    for _, d in ev:
        cur += d
        most = max(most, cur)
    # switch/lua: the slot waits the log reports.
    tq, iq = [], []
    slurm_done, trips = {}, []
    with open(log, errors="replace") as f:
        f.seek(log_off)
        for line in f:
            d = SLURM_DONE.search(line)
            if d:
                slurm_done[d.group(1) or d.group(2)] = log_time(line)
            d = LUA_DONE.search(line)
            if d and slurm_done.get(d.group(1)) is not None:
                t = log_time(line)
                if t is not None:
                    trips.append(t - slurm_done[d.group(1)])
            m = re.search(r"JobId=(\d+) (job_start|job_complete) started \(queued (\d+) ms", line)
            if not m:
                continue
            if m.group(2) == "job_complete":
                tq.append(int(m.group(3)))
            elif inter.get("job_id") and m.group(1) == str(inter["job_id"]):
                iq.append(int(m.group(3)))
    return {"burst_s": burst, "setups_at_once": most,
            "setup_median_s": statistics.median(ends) if ends else None,
            "setup_max_s": max(ends) if ends else None, "interactive_ready_s": inter.get("ready"),
            "teardown_queued_max_ms": max(tq) if tq else None,
            "interactive_queued_ms": iq[0] if iq else None,
            "supervisor_rss_kib": peak["sup_rss"], "supervisor_pss_kib": peak["sup_pss"],
            "runners_rss_kib": peak["run_rss"], "runners_pss_kib": peak["run_pss"],
            "runner_pss_kib": pss_per_runner, "ping_med_s": med(pings),
            "ping_max_s": max(pings) if pings else None,
            "complete_trip_max_s": max(trips) if trips else None,
            "complete_trip_med_s": med(trips), "hooks": len(ends),
            "burst_cpu_per_job": burst_cpu, **parts}


def inner_setup_cmd(n, net):
    """The setup's commands alone (SETUP_SH, with sleep 0: a sleep's CPU is
    its start, not its length), n times, as a runner starts them (posix_spawn
    of /bin/sh -c, the runners' environment) from this small process: CPU
    per run, what both B's prolog and C's hook spend on the work itself."""
    cmd = SETUP_SH % {"id": 0, "secs": 0, "marks": OUT + "/bench-setup-cmd-marks"}
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(n):
        os.waitpid(os.posix_spawn("/bin/sh", ["/bin/sh", "-c", cmd], RUNNER_ENV), 0)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    os.unlink(OUT + "/bench-setup-cmd-marks")
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return {"setup_cmd_cpu": cpu / n}


def inner_one_srun(net):
    args = (["--network=bench"] if net else []) + ["-N1", "-J", "sleep3", "true"]
    t0 = time.monotonic()
    p = subprocess.Popen(["srun", "-v"] + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True)
    t_alloc = t_ready = None
    job_id = None
    for line in p.stderr:
        now = time.monotonic()
        m = re.search(r"job (\d+) has been allocated resources", line) or \
            re.search(r"jobid (\d+):", line)
        if m and job_id is None:
            job_id = int(m.group(1))
        if "has been allocated resources" in line or ("jobid" in line and t_alloc is None):
            t_alloc = t_alloc or now
        if "are ready for job" in line:
            t_ready = now
    p.wait()
    ready = (t_ready - (t_alloc or t0)) if t_ready else None
    print(json.dumps({"ready": ready, "job_id": job_id}))


def inner(argv):
    what = argv[0]
    if what == "one_srun":
        inner_one_srun(argv[1] == "1")
        return
    n, net = int(argv[1]), argv[2] == "1"
    fn = {"srun": inner_srun, "array": inner_array, "burst3": inner_burst3,
          "wide": inner_wide, "setup_cmd": inner_setup_cmd, "hang": inner_hang}[what]
    print(json.dumps(fn(n, net)))


# ====================================================================== host
def sh(*args, **kw):
    return subprocess.run(list(args), check=True, **kw)


def cluster(*args, **kw):
    return sh(REPO + "/scripts/cluster", *args, **kw)


def root():
    return os.environ.get("SWITCHLUA_TESTBED", "/var/tmp/switch-lua-testbed") + "/root"


def measure(what, n, net):
    r = subprocess.run([REPO + "/scripts/cluster", "exec", "python3", OUT + "/bench_cluster.py",
                        "inner", what, str(n), "1" if net else "0"], capture_output=True,
                       text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stderr)
        raise SystemExit(f"bench: inner {what} failed")
    return json.loads(r.stdout.strip().splitlines()[-1])


# The simulated nodes' nice value (scripts/cluster config --node-nice): on
# two cores, a 1,000-job burst starts a slurmstepd and a task per job beside
# the controller, processes that a real cluster runs on other hosts; at nice
# 10 they take the CPU only when slurmctld, its scripts and the supervisor
# leave it, in every configuration alike.
NODE_NICE = 10


def boot(cfg, burst=False, nodes=3, shim=False):
    """Boots configuration cfg on a cluster of nodes slurmd; B runs
    PrologSlurmctld=/bin/true, or the sleeping prolog script when burst is
    set (the burst3 phase); shim: slurmctld runs with the fault shim
    HANG_SHIM preloaded, disarmed (the hang phase)."""
    os.environ["SWITCHLUA_NODES"] = str(nodes)
    base = ["--debug", "info", "--extra", "PartitionName=DEFAULT OverSubscribe=FORCE:40",
            "--extra", "Epilog=/bin/true", "--node-nice", str(NODE_NICE)]
    if shim:
        base += ["--ctld-preload", os.path.join(REPO, HANG_SHIM)]
    if cfg == "B":
        prolog = "/etc/slurm/bench_prolog.sh" if burst else "/bin/true"
        base += ["--extra", f"PrologSlurmctld={prolog}"]
    if cfg == "C":
        base += ["--switch-type", "switch/lua", "--script", HOOK_FILE]
    # A slurmd killed a moment ago may still hold its socket: stop cleanly,
    # and try the start again once.
    for attempt in range(2):
        r = subprocess.run([REPO + "/scripts/cluster", "stop"], capture_output=True, text=True)
        if r.returncode != 0:
            # Said, not hidden: a start on a cluster that is still up
            # measures the old one (or fails with its nodes).
            sys.stderr.write(f"bench: scripts/cluster stop failed (exit {r.returncode}), "
                             f"stopping with --fast: {(r.stdout + r.stderr)[-2000:]}\n")
            subprocess.run([REPO + "/scripts/cluster", "stop", "--fast"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        cluster("config", *base, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        install_files()
        hang_disarm(root())
        r = subprocess.run([REPO + "/scripts/cluster", "start"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL if attempt == 0 else None)
        if r.returncode == 0:
            return
        time.sleep(2)
    raise SystemExit(f"bench: the cluster did not start for configuration {cfg}")


def install_files():
    r = root()
    with open(r + "/etc/slurm/bench_prolog.sh", "w") as f:
        f.write(PROLOG_SH)
    os.chmod(r + "/etc/slurm/bench_prolog.sh", 0o755)
    sh("install", "-m", "0755", os.path.abspath(__file__), r + OUT + "/bench_cluster.py")


def q(xs, p):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


PHASES = ("srun", "array", "burst", "big", "wide", "hang")
# The hang phase's stall, in seconds.
HANG_SECS = 30


def parse_args(argv):
    """The host's options (scripts/bench --cluster ...); anything else, a
    typo included, is refused before a cluster is booted (a full run takes
    hours)."""
    ap = argparse.ArgumentParser(
        prog="scripts/bench --cluster",
        description="A/B/C side by side on the project's cluster (see scripts/bench_cluster.py).")
    ap.add_argument("--quick", action="store_true",
                    help="smaller srun, array and wide phases; 2 repetitions unless --reps")
    ap.add_argument("--reps", type=int, help="repetitions (default 5, --quick 2)")
    ap.add_argument("--slurm", metavar="X.Y.Z|debian",
                    help="the Slurm to boot (default: SWITCHLUA_SLURM, else debian)")
    ap.add_argument("--configs", default="A,B,C", help="configurations to run (default A,B,C)")
    ap.add_argument("--phases", default=",".join(PHASES),
                    help=f"phases to run (default {','.join(PHASES)})")
    ap.add_argument("--results", metavar="FILE",
                    help="keep each configuration's results per repetition in FILE; "
                         "a later run with FILE runs only what is missing")
    a = ap.parse_args(argv)
    if a.reps is None:
        a.reps = 2 if a.quick else 5
    if a.reps < 1:
        ap.error(f"--reps {a.reps}: at least 1")
    return a


def host(argv):
    global HOOK_FILE
    args = parse_args(argv)
    quick = args.quick
    reps = args.reps
    if args.slurm is not None:
        # The Slurm every configuration boots (scripts/cluster config reads
        # SWITCHLUA_SLURM): debian, or X.Y.Z built by scripts/testbed
        # slurm-install, with the plugin from scripts/testbed plugin-install.
        os.environ["SWITCHLUA_SLURM"] = args.slurm
    cfgs = args.configs.split(",")
    phases = args.phases.split(",")
    for c in cfgs:
        if c not in ("A", "B", "C"):
            raise SystemExit(f"bench: --configs {c}: the configurations are A, B and C")
    for ph in phases:
        if ph not in PHASES:
            raise SystemExit(f"bench: --phases {ph}: the phases are {', '.join(PHASES)}")
    # Each configuration's results of each repetition go to this file as it
    # ends; a run given the file of an earlier one keeps what it holds (same
    # sizes) and runs only what is missing, so the five full-size
    # repetitions (3 took 92 min, so 5 about 2.5 h) can be spread over
    # several runs.
    results = args.results
    slurm = os.environ.get("SWITCHLUA_SLURM") or "debian"
    slurm_label = "Debian's 24.11.5" if slurm == "debian" else slurm
    n_srun = 15 if quick else 40
    n_array = 60 if quick else 300
    n_burst = 240
    n_big = 1000
    n_wide = 100 if quick else 300
    # wide_runs: the sruns of the wide phase, each on free nodes (a file of
    # the runs before, 5 sruns each waiting for the last one's nodes, is not
    # mixed with these); node_nice: a file of runs with the nodes at another
    # nice value is not mixed with these either.
    sizes = {"srun": n_srun, "array": n_array, "burst": n_burst, "big": n_big, "wide": n_wide,
             "wide_runs": WIDE_RUNS, "node_nice": NODE_NICE, "slurm": slurm}
    if "hang" in phases:
        # Only then: a file of the runs before the phase existed stays usable.
        sizes["hang"] = HANG_SECS
    res = {c: {} for c in ["A", "B", "C", "C0"]}  # per rep (as a string: JSON keys): metrics
    if results and os.path.exists(results):
        with open(results) as f:
            saved = json.load(f)
        if saved.get("sizes") != sizes:
            raise SystemExit(f"bench: {results} holds a run of other sizes ({saved.get('sizes')}), "
                             f"not {sizes}: give another file")
        res.update(saved["res"])
        print(f"bench: {results}: keeping " + ", ".join(
            f"{c} x{len(res[c])}" for c in ["A", "B", "C", "C0"] if res[c]), flush=True)

    def save():
        if results:
            tmp = results + ".tmp"
            with open(tmp, "w") as f:
                json.dump({"sizes": sizes, "res": res}, f)
            os.replace(tmp, results)

    HOOK_FILE = f"/tmp/switchlua-bench-hook-{os.getpid()}.lua"
    with open(HOOK_FILE, "w") as f:
        f.write(HOOK_LUA)
    print(f"scripts/bench --cluster on Slurm {slurm_label}: {reps} repetitions of "
          f"{'/'.join(cfgs)}, rotated; phases {','.join(phases)}: srun x{n_srun}, array of "
          f"{n_array}, bursts of {n_burst} and {n_big} with a 3 s setup, srun -N{n_wide} on a "
          f"{n_wide}-node cluster" +
          (f", a {HANG_SECS} s stall of the journal's fsync (A and C)" if "hang" in phases else ""),
          flush=True)
    try:
        for rep in range(reps):
            order = cfgs[rep % len(cfgs):] + cfgs[:rep % len(cfgs)]
            for cfg in order:
                if str(rep) in res[cfg]:
                    continue
                t0 = time.monotonic()
                # The hang phase boots its own cluster (with the shim).
                if set(phases) - {"hang"}:
                    boot(cfg)
                row = {}
                if "srun" in phases:
                    s = measure("srun", n_srun, cfg == "C")
                    row.update(srun_med=med(s["walls"]), srun_p90=q(s["walls"], 0.9),
                               first_poll=s["first_poll"], cpu_per_job=s["cpu_per_job"])
                if "array" in phases:
                    row.update(measure("array", n_array, cfg == "C"))
                if "burst" in phases or "big" in phases:
                    if cfg == "B":
                        boot(cfg, burst=True)
                    if cfg != "A":
                        row.update(measure("setup_cmd", 200, False))
                if "burst" in phases:
                    row.update(measure("burst3", n_burst, cfg == "C"))
                if "big" in phases:
                    big = measure("burst3", n_big, cfg == "C")
                    row.update({"big_" + k: v for k, v in big.items()})
                if cfg == "C" and ("srun" in phases or "array" in phases):
                    r0 = {}
                    if "srun" in phases:
                        s0 = measure("srun", n_srun, False)
                        r0.update(srun_med=med(s0["walls"]), srun_p90=q(s0["walls"], 0.9),
                                  first_poll=s0["first_poll"], cpu_per_job=s0["cpu_per_job"])
                    if "array" in phases:
                        r0.update(measure("array", n_array, False))
                    res["C0"][str(rep)] = r0
                # The large cluster: a job on every node (switch/lua's
                # step hooks run in each node's slurmstepd).
                if "wide" in phases:
                    boot(cfg, nodes=n_wide)
                    row.update(measure("wide", n_wide, cfg == "C"))
                # A storage stall under StateSaveLocation (issue 40): A and C
                # booted with the fault shim in slurmctld (B, which has no
                # journal either, would only repeat A).
                if "hang" in phases and cfg in ("A", "C"):
                    boot(cfg, shim=True)
                    row.update(measure("hang", HANG_SECS, cfg == "C"))
                res[cfg][str(rep)] = row
                save()
                done = [f"{what} {row[key] * scale:.{digits}f} {unit}"
                        for what, key, scale, digits, unit in (
                            ("srun median", "srun_med", 1000, 0, "ms"),
                            ("first poll", "first_poll", 100, 0, "%"),
                            ("burst", "burst_s", 1, 1, "s"), ("1000-burst", "big_burst_s", 1, 1, "s"),
                            ("wide median", "wide_med", 1, 1, "s"),
                            ("ping in the hang", "hang_ping_med_s", 1000, 0, "ms"),
                            ("stall line", "hang_stall_line_s", 1, 1, "s"))
                        if row.get(key) is not None]
                print(f"  rep {rep + 1} {cfg}: done in {time.monotonic() - t0:.0f} s "
                      f"({', '.join(done)})", flush=True)
    finally:
        cluster("stop", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.unlink(HOOK_FILE)
    if not results:
        with open(f"/tmp/switchlua-bench-cluster-{os.getpid()}.json", "w") as f:
            json.dump(res, f)
    report({c: [res[c][r] for r in sorted(res[c], key=int)] for c in res},
           {c: sorted(res[c], key=int) for c in res}, n_wide)
    locked_time()


def locked_time():
    """The time under Slurm's locks per entry point for jobs of 3 to 10,000
    nodes: the process benchmark test/proc/locked_time_test.cpp, built in
    the testbed (SWITCHLUA_BUILD, default build-trixie), its table."""
    build = os.environ.get("SWITCHLUA_BUILD", "build-trixie")
    exe = f"{build}/test/proc/proc_locked_time_test"
    print()
    if not os.path.exists(os.path.join(REPO, exe)):
        print(f"time under Slurm's locks: not measured ({exe} is not built: scripts/testbed build)")
        return
    r = subprocess.run([REPO + "/scripts/testbed", "run", exe], capture_output=True, text=True)
    lines = r.stdout.splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith("time under Slurm's locks")), None)
    if r.returncode != 0 or start is None:
        print(f"time under Slurm's locks: {exe} failed (exit {r.returncode})")
        return
    for line in lines[start:]:
        if line.startswith("["):  # gtest's own lines
            break
        print(line)


def burst_rows(prefix, n):
    return [
        (prefix + "burst_s", f"{n} x 3 s setup: whole burst", 1, "s"),
        (prefix + "setups_at_once", f"{n} x 3 s setup: setups at once", 1, ""),
        (prefix + "burst_cpu_per_job", f"{n} x 3 s setup: controller CPU per job", 1000, "ms"),
        (prefix + "burst_cpu_slurmctld", "  of which slurmctld itself", 1000, "ms"),
        (prefix + "burst_cpu_scriptd", "  of which slurmscriptd and its prologs", 1000, "ms"),
        (prefix + "burst_cpu_switchlua", "  of which the supervisor and its runners", 1000, "ms"),
        (prefix + "setup_median_s", f"{n} x 3 s setup: submit -> setup done, median", 1, "s"),
        (prefix + "setup_max_s", f"{n} x 3 s setup: submit -> setup done, max", 1, "s"),
        (prefix + "ping_med_s", f"{n} x 3 s setup: scontrol ping, median", 1000, "ms"),
        (prefix + "ping_max_s", f"{n} x 3 s setup: scontrol ping, max", 1000, "ms"),
        (prefix + "interactive_ready_s", "srun 2 s into the burst: allocation -> ready", 1, "s"),
        (prefix + "interactive_queued_ms", "  its job_start waited for a slot", 1, "ms"),
        (prefix + "teardown_queued_max_ms", "job_complete waited for a slot, max", 1, "ms"),
        (prefix + "complete_trip_med_s", "job_complete round trip, median", 1000, "ms"),
        (prefix + "complete_trip_max_s", "job_complete round trip, max", 1000, "ms"),
        (prefix + "supervisor_rss_kib", "supervisor RSS during the burst, max", 1 / 1024, "MiB"),
        (prefix + "supervisor_pss_kib", "supervisor PSS during the burst, max", 1 / 1024, "MiB"),
        (prefix + "runners_rss_kib", "runners' total RSS during the burst, max", 1 / 1024, "MiB"),
        (prefix + "runners_pss_kib", "runners' total PSS during the burst, max", 1 / 1024, "MiB"),
        (prefix + "runner_pss_kib", "PSS per runner, at the most runners", 1, "KiB"),
    ]


ROWS = [
    ("srun_med", "srun -N1 true, median", 1000, "ms"),
    ("srun_p90", "srun -N1 true, p90", 1000, "ms"),
    ("first_poll", "srun made the first readiness poll", 100, "%"),
    ("cpu_per_job", "controller CPU per srun job", 1000, "ms"),
    ("array_s", "array of trivial jobs, submit -> all done", 1, "s"),
    ("array_cpu_per_job", "array of trivial jobs: controller CPU per job", 1000, "ms"),
] + burst_rows("", 240) + burst_rows("big_", 1000) + [
    ("setup_cmd_cpu", "the setup's commands alone, CPU per run", 1000, "ms"),
    ("wide_med", "srun -N<n> on the large cluster, median", 1, "s"),
    ("wide_max", "srun -N<n> on the large cluster, max", 1, "s"),
    ("wide_release", "  its nodes released after it, median", 1, "s"),
    ("wide_hooks", "  nodes whose task saw step_init's env (min)", 100, "%"),
    ("wide_hung", "  sruns not done in 300 s (not timed)", 1, ""),
    ("hang_began_s", "hang: arming -> a journal sync blocked", 1, "s"),
    ("hang_blocked_s", "hang: that sync blocked for", 1, "s"),
    ("hang_ping_med_s", "hang: scontrol ping during it, median", 1000, "ms"),
    ("hang_ping_max_s", "hang: scontrol ping during it, max", 1000, "ms"),
    ("hang_squeue_med_s", "hang: squeue during it, median", 1000, "ms"),
    ("hang_squeue_max_s", "hang: squeue during it, max", 1000, "ms"),
    ("hang_sbatch_med_s", "hang: sbatch during it, median", 1000, "ms"),
    ("hang_sbatch_max_s", "hang: sbatch during it, max", 1000, "ms"),
    ("hang_during_jobs", "hang: jobs submitted during it", 1, ""),
    ("hang_during_started", "  of which started", 1, ""),
    ("hang_during_start_med_s", "  submit -> task start, median", 1, "s"),
    ("hang_during_start_max_s", "  submit -> task start, max", 1, "s"),
    ("hang_after_jobs", "hang: jobs submitted at its end", 1, ""),
    ("hang_after_started", "  of which started", 1, ""),
    ("hang_after_start_med_s", "  submit -> task start, median", 1, "s"),
    ("hang_after_start_max_s", "  submit -> task start, max", 1, "s"),
    ("hang_stall_line_s", "hang: arming -> slurmctld.log's stall line", 1, "s"),
    ("hang_stall_metric_s", "hang: arming -> switchlua_journal_stalled 1", 1, "s"),
    ("hang_stall_status_s", "hang: arming -> switch-lua status STALLED", 1, "s"),
    ("hang_back_line_s", "hang: arming -> the line it returned", 1, "s"),
    ("hang_began_line_s", "hang: the blocked sync -> the stall line", 1, "s"),
    ("hang_began_metric_s", "hang: the blocked sync -> the metric", 1, "s"),
    ("hang_began_status_s", "hang: the blocked sync -> status STALLED", 1, "s"),
]


NO_RATIO = {"A": ("setups_at_once", "interactive_ready_s")}


def fmt(v, scale):
    if v is None:
        return "-"
    v = v * scale
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.2f}" if abs(v) < 10 else f"{v:.1f}"


def ratios(res, reps, a, b, key):
    """Median [min-max] of the per-repetition ratios a/b of `key`, over the
    repetitions both configurations ran (reps: their repetition numbers, in
    the order of res's rows)."""
    out = []
    rb_of = dict(zip(reps[b], res[b]))
    for rep, ra in zip(reps[a], res[a]):
        rb = rb_of.get(rep)
        if rb is None:
            continue
        x, y = ra.get(key), rb.get(key)
        # No ratio against a configuration that does not do the work (A has
        # no setup: its allocation -> ready is a few ms, its setups at once 0).
        if x is not None and y and key.removeprefix("big_") not in NO_RATIO.get(b, ()):
            out.append(x / y)
    if not out:
        return "-"
    return f"{statistics.median(out):.2f} [{min(out):.2f}-{max(out):.2f}]"


def report(res, reps, n_wide):
    print()
    print("medians over the repetitions; ratios: median [min-max] of the per-repetition ratios")
    head = f"{'':50} {'A':>8} {'B':>8} {'C':>8} {'C0':>8}  {'C/A':>18} {'C/B':>18}"
    print(head)
    print("-" * len(head))
    for key, label, scale, unit in ROWS:
        cells = [fmt(med([r.get(key) for r in res[c]]), scale) for c in ["A", "B", "C", "C0"]]
        label = label.replace("<n>", str(n_wide))
        print(f"{label + (' (' + unit + ')' if unit else ''):50} " +
              " ".join(f"{c:>8}" for c in cells) +
              f"  {ratios(res, reps, 'C', 'A', key):>18} {ratios(res, reps, 'C', 'B', key):>18}")
    print()
    print("A: no switch plugin; B: PrologSlurmctld=/bin/true (the burst: a sh prolog that sleeps "
          "3 s); C: switch/lua, jobs with --network; C0: switch/lua, jobs without --network.")
    print(f"Every configuration's slurmd (and so its slurmstepd and tasks) run at nice {NODE_NICE}.")
    print("The setup's commands alone: its shell line (sh, two date, sleep) run apart by "
          "posix_spawn, as a runner starts it.")
    floor_report(res, reps)


def floor_report(res, reps):
    """What the calls themselves cost in each burst: C's supervisor and
    runners beyond the setup's commands, B's slurmscriptd and prologs beyond
    them, and the least controller CPU per job C could have if its calls cost
    nothing (slurmctld itself + the commands), against B's whole: the lowest
    C/B any call mechanism could reach in this run."""
    print()
    for prefix, n in (("", 240), ("big_", 1000)):
        own_c, own_b, floor = [], [], []
        rb_of = dict(zip(reps["B"], res["B"]))
        for rep, rc in zip(reps["C"], res["C"]):
            rb = rb_of.get(rep)
            if rb is None:
                continue
            cmd_c, cmd_b = rc.get("setup_cmd_cpu"), rb.get("setup_cmd_cpu")
            total_b = rb.get(prefix + "burst_cpu_per_job")
            if None in (cmd_c, cmd_b, total_b) or not total_b:
                continue
            own_c.append(rc[prefix + "burst_cpu_switchlua"] - cmd_c)
            own_b.append(rb[prefix + "burst_cpu_scriptd"] - cmd_b)
            floor.append((rc[prefix + "burst_cpu_slurmctld"] + cmd_c) / total_b)
        if not floor:
            continue
        print(f"{n} x 3 s setup, per job beyond the setup's commands: C's supervisor and runners "
              f"{fmt(med(own_c), 1000)} ms, B's slurmscriptd and prologs {fmt(med(own_b), 1000)} "
              f"ms; C/B with calls that cost nothing (C's slurmctld + the commands, over B): "
              f"{statistics.median(floor):.2f} [{min(floor):.2f}-{max(floor):.2f}]")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "inner":
        inner(sys.argv[2:])
    else:
        host(sys.argv[1:])
