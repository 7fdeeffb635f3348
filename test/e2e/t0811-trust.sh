# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# e2e-tiers: core=24.11 full=26.05
#
# t0811-trust: only root or SlurmUser may change what runs as root (issue 12
# item 6; switch.lua(5): Who may change the script).  A switch.lua writable
# by others is refused on the controller (at start: jobs are not set up, the
# log says why; once running: the last good version stays) and on the nodes
# (the step hooks do not run), and `switch-lua check` says why.

# e2e-config: --switch-type switch/lua --script test/e2e/lua/failsafe.lua --slurmctld-params switch_timeout=5

SCRIPT_H=$E2E_ROOT/etc/slurm/switch.lua
RULE='it must be owned by root or SlurmUser \(slurm\) and not writable by group or others \(switch\.lua\(5\)\)'
REFUSED="/etc/slurm/switch.lua: owned by uid 0 \(root\), mode 0666: refused; $RULE"

e2e_test "switch/lua: trust: switch.lua made 0666 under a running controller is refused once, calls keep the last good version, the nodes skip the step hooks, check says why" t_chmod_running
t_chmod_running() {
	local id out
	# shellcheck disable=SC2064 # the path is fixed now
	trap "chmod 0644 '$SCRIPT_H'" EXIT
	id=$(submit -N1 --network=fs:ok --wrap=true)
	wait_job "$id" COMPLETED 30
	chmod 0666 "$SCRIPT_H"
	id=$(submit -N1 --network=fs:ok --wrap=true)
	wait_job "$id" COMPLETED 30
	assert_eq 1 "$(ctld_count "switch/lua: JobId=$id job_start: /etc/slurm/switch.lua changed \(content untrusted:fnv1a64:[0-9a-f]{16}\) but is refused: $REFUSED; calls keep running the last good version \(content fnv1a64:[0-9a-f]{16}\)")" \
		"refusal lines on the controller"
	ctld_grep "switch/lua: JobId=$id job_start returned rc=0" >/dev/null ||
		fail "the job did not run the last good version"
	wait_for 10 sh -c "grep -qE 'switch/lua: $REFUSED; the step hooks will not run' '$E2E_ROOT$E2E_CL'/log/slurmd-*.log" ||
		fail "no node said it refused the script"
	out=$(c_root "$(switch_lua_cli)" check --slurm-user slurm /etc/slurm/switch.lua 2>&1) && fail "check accepted a 0666 script: $out"
	assert_match "$REFUSED" "$out" "check's message"
}

e2e_test "switch/lua: trust: switch.lua 0666 at slurmctld start: managed jobs are not set up and the log says why" t_refused_at_start
t_refused_at_start() {
	local id
	# shellcheck disable=SC2064 # the path is fixed now
	trap "chmod 0644 '$SCRIPT_H'; restart_ctld" EXIT
	chmod 0666 "$SCRIPT_H"
	restart_ctld
	id=$(submit -N1 --no-requeue --network=fs:ok --wrap=true)
	wait_job "$id" "CANCELLED|FAILED" 30
	assert_job_reason "$id" "could not load the script: /etc/slurm/switch.lua: owned by uid 0 \\(root\\), mode 0666: refused"
	ctld_grep "switch/lua: .*$REFUSED" >/dev/null || fail "slurmctld.log does not say why"
}
