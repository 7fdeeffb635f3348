# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# e2e-tiers: core= full=24.11,26.05
#
# t0511-step-messages: what a step hook says reaches the operator, Slurm's
# way.  switch.lua(5): step_preinit / step_init / step_postfini "Returns"
# (rc, message), the env rules (portable names, numbers in the C locale),
# and "a node that is drained already keeps its reason".

# e2e-config: --switch-type switch/lua --script test/e2e/lua/step-messages.lua

# srun_net NETWORK NODES: srun -N NODES -w node1[,node2] printing the task's
# HALF / GOOD_NAME / BAD names; sets OUT, RC, ID.
srun_net() {
	local name nodes=node1
	name=e2e-msg-$(e2e_uniq)
	[ "$2" = 2 ] && nodes=node1,node2
	RC=0
	# shellcheck disable=SC2016 # expanded by the task's shell, not here
	OUT=$(run_srun -N "$2" -w "$nodes" -J "$name" --network="$1" \
		sh -c 'echo "HALF=${HALF:-unset} GOOD_NAME=${GOOD_NAME:-unset} bad=$(env | grep -c "^BAD" || true)"') || RC=$?
	ID=$(job_named "$name")
}

e2e_test "switch/lua: step_postfini: return -1, \"fabric port down é\" drains the node with \"switch postfini failed: fabric port down é (...)\"" t_postfini_message
t_postfini_message() {
	srun_net e2e:postfini_msg 1
	wait_node node1 'drained|draining' 15
	assert_eq "switch postfini failed: fabric port down é (switch/lua step_postfini JobId=$ID StepId=$ID.0 node1)" \
		"$(drain_reason node1)" "drain reason of node1"
	slurmd_grep node1 "switch/lua: JobId=$ID StepId=$ID.0 node1 step_postfini returned -1 \(fabric port down é\): this node is to be drained" >/dev/null ||
		fail "slurmd-node1.log: no step_postfini line with the message"
	resume node1
}

e2e_test "switch/lua: step_postfini: a node an admin drained keeps the admin's reason; the log says which reason was not set" t_postfini_keeps_admin_reason
t_postfini_keeps_admin_reason() {
	# The admin drains node1 while the job's step runs on it; the step's
	# postfini then fails: the admin's reason must stay.
	ID=$(submit --network=e2e:postfini_msg -N1 -w node1 -J "e2e-msg-$(e2e_uniq)" --wrap 'srun sleep 4')
	wait_job "$ID" RUNNING 30
	sleep 1
	drain node1 "admin: bad cable"
	wait_job_done "$ID" 40
	wait_log "$(slurmd_log node1)" "JobId=$ID StepId=$ID.0 step_postfini: node node1 is drained already, its reason \"admin: bad cable\" is kept" 20 ||
		fail "slurmd-node1.log: no line saying the admin's reason was kept"
	assert_eq "admin: bad cable" "$(drain_reason node1)" "drain reason of node1"
	resume node1
}

e2e_test "switch/lua: step_init: a hook's os.setlocale(de_DE) does not turn 0.5 into 0,5; names with a space or newline are refused and logged" t_init_locale_and_names
t_init_locale_and_names() {
	srun_net e2e:locale 1
	assert_eq 0 "$RC" "srun status"
	assert_eq "HALF=0.5 GOOD_NAME=z bad=0" "$OUT" "the task's environment"
	slurmd_grep node1 "switch/lua: JobId=$ID StepId=$ID.0 node1 step_init: e2e locale: os.setlocale gave de_DE.UTF-8" >/dev/null ||
		skip "no de_DE.UTF-8 locale in the testbed (scripts/testbed builds one)"
	slurmd_grep node1 "step_init: env\[\"BAD NAME\"\] skipped: a variable name must be letters, digits and '_'" >/dev/null ||
		fail "slurmd-node1.log: no line refusing the name with a space"
}

e2e_test "switch/lua: step_init: return -1, \"no VNI left\" fails the step and the message is logged on each node" t_init_message
t_init_message() {
	srun_net e2e:init_msg 2
	[ "$RC" != 0 ] || fail "srun succeeded: $OUT"
	assert_contains "Error configuring interconnect" "$OUT" "srun's output"
	local n
	for n in node1 node2; do
		slurmd_grep "$n" "switch/lua: JobId=$ID StepId=$ID.0 $n step_init returned -1 \(no VNI left\): the step fails" >/dev/null ||
			fail "slurmd-$n.log: no step_init line with the message"
	done
}
