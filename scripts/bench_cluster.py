#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# scripts/bench_cluster.py: the side-by-side cluster benchmark behind
# `scripts/bench --cluster [--quick] [--reps N]`.  Run it through scripts/bench.
#
# On the project's own cluster (scripts/cluster, 3 nodes, 240 job slots with
# OverSubscribe=FORCE:40, Epilog=/bin/true and SlurmctldDebug=info for every
# configuration), in ONE run, with the configurations rotated over the
# repetitions:
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
#   cpu        controller CPU per job over the srun phase and over the burst:
#              slurmctld and all its descendants (supervisor, runners,
#              slurmscriptd, prologs, and what they waited for)
#   rss        during burst3: the supervisor's VmRSS and the runners' total
# and prints one table of medians with the per-repetition ratios C/A and C/B.
# Numbers only: nothing here asserts a time.
#
# The host part (this file, run with python3 on the host) drives
# scripts/cluster; the measuring part runs inside the chroot (the same file,
# copied there, `inner ...`), so srun is timed where it runs.
import json
import os
import re
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CL = os.environ.get("SWITCHLUA_CLUSTER_DIR", "/var/tmp/switch-lua-cluster")
OUT = CL + "/out"  # inside the chroot, mode 1777
MARKS = OUT + "/bench-marks"
NOT_READY = "Waiting for resource configuration"

HOOK_LUA = """-- switch/lua script of scripts/bench --cluster (written by it)
function slurm_switch_job_start(job)
  if job.name == "sleep3" then
    os.execute("echo " .. job.job_id .. " start $(date +%%s.%%N) >> %(marks)s; sleep 3; " ..
               "echo " .. job.job_id .. " end $(date +%%s.%%N) >> %(marks)s")
  end
  return slurm.SUCCESS, { bench = true }
end

function slurm_switch_job_complete(job, jobinfo)
  return slurm.SUCCESS
end
""" % {"marks": MARKS}

PROLOG_SH = """#!/bin/sh
# PrologSlurmctld of scripts/bench --cluster (written by it)
case "$SLURM_JOB_NAME" in
sleep3)
	echo "$SLURM_JOB_ID start $(date +%%s.%%N)" >>%(marks)s
	sleep 3
	echo "$SLURM_JOB_ID end $(date +%%s.%%N)" >>%(marks)s
	;;
esac
exit 0
""" % {"marks": MARKS}


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
    """{pid: (comm, ticks)} of slurmctld and its descendants."""
    with open(CL + "/run/slurmctld.pid") as f:
        root = int(f.read().strip())
    procs = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            st = proc_stat(int(d))
            if st:
                procs[int(d)] = st
    keep, frontier = {}, [root]
    children = {}
    for pid, (comm, ppid, ticks) in procs.items():
        children.setdefault(ppid, []).append(pid)
    while frontier:
        p = frontier.pop()
        if p in procs and p not in keep:
            keep[p] = (procs[p][0], procs[p][2])
            frontier.extend(children.get(p, []))
    return keep


def cpu_seconds():
    return sum(t for _, t in ctld_tree().values()) / os.sysconf("SC_CLK_TCK")


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


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
    submit_array(n, "arr", net)
    wait_empty()
    return {"array_s": time.monotonic() - t0}


def sample_rss():
    sup, runners = 0, 0
    for pid, (comm, _) in ctld_tree().items():
        if comm.startswith("switch-lua-supe"):
            sup = max(sup, rss_kib(pid))
        elif comm.startswith("switch-lua-runn"):
            runners += rss_kib(pid)
    return sup, runners


