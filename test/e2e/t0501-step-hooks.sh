# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# e2e-tiers: core=24.11,26.05 full=25.05,25.11,26.11
#
# t0501-step-hooks: the slurmstepd hooks step_preinit, step_init and
# step_postfini, driven by the contract script's directives, on both nodes
# of an srun -N2 step.  Only an explicit negative return stops a step (or,
# for postfini, drains the node); a Lua error is logged and the step goes on
# (fail-open).  switch.lua(5): step_preinit, step_init, step_postfini.

# e2e-config: --switch-type switch/lua --script "$E2E_GEN/seed.lua"

# ENV_CMD: what each task prints: that it ran, and its SWITCHLUA_* names.
# shellcheck disable=SC2016 # expanded by the task's shell
ENV_CMD='echo "ran $(env | grep -c "^SWITCHLUA_" || true)"'

# step DIRECTIVE: run srun -N2 -l with --network=switchlua:DIRECTIVE as
# tbuser; sets OUT (srun's output, sorted), RC (its status) and ID.
step() {
	local name
	name=e2e-$1-$(e2e_uniq)
	RC=0
	OUT=$(run_srun -N2 -l -J "$name" --network="switchlua:$1" sh -c "$ENV_CMD" | sort) || RC=$?
	ID=$(job_named "$name")
}

# both_nodes RE: each node's slurmd log has a line matching
# "switch/lua: JobId=ID StepId=ID.0 NODE " followed by RE.
both_nodes() {
	local n
	for n in node1 node2; do
		slurmd_grep "$n" "switch/lua: JobId=$ID StepId=$ID.0 $n $1" >/dev/null ||
			fail "slurmd-$n.log: no line 'switch/lua: JobId=$ID StepId=$ID.0 $n $1'"
	done
}
# no_node RE: neither node logged that line.
no_node() {
	local n
	for n in node1 node2; do
		if slurmd_grep "$n" "switch/lua: JobId=$ID StepId=$ID.0 $n $1"; then fail "slurmd-$n.log has '$1' for JobId=$ID"; fi
	done
}

# ran_with N: both tasks ran and saw N SWITCHLUA_* variables; srun exit 0.
ran_with() {
	assert_eq 0 "$RC" "srun's exit status (output: $OUT)"
	assert_match "(^|"$'\n'")0: ran $1("$'\n'"|\$)" "$OUT" "task 0"
	assert_match "(^|"$'\n'")1: ran $1("$'\n'"|\$)" "$OUT" "task 1"
}

# interconnect_failed: srun failed with "Error configuring interconnect" and
# no task ran.
interconnect_failed() {
	[ "$RC" != 0 ] || fail "srun succeeded: $OUT"
	assert_contains "launch failed: Error configuring interconnect" "$OUT" "srun's message"
	assert_not_contains ": ran " "$OUT" "task output"
}

# not_drained: neither node is drained; both are idle again.
not_drained() {
	local n
	wait_job "$ID" COMPLETED 15
	for n in node1 node2; do
		wait_node "$n" idle 10
		assert_eq "" "$(drain_reason "$n")" "drain reason of $n"
	done
}

e2e_test "switch/lua: step_preinit: preinit_warn (returns 1) is logged on each node and the step runs" t_preinit_warn
t_preinit_warn() {
	need_seed
	step preinit_warn
	ran_with 6
	both_nodes 'step_preinit returned 1: logged, the step proceeds'
	both_nodes 'step_init returned 0 with 7 environment change\(s\)'
	not_drained
}

e2e_test "switch/lua: step_preinit: preinit_fail (returns -1) fails the step: srun \"Error configuring interconnect\"" t_preinit_fail
t_preinit_fail() {
	need_seed
	step preinit_fail
	interconnect_failed
	both_nodes 'step_preinit returned -1: the step fails \(Error configuring interconnect\)'
	# Slurm runs neither step_init nor step_postfini after a failed preinit.
	no_node 'step_init'
	no_node 'step_postfini'
	not_drained
}

e2e_test "switch/lua: step_preinit: preinit_crash (a Lua error) is logged and the step runs (fail-open)" t_preinit_crash
t_preinit_crash() {
	need_seed
	step preinit_crash
	ran_with 6
	both_nodes 'step_preinit raised an error: /etc/slurm/switch.lua:[0-9]+: switchlua: deliberate error in step_preinit'
	not_drained
}

e2e_test "switch/lua: step_init: init_warn (returns 1) is logged; the step runs with the SWITCHLUA_* environment" t_init_warn
t_init_warn() {
	need_seed
	step init_warn
	ran_with 6
	both_nodes 'step_init returned 1: logged, the step proceeds'
	not_drained
}

e2e_test "switch/lua: step_init: init_fail (returns -1) fails the step: srun \"Error configuring interconnect\"; postfini still runs" t_init_fail
t_init_fail() {
	need_seed
	step init_fail
	interconnect_failed
	both_nodes 'step_init returned -1: the step fails \(Error configuring interconnect\)'
	both_nodes 'step_postfini returned 0'
	not_drained
}

e2e_test "switch/lua: step_init: init_crash (a Lua error) is logged; the step runs without SWITCHLUA_* (fail-open)" t_init_crash
t_init_crash() {
	need_seed
	step init_crash
	ran_with 0
	both_nodes 'step_init raised an error: /etc/slurm/switch.lua:[0-9]+: switchlua: deliberate error in step_init'
	not_drained
}

e2e_test "switch/lua: step_init: noenv (no environment table) runs the step without SWITCHLUA_*" t_noenv
t_noenv() {
	need_seed
	step noenv
	ran_with 0
	both_nodes 'step_init returned 0 with no environment table'
	not_drained
}

e2e_test "switch/lua: step_postfini: postfini_warn (returns 1) is logged; the nodes are not drained" t_postfini_warn
t_postfini_warn() {
	need_seed
	step postfini_warn
	ran_with 6
	both_nodes 'step_postfini returned 1: logged, the step proceeds'
	not_drained
}

e2e_test "switch/lua: step_postfini: postfini_drain (returns -1) drains each node with \"switch postfini failed: rc=-1 (switch/lua step_postfini JobId=N StepId=N.0 nodeK)\"" t_postfini_drain
t_postfini_drain() {
	need_seed
	local n
	step postfini_drain
	ran_with 6
	both_nodes 'step_postfini returned -1: this node is to be drained'
	for n in node1 node2; do
		wait_node "$n" 'drained|draining' 15
		assert_eq "switch postfini failed: rc=-1 (switch/lua step_postfini JobId=$ID StepId=$ID.0 $n)" "$(drain_reason "$n")" "sinfo -R reason of $n"
	done
	assert_eq "" "$(drain_reason node3)" "node3 (not in the job)"
	resume node1 node2
}

e2e_test "switch/lua: step_postfini: postfini_crash (a Lua error) is logged; the nodes are not drained" t_postfini_crash
t_postfini_crash() {
	need_seed
	step postfini_crash
	ran_with 6
	both_nodes 'step_postfini raised an error: /etc/slurm/switch.lua:[0-9]+: switchlua: deliberate error in step_postfini'
	not_drained
}
