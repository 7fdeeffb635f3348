#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""test/chaos/analyze_test.py: the chaos analysis on hand-made records.

Each test writes the records of a tiny run (two jobs) with one fault of the
plugin in them and checks that analyze.py counts it and fails the run; the
clean run passes.  Run: python3 test/chaos/analyze_test.py
"""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import analyze  # noqa: E402

CLEAN = {
    "run.env": "seed=1\njobs=2\nfaults=0\nvariant=naive\n",
    "plan.txt": "300 SUBMIT 1 batch 1 2\n400 SUBMIT 2 srun 2 2\n",
    "events.log": ("10.00 SUBMIT 1 kind=batch nodes=1 secs=2\n10.10 SUBMITTED 1 rc=0 id=1\n"
                   "11.00 SUBMIT 2 kind=srun nodes=2 secs=2\n20.00 SUBMITTED 2 rc=0 id=2\n"
                   "30.00 PLAN_END stopped_early=0\n31.00 QUIESCE quiet=1 after_s=1\n"
                   "31.50 SRUN_WAITING count=0\n"),
    "polls.log": ("12.00 1|1|N/A|chaos-1|RUNNING|None|node1\n12.00 2|2|N/A|chaos-2|RUNNING|None|node[2-3]\n"
                  "16.00 1|1|N/A|chaos-1|COMPLETED|None|node1\n16.00 2|2|N/A|chaos-2|COMPLETED|None|node[2-3]\n"),
    "final-jobs.txt": "1|1|N/A|chaos-1|COMPLETED|None|node1\n2|2|N/A|chaos-2|COMPLETED|None|node[2-3]\n",
    "final-nodes.txt": "node1|idle|none\nnode2|idle|none\nnode3|idle|none\n",
    "final-procs.txt": "supervisor pid=100 ppid=50 state=S cmd=switch-lua-supervisor\n",
    "after-stop-procs.txt": "",
    "supervisor.log": "12.00 pid=100 rss_kb=4000 fds=9\n31.00 pid=100 rss_kb=4100 fds=9 final\n",
    "done.log": "DONE name=chaos-1 job=1 task=- host=x t=14\nDONE name=chaos-2 job=2 task=- host=x t=14\n",
    "ledger.log": ("START - job=1 key=k1 name=chaos-1 attempt=0 pid=201 t=11.0\n"
                   "ALLOC a1 job=1 key=k1 name=chaos-1 attempt=0 pid=201 t=12.0\n"
                   "START - job=2 key=k2 name=chaos-2 attempt=0 pid=202 t=11.0\n"
                   "ALLOC a2 job=2 key=k2 name=chaos-2 attempt=0 pid=202 t=12.0\n"
                   "COMPLETE - job=1 key=k1 name=chaos-1 jobinfo=a1 pid=203 t=15.0\n"
                   "FREE a1 job=1 key=k1 name=chaos-1 owner_job=1 owner_name=chaos-1 first=yes via=jobinfo pid=203 t=16.0\n"
                   "COMPLETE - job=2 key=k2 name=chaos-2 jobinfo=a2 pid=204 t=15.0\n"
                   "FREE a2 job=2 key=k2 name=chaos-2 owner_job=2 owner_name=chaos-2 first=yes via=jobinfo pid=204 t=16.0\n"),
}
LOGS = {"slurmctld.log": "", "slurmd-node1.log": ""}


def run(changes=None, logs=None):
    with tempfile.TemporaryDirectory() as d:
        rd, ld = os.path.join(d, "run"), os.path.join(d, "log")
        os.mkdir(rd)
        os.mkdir(ld)
        for name, text in dict(CLEAN, **(changes or {})).items():
            with open(os.path.join(rd, name), "w") as f:
                f.write(text)
        for name, text in dict(LOGS, **(logs or {})).items():
            with open(os.path.join(ld, name), "w") as f:
                f.write(text)
        return analyze.analyze(rd, ld)


def drop(text, word):
    return "".join(line + "\n" for line in text.splitlines() if word not in line)


class Figures(unittest.TestCase):
    def test_clean_run_passes(self):
        res = run()
        self.assertEqual(res["failed"], [])
        self.assertEqual(res["figures"]["jobs completed"], 2)
        self.assertEqual(res["figures"]["supervisor final rss kib"], 4100)

    def test_planned_fault_never_injected_fails_the_run(self):
        plan = CLEAN["plan.txt"] + "500 FAULT runner\n600 FAULT ctld\n"
        skipped = CLEAN["events.log"] + "12.00 FAULT runner skipped no switch-lua-runner process within 6 s\n"
        res = run({"plan.txt": plan, "events.log": skipped + "13.00 FAULT ctld done\n"})
        self.assertEqual(res["figures"]["planned faults not injected"], 1)
        self.assertEqual(res["figures"]["planned faults not injected, by kind"], "runner=1")
        self.assertIn("planned faults not injected", res["failed"])
        # A retry that hit something makes up for the skipped one.
        res = run({"plan.txt": plan,
                   "events.log": skipped + "13.00 FAULT ctld done\n14.00 FAULT runner done pid=7\n"})
        self.assertEqual(res["figures"]["planned faults not injected"], 0)
        self.assertEqual(res["failed"], [])

    def test_nothing_submitted_is_unusable(self):
        res = run({"events.log": "30.00 PLAN_END stopped_early=1\n", "ledger.log": ""})
        self.assertFalse(res["usable"])

    def test_leak(self):
        res = run({"ledger.log": drop(CLEAN["ledger.log"], "FREE a2")})
        self.assertEqual(res["figures"]["leaked allocations"], 1)
        self.assertIn("leaked allocations", res["failed"])

    def test_allocation_of_an_active_job_is_not_a_leak(self):
        res = run({"ledger.log": drop(CLEAN["ledger.log"], "FREE a2"),
                   "final-jobs.txt": CLEAN["final-jobs.txt"].replace("chaos-2|COMPLETED", "chaos-2|RUNNING")})
        self.assertEqual(res["figures"]["leaked allocations"], 0)
        self.assertEqual(res["figures"]["allocations of jobs still active"], 1)

    def test_double_release(self):
        res = run({"ledger.log": CLEAN["ledger.log"] +
                   "FREE a1 job=1 key=k1 name=chaos-1 owner_job=- owner_name=- first=no via=jobinfo pid=205 t=20\n"})
        self.assertEqual(res["figures"]["double releases"], 1)
        self.assertIn("double releases", res["failed"])

    def test_wrong_owner_release_and_adoption(self):
        res = run({"ledger.log": CLEAN["ledger.log"].replace(
            "FREE a2 job=2 key=k2 name=chaos-2", "FREE a2 job=2 key=k2 name=chaos-9") +
            "ADOPT a1 job=1 key=k1 name=chaos-7 owner_job=1 owner_name=chaos-1 pid=206 t=13\n"})
        self.assertEqual(res["figures"]["releases of another job's allocation"], 1)
        self.assertEqual(res["figures"]["adoptions of another job's allocation"], 1)

    def test_wrong_drain_once_per_episode(self):
        ev = CLEAN["events.log"] + (
            "17.00 DRAIN node=node1 state=drained reason=switch/lua job_complete died on signal 9 (JobId=1)\n"
            "19.00 DRAIN node=node1 state=drained reason=switch/lua job_complete died on signal 9 (JobId=1)\n"
            "18.00 DRAIN node=node2 state=drained reason=Duplicate jobid\n")
        res = run({"events.log": ev})
        self.assertEqual(res["figures"]["wrong drains (switch reason)"], 1)
        self.assertEqual(res["figures"]["drains 'Duplicate jobid'"], 1)

    def test_duplicate_launch_attribution(self):
        logs = {"slurmd-node1.log": "[t] error: Job 1 already running, do not launch second copy\n"
                                    "[t] error: Job 2 already running, do not launch second copy\n"}
        res = run({"ledger.log": CLEAN["ledger.log"] +
                   "ALLOC a3 job=1 key=k1 name=chaos-1 attempt=0 pid=207 t=13\n"
                   "FREE a3 job=1 key=k1 name=chaos-1 owner_job=1 owner_name=chaos-1 first=yes via=jobinfo pid=208 t=16\n"},
                  logs)
        self.assertEqual(res["figures"]["duplicate launches by the plugin"], 1)
        self.assertEqual(res["figures"]["duplicate launches by Slurm"], 1)

    def test_duplicate_launch_after_a_new_slurm_allocation_is_slurms(self):
        # Both setups of JobId 1 succeeded, but Slurm allocated the job again
        # in between (its record was recovered PENDING after a crash while
        # the first batch step still ran): Slurm's duplicate, not the plugin's.
        logs = {"slurmd-node1.log": "[t] error: Job 1 already running, do not launch second copy\n"}
        ledger = CLEAN["ledger.log"] + (
            "ALLOC a3 job=1 key=k1 name=chaos-1 attempt=1 pid=207 t=13\n"
            "FREE a3 job=1 key=k1 name=chaos-1 owner_job=1 owner_name=chaos-1 first=yes via=jobinfo pid=208 t=16\n")
        accepted = "[t] switch/lua: JobId=1 job_start accepted the job: jobinfo stored, job may launch\n"
        cases = (("sched: Allocate JobId=1 NodeList=node1", "", 1),
                 ("sched: Allocate JobId=1 NodeList=node1",
                  "sched/backfill: _start_job: Started JobId=1 in debug on node1", 0),
                 ("sched: _slurm_rpc_allocate_resources JobId=1 NodeList=node1",
                  "sched: _slurm_rpc_allocate_resources JobId=1 NodeList=node1", 0),
                 # an array task: JobId=ARRAY_TASK(ID); the array job's id is not ours
                 ("sched: Allocate JobId=1_0(1) NodeList=node1",
                  "sched/backfill: _start_job: Started JobId=1_0(1) in debug on node1", 0),
                 ("sched: Allocate JobId=1_0(1) NodeList=node1",
                  "sched/backfill: _start_job: Started JobId=7_0(8) in debug on node1", 1))
        for first, again, by_plugin in cases:
            ctld = "[t] %s\n%s[t] Recovered JobId=1 Assoc=0\n%s%s" % (
                first, accepted, "[t] %s\n" % again if again else "", accepted)
            res = run({"ledger.log": ledger}, dict(logs, **{"slurmctld.log": ctld}))
            self.assertEqual(res["figures"]["duplicate launches by the plugin"], by_plugin, again)
            self.assertEqual(res["figures"]["duplicate launches by Slurm"], 1 - by_plugin, again)

    def test_stuck(self):
        # COMPLETING for 70 s at the end of the polls: stuck; for 10 s: not.
        polls = CLEAN["polls.log"] + ("20.00 1|1|N/A|chaos-1|COMPLETING|None|node1\n"
                                      "90.00 1|1|N/A|chaos-1|COMPLETING|None|node1\n")
        nodes = "20.00 node1|completing|none\n90.00 node1|completing|none\n"
        changes = {"final-jobs.txt": CLEAN["final-jobs.txt"].replace("chaos-1|COMPLETED", "chaos-1|COMPLETING"),
                   "final-nodes.txt": CLEAN["final-nodes.txt"].replace("node1|idle", "node1|completing"),
                   "polls.log": polls, "nodes.log": nodes}
        res = run(changes)
        self.assertEqual(res["figures"]["jobs stuck CONFIGURING/COMPLETING"], 1)
        self.assertEqual(res["figures"]["nodes stuck COMPLETING"], 1)
        changes["polls.log"] = polls.replace("20.00 1|1", "80.00 1|1")
        changes["nodes.log"] = nodes.replace("20.00", "80.00")
        res = run(changes)
        self.assertEqual(res["figures"]["jobs stuck CONFIGURING/COMPLETING"], 0)
        self.assertEqual(res["figures"]["nodes stuck COMPLETING"], 0)

    def test_orphans(self):
        procs = CLEAN["final-procs.txt"] + (
            "runner pid=300 ppid=100 state=S cmd=switch-lua-runner\n"   # in flight: not an orphan
            "hook pid=301 ppid=300 state=S cmd=sleep\n"
            "runner pid=302 ppid=100 state=S idle=1 cmd=switch-lua-runner\n"  # started ahead of demand
            "runner pid=303 ppid=1 state=S idle=1 cmd=switch-lua-runner\n"    # orphan, idle or not
            "runner pid=400 ppid=1 state=S cmd=switch-lua-runner\n"     # orphan
            "hook pid=500 ppid=2 state=S cmd=sleep\n"                   # orphan
            "zombie pid=600 ppid=100 state=Z cmd=\n")                   # orphan
        res = run({"final-procs.txt": procs,
                   "after-stop-procs.txt": "supervisor pid=100 ppid=1 state=S cmd=switch-lua-supervisor\n"})
        self.assertEqual(res["figures"]["orphan processes at the end"], 4)
        self.assertEqual(res["figures"]["calls in flight at the end"], 1)
        self.assertEqual(res["figures"]["idle runners at the end"], 1)
        self.assertEqual(res["figures"]["processes left after stop"], 1)

    def test_lost_jobs(self):
        # chaos-2 vanished while pending: lost by Slurm; chaos-1 cancelled
        # with a switch reason: lost by the plugin.
        polls = ("12.00 1|1|N/A|chaos-1|CANCELLED|switch setup failed: x|node1\n"
                 "12.00 2|2|N/A|chaos-2|PENDING|Priority|\n")
        res = run({"polls.log": polls, "final-jobs.txt": "1|1|N/A|chaos-1|CANCELLED|switch setup failed: x|node1\n",
                   "done.log": ""})
        self.assertEqual(res["figures"]["jobs lost by plugin"], 1)
        self.assertEqual(res["figures"]["jobs lost by Slurm"], 1)
        self.assertEqual(res["failed"], [])  # lost jobs are figures, not gates

    def test_backup_run_gates_duplicate_drains_lost_start_holds_and_hand_backs(self):
        # chaos-2 held after its launch failed ("Duplicate jobid" on node2),
        # one hand-back failed: figures in every run, gates in a --backup run.
        ev = CLEAN["events.log"] + (
            "18.00 DRAIN node=node2 state=draining reason=Duplicate jobid\n"
            "19.00 FAULT takeover done\n"
            "40.00 FAULT_END takeover handback rc=1 last=timed_out\n"
            "41.00 FAULT primary-kill done backup_in_control_after_s=11\n"
            "70.00 FAULT_END primary-kill handback rc=0\n")
        changes = {"events.log": ev, "done.log": drop(CLEAN["done.log"], "chaos-2"),
                   "final-jobs.txt": CLEAN["final-jobs.txt"].replace(
                       "chaos-2|COMPLETED|None", "chaos-2|PENDING|launch failed requeued held")}
        gates = ["drains 'Duplicate jobid'", "jobs held after a lost start", "hand-backs that failed"]
        res = run(changes)
        self.assertEqual(res["figures"]["jobs held after a lost start"], 1)
        self.assertEqual(res["figures"]["jobs lost by Slurm"], 0)
        self.assertEqual(res["figures"]["hand-backs that failed"], 1)
        self.assertEqual(res["faults"], {"primary-kill": 1, "takeover": 1})
        self.assertEqual(res["failed"], [])
        res = run(dict(changes, **{"run.env": CLEAN["run.env"] + "backup=1\n"}))
        self.assertEqual(res["failed"], gates)

    def test_stall_faults_missing_from_the_log_fail_the_run(self):
        # issue 40: two of each stall kind planned; the log has one of each
        # (and a skipped lock-loss): each kind short by one fails the run.
        plan = CLEAN["plan.txt"] + "".join("%d FAULT %s\n" % (500 + i, k) for i, k in enumerate(
            ["stall", "stall", "lock-loss", "lock-loss", "stall-kill", "stall-kill"]))
        lines = "backup_taking_over_s=11.20 backup_holds_control_s=15.90"
        ev = CLEAN["events.log"] + (
            "40.00 FAULT stall done pid=9 inflight=2 %s primary_stale_s=16.30\n"
            "41.00 FAULT lock-loss skipped no call in flight within 20 s\n"
            "42.00 FAULT lock-loss done pid=9 inflight=1 lock=removed %s primary_stale_s=16.10\n"
            "43.00 FAULT stall-kill done pid=9 inflight=3 %s primary_stale_s=-\n") % (lines, lines, lines)
        changes = {"run.env": CLEAN["run.env"] + "backup=1\n", "plan.txt": plan, "events.log": ev}
        res = run(changes)
        self.assertEqual(res["figures"]["planned faults not injected"], 3)
        self.assertEqual(res["figures"]["planned faults not injected, by kind"],
                         "lock-loss=1 stall=1 stall-kill=1")
        self.assertEqual(res["figures"]["stall faults without their lines"], 0)
        self.assertEqual(res["failed"], ["planned faults not injected"])
        self.assertEqual(res["faults"], {"lock-loss": 1, "lock-loss (skipped: nothing to kill)": 1,
                                         "stall": 1, "stall-kill": 1})
        # Every one injected: the run passes.
        ev2 = ev + "".join("5%d.00 FAULT %s done pid=9 inflight=1 %s primary_stale_s=%s\n" % (
            i, k, lines, s) for i, (k, s) in enumerate(
                [("stall", "16.00"), ("lock-loss", "16.00"), ("stall-kill", "-")]))
        res = run(dict(changes, **{"events.log": ev2}))
        self.assertEqual(res["figures"]["planned faults not injected"], 0)
        self.assertEqual(res["failed"], [])

    def test_stall_fault_without_its_lines_fails_the_run(self):
        # A stall whose backup never said it holds control, a lock loss
        # whose continued primary never said it is stale, a stall-kill
        # with no takeover line: done, but not what they were for.
        plan = CLEAN["plan.txt"] + "500 FAULT stall\n501 FAULT lock-loss\n502 FAULT stall-kill\n"
        ev = CLEAN["events.log"] + (
            "40.00 FAULT stall done pid=9 inflight=2 backup_taking_over_s=11.20 "
            "backup_holds_control_s=none primary_stale_s=-\n"
            "42.00 FAULT lock-loss done pid=9 inflight=1 lock=removed backup_taking_over_s=11.00 "
            "backup_holds_control_s=12.00 primary_stale_s=none\n"
            "43.00 FAULT stall-kill done pid=9 inflight=3 backup_taking_over_s=none "
            "backup_holds_control_s=none primary_stale_s=-\n")
        res = run({"run.env": CLEAN["run.env"] + "backup=1\n", "plan.txt": plan, "events.log": ev})
        self.assertEqual(res["figures"]["planned faults not injected"], 0)
        self.assertEqual(res["figures"]["stall faults without their lines"], 3)
        self.assertEqual(res["failed"], ["stall faults without their lines"])
        self.assertEqual(len(res["details"]["stall_faults_without_lines"]), 3)

    def test_journal_refusal_is_not_a_loss_of_the_plugin(self):
        # chaos-1 (--no-requeue) cancelled because the journal could not be
        # written: the documented fail-safe; a submission sent again.
        reason = "switch setup failed: job_start could not be started: journal /s/switch_lua.journal: x"
        res = run({"polls.log": "12.00 1|1|N/A|chaos-1|CANCELLED|%s|node1\n" % reason,
                   "final-jobs.txt": "1|1|N/A|chaos-1|CANCELLED|%s|node1\n" % reason,
                   "done.log": drop(CLEAN["done.log"], "chaos-1"),
                   "events.log": CLEAN["events.log"].replace("rc=0 id=2", "rc=0 id=2 resent=3")})
        self.assertEqual(res["figures"]["jobs ended by a journal refusal"], 1)
        self.assertEqual(res["figures"]["jobs lost by plugin"], 0)
        self.assertEqual(res["figures"]["submissions sent again (no controller took them)"], 1)


if __name__ == "__main__":
    unittest.main()
