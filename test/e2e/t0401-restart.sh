# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# e2e-tiers: core=24.11,26.05 full=25.05,25.11
#
# t0401-restart: slurmctld killed with SIGKILL while a job_start or a held
# job_complete runs.  The restarted controller re-runs the call it lost:
# job_start for a job still CONFIGURING (R_RESTART_SETUP), job_complete with
# the same jobinfo for a job whose nodes it held (R_RESTART_TEARDOWN).  The
# killed job_start's attempt is first torn down with nil (R_RESTART_SETUP,
# then R_UNDO_OK runs job_start again).  The
# fixture test/e2e/lua/restart.lua makes the first call slow and the re-run
# fast (switch.lua(5): Restart).

# e2e-config: --switch-type switch/lua --script test/e2e/lua/restart.lua --slurmctld-params switch_timeout=60

# rm_markers TAG: the fixture's marker files and the test's go file (each
# test removes its own when it ends, whatever the outcome).
rm_markers() { rm -f "$E2E_ROOT"/tmp/switch-lua-e2e."$1".*; }

e2e_test "switch/lua: restart: slurmctld killed -9 during a slow job_start tears the killed attempt down with nil, runs job_start again, then the job runs with its jobinfo" t_restart_setup
t_restart_setup() {
	local tag id go out left
	tag=$(e2e_uniq)
	go=/tmp/switch-lua-e2e.$tag.go
	# shellcheck disable=SC2064 # $tag is fixed now
	trap "rm_markers $tag" EXIT
	# The batch script waits for $go, which the test creates once every node
	# answers the restarted slurmctld: a step requested before that waits
	# about 60 s ("Requested nodes are busy").
	id=$(submit -N2 --network="e2e:slowstart:$tag" \
		--wrap="while [ ! -e $go ]; do sleep 0.2; done; srun -l printenv E2E_TOKEN | sort")
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_start: e2e restart: JobId=$id job_start token=tok-$tag-$id: first call" 15
	assert_eq CONFIGURING "$(job_state "$id")" "job state while job_start runs"
	wait_state_saved
	restart_ctld --kill9
	# The killed call's processes went with the supervisor.
	if left=$(pgrep -af "sleep 30\\.$tag"); then fail "the killed job_start call survives: $left"; fi
	wait_log "$(ctld_log)" "switch/lua: JobId=$id recovered after a slurmctld restart in state SetupRunning: the job_start of attempt [0-9]+ has no recorded result \(killed with its slurmctld, or it ended while that slurmctld was stopped and its result never reached the journal\); running job_complete with nil jobinfo for it, then job_start again \(the job has not launched\)" 10
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_complete: e2e restart: JobId=$id job_complete token=nil" 10
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_start: e2e restart: JobId=$id job_start token=tok-$tag-$id: called again" 10
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_start accepted the job: jobinfo stored, job may launch" 10
	assert_eq 2 "$(ctld_count "switch/lua: JobId=$id job_start started")" "job_start calls (the first, then the re-run)"
	ctld_job "$id" ' Recover -> SetupUndoing \(R_RESTART_SETUP\)' >/dev/null || fail "no R_RESTART_SETUP debug line"
	ctld_job "$id" ' TeardownResult -> SetupRunning \(R_UNDO_OK\)' >/dev/null || fail "no R_UNDO_OK debug line"
	wait_job "$id" RUNNING 10
	touch "$E2E_ROOT$go"
	wait_job "$id" COMPLETED 30
	out=$(cat "$(job_output "$id")")
	assert_eq "0: tok-$tag-$id"$'\n'"1: tok-$tag-$id" "$out" "E2E_TOKEN in the tasks (from the re-run's jobinfo)"
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_complete returned rc=0 \(slurm.SUCCESS\)" 10
	wait_node node1 idle 10
	wait_node node2 idle 10
	assert_eq "" "$(drain_reason node1)" "drain reason of node1"
}

e2e_test "switch/lua: restart: slurmctld killed -9 during a held job_complete runs it again with the same jobinfo; nodes end idle" t_restart_teardown
t_restart_teardown() {
	local tag id n left
	tag=$(e2e_uniq)
	# shellcheck disable=SC2064 # $tag is fixed now
	trap "rm_markers $tag" EXIT
	id=$(submit -N2 --network="e2e:slowend:$tag" --wrap=true)
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_complete: e2e restart: JobId=$id job_complete token=tok-$tag-$id: first call" 20
	# block_job_complete is true: job and nodes are held while it runs.
	assert_eq COMPLETING "$(job_state "$id")" "job state while job_complete runs"
	for n in node1 node2; do assert_match '^completing' "$(node_state "$n")" "state of $n while job_complete runs"; done
	wait_state_saved
	restart_ctld --kill9
	if left=$(pgrep -af "sleep 30\\.$tag"); then fail "the killed job_complete call survives: $left"; fi
	wait_log "$(ctld_log)" "switch/lua: JobId=$id recovered after a slurmctld restart in state TeardownRunning: running job_complete again" 10
	# The re-run gets the jobinfo job_start returned before the restart.
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_complete: e2e restart: JobId=$id job_complete token=tok-$tag-$id\$" 15
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_complete returned rc=0 \(slurm.SUCCESS\)" 10
	assert_eq 2 "$(ctld_count "switch/lua: JobId=$id job_complete started")" "job_complete calls (the first, then the re-run)"
	wait_job "$id" COMPLETED 15
	for n in node1 node2; do
		wait_node "$n" idle 15
		assert_eq "" "$(drain_reason "$n")" "drain reason of $n"
	done
}
