# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# e2e-tiers: core=24.11 full=26.05
#
# t0101-load: loading switch.lua.  slurmctld says which script it runs with
# which settings; jobs without --network never reach the script; a script
# that refuses to load fails the setup of every --network job without
# draining anything (switch.lua(5): LOADING THE SCRIPT).

# e2e-config: --switch-type switch/lua --script test/e2e/lua/chunk-fails.lua

e2e_test "switch/lua: load: a chunk returning -1 cancels --network jobs with \"could not load the script\"; nothing drained" t_chunk_refused
t_chunk_refused() {
	local name id out
	# At start-up slurmctld could not ask the two questions.
	grep -E 'switch/lua: .*the chunk returned -1, not slurm.SUCCESS: script refused' "$(ctld_log)" >/dev/null ||
		fail "slurmctld.log does not say the script was refused at start-up"
	grep -E 'switch/lua: script /etc/slurm/switch.lua \(.*block_job_complete=false\)' "$(ctld_log)" >/dev/null ||
		fail "slurmctld.log does not give block_job_complete=false for the refused script"

	name=e2e-chunk-$(e2e_uniq)
	if out=$(run_srun -N2 -J "$name" --network=switchlua:x true); then
		fail "srun succeeded with a script that does not load: $out"
	fi
	id=$(job_named "$name")
	assert_srun_told "srun: switch setup failed: switch/lua job_start could not load the script: /etc/slurm/switch.lua: the chunk returned -1, not slurm.SUCCESS: script refused" "$out"
	wait_job "$id" CANCELLED 10
	assert_job_reason "$id" '^switch setup failed: switch/lua job_start could not load the script: /etc/slurm/switch.lua: the chunk returned -1, not slurm.SUCCESS: script refused'
	ctld_job "$id" ' job_start could not load the script: /etc/slurm/switch.lua: the chunk returned -1' >/dev/null ||
		fail "no 'job_start could not load the script' line for JobId=$id"
	ctld_job "$id" ' cancelled: switch setup failed: ' >/dev/null || fail "no 'cancelled' line for JobId=$id"
	if ctld_job "$id" ' job_complete started'; then fail "job_complete ran after a failed setup"; fi
	# A failed setup drains nothing.
	assert_eq "" "$(drain_reason node1)" "drain reason of node1"
	assert_eq "" "$(drain_reason node2)" "drain reason of node2"
	wait_node node1 idle 10
	wait_node node2 idle 10
	# A job without --network does not need the script.
	out=$(run_srun -N2 sh -c 'echo ok' | sort -u) || fail "a job without --network failed: $out"
	assert_eq ok "$out" "a job without --network"
}

# e2e-config: --switch-type switch/lua --script "$E2E_GEN/seed.lua"

e2e_test "switch/lua: load: slurmctld logs the script, its settings and block_job_complete=false" t_load_logged
t_load_logged() {
	need_seed
	local log
	log=$(ctld_log)
	grep -F "switch/lua: script /etc/slurm/switch.lua ($(settings_line), block_job_complete=false)" "$log" >/dev/null ||
		fail "no settings line in slurmctld.log: $(grep 'switch/lua: script' "$log" || true)"
	grep -F 'switch/lua: active in slurmctld, script /etc/slurm/switch.lua' "$log" >/dev/null ||
		fail "slurmctld.log does not say the plugin is active"
	# The script's own answers, in its own words.
	grep -F 'switch/lua: switchlua: block_job_complete(): returning false' "$log" >/dev/null ||
		fail "the script's block_job_complete() line is not in slurmctld.log"
	grep -F 'switch/lua: switchlua: setup_special_steps(): returning false' "$log" >/dev/null ||
		fail "the script's setup_special_steps() line is not in slurmctld.log"
}

e2e_test "switch/lua: load: a job without --network is untouched: no switch/lua line for it, no SWITCHLUA_* variable" t_no_network
t_no_network() {
	local name id out n
	name=e2e-plain-$(e2e_uniq)
	out=$(run_srun -N2 -l -J "$name" sh -c 'env | grep "^SWITCHLUA_" || echo none' | sort) ||
		fail "srun failed: $out"
	assert_eq $'0: none\n1: none' "$out" "SWITCHLUA_* variables in the tasks"
	id=$(job_named "$name")
	wait_job "$id" COMPLETED 10
	if ctld_grep "switch/lua: .*JobId=$id([^0-9]|\$)"; then
		fail "slurmctld.log has switch/lua lines for JobId=$id, which has no --network"
	fi
	for n in node1 node2; do
		if slurmd_grep "$n" "switch/lua: .*JobId=$id([^0-9]|\$)"; then
			fail "slurmd-$n.log has switch/lua lines for JobId=$id"
		fi
	done
}
