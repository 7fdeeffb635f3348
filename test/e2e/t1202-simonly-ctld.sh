# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# e2e-tiers: core= full=24.11,26.05
#
# t1202-simonly-ctld: controller rules that only `switch-lua simulate` had
# shown, on the live cluster (issue 19 item 7): a job cancelled while its
# job_start runs, the requeue loop of a setup that keeps failing when
# switch_max_setup_failures is unset, and a job_complete killed from outside
# with block_job_complete false.  switch.lua(5): R_CANCEL_DURING_SETUP,
# R_CANCELLED_SETUP_OK, R_START_FAIL, R_COMPLETE_KILLED_UNHELD.  Fixture:
# test/e2e/lua/simonly.lua (block_job_complete false).
#
# AuthInfo=cred_expire=5: Slurm delays a requeued job by the credential
# lifetime + 1 s (BeginTime), 121 s by default.

# e2e-config: --switch-type switch/lua --script test/e2e/lua/simonly.lua --slurmctld-params switch_timeout=30 --extra AuthInfo=cred_expire=5

rm_markers() { rm -f "$E2E_ROOT"/tmp/switch-lua-e2e."$1".*; }

e2e_test "switch/lua: job_start: a job cancelled while job_start runs holds its node COMPLETING, is not requeued, and is torn down once with the table the setup then returned (R_CANCEL_DURING_SETUP, R_CANCELLED_SETUP_OK)" t_cancel_during_setup
t_cancel_during_setup() {
	local tag id
	tag=$(e2e_uniq)
	# shellcheck disable=SC2064 # $tag is fixed now
	trap "rm_markers $tag" EXIT
	id=$(submit -N1 -w node1 --requeue --network="e2e:wait:$tag" --wrap=true)
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_start: e2e simonly: waiting for " 20
	assert_eq CONFIGURING "$(job_state "$id")" "state while job_start runs"
	cancel "$id"
	wait_log "$(ctld_log)" "switch/lua: JobId=$id ended while job_start runs: holding its nodes until the setup reports; not a setup failure\$" 15
	ctld_job "$id" ' JobEnded -> SetupRunningEnded \(R_CANCEL_DURING_SETUP\)' >/dev/null || fail "no R_CANCEL_DURING_SETUP debug line"
	assert_match '^completing' "$(node_state node1)" "state of node1 while the cancelled job's setup runs"
	assert_eq 0 "$(ctld_count "switch/lua: JobId=$id job_complete started")" "job_complete calls before the setup reports"
	# The setup reports: SUCCESS with its table.
	: >"$E2E_ROOT/tmp/switch-lua-e2e.$tag.go"
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_complete returned rc=0 \(slurm.SUCCESS\)" 20
	ctld_job "$id" ' job_start returned rc=0 with jobinfo' >/dev/null || fail "no outcome line of the job_start that was left to finish"
	ctld_job "$id" ' SetupResult -> TeardownRunning \(R_CANCELLED_SETUP_OK\)' >/dev/null || fail "no R_CANCELLED_SETUP_OK debug line"
	ctld_job "$id" " job_complete: e2e simonly: job_complete jobinfo=\{\"mode\":\"wait\",\"token\":\"tok-$tag\"\}\$" >/dev/null ||
		fail "job_complete did not get the table the setup returned"
	wait_node node1 idle 15
	wait_job "$id" CANCELLED 15
	assert_eq 1 "$(ctld_count "switch/lua: JobId=$id job_complete started")" "job_complete calls"
	assert_eq 1 "$(ctld_count "switch/lua: JobId=$id job_start started")" "job_start calls"
	assert_eq 0 "$(job_field "$id" Restarts)" "Restarts (a cancel during the setup is not a setup failure)"
	assert_eq 0 "$(ctld_count "switch/lua: JobId=$id (requeued|cancelled):")" "requeue or cancel lines"
	assert_eq "" "$(drain_reason node1)" "drain reason of node1"
}

