-- SPDX-License-Identifier: GPL-2.0-or-later
-- Not a test: slurm.run timed the way test/bench/run_luaposix.lua times
-- its lua-posix equivalent (issue 21).  Run:
--   switch-lua simulate test/bench/run_slurm.lua --network bench --steps 0
-- and read the job_start line ("ran N ms" is the whole call).
function slurm_switch_job_start(job)
	local n, total = 200, 0
	for _ = 1, n do
		local r = assert(slurm.run({ "true" }))
		assert(r.status == 0)
		total = total + r.elapsed
	end
	local r = assert(slurm.run({ "wc", "-c" }, { stdin = string.rep("x", 1 << 20) }))
	slurm.log_info("slurm.run: %d x true: %.3f ms each; 1 MiB through wc -c: %.1f ms (%s)", n,
		total * 1000 / n, r.elapsed * 1000, (r.stdout:gsub("%s+$", "")))
	return slurm.SUCCESS, nil
end
