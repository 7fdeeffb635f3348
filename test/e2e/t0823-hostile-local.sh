# SPDX-License-Identifier: GPL-2.0-or-later
# e2e-tiers: core=24.11 full=
# shellcheck shell=bash
#
# t0823-hostile-local: an ordinary local user (nobody) gains nothing from the
# INSTALLED package (issue 35).  Each test plants what one item of the issue
# says, then checks that root and SlurmUser ran nothing of it and nothing
# hung:
#   - a helper folder where a build path used to be compiled into
#     /usr/bin/switch-lua (item 1): no installed binary holds an absolute
#     path outside /usr, /etc, /opt, /run and the package's /var/lib folder,
#     and root's `switch-lua simulate` runs no planted helper;
#   - the example's state folder created first by the user, 0700 and 0777
#     (item 2): the example's jobs still get their VNI, in the folder the
#     package made for SlurmUser, and the example refuses a folder owned by
#     another user;
#   - a FIFO planted at the metrics textfile's temp name in a folder others
#     can write (/var/tmp) (item 5): the file is still written, and
#     `scontrol reconfigure` returns;
#   - a slurm.conf beside a user's script (item 4): root's `switch-lua
#     check` refuses the script and runs nothing of it;
#   - umask 0000 for a step whose postfini creates files as root (item 3):
#     they get mode 0644;
#   - switch.lua replaced by a FIFO, then by a link to /dev/zero (item 6):
#     refused without being read, the last good version keeps running.
# Waits are on events with generous deadlines; nothing asserts a duration.

# e2e-config: --switch-type switch/lua --script conf/switch.lua --slurmctld-params switch_metrics_file=/var/tmp/switch_lua_t0823.prom

# as_nobody CMD...: CMD in the chroot as the user nobody (group nogroup).
as_nobody() { c_root setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; }

# pkg_files: the installed package's files (chroot paths), one a line.
pkg_files() {
	local pkg
	pkg=$(c_root dpkg -S "$(switch_lua_cli | sed 's|^switch-lua$|/usr/bin/switch-lua|')" | cut -d: -f1)
	c_root dpkg -L "$pkg"
}

