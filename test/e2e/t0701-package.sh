# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# e2e-tiers: core=24.11,26.05 full=
#
# t0701-package: the Debian package slurm-switch-lua (scripts/deb) as a site
# installs it: apt-get install of the .deb in build-deb/, an upgrade to a
# rebuilt package of a higher version (scripts/deb --reuse --version), and
# removal and purge: slurmctld with SwitchType=switch/lua then refuses to
# start and says why in its log, and the site's /etc/slurm/switch.lua stays.
# At the end the package of build-deb/ is installed again and slurmctld runs.
# On a cluster of a Slurm built from its release tarball (--slurm X.Y.Z),
# the package for that Slurm (scripts/deb --slurm X.Y.Z, which scripts/test
# installs before its e2e-26.05 section) is the one the cluster runs on.

# Its upgrade case builds a package (a dpkg-buildpackage run, the
# compiled tree reused): on a loaded machine more than the default 120 s.
# e2e-timeout: 600
# e2e-config: --switch-type switch/lua --script conf/switch.lua

PKG_PLUGIN=/usr/lib/x86_64-linux-gnu/slurm-wlm/switch_lua.so

# pkg_version: the version of slurm-switch-lua installed in the chroot
# (empty if none).
# shellcheck disable=SC2016 # a dpkg-query format, not a shell expansion
pkg_version() { c_root dpkg-query -W -f='${db:Status-Abbrev}${Version}' slurm-switch-lua 2>/dev/null | sed -n 's/^ii *//p'; }
# the .deb of build-deb/ (scripts/test builds it), or skip; the package is
# built for Debian's Slurm, so a cluster of another Slurm (--slurm) skips
built_deb() {
	local d
	[ "$(cluster_slurm)" = debian ] ||
		skip "the package is for Debian's Slurm 24.11.5; this cluster runs Slurm $(cluster_slurm)"
	local debs=("$E2E_REPO"/build-deb/slurm-switch-lua_*.deb)
	d=${debs[0]}
	[ -e "$d" ] || skip "no package in build-deb/ (run scripts/deb)"
	echo "$d"
}
deb_field() { c_root dpkg-deb -f "/repo/${1#"$E2E_REPO"/}" "$2"; }
# a --network job on two nodes gets the example's FABRIC_VNI
network_job_works() {
	local out
	# shellcheck disable=SC2016
	out=$(run_srun -N2 --network=vni sh -c 'echo "FABRIC_VNI=$FABRIC_VNI"' | sort -u) ||
		fail "srun --network=vni failed with the package installed: $out"
	assert_match '^FABRIC_VNI=[0-9]+$' "$out" "the tasks' FABRIC_VNI"
}

e2e_test "package: apt-get install of build-deb/*.deb puts the plugin, helpers, commands, man pages, examples and LuaLS definitions in place; Depends pins Slurm" t_pkg_files
t_pkg_files() {
	local deb v f slurmv
	deb=$(built_deb)
	"$E2E_REPO/scripts/deb" install "$deb" >&2
	v=$(deb_field "$deb" Version)
	assert_eq "$v" "$(pkg_version)" "installed version"
	for f in "$PKG_PLUGIN" /usr/libexec/switch-lua/switch-lua-supervisor /usr/libexec/switch-lua/switch-lua-runner \
		/usr/bin/switch-lua /usr/bin/switch-lua-typecheck /usr/share/man/man5/switch.lua.5.gz \
		/usr/share/man/man5/switch_lua.conf.5.gz /usr/share/man/man1/switch-lua.1.gz \
		/usr/share/doc/slurm-switch-lua/examples/switch.lua /usr/share/doc/slurm-switch-lua/examples/slurm.conf.snippet \
		/usr/share/doc/slurm-switch-lua/copyright /usr/share/slurm-switch-lua/lua-meta/slurm.lua; do
		c_root dpkg -S "$f" >/dev/null || fail "$f is not in the package"
		[ -e "$E2E_ROOT$f" ] || fail "$f is not installed"
	done
	# shellcheck disable=SC2016 # a dpkg-query format
	slurmv=$(c_root dpkg-query -W -f='${Version}' slurm-wlm-basic-plugins)
	assert_contains "slurm-wlm-basic-plugins (= $slurmv)" "$(deb_field "$deb" Depends)" "Depends"
	# The installed checker finds its definitions.
	c_root switch-lua-typecheck /usr/share/doc/slurm-switch-lua/examples/switch.lua >/dev/null ||
		fail "switch-lua-typecheck rejects the installed example"
	if c_root dpkg -S /etc/slurm/switch.lua 2>/dev/null; then fail "the package owns /etc/slurm/switch.lua"; fi
}

