# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# e2e-tiers: core= full=24.11,26.05
#
# t0403-operator: what the operator reads (issue 7, scenario 5).  The first
# 20 characters of a plugin drain (what `sinfo -R` shows) say what failed;
# a deliberate stop of the supervisor (scontrol reconfigure, slurmctld
# shutdown) is not logged as a death; a job that had launched is never said
# to get "job_start again" after a restart; one line per teardown outcome.
# The fixture is test/e2e/lua/crash.lua (modes slowfirst, failend, plain).

# e2e-config: --switch-type switch/lua --script test/e2e/lua/crash.lua --slurmctld-params switch_timeout=60

rm_markers() { rm -f "$E2E_ROOT"/tmp/switch-lua-e2e."$1".*; }
ledger() { cat "$E2E_ROOT/tmp/switch-lua-e2e.$1.ledger" 2>/dev/null || true; }

e2e_test "switch/lua: operator: sinfo -R's 20 characters of a failed teardown read 'switch teardown fail'; the full reason names the JobId, the hook and the script's message; one log line for the outcome" t_drain_reason_head
t_drain_reason_head() {
	local tag id reason
	tag=$(e2e_uniq)
	# shellcheck disable=SC2064 # $tag is fixed now
	trap "rm_markers $tag" EXIT
	id=$(submit -N1 -w node3 --network="e2e:failend:$tag" --wrap=true)
	wait_node node3 'drained|draining' 30
	# sinfo -R's default format: REASON (20 characters) USER TIMESTAMP NODELIST
	assert_eq "switch teardown fail" "$(c_root sinfo -R -h -n node3 | head -n 1 | cut -c1-20)" "the first 20 characters of sinfo -R"
	reason=$(drain_reason node3)
	assert_match "^switch teardown failed: JobId=$id switch/lua job_complete raised an error: /etc/slurm/switch\\.lua:[0-9]+: e2e crash: the fabric refused the teardown\$" \
		"$reason" "the full drain reason"
	wait_job "$id" COMPLETED 15
	# One outcome line (with its traceback lines after it), then the drain.
	assert_eq 1 "$(ctld_count "switch/lua: JobId=$id job_complete raised")" "outcome lines of the failed job_complete"
	ctld_job "$id" " job_complete raised an error: /etc/slurm/switch\\.lua:[0-9]+: e2e crash: the fabric refused the teardown \\(queued [0-9]+ ms, ran [0-9]+ ms; script [^)]+\\)\$" >/dev/null ||
		fail "no outcome line for the failed job_complete"
	assert_eq 1 "$(ctld_count "switch/lua: JobId=$id draining node3: switch teardown failed: JobId=$id switch/lua job_complete raised an error: ")" "lines for the drain"
	resume node3
}

e2e_test "switch/lua: operator: scontrol reconfigure and a slurmctld shutdown with a job_start in flight are not logged as a supervisor death" t_deliberate_stop
t_deliberate_stop() {
	local tag id
	tag=$(e2e_uniq)
	# shellcheck disable=SC2064 # $tag is fixed now
	trap "rm_markers $tag" EXIT
	id=$(submit -N1 --network="e2e:slowfirst:$tag" --wrap=true)
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_start: e2e crash: JobId=$id job_start attempt=[0-9]+: first call" 15
	c_root scontrol reconfigure
	wait_log "$(ctld_log)" "switch/lua: JobId=$id recovered after a slurmctld restart in state SetupRunning: the job_start of attempt [0-9]+ has no recorded result" 30
	wait_job "$id" COMPLETED 40
	# Once more, with a slurmctld shutdown (SIGTERM) during a job_start.
	rm -f "$E2E_ROOT/tmp/switch-lua-e2e.$tag.start"
	id=$(submit -N1 --network="e2e:slowfirst:$tag" --wrap=true)
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_start: e2e crash: JobId=$id job_start attempt=[0-9]+: first call" 15
	restart_ctld
	wait_log "$(ctld_log)" "switch/lua: JobId=$id recovered after a slurmctld restart in state SetupRunning: the job_start of attempt [0-9]+ has no recorded result" 30
	wait_job "$id" COMPLETED 40
	assert_eq 0 "$(ctld_count "died")" "slurmctld.log lines saying 'died'"
	assert_eq 2 "$(ctld_count "switch/lua: JobId=[0-9]+ job_start stopped with the supervisor: slurmctld is stopping or reconfiguring; the next slurmctld recovers the call\$")" \
		"lines for the job_start calls stopped on purpose"
}

e2e_test "switch/lua: operator: a launched job is never said to run 'job_start again' after a reconfigure, a shutdown or a kill -9; one job_start, one teardown outcome line" t_launched_not_again
t_launched_not_again() {
	local tag id go
	tag=$(e2e_uniq)
	go=/tmp/switch-lua-e2e.$tag.go
	# shellcheck disable=SC2064 # $tag is fixed now
	trap "rm_markers $tag" EXIT
	id=$(submit -N1 --network="e2e:plain:$tag" --wrap="while [ ! -e $go ]; do sleep 0.2; done")
	wait_job "$id" RUNNING 15
	c_root scontrol reconfigure
	wait_log "$(ctld_log)" "switch/lua: JobId=$id switch state Running recovered from the job state\$" 30
	wait_state_saved
	restart_ctld
	wait_state_saved
	restart_ctld --kill9
	assert_eq RUNNING "$(job_state "$id")" "state of the job after the restarts"
	touch "$E2E_ROOT$go"
	wait_job "$id" COMPLETED 30
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_complete returned rc=0 \\(slurm\\.SUCCESS\\) \\(script [^)]+\\)\$" 15
	if ctld_job "$id" " .*job_start again"; then fail "a 'job_start again' line for a job that had launched"; fi
	assert_eq 3 "$(ctld_count "switch/lua: JobId=$id switch state Running recovered from the job state\$")" "recovery lines (reconfigure, shutdown, kill -9)"
	assert_eq 1 "$(ctld_count "switch/lua: JobId=$id job_start started")" "job_start calls"
	assert_eq 1 "$(grep -c '^start ' <<<"$(ledger "$tag")")" "job_start calls in the ledger"
	assert_eq 1 "$(ctld_count "switch/lua: JobId=$id job_complete started")" "job_complete calls"
	assert_eq 1 "$(ctld_count "switch/lua: JobId=$id job_complete (returned|raised|died|killed|timed|abandoned|was|for)")" "teardown outcome lines"
}
