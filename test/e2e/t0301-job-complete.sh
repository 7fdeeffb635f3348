# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# e2e-tiers: core=24.11,26.05 full=25.05,25.11,26.11
#
# t0301-job-complete: slurm_switch_job_complete in slurmctld, driven by the
# contract script's directives: a failed teardown drains the job's nodes;
# slurm.EAGAIN is a failure unless the nodes are held (block_job_complete
# true), then it is retried switch_retries times; switch_drain_on_failure=no
# logs instead of draining.  switch.lua(5): job_complete, R_COMPLETE-*;
# switch_lua.conf(5).  Tests that drain resume the nodes at the end.

# expect_drained ID REASON NODE...: each NODE is drained with REASON (the
# exact sinfo -R text), and slurmctld logged the drain for job ID.
expect_drained() {
	local id=$1 reason=$2 n
	shift 2
	for n in "$@"; do
		wait_node "$n" 'drained|draining' 20
		assert_eq "$reason" "$(drain_reason "$n")" "sinfo -R reason of $n"
	done
	log_since "$(ctld_log)" | grep -F 'switch/lua: drained node' | grep -F ": $reason" >/dev/null ||
		fail "no 'switch/lua: drained ...: $reason' line for JobId=$id"
}

# e2e-config: --switch-type switch/lua --script "$E2E_GEN/seed.lua"

e2e_test "switch/lua: job_complete: complete_crash (a Lua error) drains the job's nodes with \"job_complete raised an error\"" t_complete_crash
t_complete_crash() {
	need_seed
	local name id reason
	name=e2e-ccrash-$(e2e_uniq)
	run_srun -N2 -J "$name" --network=switchlua:complete_crash true >/dev/null ||
		fail "srun failed (the job itself should succeed)"
	id=$(job_named "$name")
	wait_job "$id" COMPLETED 15
	reason=$(drain_reason_wait node1)
	assert_match "^switch teardown failed: JobId=$id switch/lua job_complete raised an error: /etc/slurm/switch.lua:[0-9]+: switchlua: deliberate error in job_complete\$" \
		"$reason" "drain reason"
	expect_drained "$id" "$reason" node1 node2
	assert_eq "" "$(drain_reason node3)" "node3 (not in the job)"
	ctld_job "$id" ' TeardownResult -> Done \(R_COMPLETE_FAIL\)' >/dev/null || fail "no R_COMPLETE_FAIL debug line"
	ctld_job "$id" " draining node\[1-2\]: switch teardown failed: JobId=$id switch/lua job_complete raised an error: " >/dev/null || fail "no 'draining node[1-2]' line"
	resume node1 node2
}
# drain_reason_wait NODE: the drain reason, once there is one (10 s).
drain_reason_wait() {
	wait_for 10 _has_reason "$1" || fail "$1 was not drained: $(node_state "$1")"
	drain_reason "$1"
}
_has_reason() { [ -n "$(drain_reason "$1")" ]; }

e2e_test "switch/lua: job_complete: complete_again with block_job_complete false drains at once (\"block_job_complete is false\")" t_again_unheld
t_again_unheld() {
	need_seed
	local name id
	name=e2e-again-$(e2e_uniq)
	run_srun -N2 -J "$name" --network=switchlua:complete_again true >/dev/null ||
		fail "srun failed (the job itself should succeed)"
	id=$(job_named "$name")
	wait_job "$id" COMPLETED 15
	expect_drained "$id" "switch teardown failed: JobId=$id switch/lua job_complete returned slurm.EAGAIN but block_job_complete is false" node1 node2
	assert_eq 1 "$(ctld_count "switch/lua: JobId=$id job_complete started")" "job_complete calls (no retry)"
	ctld_job "$id" ' TeardownResult -> Done \(R_COMPLETE_EAGAIN_UNHELD\)' >/dev/null || fail "no R_COMPLETE_EAGAIN_UNHELD debug line"
	resume node1 node2
}

# e2e-config: --switch-type switch/lua --script "$E2E_GEN/seed-block.lua" --slurmctld-params switch_retries=2

