# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# e2e-tiers: core= full=24.11,26.05
#
# t1002-metrics: the counters in the Prometheus text format after a known
# sequence of jobs: `switch-lua status --format prometheus` and the textfile
# slurmctld rewrites at switch_metrics_file (for node_exporter's textfile
# collector) show exactly those calls; the textfile is replaced, never
# rewritten in place (another inode after a change); promtool accepts it
# when it is installed.  switch-lua(1) STATUS, switch_lua.conf(5).

# e2e-config: --switch-type switch/lua --script test/e2e/lua/provenance.lua --slurmctld-params switch_metrics_file=/var/tmp/switch-lua-cluster/state/switch_lua.prom

PROM=/var/tmp/switch-lua-cluster/state/switch_lua.prom # in the chroot

# prom_value TEXT SAMPLE: the value of the sample line "SAMPLE VALUE" (the
# name with its labels as written), or nothing.
prom_value() {
	awk -v s="$2" 'index($0, s " ") == 1 { print substr($0, length(s) + 2); exit }' <<<"$1"
}

# textfile_shows T0 N: the textfile was written by a slurmctld that started
# counting at T0 or later and shows N ended job_complete calls, none in flight.
textfile_shows() {
	local t
	t=$(c_root cat "$PROM" 2>/dev/null) || return 1
	(("$(prom_value "$t" switchlua_counting_since_timestamp_seconds)" >= $1)) &&
		[ "$(prom_value "$t" 'switchlua_hook_calls_total{hook="job_complete",outcome="ok"}')" = "$2" ] &&
		[ "$(prom_value "$t" switchlua_calls_in_flight)" = 0 ]
}

e2e_test "switch/lua: metrics: after 3 jobs set up and torn down, 1 whose job_start fails and 1 without --network, status --format prometheus and the textfile show exactly those calls" t_metrics_counts
t_metrics_counts() {
	local t t0 text file ino1 ino2 lint
	t0=$(date +%s)
	known_job_sequence
	wait_for 15 textfile_shows "$t0" 3 || fail "the textfile $PROM never showed 3 ended job_complete calls"
	text=$(c_root "$(switch_lua_cli)" status --format prometheus)
	file=$(c_root cat "$PROM")
	for t in "$text" "$file"; do
		assert_eq 3 "$(prom_value "$t" 'switchlua_hook_calls_total{hook="job_start",outcome="ok"}')" "job_start ok"
		assert_eq 1 "$(prom_value "$t" 'switchlua_hook_calls_total{hook="job_start",outcome="failed"}')" "job_start failed"
		assert_eq 0 "$(prom_value "$t" 'switchlua_hook_calls_total{hook="job_start",outcome="declined"}')" "job_start declined"
		assert_eq 3 "$(prom_value "$t" 'switchlua_hook_calls_total{hook="job_complete",outcome="ok"}')" "job_complete ok"
		assert_eq 4 "$(prom_value "$t" 'switchlua_hook_round_trip_seconds_count{hook="job_start"}')" "job_start round trips"
		assert_eq 4 "$(prom_value "$t" 'switchlua_hook_round_trip_seconds_bucket{hook="job_start",le="+Inf"}')" "job_start +Inf bucket"
		assert_eq 3 "$(prom_value "$t" 'switchlua_hook_round_trip_seconds_count{hook="job_complete"}')" "job_complete round trips"
		assert_eq 4 "$(prom_value "$t" 'switchlua_lane_started_total{lane="batch"}')" "batch lane: calls started"
		assert_eq 3 "$(prom_value "$t" 'switchlua_lane_started_total{lane="teardown"}')" "teardown lane: calls started"
		assert_eq 1 "$(prom_value "$t" switchlua_cancels_total)" "cancels (the --no-requeue job whose setup failed)"
		for k in requeues drains retries timeouts leftovers_killed host_faults fabric_breaker_opens; do
			assert_eq 0 "$(prom_value "$t" "switchlua_${k}_total")" "$k"
		done
		for k in jobs calls_in_flight calls_running fabric_breaker_open journal_failing; do
			assert_eq 0 "$(prom_value "$t" "switchlua_$k")" "$k"
		done
		assert_contains "# TYPE switchlua_hook_round_trip_seconds histogram" "$t" "the histogram's TYPE line"
	done
	# A change replaces the file (rename), within a second or two: another inode.
	ino1=$(c_root stat -c %i "$PROM")
	id=$(submit -N1 --network=prov --wrap=true)
	wait_job "$id" COMPLETED 30
	wait_for 15 textfile_shows "$t0" 4 || fail "the textfile never showed the 4th job_complete"
	ino2=$(c_root stat -c %i "$PROM")
	[ "$ino1" != "$ino2" ] || fail "the textfile kept inode $ino1: rewritten in place, not replaced"
	assert_eq 644 "$(c_root stat -c %a "$PROM")" "the textfile's mode (node_exporter reads it)"
	if c_root sh -c 'command -v promtool' >/dev/null 2>&1; then
		lint=$(c_root sh -c "promtool check metrics < $PROM" 2>&1) || fail "promtool check metrics: $lint"
		assert_eq "" "$lint" "promtool check metrics on the textfile"
	else
		note "promtool is not installed in the testbed: the textfile was not linted"
	fi
}
