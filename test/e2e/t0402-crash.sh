# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# e2e-tiers: core=24.11 full=26.05,25.11
#
# t0402-crash: the journal and the killed-call rules (switch.lua(5):
# Restart, Journal, R_RESTART_SETUP, R_UNDO_OK, R_COMPLETE_KILLED).  The
# fixture test/e2e/lua/crash.lua keeps a ledger of every call in the chroot
# (/tmp/switch-lua-e2e.TAG.ledger): "start JOB ATTEMPT SUBMIT" and
# "complete JOB ATTEMPT TOKEN|nil".

# e2e-config: --switch-type switch/lua --script test/e2e/lua/crash.lua --slurmctld-params switch_timeout=60

rm_markers() { rm -f "$E2E_ROOT"/tmp/switch-lua-e2e."$1".*; }
ledger() { cat "$E2E_ROOT/tmp/switch-lua-e2e.$1.ledger" 2>/dev/null || true; }

e2e_test "switch/lua: crash: slurmctld killed -9 0.3 s after job_start returned (saved state older): not run again, not launched twice, no drain, one job_complete" t_crash_after_setup
t_crash_after_setup() {
	local tag id node runs attempt led
	tag=$(e2e_uniq)
	# shellcheck disable=SC2064 # $tag is fixed now
	trap "rm_markers $tag" EXIT
	runs=/tmp/switch-lua-e2e.$tag.runs
	# slurmctld writes its state at most every 5 s (state_save.c): after 5 s
	# without a write, the submission is written at once (S); the job starts
	# at its BeginTime (S+2..S+4, sched_interval=2) and that is written at
	# S+5, while job_start (4 s) runs; the accept at S+6..S+9 then waits for
	# S+10, and the kill 0.3 s after it leaves a saved record that says
	# "setup running" (the issue's scenario, without luck).
	wait_state_saved
	sleep 5.5
	id=$(submit -N1 --begin=now+2 --network="e2e:slow4:$tag" --wrap="echo run >> $runs; sleep 10")
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_start accepted the job" 20
	sleep 0.3
	restart_ctld --kill9
	node=$(job_field "$id" NodeList)
	ctld_job "$id" " switch state SetupRunning recovered from the job state" >/dev/null ||
		fail "precondition: slurmctld's saved record should say SetupRunning: $(ctld_job "$id" " switch state")"
	wait_job "$id" COMPLETED 40
	wait_node "$node" idle 15
	led=$(ledger "$tag")
	note "ledger: $led"
	assert_eq 1 "$(grep -c '^start ' <<<"$led")" "job_start calls (a setup that returned is never run again)"
	attempt=$(awk '/^start /{print $3; exit}' <<<"$led")
	assert_eq "complete $id $attempt tok-$tag-$attempt" "$(grep '^complete ' <<<"$led")" "the one job_complete, with the setup's jobinfo"
	assert_eq 1 "$(wc -l <"$E2E_ROOT$runs")" "runs of the batch script"
	ctld_job "$id" " recovery: the journal says job_start of attempt $attempt returned SUCCESS" >/dev/null ||
		fail "no recovery line for the journal's accepted setup"
	assert_eq "" "$(drain_reason "$node")" "drain reason of $node"
	assert_eq 0 "$(log_since "$(slurmd_log "$node")" | grep -c 'Duplicate' || true)" "slurmd 'Duplicate jobid' lines"
	# What the operator reads: the job had launched, nothing says otherwise.
	if ctld_job "$id" " .*running job_start again"; then fail "'running job_start again' logged for a job that had launched"; fi
}