e2e_test "package: the installed luacheck configuration and switchlua.testing work on the installed example: luacheck clean, switch-lua check runs it, a hook runs from plain lua5.4" t_pkg_site_tools
t_pkg_site_tools() {
	local deb rc=/usr/share/slurm-switch-lua/luacheck/switchlua.luacheckrc ex=/usr/share/doc/slurm-switch-lua/examples/switch.lua out f
	deb=$(built_deb)
	"$E2E_REPO/scripts/deb" install "$deb" >&2
	for f in "$rc" /usr/share/lua/5.4/switchlua/meta.lua /usr/share/lua/5.4/switchlua/testing.lua; do
		c_root dpkg -S "$f" >/dev/null || fail "$f is not in the package"
	done
	if ! c_root sh -c 'command -v luacheck' >/dev/null 2>&1; then
		skip "luacheck is not installed in the testbed (Debian: lua-check)"
	fi
	out=$(c_root luacheck --config "$rc" --formatter plain --codes --no-color "$ex" 2>&1) ||
		fail "luacheck with the installed configuration warns on the installed example: $out"
	out=$(c_root switch-lua check "$ex")
	assert_contains "luacheck: 0 warnings ($rc)" "$out" "switch-lua check runs luacheck with the installed configuration"
	# shellcheck disable=SC2016 # Lua code
	out=$(c_root env "EX=$ex" lua5.4 -e 'local t = require("switchlua.testing")
local r = t.run(os.getenv("EX"), "job_start", t.job({ job_id = 42, network = "vni" }))
io.write(r.class, " ", r.jobinfo and r.jobinfo.vni or "nil", "\n")')
	assert_match '^ok [0-9]+$' "$out" "switchlua.testing runs the installed example's job_start"
}

e2e_test "package for a tarball Slurm: slurm-switch-lua-slurm-X.Y.Z has everything under /opt/switch-lua-X.Y.Z, no Depends on a Slurm package, and the running slurmctld loaded its plugin" t_pkg_tarball
t_pkg_tarball() {
	local v pkg dir f pid deps
	v=$(cluster_slurm)
	[ "$v" != debian ] || skip "this cluster runs Debian's Slurm: the package of build-deb/ is tested above"
	pkg=slurm-switch-lua-slurm-$v
	dir=/opt/switch-lua-$v
	# shellcheck disable=SC2016 # a dpkg-query format
	[ "$(c_root dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null)" = "ii " ] ||
		skip "$pkg is not installed (scripts/deb --slurm $v && scripts/deb install --slurm $v)"
	for f in "$dir/lib/slurm/switch_lua.so" "$dir/libexec/switch-lua/switch-lua-supervisor" \
		"$dir/libexec/switch-lua/switch-lua-runner" "$dir/bin/switch-lua" "$dir/bin/switch-lua-typecheck" \
		"$dir/share/man/man5/switch.lua.5" "$dir/share/slurm-switch-lua/lua-meta/slurm.lua" \
		"/usr/share/doc/$pkg/examples/switch.lua"; do
		assert_eq "$pkg: $f" "$(c_root dpkg -S "$f" 2>/dev/null)" "the owner of $f"
	done
	# shellcheck disable=SC2016 # a dpkg-query format
	deps=$(c_root dpkg-query -W -f='${Depends}' "$pkg")
	assert_not_contains "slurm" "$deps" "Depends (a tarball Slurm is no package)"
	pid=$(cat "$E2E_CLH/run/slurmctld.pid")
	assert_contains " $dir/lib/slurm/switch_lua.so" "$(c_root cat "/proc/$pid/maps")" "the plugin slurmctld mapped"
	c_root "$dir/bin/switch-lua-typecheck" "/usr/share/doc/$pkg/examples/switch.lua" >/dev/null ||
		fail "the package's switch-lua-typecheck rejects its example"
	network_job_works
}

e2e_test "package: upgrade to a rebuilt package of a higher version; slurmctld restarted on it runs a --network job" t_pkg_upgrade
t_pkg_upgrade() {
	local deb v1 v2 up
	deb=$(built_deb)
	v1=$(deb_field "$deb" Version)
	v2="$v1+e2e1"
	"$E2E_REPO/scripts/deb" install "$deb" >&2
	assert_eq "$v1" "$(pkg_version)" "version before the upgrade"
	SWITCHLUA_DEB_OUT=$E2E_REPO/build-deb-upgrade "$E2E_REPO/scripts/deb" --reuse --no-lintian --version "$v2" >&2 ||
		fail "scripts/deb --reuse --version $v2 failed"
	up=$(ls "$E2E_REPO"/build-deb-upgrade/slurm-switch-lua_"$v2"_*.deb)
	"$E2E_REPO/scripts/deb" install "$up" >&2
	assert_eq "$v2" "$(pkg_version)" "version after the upgrade"
	c_root dpkg --compare-versions "$v2" gt "$v1" || fail "$v2 is not higher than $v1"
	[ -e "$E2E_ROOT$PKG_PLUGIN" ] || fail "no plugin after the upgrade"
	restart_ctld
	grep -F 'switch/lua: active in slurmctld' "$(ctld_log)" >/dev/null || fail "slurmctld does not say switch/lua is active"
	network_job_works
}

e2e_test "package: remove and purge keep /etc/slurm/switch.lua; slurmctld with SwitchType=switch/lua then fails, naming the missing plugin in its log" t_pkg_remove
t_pkg_remove() {
	local sum msg
	# (global: the EXIT trap runs after this function's locals are gone)
	PKG_DEB=$(built_deb)
	[ -e "$E2E_ROOT/etc/slurm/switch.lua" ] || fail "no /etc/slurm/switch.lua to begin with"
	sum=$(md5sum <"$E2E_ROOT/etc/slurm/switch.lua")
	# Whatever happens below, the package of build-deb/ and a running
	# slurmctld are back at the end (the next tests need them).
	trap '"$E2E_REPO/scripts/deb" install "$PKG_DEB" >/dev/null 2>&1; "$E2E_CLUSTER" restart-ctld >/dev/null 2>&1' EXIT
	"$E2E_REPO/scripts/deb" remove >&2
	[ ! -e "$E2E_ROOT$PKG_PLUGIN" ] || fail "the plugin is still there after removal"
	[ ! -e "$E2E_ROOT/usr/bin/switch-lua" ] || fail "switch-lua is still there after removal"
	assert_eq "$sum" "$(md5sum <"$E2E_ROOT/etc/slurm/switch.lua")" "/etc/slurm/switch.lua after removal"
	# slurmctld cannot start without the plugin; it says which one.
	if "$E2E_CLUSTER" restart-ctld >"$E2E_TMP/restart.log" 2>&1; then
		fail "slurmctld started with SwitchType=switch/lua and no plugin"
	fi
	# (slurmctld.log; its stdout only if it died before opening the log)
	msg=$({ log_since "$(ctld_log)"; cat "$E2E_CLH/log/slurmctld.stdout" 2>/dev/null; } |
		grep -E 'switch/lua' | grep -iE 'error|fatal|cannot|couldn' | head -n 3 || true)
	[ -n "$msg" ] || fail "no slurmctld log line names switch/lua after the removal: $(log_since "$(ctld_log)" | tail -n 5)"
	note "slurmctld.log: $msg"
	# Purge, from the installed state (the package has no conffiles, so a
	# removed one is already gone from dpkg's database).
	"$E2E_REPO/scripts/deb" install "$PKG_DEB" >&2
	"$E2E_REPO/scripts/deb" remove --purge >&2
	assert_eq "$sum" "$(md5sum <"$E2E_ROOT/etc/slurm/switch.lua")" "/etc/slurm/switch.lua after purge"
	[ -z "$(pkg_version)" ] || fail "still installed after purge"
	[ ! -e "$E2E_ROOT$PKG_PLUGIN" ] || fail "the plugin is still there after purge"
	# Back: install, restart, a --network job works again.
	"$E2E_REPO/scripts/deb" install "$PKG_DEB" >&2
	restart_ctld
	network_job_works
	trap - EXIT
}
