# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# e2e-tiers: core= full=24.11,26.05
#
# t0902-id-reuse: job ids come back (issue 7, scenario 4).  slurmctld is
# killed -9 after a job was set up but before its state save reached the
# disk (the test puts the job state written before the submission back, as
# the crash would have left it), so Slurm hands the lost job's id to the
# next job.  The journal still has the lost job's setup, launched before
# the crash: it is torn down with its own jobinfo once node1 no longer runs
# it (R_ORPHAN_WAIT_NODES, then R_ORPHAN_TEARDOWN), and the new job with the
# same id waits in CONFIGURING until then (R_SETUP_WAIT_ORPHAN,
# R_SETUP_AFTER_ORPHAN, issue 24), then gets its own job.submit_time and
# job.attempt and keeps its allocation (switch.lua(5): Restart, the job
# table's unique key).  The fixture
# test/e2e/lua/crash.lua keeps the ledger "start JOB ATTEMPT SUBMIT_TIME" /
# "complete JOB ATTEMPT TOKEN|nil".

# e2e-config: --switch-type switch/lua --script test/e2e/lua/crash.lua --slurmctld-params switch_timeout=60

rm_markers() { rm -f "$E2E_ROOT"/tmp/switch-lua-e2e."$1".*; }
ledger() { cat "$E2E_ROOT/tmp/switch-lua-e2e.$1.ledger" 2>/dev/null || true; }

# kill9_ctld_with_state FILE: kill -9 slurmctld and put FILE back as its
# saved job state (what the disk held if the crash came before the next
# save), then start it again (restart_ctld: it waits for every node).
kill9_ctld_with_state() {
	local pid
	pid=$(cat "$E2E_CLH/run/slurmctld.pid")
	[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = slurmctld ] || fail "no slurmctld with pid $pid"
	kill -KILL "$pid"
	wait_for 15 _gone "$pid" || fail "slurmctld $pid still there 15 s after SIGKILL"
	rm -f "$E2E_CLH"/state/job_state.old "$E2E_CLH"/state/job_state.new
	cp -p "$1" "$E2E_CLH/state/job_state"
	restart_ctld
}
_gone() { [ ! -e "/proc/$1" ] || grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }
# _procs_gone PATTERN: no process of this chroot's jobs matches PATTERN.
_procs_gone() { ! pgrep -f "$1" >/dev/null; }