e2e_test "switch/lua: reconfigure during job_start: the killed attempt gets job_complete(nil) before job_start runs again" t_reconfigure_setup
t_reconfigure_setup() {
	local tag id a1 a2 led node
	tag=$(e2e_uniq)
	# shellcheck disable=SC2064 # $tag is fixed now
	trap "rm_markers $tag" EXIT
	id=$(submit -N1 --network="e2e:slowfirst:$tag" --wrap=true)
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_start: e2e crash: JobId=$id job_start attempt=[0-9]+: first call" 15
	node=$(job_field "$id" NodeList)
	c_root scontrol reconfigure
	if pgrep -af "sleep 30\\.$tag" >/dev/null; then
		wait_for 10 sh -c "! pgrep -f 'sleep 30\\.$tag' >/dev/null" || fail "the killed job_start call survives"
	fi
	wait_log "$(ctld_log)" "switch/lua: JobId=$id recovered after a slurmctld restart in state SetupRunning: the job_start of attempt [0-9]+ has no recorded result" 30
	wait_job "$id" COMPLETED 40
	wait_node "$node" idle 15
	led=$(ledger "$tag")
	note "ledger: $led"
	a1=$(awk '/^start /{print $3}' <<<"$led" | sed -n 1p)
	a2=$(awk '/^start /{print $3}' <<<"$led" | sed -n 2p)
	if [ -z "$a2" ] || [ "$a1" = "$a2" ]; then fail "expected two job_start attempts, got: $led"; fi
	assert_eq "start $id $a1"$'\n'"complete $id $a1 nil"$'\n'"start $id $a2"$'\n'"complete $id $a2 tok-$tag-$a2" \
		"$(cut -d' ' -f1-4 <<<"$led" | sed -E 's/^(start [0-9]+ [0-9]+) [0-9]+$/\1/')" "calls in order"
	ctld_job "$id" " TeardownResult -> SetupRunning \(R_UNDO_OK\)" >/dev/null || fail "no R_UNDO_OK debug line"
	assert_eq "" "$(drain_reason "$node")" "drain reason of $node"
}

e2e_test "switch/lua: job_complete killed by an outside SIGKILL runs again with the nodes held; not drained" t_killed_teardown
t_killed_teardown() {
	local tag id node pid led st
	tag=$(e2e_uniq)
	# shellcheck disable=SC2064 # $tag is fixed now
	trap "rm_markers $tag" EXIT
	node=node1 # a completing job's NodeList is empty
	id=$(submit -N1 -w "$node" --network="e2e:killend:$tag" --wrap=true)
	wait_for 20 test -s "$E2E_ROOT/tmp/switch-lua-e2e.$tag.pid" || fail "job_complete never started"
	pid=$(cat "$E2E_ROOT/tmp/switch-lua-e2e.$tag.pid")
	c_root kill -9 "$pid"
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_complete died on signal 9 \(SIGKILL\): nodes held, running it again at the next periodic check \(retry 1 of [0-9]+\)" 15
	# The node is held until the retry succeeds.  On a loaded machine the
	# retry (at the next periodic check, well under a second) may already
	# have run and released it before this look: then slurmctld.log must
	# say so, the release after the retry's success.
	st=$(node_state "$node")
	if [[ $st != completing* ]]; then
		ctld_grep "switch/lua: JobId=$id (job_complete returned rc=0|: released the job and its nodes)" |
			tail -n 2 | grep -q ": released the job and its nodes" ||
			fail "state of $node while the retry waits: '$st', not completing, and no retry released it"
	fi
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_complete returned rc=0 \(slurm.SUCCESS\)" 30
	wait_job "$id" COMPLETED 15
	wait_node "$node" idle 15
	assert_eq "" "$(drain_reason "$node")" "drain reason of $node"
	led=$(ledger "$tag")
	assert_eq 2 "$(grep -c '^complete ' <<<"$led")" "job_complete calls (the killed one, then the retry)"
	# One outcome line per call; the retry decision is its own line.
	assert_eq 1 "$(ctld_count "switch/lua: JobId=$id job_complete died on signal 9 \(SIGKILL\), not sent by the supervisor \(queued [0-9]+ ms, ran [0-9]+ ms; script [^)]+\)\$")" "outcome lines of the killed call"
	assert_eq 1 "$(ctld_count "switch/lua: JobId=$id job_complete died on signal 9 \(SIGKILL\): nodes held, running it again")" "retry decision lines"
	assert_eq 3 "$(ctld_count "switch/lua: JobId=$id job_complete (killed|died|returned|raised|timed|abandoned|exited|was)")" "job_complete lines: outcome, decision, the retry's outcome"
	assert_eq 1 "$(ctld_count "switch/lua: JobId=$id job_complete returned rc=0 \(slurm\.SUCCESS\) \(script [^)]+\)\$")" "outcome lines of the retry"
}
