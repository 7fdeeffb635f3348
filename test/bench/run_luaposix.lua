-- SPDX-License-Identifier: GPL-2.0-or-later
-- Not a test: what a script would have to write to get slurm.run's
-- behaviour (argv without a shell, stdin, timeout, captured output) from
-- Debian's lua-posix, and a timing of it against slurm.run (issue 21:
-- "measure before choosing").  Run: lua5.4 test/bench/run_luaposix.lua [N]
local unistd = require("posix.unistd")
local wait = require("posix.sys.wait")
local poll = require("posix.poll")
local signal = require("posix.signal")
local time = require("posix.time")
local fcntl = require("posix.fcntl")

local function now()
	local t = time.clock_gettime(time.CLOCK_MONOTONIC)
	return t.tv_sec + t.tv_nsec / 1e9
end

-- argv, stdin string, timeout seconds -> { status, stdout, stderr, timed_out }
local function run(argv, input, timeout)
	local in_r, in_w = unistd.pipe()
	local out_r, out_w = unistd.pipe()
	local err_r, err_w = unistd.pipe()
	local pid, e = unistd.fork()
	if pid == nil then
		return nil, e
	end
	if pid == 0 then
		unistd.dup2(in_r, 0)
		unistd.dup2(out_w, 1)
		unistd.dup2(err_w, 2)
		for _, fd in ipairs({ in_r, in_w, out_r, out_w, err_r, err_w }) do
			unistd.close(fd)
		end
		-- a missing binary is only known here, in the child
		local _, msg = unistd.execp(argv[1], { table.unpack(argv, 2) })
		unistd.write(2, "cannot run " .. argv[1] .. ": " .. tostring(msg) .. "\n")
		unistd._exit(127)
	end
	unistd.close(in_r)
	unistd.close(out_w)
	unistd.close(err_w)
	fcntl.fcntl(in_w, fcntl.F_SETFL, fcntl.O_NONBLOCK)
	local out, err, sent = {}, {}, 1
	input = input or ""
	if #input == 0 then
		unistd.close(in_w)
		in_w = nil
	end
	local deadline = now() + timeout
	local fds = {}
	while out_r or err_r do
		fds = {}
		if in_w then fds[in_w] = { events = { OUT = true } } end
		if out_r then fds[out_r] = { events = { IN = true } } end
		if err_r then fds[err_r] = { events = { IN = true } } end
		local left = deadline - now()
		if left <= 0 then
			signal.kill(pid, signal.SIGKILL)
			break
		end
		poll.poll(fds, math.floor(left * 1000))
		if in_w and fds[in_w].revents and (fds[in_w].revents.OUT or fds[in_w].revents.ERR) then
			local n = unistd.write(in_w, input:sub(sent, sent + 65535))
			if not n then
				unistd.close(in_w); in_w = nil
			else
				sent = sent + n
				if sent > #input then unistd.close(in_w); in_w = nil end
			end
		end
		for _, p in ipairs({ { "out_r", out }, { "err_r", err } }) do
			local fd = p[1] == "out_r" and out_r or err_r
			if fd and fds[fd].revents and (fds[fd].revents.IN or fds[fd].revents.HUP) then
				local s = unistd.read(fd, 65536)
				if not s or #s == 0 then
					unistd.close(fd)
					if p[1] == "out_r" then out_r = nil else err_r = nil end
				else
					p[2][#p[2] + 1] = s
				end
			end
		end
	end
	-- (a leftover child holding stdout open keeps this loop waiting until
	-- the timeout: a pidfd is not in lua-posix)
	local _, how, status = wait.wait(pid)
	return { status = how == "exited" and status or nil, stdout = table.concat(out),
		stderr = table.concat(err), timed_out = now() >= deadline }
end

local n = tonumber(arg and arg[1]) or 200
local t0 = now()
for _ = 1, n do
	assert(run({ "true" }, nil, 5).status == 0)
end
local t1 = now()
local big = string.rep("x", 1 << 20)
local r = run({ "wc", "-c" }, big, 5)
local t2 = now()
print(string.format("lua-posix run(): %d x true: %.3f ms each; 1 MiB through wc -c: %.1f ms (%s)",
	n, (t1 - t0) * 1000 / n, (t2 - t1) * 1000, r.stdout:gsub("%s+$", "")))
