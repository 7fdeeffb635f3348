# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
#
# t0901-lost-jobs: slurmctld loses its job records (its saved job state is
# removed while it is down); the journal still has the setup, and the
# restarted controller tears it down with the job's own saved job table and
# jobinfo (switch.lua(5): Restart, R_ORPHAN_TEARDOWN).  Last of the files:
# after the loss Slurm hands out job ids from the start again.

# e2e-config: --switch-type switch/lua --script test/e2e/lua/crash.lua --slurmctld-params switch_timeout=60

rm_markers() { rm -f "$E2E_ROOT"/tmp/switch-lua-e2e."$1".*; }

e2e_test "switch/lua: journal: a setup whose job record is gone after a restart is torn down with its own jobinfo" t_lost_job_torn_down
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
	wait_log "$(ctld_log)" "switch/lua: JobId=$id recovery: the journal has attempt [0-9]+ .*tearing it down with its jobinfo \(R_ORPHAN_TEARDOWN\)" 15
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_complete for attempt [0-9]+ \(job record gone\) returned rc=0 \(slurm.SUCCESS\): torn down \(R_ORPHAN_OK\)" 30
	led=$(cat "$E2E_ROOT/tmp/switch-lua-e2e.$tag.ledger")
	note "ledger: $led"
	attempt=$(awk '/^start /{print $3; exit}' <<<"$led")
	assert_eq "complete $id $attempt tok-$tag-$attempt" "$(grep '^complete ' <<<"$led")" "the teardown of the lost job's attempt"
	wait_node "$node" idle 30
	assert_eq "" "$(drain_reason "$node")" "drain reason of $node"
}