e2e_test "switch/lua: hostile local user: no installed binary holds a path outside the install (no build folder), and root's simulate runs no helper planted at the old build path" t_hostile_helper
t_hostile_helper() {
	local f paths bad="" tag marker p old=/var/tmp/switch-lua-deb/slurm-switch-lua/obj-x86_64-linux-gnu/src/supervisor
	[ "$(cluster_slurm)" = debian ] || skip "the Debian package's binaries (a tarball cluster checks its own)"
	for f in $(pkg_files); do
		case $f in
		*/bin/* | */libexec/* | *.so) ;;
		*) continue ;;
		esac
		[ -f "$E2E_ROOT$f" ] || continue
		paths=$(grep -aoE '/(var|tmp|home|srv|root|build|work|mnt)/[A-Za-z0-9._+/-]+' "$E2E_ROOT$f" | sort -u || true)
		paths=$(grep -vE '^/var/lib/slurm-switch-lua(/|$)' <<<"$paths" || true)
		[ -z "$paths" ] || bad+="$f: $(tr '\n' ' ' <<<"$paths")"$'\n'
	done
	[ -z "$bad" ] || fail "installed binaries hold paths outside the install: $bad"
	# The attack of item 1: nobody plants a supervisor at the build path an
	# old binary carried (where nobody can create it on this host).
	tag=$(e2e_uniq)
	marker=/var/tmp/switch-lua-e2e-helper.$tag
	# shellcheck disable=SC2064 # fixed now
	trap "c_root rm -f '$marker'" EXIT
	if c_root test ! -e "$old" && as_nobody mkdir -p "$old" 2>/dev/null; then
		p="$old/switch-lua-supervisor"
		as_nobody sh -c "printf '#!/bin/sh\nid >$marker\nexec /usr/libexec/switch-lua/switch-lua-supervisor \"\$@\"\n' >'$p' && chmod 0755 '$p'"
		note "planted $p"
	else
		note "$old exists or cannot be created by nobody here (the package was built on this host)"
	fi
	c_root switch-lua simulate /usr/share/doc/slurm-switch-lua/examples/switch.lua --network vni >/dev/null ||
		fail "root's simulate of the installed example failed"
	[ ! -e "$E2E_ROOT$marker" ] || fail "a planted helper ran as $(cat "$E2E_ROOT$marker")"
}

e2e_test "switch/lua: hostile local user: the installed example's state folder is the package's (root 755 / slurm 700); a user's folder at the old path (0700, 0777) changes nothing; one owned by another user is refused" t_hostile_state
t_hostile_state() {
	local old=/var/tmp/switch-lua-example mode name id out ex=/usr/share/doc/slurm-switch-lua/examples/switch.lua
	local script=$E2E_ROOT/etc/slurm/switch.lua saved
	[ "$(cluster_slurm)" = debian ] || skip "the Debian package's example"
	# The installed package's example, not the repository's, runs the jobs.
	saved=$script.t0823.$(e2e_uniq)
	cp -p "$script" "$saved"
	# shellcheck disable=SC2064 # fixed now
	trap "c_root rm -rf '$old'; c_root chown slurm:slurm /var/lib/slurm-switch-lua/example; mv -f '$saved' '$script'" EXIT
	c_root install -m 0644 "$ex" /etc/slurm/switch.lua
	assert_eq "root 755 slurm 700" \
		"$(c_root stat -c '%U %a' /var/lib/slurm-switch-lua /var/lib/slurm-switch-lua/example | tr '\n' ' ' | sed 's/ $//')" \
		"owner and mode of the example's state folders"
	if as_nobody mkdir /var/lib/slurm-switch-lua/mine 2>/dev/null; then
		fail "nobody could create a folder beside the example's state folder"
	fi
	for mode in 0700 0777; do
		c_root rm -rf "$old"
		as_nobody mkdir -m "$mode" "$old"
		name=e2e-state-$mode-$(e2e_uniq)
		# shellcheck disable=SC2016 # expanded by the task's shell
		out=$(run_srun -N1 -J "$name" --network=vni sh -c 'echo "FABRIC_VNI=$FABRIC_VNI"') ||
			fail "a --network=vni job failed with $old made $mode by nobody: $out; Reason: $(job_reason "$(job_named "$name")")"
		assert_match '^FABRIC_VNI=[0-9]+$' "$out" "the task's FABRIC_VNI ($old $mode by nobody)"
		id=$(job_named "$name")
		wait_job "$id" COMPLETED 60
		[ -z "$(c_root find "$old" -mindepth 1 -print -quit)" ] || fail "the example wrote into nobody's $old"
	done
	# The example itself refuses a state folder of another user.
	c_root chown nobody:nogroup /var/lib/slurm-switch-lua/example
	id=$(submit -N1 --no-requeue --network=vni --wrap=true)
	wait_job "$id" "CANCELLED|FAILED" 60
	assert_job_reason "$id" "/var/lib/slurm-switch-lua/example is a directory owned by uid [0-9]+, mode 0700: refused"
	c_root chown slurm:slurm /var/lib/slurm-switch-lua/example
}

e2e_test "switch/lua: hostile local user: a FIFO planted at the metrics textfile's temp name in /var/tmp: the file is written anyway, the FIFO untouched, scontrol reconfigure returns" t_hostile_metrics
t_hostile_metrics() {
	local prom=/var/tmp/switch_lua_t0823.prom pid fifo id
	pid=$(cat "$E2E_CLH/run/slurmctld.slurm.pid" 2>/dev/null || cat "$E2E_CLH/run/slurmctld.pid")
	fifo=$prom.tmp.$pid
	# A writer the old code left blocked in open() is released, then the
	# planted FIFO goes.
	# shellcheck disable=SC2064 # fixed now
	trap "c_root timeout 5 sh -c 'exec 3<>\"$fifo\"' 2>/dev/null || true; c_root rm -f '$fifo'" EXIT
	c_root rm -f "$fifo" "$prom"
	as_nobody mkfifo -m 0666 "$fifo"
	# A change of the counters makes slurmctld write the file again.
	id=$(submit -N1 --network=vni --wrap=true)
	wait_job "$id" COMPLETED 60
	wait_for 60 grep -q '^switchlua_' "$E2E_ROOT$prom" ||
		fail "slurmctld did not write $prom with a FIFO at $fifo"
	c_root timeout 120 scontrol reconfigure || fail "scontrol reconfigure did not return (rc $?)"
	wait_for 120 c_root scontrol ping >/dev/null || fail "slurmctld does not answer after the reconfigure"
	id=$(submit -N1 --network=vni --wrap=true)
	wait_job "$id" COMPLETED 120
	assert_eq "fifo nobody" "$(c_root stat -c '%F %U' "$fifo")" "the planted FIFO, untouched"
}

e2e_test "switch/lua: hostile local user: a slurm.conf planted beside a user's switch.lua does not make its owner SlurmUser: root's check refuses it and runs nothing" t_hostile_conf
t_hostile_conf() {
	local tag dir marker out
	tag=$(e2e_uniq)
	dir=/tmp/switch-lua-e2e-conf.$tag
	marker=/tmp/switch-lua-e2e-conf.$tag.ran
	# shellcheck disable=SC2064 # fixed now
	trap "c_root rm -rf '$dir' '$marker'" EXIT
	as_nobody mkdir -m 0755 "$dir"
	printf 'local f = io.open("%s", "w")\nif f then f:write("ran") f:close() end\nfunction slurm_switch_job_start() return slurm.SUCCESS end\n' "$marker" |
		as_nobody tee "$dir/switch.lua" >/dev/null
	as_nobody tee "$dir/slurm.conf" </dev/null >/dev/null
	out=$(c_root switch-lua check "$dir/switch.lua" 2>&1) && fail "root's check accepted nobody's script: $out"
	assert_match "refused" "$out" "check's message"
	out=$(c_root switch-lua simulate "$dir/switch.lua" --network x 2>&1) && fail "root's simulate accepted nobody's script: $out"
	[ ! -e "$E2E_ROOT$marker" ] || fail "the main chunk of nobody's script ran as root"
}

# e2e-config: --switch-type switch/lua --script test/e2e/lua/umask.lua

e2e_test "switch/lua: hostile local user: step_postfini of a step run with umask 0000 creates its files (io.open, slurm.run touch) with mode 0644" t_hostile_umask
t_hostile_umask() {
	local name id base
	name=e2e-umask-$(e2e_uniq)
	c_user sh -c "umask 0000 && srun -N1 -J '$name' --network=umask true" >/dev/null ||
		fail "srun --network=umask failed"
	id=$(job_named "$name")
	base=/tmp/switch-lua-e2e-umask.$id
	# shellcheck disable=SC2064 # fixed now
	trap "c_root rm -f '$base.io' '$base.run'" EXIT
	wait_for 60 test -e "$E2E_ROOT$base.io" -a -e "$E2E_ROOT$base.run" ||
		fail "step_postfini of JobId=$id did not create its files"
	assert_eq "644 644" "$(c_root stat -c '%a' "$base.io" "$base.run" | tr '\n' ' ' | sed 's/ $//')" \
		"modes of the files step_postfini created as root under the user's umask 0000"
	c_root stat -c '%U' "$base.io" | grep -qx root || fail "step_postfini did not run as root"
}

# e2e-config: --switch-type switch/lua --script test/e2e/lua/failsafe.lua --slurmctld-params switch_timeout=5

e2e_test "switch/lua: hostile script file: switch.lua replaced by a FIFO, then by a link to /dev/zero: refused without reading it, the last good version keeps running, the supervisor's memory stays bounded" t_hostile_script
t_hostile_script() {
	local script=$E2E_ROOT/etc/slurm/switch.lua saved id pid rss kind
	saved=$script.t0823.$(e2e_uniq)
	# shellcheck disable=SC2064 # fixed now
	trap "[ ! -e '$saved' ] || { rm -f '$script' && mv -f '$saved' '$script'; }" EXIT
	id=$(submit -N1 --network=fs:ok --wrap=true)
	wait_job "$id" COMPLETED 60 # the good version, passed
	mv "$script" "$saved"
	for kind in fifo zero; do
		rm -f "$script"
		if [ "$kind" = fifo ]; then mkfifo -m 0644 "$script"; else ln -s /dev/zero "$script"; fi
		id=$(submit -N1 --network=fs:ok --wrap=true)
		wait_job "$id" COMPLETED 120
		ctld_job "$id" " job_start: /etc/slurm/switch.lua changed \(content untrusted:fnv1a64:[0-9a-f]{16}\) but is refused: /etc/slurm/switch.lua: not a regular file: refused \(switch.lua\(5\)\); calls keep running the last good version" >/dev/null ||
			fail "no refusal of the $kind for JobId=$id, or not the last good version"
		ctld_job "$id" " job_start returned rc=0" >/dev/null || fail "JobId=$id did not run the last good version ($kind)"
	done
	pid=$(our_supervisor)
	[ -n "$pid" ] || fail "no switch-lua-supervisor of this cluster"
	rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")
	[ "$rss" -lt 262144 ] || fail "the supervisor's RSS is $rss kB after the /dev/zero link"
}
