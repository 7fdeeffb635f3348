# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# e2e-tiers: core=24.11 full=26.05
#
# t0001-cluster: the stock cluster (no SwitchType) works.  If these fail,
# every switch/lua test after them would fail for reasons that have nothing
# to do with the plugin.
#
# No "# e2e-config:" line: the cluster runs with the runner's default
# config, which without options has no switch plugin.

e2e_test "cluster: all three nodes are idle after start" t_nodes_idle
t_nodes_idle() {
	local nodes n
	nodes=$(node_names | tr '\n' ' ')
	assert_eq "node1 node2 node3 " "$nodes" "node list"
	for n in node1 node2 node3; do
		assert_eq idle "$(node_state "$n")" "state of $n"
	done
}

e2e_test "cluster: srun -N3 runs one task on each node" t_srun_n3
t_srun_n3() {
	local out
	out=$(run_srun -N3 -l printenv SLURMD_NODENAME | sort)
	assert_eq $'0: node1\n1: node2\n2: node3' "$out" "one task per node"
}

e2e_test "cluster: srun as tbuser runs the task as uid 2000" t_srun_user
t_srun_user() {
	local out
	out=$(run_srun -N1 id -u)
	assert_eq 2000 "$out" "uid of the task"
}

e2e_test "cluster: sbatch as tbuser completes with ExitCode 0:0" t_sbatch_user
t_sbatch_user() {
	local id out
	id=$(submit -N2 --wrap='id -u; srun -N2 -l printenv SLURMD_NODENAME | sort')
	wait_job "$id" COMPLETED
	assert_eq "0:0" "$(job_field "$id" ExitCode)" "ExitCode"
	assert_eq "tbuser(2000)" "$(job_field "$id" UserId)" "UserId"
	out=$(job_output "$id")
	assert_eq 2000 "$(stat -c %u "$out")" "owner of $out"
	assert_eq $'2000\n0: node1\n1: node2' "$(cat "$out")" "job output"
	# The main scheduler logs "Allocate JobId=".  The backfill one logs
	# "Started JobId=" on 24.11; Slurm 26.05's backfill logs its start only
	# with DebugFlags=HetJob, so there the batch host's "Launching batch" line
	# says that the job was started.
	if [ "$(cluster_slurm)" = debian ]; then
		ctld_grep "(Allocate|Started) JobId=$id " >/dev/null || fail "slurmctld.log does not say it started job $id"
	else
		local host
		host=$(job_field "$id" BatchHost)
		ctld_grep "Allocate JobId=$id " >/dev/null || slurmd_grep "$host" "Launching batch JobId=$id " >/dev/null ||
			fail "neither slurmctld.log nor $host's log says that job $id was started"
	fi
}

e2e_test "cluster: a batch job that exits 3 ends FAILED with ExitCode 3:0" t_sbatch_fail
t_sbatch_fail() {
	local id
	id=$(submit -N1 --wrap='exit 3')
	wait_job "$id" FAILED
	assert_eq "3:0" "$(job_field "$id" ExitCode)" "ExitCode"
}

e2e_test "cluster: scancel ends a running job as CANCELLED" t_scancel
t_scancel() {
	local id
	id=$(submit -N1 --wrap='sleep 300')
	wait_job "$id" RUNNING
	cancel "$id"
	wait_job "$id" CANCELLED
}

e2e_test "cluster: drain shows its reason in sinfo -R; resume makes the node idle" t_drain_resume
t_drain_resume() {
	local reason="e2e drain test $$"
	drain node2 "$reason"
	wait_node node2 drained 10
	assert_eq "$reason" "$(drain_reason node2)" "sinfo -R reason"
	assert_match 'DRAIN' "$(node_field node2 State)" "scontrol State"
	assert_eq "" "$(drain_reason node1)" "node1 has no reason"
	resume node2
	wait_node node2 idle 10
	assert_eq "" "$(drain_reason node2)" "sinfo -R after resume"
}

e2e_test "cluster: a running job survives restart-ctld --kill9" t_restart_ctld
t_restart_ctld() {
	local id go
	# The job runs until the test lets it end (a file), not for a time: on a
	# loaded machine a 10 s job ended before the restart was over.
	go=/tmp/switch-lua-e2e.$(e2e_uniq).go
	# shellcheck disable=SC2064 # $go is fixed now
	trap "rm -f '$E2E_ROOT$go'" EXIT
	id=$(submit -N1 --wrap="while [ ! -e $go ]; do sleep 0.2; done")
	wait_job "$id" RUNNING
	# Without this the kill can come before slurmctld wrote the job down
	# (started by backfill, it is on disk as PENDING until a write).
	ask_job_state_write
	restart_ctld --kill9
	assert_eq RUNNING "$(job_state "$id")" "state after the restart"
	touch "$E2E_ROOT$go"
	wait_job "$id" COMPLETED 30
	assert_eq "0:0" "$(job_field "$id" ExitCode)" "ExitCode"
}
