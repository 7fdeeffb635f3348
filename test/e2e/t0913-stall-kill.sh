# SPDX-License-Identifier: GPL-2.0-or-later
# e2e-tiers: core= full=24.11
# shellcheck shell=bash
#
# t0913-stall-kill: the primary slurmctld stopped (SIGSTOP) with 4 setups
# and 4 teardowns in flight, every one of them ending during the stall,
# then killed (-9) instead of continued: the usual fencing of a hung
# controller (issue 40, item 3; switch.lua(5), HIGH AVAILABILITY).  Its
# supervisor is a process of its own and ran the calls to their end while
# its slurmctld was stopped; it recorded each result in its results file
# before sending it.  The backup, taking control, adopts those results
# into its journal: no setup is undone with nil and run again, no teardown
# runs twice.  The ledger of test/e2e/lua/stall.lua is the fabric's word.
# Every wait is on an event (a log line, a ledger line) with a generous
# deadline; no duration is asserted.
#
# e2e-timeout: 400
# e2e-config: --backup --switch-type switch/lua --script test/e2e/lua/stall.lua --slurmctld-params switch_timeout=150 --extra 'PartitionName=DEFAULT OverSubscribe=FORCE:4'

stall_kill_cleanup() {
	kill -CONT "$2" 2>/dev/null || true
	rm -f "$E2E_ROOT"/tmp/switch-lua-e2e."$1".*
}

primary_pid() { head -n1 "$E2E_CLH/run/slurmctld.slurm.pid"; }

e2e_test "switch/lua: HA: the primary stopped with 4 setups and 4 teardowns in flight that all end during the stall, then killed -9: the backup adopts their recorded results; no setup runs again, no teardown twice" t_stall_kill
t_stall_kill() {
	local tag pid id line old_epoch adopted
	local -a setups=() teardowns=()
	tag=$(e2e_uniq)
	pid=$(primary_pid)
	[[ $pid =~ ^[0-9]+$ ]] || fail "no pid of the primary slurmctld: '$pid'"
	# shellcheck disable=SC2064 # fixed now
	trap "stall_kill_cleanup $tag $pid" EXIT
	for ((i = 0; i < 4; i++)); do
		setups+=("$(submit -n1 --network="e2e:gate:$tag" --wrap="sleep 2")")
	done
	wait_ha_ledger "$tag" '^start ' 4 60
	for ((i = 0; i < 4; i++)); do
		teardowns+=("$(submit -n1 --network="e2e:cgate:$tag" --wrap="true")")
	done
	wait_ha_ledger "$tag" '^complete ' 4 90
	old_epoch=$(ha_ledger "$tag" | head -n1 | sed -E 's/.* e=([0-9]+)$/\1/')
	# The backup must load these jobs from the state the primary saved.
	wait_state_saved
	kill -STOP "$pid"
	note "primary slurmctld $pid stopped (epoch $old_epoch) with 4 setups and 4 teardowns waiting at their gates"
	: >"$E2E_ROOT/tmp/switch-lua-e2e.$tag.gate"
	: >"$E2E_ROOT/tmp/switch-lua-e2e.$tag.cgate"
	# They end while their slurmctld is stopped: its supervisor runs on.
	wait_ha_ledger "$tag" "^started .* e=$old_epoch\$" 8 60
	wait_ha_ledger "$tag" "^completed .* e=$old_epoch\$" 4 60
	wait_log "$(ctld_log)" "BackupController1 .* taking over" 90 ||
		fail "the backup did not take over"
	wait_log "$(ctld_log)" 'switch/lua: this slurmctld holds control at epoch [0-9]+' 60 ||
		fail "the backup did not say it holds control: $(ctld_grep 'switch/lua: ' | tail -n 20)"
	# The stopped primary is killed, never continued.
	kill -KILL "$pid"
	note "primary slurmctld $pid killed -9 while stopped"
	# Each setup job runs and ends once; its release comes from the backup.
	for id in "${setups[@]}"; do wait_ha_ledger "$tag" "^completed $id [0-9]+ tok-" 1 150; done
	note "ledger: $(ha_ledger "$tag" | tr '\n' ';')"
	ha_ledger_check "$tag" "${setups[@]}" "${teardowns[@]}" >&2 || fail "the ledger breaks the rules (above)"
	assert_eq 8 "$(ha_ledger_count "$tag" '^start ')" "setups begun: once per job"
	assert_eq 0 "$(ha_ledger_count "$tag" '^complete [0-9]+ [0-9]+ nil')" "undo calls (job_complete with nil)"
	assert_eq 8 "$(ha_ledger_count "$tag" '^completed [0-9]+ [0-9]+ tok-')" "releases: once per job"
	for id in "${teardowns[@]}"; do
		assert_eq 1 "$(ha_ledger_count "$tag" "^complete $id ")" "JobId=$id: teardowns begun"
	done
	# What the backup said of the results it adopted.
	line=$(wait_log "$(ctld_log)" 'switch/lua: recovery: [0-9]+ supervisor results file\(s\), [0-9]+ result\(s\): [0-9]+ adopted' 60 &&
		ctld_grep 'supervisor results file\(s\)' | tail -n1) ||
		fail "no line of the supervisor's results: $(ctld_grep 'switch/lua: ' | tail -n 20)"
	note "backup: $line"
	adopted=$(sed -E 's/.*result\(s\): ([0-9]+) adopted.*/\1/' <<<"$line")
	assert_eq 8 "$adopted" "results adopted (4 setups, 4 teardowns)"
	for id in "${setups[@]}"; do
		assert_eq 1 "$(ctld_count "switch/lua: JobId=$id job_start recovery: attempt [0-9]+ returned SUCCESS with a jobinfo .* adopted, job_start is not run again")" "JobId=$id: its adopted setup's line"
	done
	for id in "${teardowns[@]}"; do
		assert_eq 1 "$(ctld_count "switch/lua: JobId=$id job_complete recovery: the teardown of attempt [0-9]+ returned success .* adopted, job_complete is not run again")" "JobId=$id: its adopted teardown's line"
	done
	c_root scontrol ping | grep -E 'ctld2 is UP' >/dev/null ||
		fail "the backup is not up: $(c_root scontrol ping 2>&1 | tr '\n' ' ')"
	# The primary back for the next test: the backup hands control back by
	# stopping.
	ctld stop backup
	ctld start primary
	ctld start backup
}