e2e_test "switch/lua: job_start: with switch_max_setup_failures unset a batch job whose setup always fails is requeued again and again (3 times here), never held" t_requeue_loop
t_requeue_loop() {
	local id once line n
	once="switch setup failed: switch/lua job_start returned rc=-1: fabric manager unreachable"
	id=$(submit -N1 --requeue --network=e2e:fail:0 --wrap='echo the batch script ran')
	wait_for 90 restarts_at_least "$id" 3 || fail "job $id was not requeued 3 times: $(job_line "$id")"
	n=$(ctld_count "switch/lua: JobId=$id requeued: $once\$")
	((n >= 3)) || fail "expected at least 3 'requeued' lines, got $n"
	assert_eq 0 "$(ctld_count "switch/lua: JobId=$id (not requeued again|requeued held)")" "hold lines (R_SETUP_FAILURES_HELD)"
	line=$(job_line "$id")
	note "after 3 requeues: $line"
	assert_match '^(PENDING|CONFIGURING|RUNNING|REQUEUED)$' "$(field_of "$line" JobState)" "state"
	[ "$(field_of "$line" Priority)" != 0 ] || fail "the job is held (Priority=0): $line"
	assert_match '^(BeginTime|Priority|None|switch_setup_failed:.*)$' "$(field_of "$line" Reason)" "Reason (not a hold)"
	assert_eq "$once" "$(field_of "$line" SystemComment)" "SystemComment"
	cancel "$id"
	wait_job "$id" CANCELLED 15
	local outf=$E2E_CLH/out/slurm-$id.out
	if [ -s "$outf" ] && grep -q 'the batch script ran' "$outf"; then fail "the batch script ran after a failed setup"; fi
}

e2e_test "switch/lua: job_complete: killed by an outside SIGKILL with block_job_complete false is a failed teardown: not run again, the node drained with \"died on signal 9 (SIGKILL)\" (R_COMPLETE_KILLED_UNHELD)" t_killed_unheld
t_killed_unheld() {
	local tag id pid
	tag=$(e2e_uniq)
	# shellcheck disable=SC2064 # $tag is fixed now
	trap "rm_markers $tag" EXIT
	id=$(submit -N1 -w node1 --network="e2e:killend:$tag" --wrap=true)
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_complete: e2e simonly: job_complete pid [0-9]+ sleeping" 20
	pid=$(cat "$E2E_ROOT/tmp/switch-lua-e2e.$tag.pid")
	# block_job_complete false: the node is back in service meanwhile.
	wait_node node1 idle 15
	assert_eq 0 "$(ctld_count "switch/lua: JobId=$id: holding the job and nodes")" "hold lines"
	c_root kill -9 "$pid"
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_complete died on signal 9 \(SIGKILL\): its nodes are not held \(block_job_complete is false\), so it is not run again: a failed teardown\$" 15
	wait_node node1 'drained|draining' 15
	assert_eq "switch teardown failed: JobId=$id switch/lua job_complete died on signal 9 (SIGKILL)" "$(drain_reason node1)" "sinfo -R reason of node1"
	ctld_job "$id" ' TeardownResult -> Done \(R_COMPLETE_KILLED_UNHELD\)' >/dev/null || fail "no R_COMPLETE_KILLED_UNHELD debug line"
	assert_eq 1 "$(ctld_count "switch/lua: JobId=$id job_complete died on signal 9 \(SIGKILL\), not sent by the supervisor \(queued [0-9]+ ms, ran [0-9]+ ms; script [^)]+\)\$")" "outcome lines of the killed call"
	assert_eq 0 "$(ctld_count "switch/lua: JobId=$id job_complete .*running it again")" "retry lines"
	assert_eq 0 "$(ctld_count "nodes held")" "lines that say the nodes are held"
	wait_job "$id" COMPLETED 15
	assert_eq 1 "$(ctld_count "switch/lua: JobId=$id job_complete started")" "job_complete calls"
}
