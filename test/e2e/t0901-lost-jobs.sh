# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# e2e-tiers: core=24.11 full=26.05
#
# t0901-lost-jobs: slurmctld loses its job records (its saved job state is
# removed while it is down); the journal still has the setup, and the
# restarted controller tears it down with the job's own saved job table and
# jobinfo (switch.lua(5): Restart, R_ORPHAN_TEARDOWN), but not while the
# job's batch script may still run on its node: the setup had been launched,
# so the teardown waits (R_ORPHAN_WAIT_NODES, issue 24) until slurmctld has
# killed the orphaned step on the node and the node has answered since.
# Last of the files: after the loss Slurm hands out job ids from the start
# again.

# e2e-config: --switch-type switch/lua --script test/e2e/lua/crash.lua --slurmctld-params switch_timeout=60

rm_markers() { rm -f "$E2E_ROOT"/tmp/switch-lua-e2e."$1".*; }

e2e_test "switch/lua: journal: a launched setup whose job record is gone after a restart is torn down with its own jobinfo once its batch script has ended on the node, not before" t_lost_job_torn_down
t_lost_job_torn_down() {
	local tag id led attempt node
	tag=$(e2e_uniq)
	# shellcheck disable=SC2064 # $tag is fixed now
	trap "rm_markers $tag" EXIT
	id=$(submit -N1 --network="e2e:plain:$tag" --wrap="sleep 300")
	wait_job "$id" RUNNING 15
	node=$(job_field "$id" NodeList)
	wait_state_saved
	restart_ctld --kill9 --lose-jobs
	wait_log "$(ctld_log)" "switch/lua: JobId=$id recovery: the journal has attempt [0-9]+ .*launched before the restart, and no job record carries it .*is not torn down yet.*\(R_ORPHAN_WAIT_NODES\)" 15
	# KillWait=2 and MessageTimeout=10 of the cluster: clear 22 s after the
	# restart, at the node's next answer.
	wait_log "$(ctld_log)" "switch/lua: JobId=$id recovery: attempt [0-9]+'s nodes $node no longer run it: tearing it down now \(R_ORPHAN_TEARDOWN\)" 60
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_complete for attempt [0-9]+ \(job record gone\) returned rc=0 \(slurm.SUCCESS\): torn down \(R_ORPHAN_OK\)" 30
	# The batch script ended (slurmctld killed the orphaned step when the
	# node registered) before the teardown started.
	local ended torn
	ended=$(slurmd_grep "$node" "\[$id\.batch\] task 0 \([0-9]+\) exited" | tail -n1 | cut -c2-24)
	torn=$(ctld_grep "switch/lua: JobId=$id recovery: attempt [0-9]+'s nodes .* no longer run it" | tail -n1 | cut -c2-24)
	note "batch script ended at $ended, teardown started at $torn"
	[ -n "$ended" ] || fail "the batch script's end is not in the slurmd log of $node"
	[[ $ended < $torn ]] || fail "torn down at $torn, before the batch script ended at $ended"
	assert_eq "" "$(ctld_grep "switch/lua: JobId=$id recovery: the journal has attempt .*\(R_ORPHAN_TEARDOWN\)")" "no teardown at once"
	led=$(cat "$E2E_ROOT/tmp/switch-lua-e2e.$tag.ledger")
	note "ledger: $led"
	attempt=$(awk '/^start /{print $3; exit}' <<<"$led")
	assert_eq "complete $id $attempt tok-$tag-$attempt" "$(grep '^complete ' <<<"$led")" "the teardown of the lost job's attempt"
	wait_node "$node" idle 30
	assert_eq "" "$(drain_reason "$node")" "drain reason of $node"
}
