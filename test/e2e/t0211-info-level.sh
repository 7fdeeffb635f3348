# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# e2e-tiers: core= full=24.11,26.05
#
# t0211-info-level: what an operator sees at the default SlurmctldDebug=info
# (switch_lua.conf(5), FOLLOWING A JOB IN THE LOGS): every call's outcome
# line, at info level for an accepted result and at error level for a
# failure, and the Lua stack traceback of a job_start error; and the
# warning for a misspelt switch_* key in SlurmctldParameters, with the keys
# read case-insensitively as Slurm reads its own (switch_lua.conf(5),
# Syntax).  Issue 9 items 3 and 5b.  Its cluster is booted as
# scripts/bench --cluster boots C's (SlurmctldDebug=info, the slurmd at nice
# 10), and the last case checks that nice value (issue 22).

# e2e-config: --switch-type switch/lua --script test/e2e/lua/info-level.lua --debug info --slurmctld-params Switch_Timeout=7,switch_timout=3 --node-nice 10

e2e_test "switch/lua: at SlurmctldDebug=info, an accepted job_start's outcome line is logged at info level" t_info_ok
t_info_ok() {
	local id
	id=$(submit --network=fabric --wrap=true)
	wait_job "$id" COMPLETED 30
	ctld_grep "\] switch/lua: JobId=$id job_start returned rc=0 with jobinfo \(queued [0-9]+ ms, ran [0-9]+ ms; script /etc/slurm/switch.lua content fnv1a64:[0-9a-f]{16}\)$" >/dev/null ||
		fail "no info-level 'job_start returned rc=0 with jobinfo' line"
	ctld_grep "\] switch/lua: JobId=$id job_start accepted the job: jobinfo stored, job may launch$" >/dev/null ||
		fail "no 'accepted the job' line"
	ctld_grep "\] switch/lua: JobId=$id job_complete returned rc=0 \(slurm.SUCCESS\) \(script /etc/slurm/switch.lua content fnv1a64:[0-9a-f]{16}\)$" >/dev/null ||
		fail "no 'job_complete returned rc=0' line"
	assert_eq 0 "$(ctld_count "\\] debug[0-9]?: ")" "debug lines at SlurmctldDebug=info"
}

e2e_test "switch/lua: at SlurmctldDebug=info, a job_start Lua error is logged at error level with its traceback" t_info_error
t_info_error() {
	local id
	id=$(submit --no-requeue --network=crash --wrap=true)
	wait_job "$id" CANCELLED 30
	ctld_grep "\] error: switch/lua: JobId=$id job_start raised an error: /etc/slurm/switch.lua:9: fabric manager refused the VNI \(queued [0-9]+ ms, ran [0-9]+ ms; script /etc/slurm/switch.lua content fnv1a64:[0-9a-f]{16}\)$" >/dev/null ||
		fail "no error-level 'raised an error' line"
	ctld_grep "\] error: switch/lua: JobId=$id job_start traceback: stack traceback:$" >/dev/null ||
		fail "no traceback header"
	ctld_grep "\] error: switch/lua: JobId=$id job_start traceback: .*/etc/slurm/switch.lua:9: in (upvalue|local|function) '?fabric_call'?$" >/dev/null ||
		fail "the traceback does not name fabric_call at line 9"
	ctld_grep "\] error: switch/lua: JobId=$id job_start traceback: .*/etc/slurm/switch.lua:14: in function '?slurm_switch_job_start'?$" >/dev/null ||
		fail "the traceback does not name slurm_switch_job_start at line 14"
	ctld_grep "\] switch/lua: JobId=$id cancelled: switch setup failed: switch/lua job_start raised an error: /etc/slurm/switch.lua:9: fabric manager refused the VNI$" >/dev/null ||
		fail "no 'cancelled' line"
}

e2e_test "switch/lua: SlurmctldParameters: a misspelt switch_* key is named at start; keys are read case-insensitively" t_params
t_params() {
	local warning
	# The warning as the parser words it (`switch-lua settings` prints it on stderr).
	warning=$(c_root "$(switch_lua_cli)" settings switch_timout=3 2>&1 >/dev/null)
	assert_contains "switch_timout is not a switch/lua setting" "$warning" "switch-lua settings' warning"
	grep -E "\] error: switch/lua: $(ere_quote "$warning")$" "$(ctld_log)" >/dev/null ||
		fail "no warning naming switch_timout in slurmctld.log"
	grep -E "\] switch/lua: script /etc/slurm/switch.lua \($(ere_quote "$(settings_line switch_timeout=7)"), " "$(ctld_log)" >/dev/null ||
		fail "Switch_Timeout=7 was not read"
}

e2e_test "cluster: config --node-nice 10 starts every slurmd 10 nicer than slurmctld, and a job's task inherits it" t_node_nice
t_node_nice() {
	local node pid n=0 base want
	# nice(1) adds to the value it inherits: slurmctld's (0 unless the
	# whole run is niced), at most 19.  Slurm's own pid files: the daemons'
	# pids whatever launched them.
	base=$(ps -o ni= -p "$(cat "$E2E_CLH/run/slurmctld.slurm.pid")" | tr -d ' ')
	want=$((base + 10 > 19 ? 19 : base + 10))
	for node in $(node_names); do
		pid=$(cat "$E2E_CLH/run/slurmd-$node.slurm.pid")
		assert_eq "$want" "$(ps -o ni= -p "$pid" | tr -d ' ')" "nice of slurmd-$node (pid $pid)"
		n=$((n + 1))
	done
	((n > 0)) || fail "no nodes"
	# Field 19 of /proc/PID/stat: the nice value of the task itself.
	# shellcheck disable=SC2016 # awk's $19
	assert_eq "$want" "$(run_srun -N1 awk '{ print $19 }' /proc/self/stat)" "nice of a job's task"
}
