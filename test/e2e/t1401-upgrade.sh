# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# e2e-tiers: core= full=25.05,25.11,26.11
#
# t1401-upgrade: a Slurm upgrade with jobs in flight (issue 18), as a site
# does it: the cluster runs the old Slurm with the plugin built for it
# (SWITCHLUA_UPGRADE_FROM: default Debian's 24.11.5 with the packaged
# plugin; or X.Y.Z, a Slurm of `scripts/testbed slurm-install X.Y.Z` with
# the plugin at /opt/switch-lua-X.Y.Z); with a running job, a teardown
# held in COMPLETING (job_complete returning slurm.EAGAIN), a setup still
# running and a requeued job, slurmctld and the slurmd are stopped and the
# new Slurm (SWITCHLUA_UPGRADE_TO, default 25.11.7), with the plugin built
# for it, is started on the same StateSaveLocation (scripts/cluster
# upgrade).  Every job then ends as the contract says: each setup that
# returned ran once, each allocation is released once with its own jobinfo
# (the jobinfo the old plugin packed, read by the new one), the setup the
# stop killed is torn down with nil before it runs again (the restart rules
# of switch.lua(5)), the journal the old plugin wrote is read, not set
# aside, and no node is drained.  The fixture is test/e2e/lua/upgrade.lua
# (a ledger of allocations).
#
# AuthInfo=cred_expire=5 makes Slurm's requeue delay (the credential
# lifetime) 5 s instead of 120.  Needs `scripts/testbed slurm-install TO`
# and `scripts/testbed plugin-install TO` (and the same for FROM when it is
# not Debian's); skipped with that command otherwise, skipped unless
# SWITCHLUA_SLURM is TO or FROM (a run for that Slurm, after its
# plugin-install: scripts/test's e2e-25.11 section runs 24.11.5 -> 25.11.7,
# its e2e-25.05 section 25.05.8 -> 26.05.3, its e2e-26.11 section 25.11.7
# -> 26.11.0, the development snapshot), and skipped when the cluster does
# not start on the FROM Slurm.

# e2e-timeout: 300
# e2e-config: --slurm "${SWITCHLUA_UPGRADE_FROM:-debian}" --switch-type switch/lua --script test/e2e/lua/upgrade.lua --slurmctld-params switch_timeout=120,switch_retries=100 --extra AuthInfo=cred_expire=5

