# SPDX-License-Identifier: GPL-2.0-or-later
# e2e-tiers: core= full=24.11
# shellcheck shell=bash
#
# t0914-stall-lock: t0912's stall with the lock file removed while the
# primary is stopped (what an operator who takes "host, pid, since" for a
# stale pid file does, or an NFSv4 lease lost in a partition; issue 40,
# item 2).  The backup then finds no lock to fence: it takes control at
# once at the next epoch.  The primary, continued, finds at its first check
# that its lock file is gone and the epoch moved on, says so in one line,
# runs no hook and writes nothing; it is killed (t0912 says why).  The
# ledger of test/e2e/lua/stall.lua: every allocation made once, by the
# backup, and released once with its own token.  Every wait is on an event
# with a generous deadline; no duration is asserted.
#
# e2e-timeout: 400
# e2e-config: --backup --switch-type switch/lua --script test/e2e/lua/stall.lua --slurmctld-params switch_timeout=150 --extra 'PartitionName=DEFAULT OverSubscribe=FORCE:4'

stall_cleanup() {
	local pid=$2
	# Never leave a stopped slurmctld behind.
	kill -CONT "$pid" 2>/dev/null || true
	rm -f "$E2E_ROOT"/tmp/switch-lua-e2e."$1".*
}


primary_pid() { head -n1 "$E2E_CLH/run/slurmctld.slurm.pid"; }

e2e_test "switch/lua: HA: the primary stopped (SIGSTOP) with 4 setups in flight and its lock file removed: the backup takes control, stays up; the primary, continued, runs no hook and says why; each allocation made once and released once" t_stall_lock
t_stall_lock() {
	local tag pid id line old_epoch new_epoch i
	local -a ids=()
	tag=$(e2e_uniq)
	pid=$(primary_pid)
	[[ $pid =~ ^[0-9]+$ ]] || fail "no pid of the primary slurmctld: '$pid'"
	# shellcheck disable=SC2064 # fixed now
	trap "stall_cleanup $tag $pid" EXIT
	for ((i = 0; i < 4; i++)); do
		ids+=("$(submit -n1 --network="e2e:gate:$tag" --wrap="sleep 2")")
	done
	wait_ha_ledger "$tag" '^start ' 4 60
	# The backup must load these jobs from the state the primary saved.
	wait_state_saved
	# Its epoch, from the whole log (it took control before the test began).
	line=$(grep -E 'switch/lua: this slurmctld holds control at epoch [0-9]+' "$(ctld_log)" | tail -n1)
	new_epoch=$(($(sed -E 's/.*holds control at epoch ([0-9]+).*/\1/' <<<"$line") + 1))
	kill -STOP "$pid"
	rm -f "$E2E_CLH/state/switch_lua.journal.lock"
	note "primary slurmctld $pid stopped with 4 setups waiting at the gate; its lock file removed"
	# Not wait_backup_control: Slurm's clients keep waiting on the stopped
	# primary's socket (issue 40), so nothing asks Slurm until it runs again.
	wait_log "$(ctld_log)" "BackupController1 .* taking over" 90 ||
		fail "the backup did not take over"
	# No lock left to fence: the next epoch at once.
	wait_log "$(ctld_log)" "switch/lua: this slurmctld holds control at epoch $new_epoch" 60 ||
		fail "the backup did not say it holds control at epoch $new_epoch: $(ctld_grep 'switch/lua: ' | tail -n 20)"
	assert_eq 0 "$(ctld_count 'fenced takeover')" "fenced takeovers (no lock was left to fence)"
	# The backup undoes the 4 killed-in-flight setups with nil and runs
	# them again: they wait at the gate too.
	wait_ha_ledger "$tag" "^start .* e=$new_epoch\$" 4 90
	kill -CONT "$pid"
	note "primary slurmctld $pid continued"
	wait_log "$(ctld_log)" 'switch/lua: this slurmctld is no longer in control \(epoch [0-9]+, now [0-9]+\)' 60 ||
		fail "the continued primary did not say it is no longer in control"
	line=$(ctld_grep 'no longer in control \(epoch' | tail -n1)
	note "primary: $line"
	old_epoch=$(sed -E 's/.*no longer in control \(epoch ([0-9]+), now.*/\1/' <<<"$line")
	assert_match "now $new_epoch\\)" "$line" "the epoch the stale primary names"
	# Slurm's own split brain is not this test's: the continued primary,
	# which still serves clients from its stale job list, is killed (the
	# usual fencing of a controller that came back), without the state
	# save a SIGTERM would make.
	ctld kill9 primary
	: >"$E2E_ROOT/tmp/switch-lua-e2e.$tag.gate"
	# Each run ends (Slurm may also requeue one for a node failure after the
	# switch of controllers: its own HA, not this test's); the ledger is the
	# fabric's word: each allocation released once, with its own token.
	for id in "${ids[@]}"; do wait_ha_ledger "$tag" "^completed $id [0-9]+ tok-" 1 150; done
	note "ledger: $(ha_ledger "$tag" | tr '\n' ';')"
	ha_ledger_check "$tag" "${ids[@]}" >&2 || fail "the ledger breaks the rules (above)"
	# Allocations: 4, all made by the backup; the stopped primary's calls
	# are its 4 first job_start lines, none after it ran again.
	assert_eq 4 "$(ha_ledger_count "$tag" '^started ')" "allocations made"
	assert_eq 4 "$(ha_ledger_count "$tag" "^started .* e=$new_epoch\$")" "allocations made by the backup"
	# Released once each, by a controller after the stopped one (the backup,
	# at its epoch or a later one: Slurm may hand control back and forth
	# once the primary runs again, before it is killed).
	assert_eq 4 "$(ha_ledger_count "$tag" '^completed [0-9]+ [0-9]+ tok-')" "releases"
	assert_eq 0 "$(ha_ledger_count "$tag" "^complete.* e=$old_epoch\$")" "teardowns by the stopped primary"
	assert_eq 4 "$(ha_ledger_count "$tag" " e=$old_epoch\$")" "calls of the stopped primary (its 4 first job_start)"
	# The backup stays up and in control.
	c_root scontrol ping | grep -E 'ctld2 is UP' >/dev/null ||
		fail "the backup is not up: $(c_root scontrol ping 2>&1 | tr '\n' ' ')"
	assert_eq 0 "$(ctld_count 'switch/lua: .*(CORRUPT|set aside|WAITING:)')" "journal lines set aside, or WAITING"
	# The primary back for the next test: the backup hands control back by
	# stopping.
	ctld stop backup
	ctld start primary
	ctld start backup
}
