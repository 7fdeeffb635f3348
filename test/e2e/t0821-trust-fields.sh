# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# e2e-tiers: core= full=24.11,26.05
#
# t0821-trust-fields: the step table is what slurmctld recorded and signed,
# never the task environment (issue 21; switch.lua(5): SECURITY).  In an
# allocation made with --network=trust:job, one step with srun --network
# of its own, one whose srun has no SLURM_NETWORK at all, and one whose
# srun takes a hostile SLURM_NETWORK from its environment (the issue's
# example): each hook logs exactly the network slurmctld recorded for
# that step, the task counts and node ranks of its layout, and the
# cluster's name.

# e2e-config: --switch-type switch/lua --script test/e2e/lua/trust-fields.lua

# fields_on NODE STEP HOOK REST: NODE's slurmd log has the HOOK fields line
# of step STEP of job $ID, REST (a literal text) after "network=".
fields_on() {
	slurmd_grep "$1" "switch/lua: JobId=$ID StepId=$ID.$2 $1 $3: $3 fields: network=$(ere_quote "$4")\$" >/dev/null ||
		fail "slurmd-$1.log: no line '$3 fields: network=$4' for step $ID.$2; it has: $(slurmd_grep "$1" "StepId=$ID.$2 .* fields:" || true)"
}

e2e_test "switch/lua: step table: step.network is the network slurmctld recorded for the step (srun --network, else the job's), never SLURM_NETWORK of the task environment" t_step_network
t_step_network() {
	local name out marker hostile h n
	name=e2e-trust-$(e2e_uniq)
	marker=/tmp/switchlua-pwned-$(e2e_uniq)
	hostile="trust:env;touch $marker;\$(touch $marker)"
	c_root rm -f "$marker"
	# shellcheck disable=SC2016 # expanded by the allocation's shell
	out=$(c_as "$E2E_USER" env HOSTILE="$hostile" salloc -N2 -n3 --overcommit -J "$name" --network=trust:job sh -c '
		srun -N2 -n3 --overcommit --network=trust:step sh -c "echo step0 env=\$SLURM_NETWORK"
		env -u SLURM_NETWORK srun -N1 -n1 -w node1 sh -c "echo step1 env=\${SLURM_NETWORK-unset}"
		SLURM_NETWORK=$HOSTILE srun -N1 -n1 -w node2 sh -c "echo step2 env=\$SLURM_NETWORK"
	' 2>&1) || fail "salloc failed: $out"
	ID=$(job_named "$name")
	note "tasks: $out"
	assert_contains "step1 env=unset" "$out" "the second step's task environment has no SLURM_NETWORK"
	ctld_job "$ID" " job_start: job fields: network=<trust:job> cluster_name=<switchlua> " >/dev/null ||
		fail "job_start did not log the job's network and cluster_name"
	for h in step_preinit step_init step_postfini; do
		# srun --network=trust:step, 3 tasks on node[1-2]: node1 is rank 0.
		fields_on node1 0 "$h" "<trust:step> job_network=<trust:job> num_nodes=2 num_tasks=3 node_id=0 nodes=<node[1-2]> cluster_name=<switchlua>"
		fields_on node2 0 "$h" "<trust:step> job_network=<trust:job> num_nodes=2 num_tasks=3 node_id=1 nodes=<node[1-2]> cluster_name=<switchlua>"
		# No --network and no SLURM_NETWORK: slurmctld gives the step the job's.
		fields_on node1 1 "$h" "<trust:job> job_network=<trust:job> num_nodes=1 num_tasks=1 node_id=0 nodes=<node1> cluster_name=<switchlua>"
		# srun took SLURM_NETWORK as its --network: slurmctld recorded it, as it is.
		fields_on node2 2 "$h" "<$hostile> job_network=<trust:job> num_nodes=1 num_tasks=1 node_id=0 nodes=<node2> cluster_name=<switchlua>"
	done
	for n in node1 node2; do
		if slurmd_grep "$n" "StepId=$ID\.1 .*network=<nil>"; then fail "a step hook saw no network"; fi
	done
	[ ! -e "$E2E_ROOT$marker" ] || fail "a command in the hostile SLURM_NETWORK ran: $marker exists"
}
