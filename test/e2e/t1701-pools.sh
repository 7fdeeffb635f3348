# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# e2e-tiers: core=24.11 full=
#
# t1701-pools: fabric-ID pools live (issue 38; switch.lua(5), POOLS), a
# pool of 4 VNIs: jobs that run at once never share one and every ID is
# free again once they end; a job that finds the pool empty is refused
# before its job_start runs (the documented fallback: a --no-requeue job is
# cancelled with a reason naming the pool); a failed teardown quarantines
# its ID, which `switch-lua pool release` (switch-lua(1), POOL RELEASE)
# frees, as root, through StateSaveLocation.

# e2e-config: --switch-type switch/lua --script test/e2e/lua/pools.lua --slurmctld-params switch_pool_vni=100-103

# vni_of ID: the VNI job ID's job_start logged.
vni_of() {
	ctld_grep "pools: job $1 got vni " | sed -n 's/.* got vni \([0-9-]*\).*/\1/p' | tail -n1
}

e2e_test "switch/lua: pools: 4 jobs at once of a pool of 4 VNIs each get their own, all are free once they end" t_pools_distinct
t_pools_distinct() {
	local ids=() id vnis=()
	# Long enough to be running together on a loaded machine; ended by
	# scancel once the four are seen holding their IDs.
	for _ in 1 2 3 4; do
		ids+=("$(submit -N1 -n1 --network=fabric --wrap='sleep 120')")
	done
	for id in "${ids[@]}"; do
		wait_log "$(ctld_log)" "pools: job $id got vni " 30 || fail "job $id: no job_start line"
	done
	wait_for 30 pool_shows taken 4 || fail "status: $(pool_field taken) VNIs taken, not 4"
	for id in "${ids[@]}"; do
		vnis+=("$(vni_of "$id")")
	done
	assert_eq "100 101 102 103" "$(printf '%s\n' "${vnis[@]}" | sort -n | tr '\n' ' ' | sed 's/ $//')" "the VNIs of the 4 jobs"
	cancel "${ids[@]}"
	for id in "${ids[@]}"; do
		wait_job_done "$id" 60 || fail "job $id did not end"
	done
	wait_for 30 pool_shows free 4 || fail "status: the 4 VNIs not free again"
	assert_eq 0 "$(pool_field refusals)" "refusals"
}

e2e_test "switch/lua: pools: a job that finds the pool empty is refused before job_start, cancelled (--no-requeue) with a reason naming the pool" t_pools_empty
t_pools_empty() {
	local ids=() id late
	for _ in 1 2 3 4; do
		ids+=("$(submit -N1 -n1 --network=fabric --wrap='sleep 60')")
	done
	wait_for 30 pool_shows taken 4 || fail "status: not 4 VNIs taken"
	late=$(submit -N1 -n1 --no-requeue --network=fabric --wrap=true)
	wait_job "$late" CANCELLED 60 || fail "job $late was not cancelled"
	assert_contains "pool vni has 0 of 4 IDs free, 1 needed (switch_pool_vni)" "$(job_reason "$late")" "the reason of job $late (squeue %r)"
	ctld_job "$late" " job_start not started: pool vni has 0 of 4 IDs free" >/dev/null ||
		fail "no 'job_start not started' line for job $late"
	if ctld_grep "pools: job $late got vni" >/dev/null; then
		fail "job $late's job_start ran"
	fi
	# The status file is rewritten within a second of a change.
	wait_for 30 pool_shows refusals 1 || fail "status: refusals $(pool_field refusals), not 1"
	cancel "${ids[@]}"
	for id in "${ids[@]}"; do
		wait_job_done "$id" 60 || fail "job $id did not end"
	done
	wait_for 30 pool_shows free 4 || fail "status: the 4 VNIs not free again"
}

e2e_test "switch/lua: pools: a failed teardown quarantines its VNI (drained, in switch-lua status) until switch-lua pool release frees it" t_pools_release
t_pools_release() {
	local id vni out node
	id=$(submit -N1 -n1 --network=fabric -J fail_teardown --wrap=true)
	wait_job_done "$id" 60 || fail "job $id did not end"
	wait_for 30 pool_shows quarantined 1 || fail "status: no VNI quarantined"
	vni=$(vni_of "$id")
	assert_contains "Quarantined:          JobId=$id: vni $vni since " "$(c_root "$(switch_lua_cli)" status)" "switch-lua status"
	out=$(c_root "$(switch_lua_cli)" pool release --job "$id" 2>&1) || fail "pool release failed: $out"
	assert_match "^switch-lua pool release: JobId=$id: released vni $vni \(quarantined since " "$out" "pool release's output"
	ctld_job "$id" " pool IDs released by an administrator \(switch-lua pool release\): vni $vni, quarantined since " >/dev/null ||
		fail "no release line in slurmctld.log"
	wait_for 30 pool_shows quarantined 0 || fail "status: still quarantined"
	pool_shows free 4 || fail "status: not 4 VNIs free"
	out=$(c_root "$(switch_lua_cli)" pool release --job "$id" 2>&1) && fail "a second release succeeded: $out"
	assert_contains "no quarantined IDs: nothing released" "$out" "a second release"
	for node in $(node_names); do
		[[ $(node_state "$node") == drain* ]] && resume "$node"
	done
	return 0
}
