#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""test/chaos/analyze.py: the figures of a chaos run (scripts/chaos).

Usage: analyze.py RUN_DIR LOG_DIR [--json]

RUN_DIR holds what scripts/chaos recorded (plan.txt, events.log, polls.log,
final-*.txt, supervisor.log, done.log, ledger.log, run.env); LOG_DIR the
cluster's slurmctld.log and slurmd-*.log.  Prints one table (or one JSON
object) and exits 1 when a gated figure is not 0, 2 when the records are
unusable, 0 otherwise.

Definitions (the ground truth of who owns what is the job name chaos-<n>,
unique per submission, plus the job id; the ledger script never uses the
name to decide anything):
  lost by Slurm    a job never seen in any state although its submission
                   succeeded, or seen active and then gone without a final
                   state and without having run to its end (no DONE line);
                   or held at the end with no plugin-caused duplicate launch
  lost by plugin   a job that ended with a switch reason ("switch setup
                   failed", "... timed out"), or held at the end after a
                   duplicate launch caused by the plugin
  leaked           an ALLOC with no FREE, its owner not active at the end
  double release   a FREE that found the allocation already released
  wrong owner      a FREE or ADOPT of an allocation whose owner (name, job id)
                   is not the calling job
  wrong drain      a node drained with a reason naming switch (the ledger
                   script never fails on purpose)
  duplicate launch slurmd's "Job J already running, do not launch second
                   copy"; caused by the plugin when job_start succeeded more
                   than once for the same (name, job id) within one Slurm
                   allocation of JobId J (slurmctld.log: two "job_start
                   accepted" lines with no "Allocate"/"Started"/
                   "allocate_resources" line of J between them); a second
                   setup after Slurm allocated the job again (a record saved
                   PENDING before the crash, its old step still running) is
                   Slurm's duplicate
  stuck            jobs CONFIGURING/COMPLETING, nodes COMPLETING at the end,
                   in that state for STUCK_AFTER s or more (by the polls):
                   longer than two calls at switch_timeout=20 can take, so
                   that a call that just started when the run ended is not
                   counted
  orphans          runner or hook processes (SWITCHLUA_CALL_ID in the
                   environment) or zombies in the chroot at the end, and any
                   switch-lua process left after the cluster stopped
  'Duplicate jobid' drains
                   drains slurmd caused by refusing a second launch of a
                   job id it still counts as running (issue 24: the lost
                   start)
  held after a lost start
                   jobs held at the end because their launch failed
                   ("launch failed requeued held": Slurm's answer to such a
                   refusal)
  stall faults without their lines
                   --backup's stall, lock-loss and stall-kill faults whose
                   FAULT line has a waited-for line as none: Slurm's backup
                   taking over, its switch/lua holding control at a new
                   epoch, the continued primary's "no longer in control"
                   (not for stall-kill, never continued)
  journal refusal  a job whose last reason names the journal: its setup was
                   refused while StateSaveLocation could not be written
                   (--backup's disk faults; switch_lua.conf(5)), the
                   documented fail-safe, not a loss
Some of the gated figures below ('Duplicate jobid' drains, jobs held after a
lost start, failed hand-backs, stall faults without their lines) are gated in
a --backup run (run.env backup=1) only.
"""
import collections
import glob
import json
import os
import re
import sys

TERMINAL = {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
            "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY"}
ACTIVE_STUCK = {"CONFIGURING", "COMPLETING"}
STUCK_AFTER = 60.0  # seconds
# slurmctld.log: Slurm allocated JobId N (batch scheduler, backfill,
# srun/salloc); an array task is "JobId=A_T(N)"
ALLOCATED = re.compile(r"(?:sched: Allocate|_start_job: Started|_slurm_rpc_allocate_resources) "
                       r"JobId=(?:\d+_\d+\((\d+)\)|(\d+)\b)")
# slurmctld.log: switch/lua's job_start of JobId N returned SUCCESS
ACCEPTED = re.compile(r"switch/lua: JobId=(\d+) job_start accepted the job")
# squeue %r of a job Slurm held after its launch failed on a node
LAUNCH_FAILED_HELD = re.compile(r"launch failed requeued held", re.I)
# --backup's faults of a stalled primary (scripts/chaos, issue 40)
STALL_KINDS = ("stall", "lock-loss", "stall-kill")


def read_lines(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return [line.rstrip("\n") for line in f]
    except FileNotFoundError:
        return []


def fields(words):
    """key=value words into a dict (words without '=' are skipped)."""
    return dict(w.split("=", 1) for w in words if "=" in w)


def is_held(state, reason):
    return state == "PENDING" and re.search(r"held", reason, re.I) is not None


class Run:
    def __init__(self, run_dir, log_dir):
        self.dir = run_dir
        self.logs = log_dir
        self.env = fields(read_lines(os.path.join(run_dir, "run.env")))
        self.load_plan()
        self.load_events()
        self.load_jobs()
        self.load_ledger()

    def path(self, name):
        return os.path.join(self.dir, name)

    # ----------------------------------------------------------- inputs
    def load_plan(self):
        self.subs = {}  # n -> {"kind", "nodes", "tasks"}
        self.planned_faults = collections.Counter()  # kind -> faults the plan drew
        for line in read_lines(self.path("plan.txt")):
            w = line.split()
            if len(w) >= 6 and w[1] == "SUBMIT":
                tasks = ["0", "1", "2"] if w[3] == "array" else ["-"]
                self.subs[w[2]] = {"kind": w[3], "nodes": w[4], "tasks": tasks}
            elif len(w) >= 3 and w[1] == "FAULT":
                self.planned_faults[w[2]] += 1

    def load_events(self):
        self.submitted = {}  # n -> rc (None: submitted, no answer recorded)
        self.cancelled = set()
        self.faults = []  # (t, kind, status, detail)
        self.fault_ends = []  # (t, kind, detail): hand-backs, disks writable again
        self.resent = 0  # submissions sent again (--backup: no controller took them)
        self.drains = []  # (t, node, state, reason)
        self.quiet = None
        self.srun_waiting = 0
        self.stopped_early = False
        for line in read_lines(self.path("events.log")):
            w = line.split()
            if len(w) < 2:
                continue
            t, what, rest = float(w[0]), w[1], w[2:]
            if what == "SUBMIT":
                self.submitted.setdefault(rest[0], None)
            elif what == "SUBMITTED":
                self.submitted[rest[0]] = fields(rest[1:]).get("rc")
                if "resent" in fields(rest[1:]):
                    self.resent += 1
            elif what == "CANCEL":
                self.cancelled.add(rest[0])
            elif what == "FAULT":
                self.faults.append((t, rest[0], rest[1] if len(rest) > 1 else "?", " ".join(rest[2:])))
            elif what == "FAULT_END":
                self.fault_ends.append((t, rest[0] if rest else "?", " ".join(rest[1:])))
            elif what == "DRAIN":
                m = re.match(r"node=(\S+) state=(\S+) reason=(.*)$", " ".join(rest))
                if m:
                    self.drains.append((t, m.group(1), m.group(2), m.group(3)))
            elif what == "QUIESCE":
                self.quiet = fields(rest).get("quiet") == "1"
            elif what == "SRUN_WAITING":
                self.srun_waiting = int(fields(rest).get("count", "0"))
            elif what == "PLAN_END":
                self.stopped_early = fields(rest).get("stopped_early") == "1"

    @staticmethod
    def parse_squeue(line):
        """A|F|K|name|state|reason|nodes -> (job id, task, name, state, reason)."""
        p = line.split("|")
        if len(p) < 7:
            return None
        job, _array_job, task, name, state, reason = p[:6]
        if not job.isdigit():
            return None
        if task in ("N/A", ""):
            task = "-"
        elif not task.isdigit():
            return None  # the pending rest of an array ("1-2")
        return job, task, name, state, reason

    def load_jobs(self):
        # (name, task) -> list of (t, job id, state, reason), in time order
        self.seen = collections.defaultdict(list)
        for line in read_lines(self.path("polls.log")):
            t, _, rest = line.partition(" ")
            r = self.parse_squeue(rest)
            if r:
                self.seen[(r[2], r[1])].append((float(t), r[0], r[3], r[4]))
        self.final = {}  # (name, task) -> (job id, state, reason)
        for line in read_lines(self.path("final-jobs.txt")):
            r = self.parse_squeue(line)
            if r:
                self.final[(r[2], r[1])] = (r[0], r[3], r[4])
        self.done = collections.Counter()  # (name, task) -> DONE lines
        for line in read_lines(self.path("done.log")):
            f = fields(line.split())
            self.done[(f.get("name"), f.get("task", "-"))] += 1

    def load_ledger(self):
        self.ledger = []  # (kind, id, fields)
        for line in read_lines(self.path("ledger.log")):
            w = line.split()
            if len(w) >= 2:
                self.ledger.append((w[0], w[1], fields(w[2:])))

    # ----------------------------------------------------------- figures
    def setups(self):
        """(name, job id) -> number of job_start calls that succeeded."""
        c = collections.Counter()
        for kind, _, f in self.ledger:
            if kind in ("ALLOC", "ADOPT"):
                c[(f.get("name"), f.get("job"))] += 1
        return c

    def setups_in_one_allocation(self):
        """(twice, seen): job ids (str) whose job_start was accepted twice or
        more within one Slurm allocation by slurmctld.log (the plugin's own
        re-runs), and those with any accepted line (a job without one is
        judged by the ledger alone)."""
        since_alloc, twice = collections.Counter(), set()
        for line in read_lines(os.path.join(self.logs, "slurmctld.log")):
            m = ALLOCATED.search(line)
            if m:
                since_alloc[m.group(1) or m.group(2)] = 0
                continue
            m = ACCEPTED.search(line)
            if m:
                since_alloc[m.group(1)] += 1
                if since_alloc[m.group(1)] >= 2:
                    twice.add(m.group(1))
        return twice, set(since_alloc)

    def duplicates(self):
        setups = self.setups()
        rerun, logged = self.setups_in_one_allocation()
        by_job = collections.defaultdict(list)
        for (name, job), n in setups.items():
            by_job[job].append((name, n))
        dup_jobs = set()
        for path in sorted(glob.glob(os.path.join(self.logs, "slurmd-*.log"))):
            for line in read_lines(path):
                m = re.search(r"Job (\d+) already running, do not launch second copy", line)
                if m:
                    dup_jobs.add(m.group(1))
        ctld_lines = sum(1 for line in read_lines(os.path.join(self.logs, "slurmctld.log"))
                         if "Duplicate jobid" in line)
        plugin, slurm = [], []
        for job in sorted(dup_jobs, key=int):
            if (job in rerun or job not in logged) and any(n >= 2 for _, n in by_job.get(job, [])):
                plugin.append(job)
            else:
                slurm.append(job)
        return plugin, slurm, ctld_lines

    def outcomes(self, dup_plugin_jobs):
        out = collections.Counter()
        detail = collections.defaultdict(list)
        for n, sub in self.subs.items():
            if n not in self.submitted:
                out["not submitted (time limit)"] += len(sub["tasks"])
                continue
            name = "chaos-" + n
            for task in sub["tasks"]:
                key = (name, task)
                seen = self.seen.get(key, [])
                final = self.final.get(key)
                last = (final[1], final[2]) if final else ((seen[-1][2], seen[-1][3]) if seen else None)
                ids = {s[1] for s in seen} | ({final[0]} if final else set())
                ran = self.done.get(key, 0) > 0
                if last is None:
                    if ran:
                        what = "completed"
                    elif self.submitted[n] not in (None, "0"):
                        what = "submission refused"
                    else:
                        what = "lost by Slurm"
                else:
                    state, reason = last
                    if re.search(r"journal", reason, re.I):
                        what = "ended by a journal refusal"
                    elif re.search(r"switch", reason, re.I):
                        what = "lost by plugin"
                    elif state == "COMPLETED" or (ran and state not in TERMINAL and final is None):
                        what = "completed"
                    elif state == "CANCELLED" and n in self.cancelled:
                        what = "cancelled by the workload"
                    elif final is not None and is_held(state, reason):
                        if ids & set(dup_plugin_jobs):
                            what = "lost by plugin"
                        elif LAUNCH_FAILED_HELD.search(reason):
                            what = "held after a lost start"
                        else:
                            what = "lost by Slurm"
                    elif final is not None and state not in TERMINAL:
                        what = "active at the end"
                    elif state in TERMINAL:
                        what = "ended otherwise"
                    else:
                        what = "lost by Slurm"  # vanished while active
                out[what] += 1
                if what not in ("completed", "cancelled by the workload"):
                    detail[what].append({"name": name, "task": task, "ids": sorted(ids, key=int),
                                         "last": list(last) if last else None, "ran": ran,
                                         "kind": sub["kind"]})
        return out, detail

    def allocations(self, active_owners):
        allocs, frees, adopts = {}, collections.defaultdict(list), []
        for kind, aid, f in self.ledger:
            if kind == "ALLOC":
                allocs[aid] = f
            elif kind == "FREE":
                frees[aid].append(f)
            elif kind == "ADOPT":
                adopts.append((aid, f))
        leaked, held_by_active = [], []
        for aid, f in allocs.items():
            if aid in frees:
                continue
            item = {"id": aid, "job": f.get("job"), "name": f.get("name"), "key": f.get("key"), "t": f.get("t")}
            (held_by_active if (f.get("name"), f.get("job")) in active_owners else leaked).append(item)
        double = [dict(id=aid, **f) for aid, fl in frees.items() for f in fl if f.get("first") == "no"]
        wrong_free = [dict(id=aid, **f) for aid, fl in frees.items() for f in fl
                      if f.get("owner_name", "-") != "-"
                      and (f.get("owner_name"), f.get("owner_job")) != (f.get("name"), f.get("job"))]
        wrong_adopt = [dict(id=aid, **f) for aid, f in adopts
                       if (f.get("owner_name"), f.get("owner_job")) != (f.get("name"), f.get("job"))]
        return allocs, leaked, held_by_active, double, wrong_free, wrong_adopt

    def drain_episodes(self):
        """Drains recorded by the poller, one per node and reason within 10 s."""
        episodes, last = [], {}
        for t, node, state, reason in self.drains:
            k = (node, reason)
            if k in last and t - last[k] < 10:
                last[k] = t
                continue
            last[k] = t
            episodes.append({"t": t, "node": node, "state": state, "reason": reason})
        return episodes

    def processes(self):
        """Orphans at the end and processes left after the stop.

        At the end, a runner is an orphan when its parent is not a live
        supervisor, a hook process when no runner is among its recorded
        ancestors, and every zombie is one; runners under a live supervisor
        are calls still in flight (the stuck figures cover them), unless
        scripts/chaos saw them waiting for a call (idle=1: started ahead of
        demand, --prestart).  After the stop, every switch-lua process or
        hook process counts."""
        procs = {}
        for line in read_lines(self.path("final-procs.txt")):
            w = line.split(" ")
            f = fields(w[1:])
            procs[f.get("pid")] = (w[0], f.get("ppid"), line, f.get("idle") == "1")
        orphans, in_flight, idle = [], [], []
        for pid, (kind, ppid, line, waiting) in procs.items():
            if kind == "zombie":
                orphans.append(line)
            elif kind == "runner":
                if procs.get(ppid, ("",))[0] != "supervisor":
                    orphans.append(line)
                else:
                    (idle if waiting else in_flight).append(line)
            elif kind == "hook":
                p, seen = ppid, set()
                while p in procs and p not in seen and procs[p][0] == "hook":
                    seen.add(p)
                    p = procs[p][1]
                if procs.get(p, ("",))[0] != "runner":
                    orphans.append(line)
        after = [line for line in read_lines(self.path("after-stop-procs.txt")) if line.strip()]
        return orphans, in_flight, idle, after

    def supervisor(self):
        samples = []
        for line in read_lines(self.path("supervisor.log")):
            f = fields(line.split())
            if "rss_kb" in f and f["rss_kb"].isdigit():
                samples.append((f["pid"], int(f["rss_kb"]), int(f.get("fds", "0")), line.endswith("final")))
        finals = [s for s in samples if s[3]]
        return {
            "pids_seen": len({s[0] for s in samples}),
            "max_rss_kib": max((s[1] for s in samples), default=None),
            "max_fds": max((s[2] for s in samples), default=None),
            "final_rss_kib": finals[-1][1] if finals else None,
            "final_fds": finals[-1][2] if finals else None,
        }

    def fault_counts(self):
        counts = collections.Counter()
        calls = {}  # runner pid -> the hook of its last call start line
        for kind, _, f in self.ledger:
            if kind in ("START", "COMPLETE"):
                calls[f.get("pid")] = "job_start" if kind == "START" else "job_complete"
        for _, kind, status, detail in self.faults:
            if status != "done":
                counts[kind + " (skipped: nothing to kill)"] += 1
                continue
            if kind == "runner":
                pid = fields(detail.split()).get("pid")
                kind = "runner " + calls.get(pid, "(other call)")
            counts[kind] += 1
        return counts

    def faults_not_injected(self):
        """Planned faults that never hit anything, by kind: the plan's count
        of each kind minus the faults of that kind recorded as done (retries
        included).  A chaos run that injected nothing proves nothing."""
        done = collections.Counter(kind for _, kind, status, _ in self.faults if status == "done")
        return {k: n - done[k] for k, n in sorted(self.planned_faults.items()) if n > done[k]}

    def stalls_without_lines(self):
        """The stall faults of a --backup run (stall, lock-loss, stall-kill)
        recorded as done whose FAULT line says that a line they waited for
        never came: Slurm's backup taking over, its switch/lua holding
        control, and (stall, lock-loss) the continued primary's "no longer
        in control"."""
        out = []
        for t, kind, status, detail in self.faults:
            if kind not in STALL_KINDS or status != "done":
                continue
            f = fields(detail.split())
            want = ["backup_taking_over_s", "backup_holds_control_s"]
            if kind != "stall-kill":
                want.append("primary_stale_s")
            missing = [w for w in want if f.get(w, "none") in ("none", "-", "")]
            if missing:
                out.append({"t": t, "kind": kind, "missing": missing, "detail": detail})
        return out

    def stuck(self):
        end = max([s[0] for runs in self.seen.values() for s in runs], default=0.0)
        jobs = []
        for k, v in self.final.items():
            if v[1] not in ACTIVE_STUCK:
                continue
            since = end
            for t, _, state, _ in reversed(self.seen.get(k, [])):
                if state != v[1]:
                    break
                since = t
            if end - since >= STUCK_AFTER:
                jobs.append({"id": v[0], "name": k[0], "task": k[1], "state": v[1], "for_s": round(end - since)})
        node_polls = collections.defaultdict(list)
        for line in read_lines(self.path("nodes.log")):
            t, _, rest = line.partition(" ")
            p = rest.split("|")
            if len(p) >= 2:
                node_polls[p[0]].append((float(t), p[1]))
        nodes = []
        for line in read_lines(self.path("final-nodes.txt")):
            p = line.split("|")
            if len(p) < 2 or "completing" not in p[1]:
                continue
            since = end
            for t, state in reversed(node_polls.get(p[0], [])):
                if "completing" not in state:
                    break
                since = t
            if end - since >= STUCK_AFTER:
                nodes.append({"node": p[0], "state": p[1], "for_s": round(end - since)})
        return jobs, nodes


def stuck_job_lines(log_dir, ids, keep=15):
    """The last `keep` slurmctld.log lines naming each JobId in `ids`
    ({id: [line, ...]}), printed under a failed run's table: the output CI
    keeps is often all there is to tell why a job stayed CONFIGURING."""
    if not ids:
        return {}
    pats = {i: re.compile(r"JobId=%s(?![0-9])" % re.escape(str(i))) for i in ids}
    out = {i: collections.deque(maxlen=keep) for i in ids}
    for line in read_lines(os.path.join(log_dir, "slurmctld.log")):
        for i, pat in pats.items():
            if pat.search(line):
                out[i].append(line[:400])
    return {i: list(v) for i, v in out.items()}


def analyze(run_dir, log_dir):
    r = Run(run_dir, log_dir)
    dup_plugin, dup_slurm, dup_ctld_lines = r.duplicates()
    outcomes, outcome_detail = r.outcomes(dup_plugin)
    active_owners = {(k[0], v[0]) for k, v in r.final.items()
                     if v[1] not in TERMINAL and not is_held(v[1], v[2])}
    allocs, leaked, held_by_active, double, wrong_free, wrong_adopt = r.allocations(active_owners)
    episodes = r.drain_episodes()
    wrong_drains = [e for e in episodes if re.search(r"switch", e["reason"], re.I)]
    dup_drains = [e for e in episodes if "Duplicate jobid" in e["reason"]]
    other_drains = [e for e in episodes if e not in wrong_drains and e not in dup_drains]
    stuck_jobs, stuck_nodes = r.stuck()
    stuck_lines = stuck_job_lines(log_dir, [j["id"] for j in stuck_jobs[:3]])
    orphans_end, in_flight, idle_runners, orphans_after = r.processes()
    starts = sum(1 for k, _, _ in r.ledger if k == "START")
    completes = sum(1 for k, _, _ in r.ledger if k == "COMPLETE")
    setups = r.setups()

    figures = collections.OrderedDict()
    figures["submissions"] = len(r.submitted)
    figures["jobs (array tasks counted)"] = sum(len(s["tasks"]) for n, s in r.subs.items() if n in r.submitted)
    for k in ("completed", "cancelled by the workload", "ended otherwise", "lost by Slurm",
              "lost by plugin", "held after a lost start", "ended by a journal refusal",
              "active at the end", "submission refused", "not submitted (time limit)"):
        figures["jobs " + k] = outcomes.get(k, 0)
    figures["submissions sent again (no controller took them)"] = r.resent
    figures["sruns still waiting at the end"] = r.srun_waiting
    figures["job_start calls"] = starts
    figures["job_complete calls"] = completes
    figures["allocations"] = len(allocs)
    figures["setups that succeeded twice or more"] = sum(1 for n in setups.values() if n >= 2)
    figures["leaked allocations"] = len(leaked)
    figures["allocations of jobs still active"] = len(held_by_active)
    figures["double releases"] = len(double)
    figures["releases of another job's allocation"] = len(wrong_free)
    figures["adoptions of another job's allocation"] = len(wrong_adopt)
    figures["wrong drains (switch reason)"] = len(wrong_drains)
    figures["drains 'Duplicate jobid'"] = len(dup_drains)
    figures["other drains"] = len(other_drains)
    figures["duplicate launches by the plugin"] = len(dup_plugin)
    figures["duplicate launches by Slurm"] = len(dup_slurm)
    figures["slurmctld 'Duplicate jobid' lines"] = dup_ctld_lines
    figures["jobs stuck CONFIGURING/COMPLETING"] = len(stuck_jobs)
    figures["nodes stuck COMPLETING"] = len(stuck_nodes)
    figures["hand-backs that failed"] = sum(
        1 for _, _, d in r.fault_ends if "handback" in d and "rc=0" not in d.split())
    # Issue 24 (switch_journal_failure=wait): teardowns that waited for a
    # journal that could not be written, and its failures; not gated.
    ctld_log = list(read_lines(os.path.join(log_dir, "slurmctld.log")))
    figures["teardowns that waited for the journal"] = sum(
        1 for line in ctld_log if "job_complete waits for the journal" in line)
    figures["journal failures (error lines)"] = sum(
        1 for line in ctld_log
        if re.search(r"switch/lua: journal \S+: .*; until a fresh snapshot of it", line))
    figures["orphan processes at the end"] = len(orphans_end)
    figures["processes left after stop"] = len(orphans_after)
    figures["calls in flight at the end"] = len(in_flight)
    figures["idle runners at the end"] = len(idle_runners)
    sup = r.supervisor()
    for k, v in sup.items():
        figures["supervisor " + k.replace("_", " ")] = v if v is not None else "-"

    missing = r.faults_not_injected()
    figures["planned faults not injected"] = sum(missing.values())
    figures["planned faults not injected, by kind"] = (
        " ".join(f"{k}={n}" for k, n in missing.items()) or "-")

    stalls_missing = r.stalls_without_lines()
    figures["stall faults without their lines"] = len(stalls_missing)

    gated = ["planned faults not injected", "leaked allocations", "double releases",
             "releases of another job's allocation",
             "adoptions of another job's allocation", "wrong drains (switch reason)",
             "duplicate launches by the plugin", "jobs stuck CONFIGURING/COMPLETING",
             "nodes stuck COMPLETING", "orphan processes at the end", "processes left after stop"]
    if r.env.get("backup") == "1":
        gated += ["drains 'Duplicate jobid'", "jobs held after a lost start", "hand-backs that failed",
                  "stall faults without their lines"]
    failed = [g for g in gated if figures[g]]
    faults = r.fault_counts()
    # Nothing submitted, or nothing started, is no evidence either way.
    usable = starts > 0 and len(r.submitted) > 0
    return {
        "run": dict(r.env, quiescence_reached=r.quiet, stopped_early=r.stopped_early),
        "figures": figures,
        "faults": dict(sorted(faults.items())),
        "faults_total": sum(v for k, v in faults.items() if "skipped" not in k),
        "gated": gated,
        "failed": failed,
        "usable": usable,
        "details": {
            "leaked": leaked,
            "allocations_of_active_jobs": held_by_active,
            "double_releases": double,
            "wrong_owner_releases": wrong_free,
            "wrong_owner_adoptions": wrong_adopt,
            "wrong_drains": wrong_drains,
            "duplicate_drains": dup_drains,
            "other_drains": other_drains,
            "duplicate_launch_jobs_plugin": dup_plugin,
            "duplicate_launch_jobs_slurm": dup_slurm,
            "stuck_jobs": stuck_jobs,
            "stuck_nodes": stuck_nodes,
            "stuck_job_lines": {str(k): v for k, v in stuck_lines.items()},
            "orphans_end": orphans_end,
            "left_after_stop": orphans_after,
            "stall_faults_without_lines": stalls_missing,
            "jobs": outcome_detail,
        },
    }


def print_table(res):
    run = res["run"]
    print("chaos: seed=%s variant=%s jobs=%s faults=%s sabotage=%s quiescence=%s" % (
        run.get("seed"), run.get("variant"), run.get("jobs"), run.get("faults"),
        run.get("sabotage") or "none", "reached" if run.get("quiescence_reached") else "NOT reached"))
    rows = list(res["figures"].items())
    rows += [("faults: " + k, v) for k, v in res["faults"].items()]
    rows.append(("faults: total", res["faults_total"]))
    width = max(len(k) for k, _ in rows)
    print("| %-*s | %8s |" % (width, "figure", "value"))
    print("|%s|%s|" % ("-" * (width + 2), "-" * 10))
    for k, v in rows:
        mark = " <-" if k in res["failed"] else ""
        print("| %-*s | %8s |%s" % (width, k, v, mark))
    d = res["details"]
    for title, key in (("leaked", "leaked"), ("double releases", "double_releases"),
                       ("wrong-owner releases", "wrong_owner_releases"),
                       ("wrong-owner adoptions", "wrong_owner_adoptions"),
                       ("wrong drains", "wrong_drains"), ("'Duplicate jobid' drains", "duplicate_drains"),
                       ("stuck jobs", "stuck_jobs"),
                       ("stuck nodes", "stuck_nodes"), ("orphans", "orphans_end"),
                       ("left after stop", "left_after_stop"),
                       ("stall fault without its lines", "stall_faults_without_lines")):
        for item in d[key][:8]:
            print("  %s: %s" % (title, item if isinstance(item, str) else json.dumps(item, sort_keys=True)))
        if len(d[key]) > 8:
            print("  %s: ... %d more (--json)" % (title, len(d[key]) - 8))
    for job_id, lines in d.get("stuck_job_lines", {}).items():
        print("  slurmctld.log, the last %d lines naming stuck JobId=%s:" % (len(lines), job_id))
        for line in lines:
            print("    " + line)
    if res["failed"]:
        print("chaos: FAILED: " + ", ".join(res["failed"]))
    else:
        more = (", 'Duplicate jobid' drain, job held after a lost start, failed hand-back, "
                "stall fault without its lines"
                if "hand-backs that failed" in res["gated"] else "")
        print("chaos: passed (no leak, double or wrong-owner release, wrong drain, plugin duplicate launch, "
              "stuck job or node, orphan%s)" % more)


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    if len(args) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    res = analyze(args[0], args[1])
    if "--json" in argv:
        print(json.dumps(res, indent=1))
    else:
        print_table(res)
    if not res["usable"]:
        print("chaos: no job_start call reached the ledger script: the run says nothing", file=sys.stderr)
        return 2
    return 1 if res["failed"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
