# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# e2e-tiers: core=26.05 full=25.11,26.11
#
# t1702-pool-gate: the admission gate of fabric-ID pools (issue 38;
# switch.lua(5), POOLS), on the series whose select_nodes() asks
# switch_p_job_start(test_only) before it allocates a job's nodes (25.11
# and later).  A pool of 4 VNIs, 12 one-node jobs on 6 CPUs: at most 4 run
# at once, the others wait PENDING with Reason=Resources and one line each
# in slurmctld.log, and all complete: no setup refused, no requeue.  And
# the fabric breaker (switch.lua(5), Fabric outages): while it is open, new
# jobs wait PENDING likewise, and start once it closes.  (t1701 runs the
# pools on 24.11, where such a job is refused instead.)

# e2e-config: --switch-type switch/lua --script test/e2e/lua/pools.lua --slurmctld-params switch_pool_vni=100-103

# One sample of the 12 jobs (for wait_for): records the most seen running
# at once (GATE_MAX) and the jobs seen PENDING with Reason=Resources
# (GATE_WAITED); succeeds once none is left to run.
GATE_MAX=0
GATE_WAITED=()
gate_sample() {
	local rows running
	rows=$(c_root squeue -h -t all -j "$GATE_JOBS" -o '%i %T %r' 2>/dev/null) || return 1
	running=$(awk '$2 == "RUNNING" || $2 == "CONFIGURING"' <<<"$rows" | wc -l)
	((running <= GATE_MAX)) || GATE_MAX=$running
	while read -r id; do
		[[ " ${GATE_WAITED[*]} " == *" $id "* ]] || GATE_WAITED+=("$id")
	done < <(awk '$2 == "PENDING" && $3 == "Resources" { print $1 }' <<<"$rows")
	! awk '$2 ~ /^(PENDING|CONFIGURING|RUNNING|COMPLETING)$/ { found = 1 } END { exit !found }' <<<"$rows"
}

e2e_test "switch/lua: pools: 12 jobs and a pool of 4 VNIs: at most 4 run at once, the others wait PENDING (Reason=Resources), all complete, none refused or requeued" t_gate
t_gate() {
	local ids=() id waited_line=0
	for _ in $(seq 12); do
		ids+=("$(submit -N1 -n1 --network=fabric --wrap='sleep 3')")
	done
	GATE_JOBS=$(IFS=,; echo "${ids[*]}")
	wait_for 300 gate_sample || fail "the 12 jobs did not all end within 300 s"
	note "at most $GATE_MAX of the 12 ran at once; ${#GATE_WAITED[@]} seen PENDING with Reason=Resources"
	((GATE_MAX <= 4)) || fail "$GATE_MAX jobs ran at once with a pool of 4 VNIs"
	((GATE_MAX == 4)) || fail "never 4 jobs at once (at most $GATE_MAX): the pool was not used whole"
	for id in "${ids[@]}"; do
		wait_job_done "$id" 60 || fail "job $id did not end"
		assert_eq COMPLETED "$(job_state "$id")" "job $id's state"
		assert_eq 0 "$(job_field "$id" Restarts)" "job $id's requeues"
		if ctld_job "$id" " job_start waits: the job stays PENDING \(Reason=Resources\) until its pools have IDs free: pool vni has 0 of 4 IDs free, 1 needed \(switch_pool_vni\)$" >/dev/null; then
			waited_line=$((waited_line + 1))
		fi
		if ctld_job "$id" " job_start not started" >/dev/null; then
			fail "job $id was refused instead of kept PENDING"
		fi
	done
	((waited_line >= 1)) || fail "no job logged that it waits PENDING for the pool"
	((${#GATE_WAITED[@]} >= 1)) || fail "no job was seen PENDING with Reason=Resources in squeue"
	note "$waited_line of the 12 jobs logged that they wait for the pool"
	wait_for 30 pool_shows free 4 || fail "status: the 4 VNIs not free again ($(pool_field free) free)"
	assert_eq 0 "$(pool_field refusals)" "setups refused for want of IDs"
	assert_eq 0 "$(pool_field waiting)" "jobs counted as waiting once all ended"
}

# pools_fabric up|down: what test/e2e/lua/pools.lua's hooks find in
# /tmp/switch-lua-e2e-pools/fabric (in the chroot).
POOLS_DIR=/tmp/switch-lua-e2e-pools
pools_fabric() { c_root sh -c "mkdir -p $POOLS_DIR && chmod 0755 $POOLS_DIR && echo $1 >$POOLS_DIR/fabric.new && chmod 0644 $POOLS_DIR/fabric.new && mv $POOLS_DIR/fabric.new $POOLS_DIR/fabric"; }

e2e_test "switch/lua: fabric breaker: while it is open, new jobs wait PENDING (Reason=Resources) instead of failing their setup, and start once it closes" t_gate_breaker
t_gate_breaker() {
	local a ids=() id waiting=""
	pools_fabric up
	a=$(submit -N1 -n1 --network=fabric --wrap='sleep 2')
	wait_job "$a" RUNNING 30 || fail "job $a did not start"
	pools_fabric down
	wait_log "$(ctld_log)" "switch/lua: fabric breaker OPEN: JobId=$a job_complete returned slurm.FABRIC_DOWN" 60 ||
		fail "the breaker did not open"
	for _ in 1 2; do
		ids+=("$(submit -N1 -n1 --network=fabric --wrap=true)")
	done
	for id in "${ids[@]}"; do
		if wait_log "$(ctld_log)" "switch/lua: JobId=$id job_start waits: the job stays PENDING \(Reason=Resources\) until the fabric breaker closes: JobId=$a job_complete returned slurm.FABRIC_DOWN" 20; then
			waiting=$id
			break
		fi
	done
	[ -n "$waiting" ] || fail "no job logged that it waits for the breaker"
	assert_eq Resources "$(job_reason "$waiting")" "job $waiting's reason (squeue %r)"
	for id in "${ids[@]}"; do
		assert_eq PENDING "$(job_state "$id")" "job $id while the breaker is open"
	done
	pools_fabric up
	wait_log "$(ctld_log)" "switch/lua: fabric breaker closed after [0-9]+ s open: JobId=$a job_complete succeeded" 60 ||
		fail "the breaker did not close"
	for id in "${ids[@]}"; do
		wait_job_done "$id" 60 || fail "job $id did not end"
		assert_eq COMPLETED "$(job_state "$id")" "job $id's state"
		assert_eq 0 "$(job_field "$id" Restarts)" "job $id's requeues"
		ctld_job "$id" " job_start returned rc=0 " >/dev/null || fail "job $id's job_start did not run once, and succeed"
	done
	wait_job_done "$a" 60 || fail "job $a did not end"
}