def inner_burst3(n, net):
    open(MARKS, "w").close()
    os.chmod(MARKS, 0o666)
    log = CL + "/log/slurmctld.log"
    log_off = os.path.getsize(log)
    t0_wall = time.time()
    t0 = time.monotonic()
    c0 = cpu_seconds()
    submit_array(n, "sleep3", net)
    sup_max, run_max = 0, 0
    srun = None
    while True:
        el = time.monotonic() - t0
        if srun is None and el >= 2.0:
            srun = subprocess.Popen([sys.executable, os.path.abspath(__file__), "inner",
                                     "one_srun", "1" if net else "0"], stdout=subprocess.PIPE,
                                    text=True)
        s, r = sample_rss()
        sup_max, run_max = max(sup_max, s), max(run_max, r)
        if el > 2.5 and squeue_count() == 0:
            break
        if el > 600:
            break
        time.sleep(0.25)
    burst = time.monotonic() - t0
    inter = json.loads(srun.communicate()[0]) if srun else {}
    burst_cpu = (cpu_seconds() - c0) / n
    # Marks: hook start/end per job (wall clock).
    ev = []
    ends = []
    with open(MARKS) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3:
                t = float(parts[2])
                ev.append((t, 1 if parts[1] == "start" else -1))
                if parts[1] == "end":
                    ends.append(t - t0_wall)
    ev.sort()
    cur = most = 0
    for _, d in ev:
        cur += d
        most = max(most, cur)
    # switch/lua: the slot waits the log reports.
    tq, iq = [], []
    with open(log, errors="replace") as f:
        f.seek(log_off)
        for line in f:
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
            "interactive_queued_ms": iq[0] if iq else None, "supervisor_rss_kib": sup_max,
            "runners_rss_kib": run_max, "hooks": len(ends), "burst_cpu_per_job": burst_cpu}


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
    fn = {"srun": inner_srun, "array": inner_array, "burst3": inner_burst3}[what]
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