e2e_test "switch/lua: job_complete: with block_job_complete true job_complete runs with the job and its nodes held, released when it succeeds" t_block_ok
t_block_ok() {
	need_seed
	local id
	grep -F 'block_job_complete=true)' "$(ctld_log)" >/dev/null || fail "slurmctld did not log block_job_complete=true"
	id=$(submit -N2 --network=switchlua:default --wrap=true)
	wait_job "$id" COMPLETED 20
	ctld_job "$id" ' JobEnded -> TeardownRunning \(R_END_HOLD\)' >/dev/null || fail "no R_END_HOLD debug line"
	ctld_job "$id" ': holding the job and nodes node\[1-2\]' >/dev/null || fail "the nodes were not held"
	ctld_job "$id" ' job_complete returned rc=0 \(slurm.SUCCESS\)' >/dev/null || fail "job_complete did not succeed"
	ctld_job "$id" ': released the job and its nodes' >/dev/null || fail "the nodes were not released"
	wait_node node1 idle 10
	wait_node node2 idle 10
	assert_eq "" "$(drain_reason node1)" "drain reason of node1"
}

e2e_test "switch/lua: job_complete: complete_again holds the nodes COMPLETING through switch_retries=2 retries (3 calls), then drains them" t_block_retries
t_block_retries() {
	need_seed
	local name id n st
	name=e2e-retry-$(e2e_uniq)
	run_srun -N2 -J "$name" --network=switchlua:complete_again true >/dev/null ||
		fail "srun failed (the job itself should succeed)"
	id=$(job_named "$name")
	# During the retries (every 5 s): job and nodes COMPLETING, no drain.
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_complete returned slurm.EAGAIN: nodes stay held, retry 1 of 2 at the next periodic check" 15
	assert_eq COMPLETING "$(job_state "$id")" "job state during the retries"
	for n in node1 node2; do
		st=$(node_state "$n")
		assert_match '^completing' "$st" "state of $n during the retries"
		assert_eq "" "$(drain_reason "$n")" "drain reason of $n during the retries"
	done
	assert_eq idle "$(node_state node3)" "node3 (not in the job)"
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_complete returned slurm.EAGAIN: nodes stay held, retry 2 of 2 at the next periodic check" 15
	assert_match '^completing' "$(node_state node1)" "state of node1 before the last retry"
	expect_drained "$id" "switch teardown failed: JobId=$id switch/lua job_complete still returned slurm.EAGAIN after switch_retries=2" node1 node2
	wait_job "$id" COMPLETED 10
	assert_eq 3 "$(ctld_count "switch/lua: JobId=$id job_complete started")" "job_complete calls (1 + switch_retries)"
	ctld_job "$id" ' RetryTick -> TeardownRunning \(R_RETRY\)' >/dev/null || fail "no R_RETRY debug line"
	ctld_job "$id" ' TeardownResult -> Done \(R_COMPLETE_EAGAIN_EXHAUSTED\)' >/dev/null || fail "no R_COMPLETE_EAGAIN_EXHAUSTED debug line"
	# Every call got the same jobinfo.
	assert_eq 3 "$(ctld_count "switch/lua: JobId=$id job_complete: switchlua: job_complete\(\): JobId=$id Nodes=node\[1-2\] jobinfo=.*\"token\":\"tok-$id\"")" \
		"job_complete calls that logged the jobinfo"
	resume node1 node2
}

# e2e-config: --switch-type switch/lua --script "$E2E_GEN/seed.lua" --slurmctld-params switch_drain_on_failure=no

e2e_test "switch/lua: job_complete: with switch_drain_on_failure=no complete_crash drains nothing and logs the reason it would have used" t_no_drain
t_no_drain() {
	need_seed
	local name id
	grep -F 'switch_drain_on_failure=no' "$(ctld_log)" >/dev/null || fail "slurmctld did not log switch_drain_on_failure=no"
	name=e2e-nodrain-$(e2e_uniq)
	run_srun -N2 -J "$name" --network=switchlua:complete_crash true >/dev/null ||
		fail "srun failed (the job itself should succeed)"
	id=$(job_named "$name")
	wait_job "$id" COMPLETED 15
	wait_log "$(ctld_log)" "switch/lua: JobId=$id not draining the nodes \(switch teardown failed: JobId=$id switch/lua job_complete raised an error: /etc/slurm/switch.lua:[0-9]+: switchlua: deliberate error in job_complete\): switch_drain_on_failure=no" 10
	if ctld_grep "switch/lua: drained node"; then fail "nodes were drained"; fi
	wait_node node1 idle 10
	wait_node node2 idle 10
	assert_eq "" "$(drain_reason node1)" "drain reason of node1"
	assert_eq "" "$(drain_reason node2)" "drain reason of node2"
}