T1401_FROM=${SWITCHLUA_UPGRADE_FROM:-debian}
T1401_TO=${SWITCHLUA_UPGRADE_TO:-25.11.7}
# The from side as the title names it: Debian's is 24.11.5.
T1401_FROM_V=${T1401_FROM/#debian/24.11.5}

# ledger_count TAG RE: lines of TAG's ledger matching RE.
ledger_count() { grep -c -E "$2" "$E2E_ROOT/tmp/switch-lua-e2e.$1.ledger" 2>/dev/null || true; }
# ledger_at_least TAG RE N: at least N such lines (for wait_for, which runs
# its command again and again).
ledger_at_least() { [ "$(ledger_count "$1" "$2")" -ge "$3" ]; }
# ledger_balanced TAG JOB: as many releases as allocations of JOB.
ledger_balanced() {
	[ "$(ledger_count "$1" "^FREE a=[0-9-]+ job=$2 ")" = "$(ledger_count "$1" "^ALLOC a=[0-9-]+ job=$2 ")" ]
}

e2e_test "switch/lua: upgrade ${T1401_FROM_V} -> ${T1401_TO} with a running job, a held teardown, a running setup and a requeued job: each setup that returned runs once, each allocation is released once with its own jobinfo, the killed setup is undone with nil, the ${T1401_FROM_V%.*} journal is read, nothing drained" t_upgrade
t_upgrade() {
	local from_name="Slurm $T1401_FROM"
	[ "$T1401_FROM" != debian ] || from_name="Debian's Slurm 24.11.5"
	[ "$(cluster_slurm)" = "$T1401_FROM" ] || skip "the upgrade starts on $from_name, this cluster runs $(cluster_slurm)"
	# Only in a run for one of its two Slurm: the plugins at
	# /opt/switch-lua-X.Y.Z are built from this checkout by the
	# plugin-install (or scripts/deb --slurm) before such a run (scripts/
	# test's e2e-25.11 and e2e-25.05), and may be any older build in another.
	[ "${SWITCHLUA_SLURM:-}" = "$T1401_TO" ] || [ "${SWITCHLUA_SLURM:-}" = "$T1401_FROM" ] ||
		skip "runs with SWITCHLUA_SLURM=$T1401_TO, after scripts/testbed plugin-install $T1401_TO (scripts/test's e2e-25.11 section)"
	local v
	for v in "$T1401_TO" "$T1401_FROM"; do
		[ "$v" != debian ] || continue
		[ -x "$E2E_ROOT/opt/slurm-$v/sbin/slurmctld" ] ||
			skip "Slurm $v is not installed in the testbed: run scripts/testbed slurm-install $v"
		[ -e "$E2E_ROOT/opt/switch-lua-$v/lib/slurm/switch_lua.so" ] ||
			skip "switch/lua for Slurm $v is not installed in the testbed: run scripts/testbed plugin-install $v"
	done
	local tag go j_req j_run j_held j_slow j before after
	tag=$(e2e_uniq)
	go=/tmp/switch-lua-e2e.$tag.go
	# shellcheck disable=SC2064 # $tag is fixed now
	trap "rm -f $E2E_ROOT/tmp/switch-lua-e2e.$tag.*" EXIT
	local wait_go="while [ ! -e $go ]; do sleep 0.2; done"

	# The requeued job: running, then requeued and held (so that it is
	# still pending at the upgrade); its first attempt is torn down.
	j_req=$(submit -N1 -J "up-req-$tag" --network="e2e:up:run:$tag" --wrap="$wait_go")
	wait_job "$j_req" RUNNING 20
	c_root scontrol requeuehold "$j_req"
	wait_for 20 ledger_at_least "$tag" "^FREE a=$tag-$j_req-" 1 ||
		fail "the requeued job's first attempt was not torn down"
	# The running job, the held teardown, the running setup.
	j_run=$(submit -N1 -J "up-run-$tag" --network="e2e:up:run:$tag" --wrap="$wait_go")
	wait_job "$j_run" RUNNING 20
	j_held=$(submit -N1 -J "up-held-$tag" --network="e2e:up:held:$tag" --wrap=true)
	wait_for 30 ledger_at_least "$tag" "^EAGAIN a=$tag-$j_held-" 1 ||
		fail "job_complete of JobId=$j_held never returned slurm.EAGAIN"
	wait_job "$j_held" COMPLETING 10
	j_slow=$(submit -N1 -J "up-slow-$tag" --network="e2e:up:slow:$tag" --wrap=true)
	wait_log "$(ctld_log)" "switch/lua: JobId=$j_slow job_start started" 20
	assert_eq CONFIGURING "$(job_state "$j_slow")" "state of JobId=$j_slow while its job_start runs"
	wait_state_saved

	before=$(c_root sinfo --version)
	"$E2E_CLUSTER" upgrade "$T1401_TO" >&2
	after=$(c_root sinfo --version)
	note "upgraded: $before -> $after"
	# A development snapshot's version carries its META release too
	# (26.11.0: "slurm 26.11.0-0rc1").
	assert_match "^slurm $(ere_quote "$T1401_TO")(-[0-9a-z]+)?\$" "$after" "Slurm after the upgrade"
	assert_eq "$T1401_TO" "$(cluster_slurm)" "the cluster's Slurm after the upgrade"

	# Let every call in flight finish.
	touch "$E2E_ROOT/tmp/switch-lua-e2e.$tag.setupgo" "$E2E_ROOT/tmp/switch-lua-e2e.$tag.release" "$E2E_ROOT$go"
	# (Its requeue delay is the credential lifetime: 5 s here, AuthInfo.)
	c_root scontrol release "$j_req"
	for j in "$j_run" "$j_held" "$j_slow" "$j_req"; do
		wait_job "$j" COMPLETED 90
	done
	for j in "$j_run" "$j_held" "$j_slow" "$j_req"; do
		wait_for 30 ledger_balanced "$tag" "$j" ||
			fail "JobId=$j: allocations not all released"
	done
	note "ledger:"$'\n'"$(cat "$E2E_ROOT/tmp/switch-lua-e2e.$tag.ledger")"

	# Each attempt allocated once and released once, with its own jobinfo.
	local a dup
	dup=$(sed -n 's/^ALLOC a=\([^ ]*\).*/\1/p' "$E2E_ROOT/tmp/switch-lua-e2e.$tag.ledger" | sort | uniq -d)
	assert_eq "" "$dup" "allocations taken twice"
	local -a allocs
	mapfile -t allocs < <(sed -n 's/^ALLOC a=\([^ ]*\).*/\1/p' "$E2E_ROOT/tmp/switch-lua-e2e.$tag.ledger")
	assert_eq 5 "${#allocs[@]}" "allocations in the ledger (one per attempt that set up)"
	for a in "${allocs[@]}"; do
		assert_eq 1 "$(ledger_count "$tag" "^FREE a=$a ")" "releases of allocation $a"
	done
	# A release names the job and attempt that took the allocation.
	local bad
	bad=$(awk '$1 == "FREE" { split($2, a, "="); split(a[2], p, "-"); if ("job=" p[2] != $3 || "attempt=" p[3] != $4) print }' \
		"$E2E_ROOT/tmp/switch-lua-e2e.$tag.ledger")
	assert_eq "" "$bad" "releases of another attempt's allocation"
	# Per job: the running and the held job set up once; the requeued job
	# twice (two attempts); the killed setup undone with nil, then set up.
	assert_eq 1 "$(ledger_count "$tag" "^ALLOC a=[0-9-]+ job=$j_run ")" "allocations of the running JobId=$j_run"
	assert_eq 1 "$(ledger_count "$tag" "^ALLOC a=[0-9-]+ job=$j_held ")" "allocations of the held JobId=$j_held"
	assert_eq 2 "$(ledger_count "$tag" "^ALLOC a=[0-9-]+ job=$j_req ")" "allocations of the requeued JobId=$j_req (two attempts)"
	assert_eq 1 "$(ledger_count "$tag" "^ALLOC a=[0-9-]+ job=$j_slow ")" "allocations of JobId=$j_slow, whose first setup the stop killed"
	assert_eq 1 "$(ledger_count "$tag" "^NIL job=$j_slow ")" "nil teardowns of JobId=$j_slow's killed setup"
	assert_eq 0 "$(ledger_count "$tag" "^NIL job=($j_run|$j_held|$j_req) ")" "nil teardowns of the jobs whose setup returned"
	assert_eq 1 "$(ctld_count "switch/lua: JobId=$j_run job_start started")" "job_start calls of JobId=$j_run"
	assert_eq 1 "$(ctld_count "switch/lua: JobId=$j_held job_start started")" "job_start calls of JobId=$j_held"
	# The journal and the job state the old plugin wrote were read.
	if ctld_grep "switch/lua: .*(journal.*(set aside|CORRUPT|cannot be read|unreadable)|cannot unpack|cannot decode)" >&2; then
		fail "the $T1401_TO plugin did not read what the $T1401_FROM_V one wrote"
	fi
	local n
	for n in $(node_names); do
		assert_eq "" "$(drain_reason "$n")" "drain reason of $n"
	done
}