def boot(cfg, burst=False):
    """Boots configuration cfg; B runs PrologSlurmctld=/bin/true, or the
    sleeping prolog script when burst is set (the burst3 phase)."""
    base = ["--debug", "info", "--extra", "PartitionName=DEFAULT OverSubscribe=FORCE:40",
            "--extra", "Epilog=/bin/true"]
    if cfg == "B":
        prolog = "/etc/slurm/bench_prolog.sh" if burst else "/bin/true"
        base += ["--extra", f"PrologSlurmctld={prolog}"]
    if cfg == "C":
        base += ["--switch-type", "switch/lua", "--script", HOOK_FILE]
    # A slurmd killed a moment ago may still hold its socket: stop cleanly,
    # and try the start again once.
    for attempt in range(2):
        subprocess.run([REPO + "/scripts/cluster", "stop"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        cluster("config", *base, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        install_files()
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


def host(argv):
    global HOOK_FILE
    quick = "--quick" in argv
    reps = 2 if quick else 5
    if "--reps" in argv:
        reps = int(argv[argv.index("--reps") + 1])
    if "--slurm" in argv:
        # The Slurm every configuration boots (scripts/cluster config reads
        # SWITCHLUA_SLURM): debian, or X.Y.Z built by scripts/testbed
        # slurm-install, with the plugin from scripts/testbed plugin-install.
        os.environ["SWITCHLUA_SLURM"] = argv[argv.index("--slurm") + 1]
    slurm = os.environ.get("SWITCHLUA_SLURM") or "debian"
    slurm_label = "Debian's 24.11.5" if slurm == "debian" else slurm
    n_srun = 15 if quick else 40
    n_array = 60 if quick else 120
    n_burst = 240
    HOOK_FILE = f"/tmp/switchlua-bench-hook-{os.getpid()}.lua"
    with open(HOOK_FILE, "w") as f:
        f.write(HOOK_LUA)
    print(f"scripts/bench --cluster on Slurm {slurm_label}: {reps} repetitions, configurations rotated; "
          f"srun x{n_srun}, array of {n_array}, burst of {n_burst} with a 3 s setup",
          flush=True)
    cfgs = ["A", "B", "C"]
    res = {c: [] for c in ["A", "B", "C", "C0"]}  # per rep: metrics dict
    try:
        for rep in range(reps):
            order = cfgs[rep % 3:] + cfgs[:rep % 3]
            for cfg in order:
                t0 = time.monotonic()
                boot(cfg)
                row = {}
                s = measure("srun", n_srun, cfg == "C")
                row.update(srun_med=med(s["walls"]), srun_p90=q(s["walls"], 0.9),
                           first_poll=s["first_poll"], cpu_per_job=s["cpu_per_job"])
                row.update(measure("array", n_array, cfg == "C"))
                if cfg == "B":
                    boot(cfg, burst=True)
                row.update(measure("burst3", n_burst, cfg == "C"))
                res[cfg].append(row)
                if cfg == "C":
                    s0 = measure("srun", n_srun, False)
                    r0 = dict(srun_med=med(s0["walls"]), srun_p90=q(s0["walls"], 0.9),
                              first_poll=s0["first_poll"], cpu_per_job=s0["cpu_per_job"])
                    r0.update(measure("array", n_array, False))
                    res["C0"].append(r0)
                print(f"  rep {rep + 1} {cfg}: done in {time.monotonic() - t0:.0f} s "
                      f"(srun median {row['srun_med'] * 1000:.0f} ms, first poll "
                      f"{row['first_poll'] * 100:.0f} %, burst {row['burst_s']:.1f} s)",
                      flush=True)
    finally:
        cluster("stop", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.unlink(HOOK_FILE)
    with open(f"/tmp/switchlua-bench-cluster-{os.getpid()}.json", "w") as f:
        json.dump(res, f)
    report(res)


ROWS = [
    ("srun_med", "srun -N1 true, median", 1000, "ms"),
    ("srun_p90", "srun -N1 true, p90", 1000, "ms"),
    ("first_poll", "srun made the first readiness poll", 100, "%"),
    ("cpu_per_job", "controller CPU per srun job", 1000, "ms"),
    ("array_s", "array of trivial jobs, submit -> all done", 1, "s"),
    ("burst_s", "240 x 3 s setup: whole burst", 1, "s"),
    ("setups_at_once", "240 x 3 s setup: setups at once", 1, ""),
    ("burst_cpu_per_job", "240 x 3 s setup: controller CPU per job", 1000, "ms"),
    ("setup_median_s", "240 x 3 s setup: submit -> setup done, median", 1, "s"),
    ("setup_max_s", "240 x 3 s setup: submit -> setup done, max", 1, "s"),
    ("interactive_ready_s", "srun 2 s into the burst: allocation -> ready", 1, "s"),
    ("interactive_queued_ms", "  its job_start waited for a slot", 1, "ms"),
    ("teardown_queued_max_ms", "job_complete waited for a slot, max", 1, "ms"),
    ("supervisor_rss_kib", "supervisor RSS during the burst, max", 1 / 1024, "MiB"),
    ("runners_rss_kib", "runners' total RSS during the burst, max", 1 / 1024, "MiB"),
]


NO_RATIO = {"A": ("setups_at_once", "interactive_ready_s")}


def fmt(v, scale):
    if v is None:
        return "-"
    v = v * scale
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.2f}" if abs(v) < 10 else f"{v:.1f}"


def ratios(res, a, b, key):
    out = []
    for ra, rb in zip(res[a], res[b]):
        x, y = ra.get(key), rb.get(key)
        # No ratio against a configuration that does not do the work (A has
        # no setup: its allocation -> ready is a few ms, its setups at once 0).
        if x is not None and y and key not in NO_RATIO.get(b, ()):
            out.append(x / y)
    if not out:
        return "-"
    return f"{statistics.median(out):.2f} [{min(out):.2f}-{max(out):.2f}]"


def report(res):
    print()
    print("medians over the repetitions; ratios: median [min-max] of the per-repetition ratios")
    head = f"{'':50} {'A':>8} {'B':>8} {'C':>8} {'C0':>8}  {'C/A':>18} {'C/B':>18}"
    print(head)
    print("-" * len(head))
    for key, label, scale, unit in ROWS:
        cells = [fmt(med([r.get(key) for r in res[c]]), scale) for c in ["A", "B", "C", "C0"]]
        print(f"{label + (' (' + unit + ')' if unit else ''):50} " +
              " ".join(f"{c:>8}" for c in cells) +
              f"  {ratios(res, 'C', 'A', key):>18} {ratios(res, 'C', 'B', key):>18}")
    print()
    print("A: no switch plugin; B: PrologSlurmctld=/bin/true (the burst: a sh prolog that sleeps "
          "3 s); C: switch/lua, jobs with --network; C0: switch/lua, jobs without --network.")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "inner":
        inner(sys.argv[2:])
    else:
        host(sys.argv[1:])