e2e_test "switch/lua: id reuse: a lost job's id handed to a new job after kill -9; the lost setup is torn down with its own jobinfo once its node no longer runs it, the new job waits for that teardown, then has its own submit_time and attempt and keeps its allocation" t_id_reuse
t_id_reuse() {
	local tag saved id id2 led a1 s1 a2 s2 re
	tag=$(e2e_uniq)
	saved=$E2E_TMP/job_state.$tag
	# shellcheck disable=SC2064 # $tag is fixed now
	trap "rm_markers $tag; rm -f $saved" EXIT
	# A job state on disk to put back (after t0901 there may be none yet):
	# a held job makes slurmctld write one.
	ask_job_state_write
	wait_for 10 test -e "$E2E_CLH/state/job_state" || fail "slurmctld wrote no job_state"
	wait_state_saved
	cp -p "$E2E_CLH/state/job_state" "$saved"
	# The lost job: its job_complete takes 6 s, so that the new job's
	# job_start also waits through a teardown that is running.
	id=$(submit -N1 -w node1 --network="e2e:slowend:$tag" --wrap="sleep 300.$tag")
	wait_job "$id" RUNNING 15
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_start accepted the job" 5
	kill9_ctld_with_state "$saved"
	led=$(ledger "$tag")
	read -r _ _ a1 s1 <<<"$(grep '^start ' <<<"$led" | head -n 1)"
	[ -n "$s1" ] || fail "no job_start of the lost job in the ledger: $led"
	# The setup had been launched: its teardown waits until node1 no longer
	# runs the lost job (R_ORPHAN_WAIT_NODES; KillWait=2 and MessageTimeout=10
	# of the cluster: about 22 s after the restart).
	re="switch/lua: JobId=$id recovery: the journal has attempt $a1 \\(submitted at $s1\\) launched before the restart, and no job record carries it .*its nodes node1 may still run it.*\\(R_ORPHAN_WAIT_NODES\\)\$"
	wait_log "$(ctld_log)" "$re" 10
	# Slurm does not know the lost job: the next job gets its id, and its
	# job_start waits in CONFIGURING for the lost attempt's teardown.
	id2=$(submit -N1 -w node2 --network="e2e:plain:$tag" --wrap=true)
	assert_eq "$id" "$id2" "precondition: the new job's id (Slurm hands out the lost job's id again)"
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_start waits: an earlier attempt of this job id, launched before a slurmctld restart, is not torn down yet" 15
	assert_eq 1 "$(grep -c '^start ' <<<"$(ledger "$tag")")" "job_start calls while the lost attempt is not torn down"
	wait_log "$(ctld_log)" "switch/lua: JobId=$id recovery: attempt $a1's nodes node1 no longer run it: tearing it down now \\(R_ORPHAN_TEARDOWN\\)" 60
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_complete for attempt $a1 \\(job record gone\\) returned rc=0 \\(slurm\\.SUCCESS\\): torn down \\(R_ORPHAN_OK\\)\$" 30
	wait_log "$(ctld_log)" "switch/lua: JobId=$id the earlier attempt of this job id is torn down: running job_start now" 15
	wait_job "$id2" COMPLETED 30
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_complete returned rc=0 \\(slurm\\.SUCCESS\\) \\(script [^)]+\\)\$" 15
	wait_for 15 _procs_gone "sleep 300\\.$tag" || fail "the lost job's batch script still runs on node1"
	led=$(ledger "$tag")
	note "ledger: $led"
	assert_eq 2 "$(grep -c '^start ' <<<"$led")" "job_start calls (the lost job, the new job)"
	read -r _ _ a2 s2 <<<"$(grep '^start ' <<<"$led" | sed -n 2p)"
	[ "$a2" != "$a1" ] || fail "the new job got the lost job's attempt $a1"
	[ "$s2" != "$s1" ] || fail "the new job got the lost job's submit_time $s1"
	assert_eq "start $id $a1 $s1"$'\n'"start $id $a2 $s2" "$(grep '^start ' <<<"$led")" "job_start calls: same job id, different attempt and submit_time"
	# Each allocation is torn down once, with its own jobinfo.
	assert_eq "complete $id $a1 tok-$tag-$a1" "$(grep "^complete $id $a1 " <<<"$led")" "the lost job's teardown (its own token)"
	assert_eq "complete $id $a2 tok-$tag-$a2" "$(grep "^complete $id $a2 " <<<"$led")" "the new job's teardown (its own token)"
	assert_eq 2 "$(grep -c '^complete ' <<<"$led")" "job_complete calls"
	# The lost attempt was torn down before the new one was set up.
	assert_eq "start $id $a1"$'\n'"complete $id $a1"$'\n'"start $id $a2"$'\n'"complete $id $a2" "$(awk '{print $1, $2, $3}' <<<"$led")" "the ledger's order"
	ctld_job "$id" " job_complete started for attempt $a1 whose job record is gone, with its jobinfo \\(switch_timeout=60 s\\)\$" >/dev/null ||
		fail "no line for the start of the lost job's teardown"
	# The new job's teardown came after it ended, never from the recovery.
	assert_eq 1 "$(ctld_count "switch/lua: JobId=$id job_complete started \\(queued")" "job_complete calls of the new job"
	wait_node node1 idle 30
	wait_node node2 idle 15
	assert_eq "" "$(drain_reason node1)" "drain reason of node1"
	assert_eq "" "$(drain_reason node2)" "drain reason of node2"
}
