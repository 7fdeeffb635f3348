#!/usr/bin/lua5.4
-- SPDX-License-Identifier: GPL-2.0-or-later
--
-- switch-lua-typecheck: a static check of a switch.lua against the
-- definitions of the switch.lua API (lua-meta/slurm.lua, the LuaLS file),
-- without running the script.  See switch-lua-typecheck(1).
--
-- What it checks, reading the definitions' @return/@class/@field lines:
--   - the script compiles (as luac -p: load() without running it);
--   - every `return` of a hook function (not of functions nested in it):
--     the number of values and, where the type of a value can be decided
--     without running anything, its type against the hook's @return types
--     (an rc must be an integer, a question a boolean, jobinfo/env a table
--     or nil).  Decided: literals, table constructors, slurm.SUCCESS/ERROR/
--     EAGAIN, `not`, comparisons, `..`, tostring()/string.format(), a
--     parenthesised value, and a local declared once and never reassigned
--     with such a value.  Anything else (arithmetic, and/or, other calls)
--     is not decided and never reported;
--   - hook-like globals: a slurm_switch_* function that is not a hook of
--     the contract, or a hook declared `local` (the plugin cannot see it);
--   - `slurm.NAME` where NAME is not a member of the slurm table;
--   - `job.NAME` / `step.NAME` on a hook's job or step parameter (never
--     reassigned in the hook) where NAME is not a field of the table.
-- Output: one line per diagnostic, `FILE:LINE: HOOK: message`, then exit
-- status 1; else "FILE: ok (...)" and exit 0.  Exit 2: usage, unreadable
-- file or definitions.

local META_DEFAULT = "@LUA_META_DIR@/slurm.lua"

local function die(msg)
	io.stderr:write("switch-lua-typecheck: ", msg, "\n")
	os.exit(2)
end

local function read_file(path)
	local f, err = io.open(path, "rb")
	if not f then
		return nil, err
	end
	local s = f:read("a")
	f:close()
	return s
end

-- ------------------------------------------------------------ definitions

