# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# e2e-tiers: core= full=26.05,25.11,26.11
#
# t1303-array-frees: from 25.05 on Slurm frees a job record's jobinfo
# itself (jobinfo_free, with the record), and job_array_split() memcpy()s
# a pending array's record, switch_jobinfo pointer included, into each task
# it splits out (issue 18).  The plugin releases each jobinfo handle once:
# when its teardown is over ("jobinfo released"; the record's pointer is
# cleared then, so Slurm has nothing to free), or, for a record Slurm frees
# while it still holds one, only if the handle is that record's own
# ("this record's jobinfo freed"; another record's pointer is "left
# alone"), one debug line each.  Here a 6-task array (two at a time, so the
# array is split several times, one task requeued on top) runs on a 25.11+
# cluster (default 26.05.3, or SWITCHLUA_SLURM) until Slurm purges the
# records (MinJobAge=30): each task's handles are released exactly once
# each (one per accepted job_start), and slurmctld lives on.  Skipped on Debian's 24.11 (it never frees a
# jobinfo: no such hook).

# e2e-timeout: 240
# Slurm holds a requeued job back for its requeue delay, by default the
# credential lifetime (120 s): AuthInfo=cred_expire=5 makes it 5 s.
# e2e-config: --slurm "${SWITCHLUA_SLURM:-26.05.3}" --switch-type switch/lua --script "$E2E_GEN/seed.lua" --extra AuthInfo=cred_expire=5

# t1303_records ID: "JobId State" of every record of array ID.
t1303_records() {
	c_root scontrol show job "$1" -o 2>/dev/null |
		sed -n 's/^JobId=\([0-9]*\) .* JobState=\([A-Z_]*\) .*/\1 \2/p'
}
t1303_running() { [ -n "$(c_root squeue -h -t R -j "$1" -o %A | head -n1)" ]; }
t1303_all_done() { # ID N
	local recs
	recs=$(t1303_records "$1")
	[ "$(wc -l <<<"$recs")" = "$2" ] && ! grep -qv ' COMPLETED$' <<<"$recs"
}
# t1303_releases ID: the plugin's releases of JobId ID's jobinfo handles:
# after its teardown ("jobinfo released"), or when Slurm frees the record
# ("this record's jobinfo freed").
t1303_releases() {
	echo $(($(ctld_count "switch/lua: JobId=$1 jobinfo_free: jobinfo released \(its teardown is over\)") +
		$(ctld_count "switch/lua: JobId=$1 jobinfo_free: this record's jobinfo freed")))
}
t1303_accepted() { ctld_count "switch/lua: JobId=$1 job_start accepted the job"; }
t1303_all_released() { # IDS...
	local t
	for t in "$@"; do
		[ "$(t1303_releases "$t")" -ge "$(t1303_accepted "$t")" ] || return 1
	done
}
t1303_purged() { ! c_root scontrol show job "$1" >/dev/null 2>&1; }

e2e_test "switch/lua on 25.05+: a split job array (6 tasks, 2 at a time, one requeued): each jobinfo handle is released exactly once (one per accepted job_start), none twice, through Slurm's purge of the records" t_array_frees
t_array_frees() {
	need_seed
	[ "$(cluster_slurm)" != debian ] || skip "Debian's Slurm 24.11 never frees a jobinfo (no jobinfo_free hook)"
	local id first tids t
	id=$(submit --array=1-6%2 -N1 --network=switchlua:x --wrap 'sleep 2')
	# Requeue the first task that runs: its record is torn down and set up
	# again, with a new handle.
	wait_for 30 t1303_running "$id" || fail "no task of array $id ran"
	first=$(c_root squeue -h -t R -j "$id" -o %A | head -n1)
	c_root scontrol requeue "$first"
	wait_for 120 t1303_all_done "$id" 6 || fail "array $id did not complete: $(t1303_records "$id" | tr '\n' ' ')"
	mapfile -t tids < <(t1303_records "$id" | cut -d' ' -f1)
	assert_eq 6 "${#tids[@]}" "records of array $id"
	note "array $id: records ${tids[*]}, requeued $first"
	assert_eq 2 "$(t1303_accepted "$first")" "job_start of the requeued task $first (two attempts)"
	# Every handle is released once: after its teardown, or (a record
	# purged with one) by Slurm's jobinfo_free; then Slurm purges the
	# records, MinJobAge (30 s) after they ended, and frees none twice.
	wait_for 30 t1303_all_released "${tids[@]}" || true
	wait_for 90 t1303_purged "$id" || fail "array $id's records were not purged in 90 s"
	for t in "${tids[@]}"; do
		assert_eq "$(t1303_accepted "$t")" "$(t1303_releases "$t")" "releases of JobId=$t's jobinfo (one per accepted job_start)"
	done
	note "left alone by jobinfo_free (a pointer copied by job_array_split, or released already): $(ctld_count "jobinfo_free: the switch_jobinfo pointer is not this record's")"
	c_root scontrol ping >/dev/null || fail "slurmctld does not answer after the purge"
}