-- Reads the annotations of the definition file: hooks (params, returns),
-- classes (fields), members of the slurm table.
local function load_meta(path)
	local text, err = read_file(path)
	if not text then
		die("cannot read the definitions: " .. err)
	end
	local meta = { hooks = {}, classes = {}, slurm = {} }
	local params, returns, class = {}, {}, nil
	for line in (text .. "\n"):gmatch("([^\n]*)\n") do
		local cname = line:match("^%-%-%-@class%s+([%w_.]+)")
		local fname, fopt, ftype = line:match("^%-%-%-@field%s+([%w_]+)(%??)%s+(%S+)")
		local pname, ptype = line:match("^%-%-%-@param%s+([%w_.]+)%??%s+(%S+)")
		local rtype, rname = line:match("^%-%-%-@return%s+(%S+)%s*([%w_]*)")
		local hook = line:match("^function%s+(slurm_switch_[%w_]+)%s*%(")
		local member = line:match("^function%s+slurm%.([%w_]+)%s*%(")
		if cname then
			class = { name = cname, fields = {} }
			meta.classes[cname] = class
		elseif fname and class then
			class.fields[fname] = { type = ftype, optional = fopt == "?" }
			if class.name == "switchlua.slurm" then
				meta.slurm[fname] = true
			end
		elseif pname then
			params[#params + 1] = { name = pname, type = ptype }
		elseif rtype then
			returns[#returns + 1] = { type = rtype, name = rname ~= "" and rname or ("value " .. (#returns + 1)) }
		elseif hook then
			meta.hooks[hook] = { params = params, returns = returns }
			params, returns, class = {}, {}, nil
		elseif member then
			meta.slurm[member] = true
			params, returns, class = {}, {}, nil
		elseif not line:match("^%-%-%-") then
			if line:match("%S") and not line:match("^%-%-") then
				params, returns, class = {}, {}, nil
			end
		end
	end
	if next(meta.hooks) == nil then
		die(path .. ": no hook definitions found (function slurm_switch_*)")
	end
	return meta
end

-- The kinds of value an annotated type accepts: integer, float, boolean,
-- string, nil, table, function.
local function accepted_kinds(typ)
	local kinds = {}
	for alt in typ:gmatch("[^|]+") do
		local opt = alt:match("%?$")
		alt = alt:gsub("%?$", "")
		if alt == "integer" then
			kinds.integer = true
		elseif alt == "number" then
			kinds.integer, kinds.float = true, true
		elseif alt == "boolean" or alt == "string" or alt == "nil" or alt == "function" then
			kinds[alt] = true
		elseif alt == "any" then
			return nil
		else -- a class or alias of the definitions, or table<...>/T[]: a table
			kinds.table = true
		end
		if opt then
			kinds["nil"] = true
		end
	end
	return kinds
end

-- ------------------------------------------------------------ lexer

local KEYWORDS = {}
for k in ([[and break do else elseif end false for function goto if in local
	nil not or repeat return then true until while]]):gmatch("%a+") do
	KEYWORDS[k] = true
end

-- Tokens: { t = "name"|"kw"|"num"|"str"|"op", v = text, line = n }.
local function lex(src)
	local toks, i, line, n = {}, 1, 1, #src
	local function add(t, v, l)
		toks[#toks + 1] = { t = t, v = v, line = l }
	end
	local function long_bracket(at)
		local eq = src:match("^%[(=*)%[", at)
		if not eq then
			return nil
		end
		local close = "]" .. eq .. "]"
		local s, e = src:find(close, at, true)
		if not s then
			return nil
		end
		return e, src:sub(at + #eq + 2, s - 1)
	end
	if src:sub(1, 1) == "#" then -- shebang line
		i = (src:find("\n", 1, true) or n) + 0
	end
	while i <= n do
		local c = src:sub(i, i)
		if c == "\n" then
			line = line + 1
			i = i + 1
		elseif c:match("%s") then
			i = i + 1
		elseif src:sub(i, i + 1) == "--" then
			local e, body = long_bracket(i + 2)
			if e then
				local _, nl = body:gsub("\n", "")
				line = line + nl
				i = e + 1
			else
				i = (src:find("\n", i, true) or n + 1)
			end
		elseif c == "[" and src:match("^%[=*%[", i) then
			local e, body = long_bracket(i)
			if not e then
				return nil, line
			end
			add("str", body, line)
			local _, nl = body:gsub("\n", "")
			line = line + nl
			i = e + 1
		elseif c == '"' or c == "'" then
			local j, l0 = i + 1, line
			while j <= n do
				local d = src:sub(j, j)
				if d == "\\" then
					if src:sub(j + 1, j + 1) == "\n" then
						line = line + 1
					elseif src:sub(j + 1, j + 1) == "z" then
						local ws = src:match("^%s*", j + 2)
						local _, nl = ws:gsub("\n", "")
						line = line + nl
						j = j + #ws
					end
					j = j + 2
				elseif d == c then
					break
				elseif d == "\n" then
					return nil, line
				else
					j = j + 1
				end
			end
			add("str", src:sub(i + 1, j - 1), l0)
			i = j + 1
		elseif c:match("%d") or (c == "." and src:sub(i + 1, i + 1):match("%d")) then
			local num = src:match("^0[xX][%x.]*[pP][+-]?%d+", i) or src:match("^0[xX][%x.]*", i)
				or src:match("^[%d.]*[eE][+-]?%d+", i) or src:match("^[%d.]+", i)
			add("num", num, line)
			i = i + #num
		elseif c:match("[%a_]") then
			local w = src:match("^[%w_]+", i)
			add(KEYWORDS[w] and "kw" or "name", w, line)
			i = i + #w
		else
			local op = src:match("^%.%.%.", i) or src:match("^[=~<>]=", i) or src:match("^%.%.", i)
				or src:match("^//", i) or src:match("^::", i) or src:match("^<<", i) or src:match("^>>", i) or c
			add("op", op, line)
			i = i + #op
		end
	end
	add("eof", "<eof>", line)
	return toks
end

-- ------------------------------------------------------------ structure

local OPENERS = { ["function"] = true, ["if"] = true, ["do"] = true, ["repeat"] = true }
local CLOSERS = { ["end"] = true, ["until"] = true }

-- Index of the token that closes the block opened at toks[i] (a
-- `function`, `if`, `do` or `repeat` keyword).
local function block_end(toks, i)
	local depth = 0
	for j = i, #toks do
		local tk = toks[j]
		if tk.t == "kw" and OPENERS[tk.v] then
			depth = depth + 1
		elseif tk.t == "kw" and CLOSERS[tk.v] then
			depth = depth - 1
			if depth == 0 then
				return j
			end
		end
	end
	return #toks
end

local function is(tk, t, v)
	return tk and tk.t == t and (v == nil or tk.v == v)
end

-- The expressions of a return statement starting after toks[i]: a list of
-- {first, last} token ranges, and the index after the statement.
local STOP = { ["end"] = true, ["else"] = true, ["elseif"] = true, ["until"] = true }
local function return_exprs(toks, i)
	local exprs, depth, j, start = {}, 0, i + 1, i + 1
	while true do
		local tk = toks[j]
		if tk.t == "eof" or (depth == 0 and ((tk.t == "kw" and STOP[tk.v]) or is(tk, "op", ";"))) then
			break
		end
		if tk.t == "kw" and tk.v == "function" then
			j = block_end(toks, j)
		elseif tk.t == "op" and (tk.v == "(" or tk.v == "{" or tk.v == "[") then
			depth = depth + 1
		elseif tk.t == "op" and (tk.v == ")" or tk.v == "}" or tk.v == "]") then
			depth = depth - 1
		elseif depth == 0 and is(tk, "op", ",") then
			exprs[#exprs + 1] = { start, j - 1 }
			start = j + 1
		end
		j = j + 1
	end
	if j > start then
		exprs[#exprs + 1] = { start, j - 1 }
	end
	return exprs
end

-- Whether toks[a..b] is one bracketed group opened at a and closed at b.
local function one_group(toks, a, b, open, close)
	if not (is(toks[a], "op", open) and is(toks[b], "op", close)) then
		return false
	end
	local depth = 0
	for j = a, b do
		local v = toks[j].t == "op" and toks[j].v
		if v == "(" or v == "{" or v == "[" then
			depth = depth + 1
		elseif v == ")" or v == "}" or v == "]" then
			depth = depth - 1
			if depth == 0 and j < b then
				return false
			end
		end
	end
	return true
end

-- Binary operators at bracket depth 0 of toks[a..b].
local function top_ops(toks, a, b)
	local ops, depth = {}, 0
	local j = a
	while j <= b do
		local tk = toks[j]
		if tk.t == "kw" and tk.v == "function" then
			j = block_end(toks, j)
		elseif tk.t == "op" and (tk.v == "(" or tk.v == "{" or tk.v == "[") then
			depth = depth + 1
		elseif tk.t == "op" and (tk.v == ")" or tk.v == "}" or tk.v == "]") then
			depth = depth - 1
		elseif depth == 0 and j > a and (tk.t == "op" or (tk.t == "kw" and (tk.v == "and" or tk.v == "or"))) then
			ops[tk.v] = true
		end
		j = j + 1
	end
	return ops
end

local SLURM_CONSTANTS = { SUCCESS = true, ERROR = true, EAGAIN = true, FABRIC_DOWN = true }
local STRING_CALLS = { tostring = true, ["string.format"] = true, ["slurm.to_json"] = true }

-- The type of toks[a..b] ("integer", "float", "boolean", "string", "nil",
-- "table", "function"), nil when it cannot be decided statically; second
-- value: a short rendering for messages.  `ctx.locals` resolves names.
local type_of
type_of = function(toks, a, b, ctx, seen)
	local first, last = toks[a], toks[b]
	if a > b then
		return nil
	end
	if a == b then
		if first.t == "kw" and first.v == "nil" then
			return "nil", "nil"
		elseif first.t == "kw" and (first.v == "true" or first.v == "false") then
			return "boolean", first.v
		elseif first.t == "num" then
			local v = tonumber(first.v)
			return v and math.type(v) or nil, first.v
		elseif first.t == "str" then
			return "string", string.format("%q", first.v):gsub("\\\n", "\\n")
		elseif first.t == "name" then
			local d = ctx.locals[first.v]
			seen = seen or {}
			if d and not seen[first.v] then
				seen[first.v] = true
				local t, r = type_of(toks, d[1], d[2], ctx, seen)
				return t, t and (first.v .. " (" .. r .. ")")
			end
		end
		return nil
	end
	if first.t == "kw" and first.v == "function" and block_end(toks, a) == b then
		return "function", "a function"
	end
	if one_group(toks, a, b, "{", "}") then
		return "table", "a table"
	end
	if one_group(toks, a, b, "(", ")") then
		return type_of(toks, a + 1, b - 1, ctx, seen)
	end
	if b == a + 2 and is(first, "name", "slurm") and is(toks[a + 1], "op", ".") and SLURM_CONSTANTS[last.v]
		and not ctx.shadowed.slurm then
		return "integer", "slurm." .. last.v
	end
	if is(first, "op", "-") and b == a + 1 and last.t == "num" then
		local v = tonumber(last.v)
		return v and math.type(v) or nil, "-" .. last.v
	end
	if is(first, "op", "-") and b == a + 3 and is(toks[a + 1], "name", "slurm") and SLURM_CONSTANTS[last.v] then
		return "integer", "-slurm." .. last.v
	end
	local ops = top_ops(toks, a, b)
	if ops["and"] or ops["or"] then
		return nil
	end
	if first.t == "kw" and first.v == "not" then
		return "boolean", "a `not` expression"
	end
	if ops["=="] or ops["~="] or ops["<"] or ops[">"] or ops["<="] or ops[">="] then
		return "boolean", "a comparison"
	end
	if ops[".."] then
		return "string", "a concatenation"
	end
	-- NAME(...) / NAME.NAME(...) calls of known string functions
	local callee, j = first.v, a + 1
	if first.t == "name" and is(toks[j], "op", ".") and toks[j + 1] and toks[j + 1].t == "name" then
		callee, j = callee .. "." .. toks[j + 1].v, j + 2
	end
	if first.t == "name" and STRING_CALLS[callee] and not ctx.shadowed[first.v] and one_group(toks, j, b, "(", ")") then
		return "string", callee .. "(...)"
	end
	return nil
end

local KIND_WORDS = {
	integer = "an integer",
	float = "a float",
	boolean = "a boolean",
	string = "a string",
	["nil"] = "nil",
	table = "a table",
	["function"] = "a function",
}

-- ------------------------------------------------------------ check

local function check(path, meta)
	local src, err = read_file(path)
	if not src then
		die("cannot read " .. err)
	end
	local diags = {}
	local function diag(line, hook, msg)
		diags[#diags + 1] = { line = line, text = string.format("%s:%d: %s%s", path, line, hook and (hook .. ": ") or "", msg) }
	end
	-- 1. It compiles (nothing runs: the chunk is only loaded).
	local _, lerr = load(src, "@" .. path, "t", {})
	if lerr then
		local line, msg = lerr:match("^.-:(%d+): (.*)$")
		diag(tonumber(line) or 0, nil, "does not compile: " .. (msg or lerr))
		return diags, { hooks = 0, returns = 0, undecided = 0 }
	end
	local toks, badline = lex(src)
	if not toks then
		diag(badline, nil, "cannot be read by the checker's lexer")
		return diags, { hooks = 0, returns = 0, undecided = 0 }
	end

	-- Locals declared exactly once, with a simple initial value (a single
	-- literal or name, slurm.X, or a table constructor) and never assigned
	-- again: name -> the token range of that value.  A name that may be
	-- assigned in a multiple assignment (next to a comma) is not resolved.
	-- Names declared local anywhere are remembered as shadowed.
	local declared, assigned, init, shadowed = {}, {}, {}, {}
	local CONTINUES = { ["("] = true, ["["] = true, ["."] = true, [":"] = true, ["{"] = true }
	local function simple_value(at)
		local v = toks[at]
		local stop
		if v.t == "num" or v.t == "str" or v.t == "name"
			or (v.t == "kw" and (v.v == "nil" or v.v == "true" or v.v == "false")) then
			stop = at
			if is(v, "name", "slurm") and is(toks[at + 1], "op", ".") and toks[at + 2].t == "name" then
				stop = at + 2
			end
		elseif is(v, "op", "{") then
			local depth = 0
			for j = at, #toks do
				if is(toks[j], "op", "{") then
					depth = depth + 1
				elseif is(toks[j], "op", "}") then
					depth = depth - 1
					if depth == 0 then
						stop = j
						break
					end
				end
			end
		end
		if not stop then
			return nil
		end
		-- the value ends there: the next token starts a new statement
		local nx = toks[stop + 1]
		if nx.t == "op" and (nx.v ~= ";" or CONTINUES[nx.v]) then
			return nil
		end
		if nx.t == "kw" and (nx.v == "and" or nx.v == "or") then
			return nil
		end
		return { at, stop }
	end
	-- Names a statement declares: after `local` or `for` up to the first
	-- token that is not a name or a comma, and function parameters.
	local declaring = {}
	for i, tk in ipairs(toks) do
		if is(tk, "kw", "local") or is(tk, "kw", "for") then
			local j = i + 1
			while toks[j].t == "name" or is(toks[j], "op", ",") do
				if toks[j].t == "name" then
					declaring[j] = true
				end
				j = j + 1
			end
		elseif is(tk, "kw", "function") then
			local j = i + 1
			while not is(toks[j], "op", "(") and toks[j].t ~= "eof" do
				j = j + 1
			end
			while not is(toks[j], "op", ")") and toks[j].t ~= "eof" do
				if toks[j].t == "name" then
					declaring[j] = true
				end
				j = j + 1
			end
		end
	end
	for i, tk in ipairs(toks) do
		if declaring[i] then
			shadowed[tk.v] = true
		end
		if tk.t == "name" then
			local prev, nxt = toks[i - 1], toks[i + 1]
			if is(prev, "kw", "local") then
				declared[tk.v] = (declared[tk.v] or 0) + 1
				shadowed[tk.v] = true
				if is(nxt, "op", "=") then
					init[tk.v] = simple_value(i + 2)
				end
			elseif declaring[i] then
				declared[tk.v] = (declared[tk.v] or 0) + 1
			end
		elseif is(tk, "op", "=") then
			-- an assignment: the names of `a, b.c, d = ...` left of it
			-- (fields are not locals); none if it is a local statement
			local names, j = {}, i - 1
			while toks[j] and toks[j].t == "name" do
				if not is(toks[j - 1], "op", ".") then
					names[#names + 1] = toks[j].v
				end
				if is(toks[j - 1], "op", ",") then
					j = j - 2
				elseif is(toks[j - 1], "op", ".") then
					break -- a field of a table: the table itself is not assigned
				else
					j = j - 1
					break
				end
			end
			if not (is(toks[j], "kw", "local") or declaring[j + 1]) then
				for _, n in ipairs(names) do
					assigned[n] = (assigned[n] or 0) + 1
				end
			end
		end
	end
	local locals = {}
	for name, range in pairs(init) do
		if declared[name] == 1 and not assigned[name] then
			locals[name] = range
		end
	end
	local ctx = { locals = locals, shadowed = shadowed }

	-- 2. `slurm.NAME` members.
	if not shadowed.slurm then
		for i, tk in ipairs(toks) do
			if is(tk, "name", "slurm") and is(toks[i + 1], "op", ".") and toks[i + 2].t == "name"
				and not is(toks[i - 1], "op", ".") and not meta.slurm[toks[i + 2].v] then
				diag(tk.line, nil, string.format("slurm.%s is not a member of the slurm table (switch.lua(5): THE SLURM TABLE)", toks[i + 2].v))
			end
		end
	end

	-- 3. The hooks.
	local stats = { hooks = 0, returns = 0, undecided = 0, notes = {} }
	local i = 1
	while i <= #toks do
		local tk = toks[i]
		local name, params_at, fn_at
		if is(tk, "kw", "function") and toks[i + 1].t == "name" and is(toks[i + 2], "op", "(") then
			name, fn_at, params_at = toks[i + 1].v, i, i + 2
			if is(toks[i - 1], "kw", "local") and meta.hooks[name] then
				diag(tk.line, name, "is declared local: the plugin only calls a global function of that name")
				name = nil
			end
		elseif tk.t == "name" and is(toks[i + 1], "op", "=") and is(toks[i + 2], "kw", "function")
			and not is(toks[i - 1], "op", ".") and not is(toks[i - 1], "kw", "local") then
			name, fn_at, params_at = tk.v, i + 2, i + 3
		end
		if name and name:match("^slurm_switch_") and not meta.hooks[name] then
			diag(tk.line, name, "is not a hook of switch.lua(5); the plugin never calls it")
		elseif name and meta.hooks[name] then
			local hook = meta.hooks[name]
			stats.hooks = stats.hooks + 1
			local close = block_end(toks, fn_at)
			-- parameters
			local pnames, j = {}, params_at + 1
			while toks[j].t ~= "eof" and not is(toks[j], "op", ")") do
				if toks[j].t == "name" then
					pnames[#pnames + 1] = toks[j].v
				end
				j = j + 1
			end
			local body_start = j + 1
			-- a parameter never reassigned in the body: its fields are checked
			local pclass = {}
			for k, pn in ipairs(pnames) do
				local def = hook.params[k]
				local cls = def and meta.classes[def.type]
				if cls then
					pclass[pn] = cls
				end
			end
			for k = body_start, close do
				if toks[k].t == "name" and pclass[toks[k].v] and (is(toks[k + 1], "op", "=") and not is(toks[k - 1], "op", ".")
					or is(toks[k - 1], "kw", "local") or is(toks[k - 1], "kw", "for")) then
					pclass[toks[k].v] = nil
				end
			end
			-- walk the body: returns and fields, skipping nested functions
			local expected = hook.returns
			local k = body_start
			while k < close do
				local b = toks[k]
				if is(b, "kw", "function") then
					k = block_end(toks, k) + 1
				else
					if b.t == "name" and pclass[b.v] and is(toks[k + 1], "op", ".") and toks[k + 2].t == "name"
						and not is(toks[k - 1], "op", ".") and not pclass[b.v].fields[toks[k + 2].v] then
						diag(b.line, name, string.format("%s.%s: %s has no field %s (switch.lua(5): THE JOB AND STEP TABLES)",
							b.v, toks[k + 2].v, pclass[b.v].name, toks[k + 2].v))
					end
					if is(b, "kw", "return") then
						stats.returns = stats.returns + 1
						local exprs = return_exprs(toks, k)
						local conv = {}
						for _, r in ipairs(expected) do
							conv[#conv + 1] = r.name
						end
						local convention = table.concat(conv, ", ")
						local last = exprs[#exprs]
						-- a call or ... last: any number of values from there
						local open_ended = last and (is(toks[last[2]], "op", "...") or
							(is(toks[last[2]], "op", ")") and not one_group(toks, last[1], last[2], "(", ")")))
						local n = #exprs
						while n > #expected and type_of(toks, exprs[n][1], exprs[n][2], ctx) == "nil" do
							n = n - 1 -- trailing nils past the convention are ignored
						end
						if n == 0 then
							diag(b.line, name, string.format("returns no value, expected %s", convention))
						elseif n > #expected and not (open_ended and n == #exprs and n - 1 <= #expected) then
							diag(b.line, name, string.format("returns %d values, expected %s", n, convention))
						else
							for v = 1, math.min(n, #expected) do
								if open_ended and v == #exprs then
									stats.undecided = stats.undecided + 1
									stats.notes[#stats.notes + 1] = string.format("%s:%d: %s: %s and after: a call or ..., not decidable statically",
										path, toks[exprs[v][1]].line, name, expected[v].name)
									break
								end
								local t, shown = type_of(toks, exprs[v][1], exprs[v][2], ctx)
								local kinds = accepted_kinds(expected[v].type)
								if t == nil then
									stats.undecided = stats.undecided + 1
									local words = {}
									for w = exprs[v][1], math.min(exprs[v][2], exprs[v][1] + 5) do
										words[#words + 1] = toks[w].t == "str" and string.format("%q", toks[w].v) or toks[w].v
									end
									stats.notes[#stats.notes + 1] = string.format("%s:%d: %s: %s `%s` not decidable statically",
										path, toks[exprs[v][1]].line, name, expected[v].name, table.concat(words, " "))
								elseif kinds and not kinds[t] then
									if shown ~= KIND_WORDS[t] and t ~= "nil" then
										shown = shown .. " (" .. KIND_WORDS[t] .. ")"
									end
									diag(toks[exprs[v][1]].line, name, string.format(
										"returns %s as %s, expected %s%s", shown, expected[v].name, expected[v].type,
										#expected > 1 and (" (the hook returns " .. convention .. ")") or ""))
								end
							end
						end
					end
					k = k + 1
				end
			end
			i = fn_at
		end
		i = i + 1
	end
	table.sort(diags, function(x, y)
		return x.line < y.line
	end)
	return diags, stats
end

-- ------------------------------------------------------------ main

local files, meta_path, quiet, verbose = {}, nil, false, false
local a = 1
while a <= #arg do
	local v = arg[a]
	if v == "--meta" then
		meta_path = arg[a + 1] or die("--meta needs a path")
		a = a + 1
	elseif v == "-q" or v == "--quiet" then
		quiet = true
	elseif v == "-v" or v == "--verbose" then
		verbose = true
	elseif v == "-h" or v == "--help" then
		print("usage: switch-lua-typecheck [--meta FILE] [-q|-v] SCRIPT...")
		print("Checks the hooks of each switch.lua statically against the switch.lua API definitions.")
		os.exit(0)
	elseif v:sub(1, 1) == "-" and v ~= "-" then
		die("unknown option " .. v)
	else
		files[#files + 1] = v
	end
	a = a + 1
end
if #files == 0 then
	die("usage: switch-lua-typecheck [--meta FILE] [-q|-v] SCRIPT...")
end
if not meta_path then
	meta_path = META_DEFAULT
	if meta_path:find("@", 1, true) then -- run from the source tree
		local dir = (arg[0] or ""):match("^(.*)/[^/]*$") or "."
		meta_path = dir .. "/switch-lua-meta/slurm.lua"
	end
end
local meta = load_meta(meta_path)
local status = 0
for _, f in ipairs(files) do
	local diags, stats = check(f, meta)
	for _, d in ipairs(diags) do
		print(d.text)
	end
	if verbose then
		for _, note in ipairs(stats.notes or {}) do
			print("note: " .. note)
		end
	end
	if #diags > 0 then
		status = 1
	elseif not quiet then
		print(string.format("%s: ok (%d hooks, %d return statements, %d values not decidable statically)",
			f, stats.hooks, stats.returns, stats.undecided))
	end
end
os.exit(status)
