// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: lua/runtime.cpp
//
// Script::load (fresh state, chunk-return check) and Script::call (one hook
// call under lua_pcall with a traceback handler, then the contract parser).
#include "lua/runtime.hpp"
#include "common/content_hash.hpp"
#include "lua/broken_pipe.hpp"
#include "lua/codec.hpp"
#include "lua/detail.hpp"
#include "lua/trust.hpp"

#include <lua.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <clocale>
#include <sys/random.h>

namespace switchlua {

namespace {

/// Message handler of every pcall that runs script code: the error message
/// as its first line ("file:line: message" for error() and run-time
/// errors), then Lua's stack traceback.
int l_traceback(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (msg == nullptr) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
      msg = lua_tostring(L, -1);
    else
      msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

/// Seeds math.random from the kernel.  Lua seeds it from the time (in
/// seconds) and the state's address, which is the same in every runner a
/// fork server forks (fork_server.hpp): two calls in one second would draw
/// the same numbers.  Without getrandom(2) Lua's own seed stays.
void seed_math_random(lua_State *L) {
  lua_Integer seed[2] = {0, 0};
  if (::getrandom(seed, sizeof seed, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof seed))
    return;
  lua_getglobal(L, "math");
  lua_getfield(L, -1, "randomseed");
  lua_pushinteger(L, seed[0]);
  lua_pushinteger(L, seed[1]);
  lua_call(L, 2, 0);
  lua_pop(L, 1);
}

/// Opens the standard libraries, installs the slurm table and the module
/// rules (one search path, the ownership rule: lua/trust.hpp); run under
/// lua_pcall so a memory error is a failed load, not a panic.
int l_open_state(lua_State *L) {
  auto *sink = static_cast<LogSink *>(lua_touserdata(L, 1));
  const auto *path = static_cast<const std::string *>(lua_touserdata(L, 2));
  luaL_openlibs(L);
  seed_math_random(L);
  install_slurm_table(L, sink);
  install_module_rules(L, *path);
  return 0;
}

/// The error object at the top of the stack as text (popped).
std::string pop_message(lua_State *L) {
  std::size_t len = 0;
  const char *s = lua_tolstring(L, -1, &len);
  std::string out = s ? std::string(s, len) : std::string("(error object is not a string)");
  lua_pop(L, 1);
  return out;
}

/// Pushes the global `name` without metamethods (a script may set one on _G).
void push_global_raw(lua_State *L, std::string_view name) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
  lua_pushlstring(L, name.data(), name.size());
  lua_rawget(L, -2);
  lua_remove(L, -2);
}

/// The chunk-return rule (contract: "a number other than slurm.SUCCESS
/// makes the plugin refuse to load the script.  Returning nothing counts
/// as slurm.SUCCESS").  The `nret` values are on top of the stack.
Expected<void> check_chunk_return(lua_State *L, const std::string &path, int nret) {
  const int first = lua_gettop(L) - nret + 1;
  while (nret > 1 && lua_isnil(L, first + nret - 1))
    --nret;
  if (nret == 0)
    return {};
  if (nret > 1)
    return fail(fmt::format("{}: the chunk returned {} values, expected slurm.SUCCESS or nothing: "
                            "script refused",
                            path, nret));
  int ok = 0;
  const lua_Integer rc = lua_type(L, first) == LUA_TNUMBER ? lua_tointegerx(L, first, &ok) : 1;
  if (ok && rc == kSuccess)
    return {};
  return fail(fmt::format("{}: the chunk returned {}, not slurm.SUCCESS: script refused", path,
                          describe_value(L, first)));
}

} // namespace

/// The allocator of a Script's state: Lua's own, refusing to grow past
/// `limit` bytes in use (Lua then raises "not enough memory", LUA_ERRMEM,
/// which the hook's lua_pcall catches like any error).
struct MemoryBound {
  lua_Alloc next = nullptr;
  void *next_ud = nullptr;
  std::size_t limit = 0;
  std::size_t used = 0;

  static void *alloc(void *ud, void *ptr, std::size_t osize, std::size_t nsize) {
    auto *m = static_cast<MemoryBound *>(ud);
    const std::size_t old = ptr ? osize : 0; // osize is a type tag for a new block
    if (nsize > old && m->used - old + nsize > m->limit)
      return nullptr; // shrinking and freeing never fail
    void *p = m->next(m->next_ud, ptr, osize, nsize);
    if (p != nullptr || nsize == 0)
      m->used = m->used - old + nsize;
    return p;
  }

  /// Puts this bound in front of `L`'s allocator, counting what the fresh
  /// state already holds.
  void install(lua_State *L, std::size_t max_bytes) {
    next = lua_getallocf(L, &next_ud);
    used = static_cast<std::size_t>(lua_gc(L, LUA_GCCOUNT, 0)) * 1024 +
           static_cast<std::size_t>(lua_gc(L, LUA_GCCOUNTB, 0));
    limit = max_bytes;
    lua_setallocf(L, &MemoryBound::alloc, this);
  }
};

struct Script::Impl {
  lua_State *L = nullptr;
  std::string path;
  std::string hash; // content_hash() of the bytes loaded
  LogSink sink;
  MemoryBound memory;

  Impl() = default;
  Impl(const Impl &) = delete;
  Impl &operator=(const Impl &) = delete;
  ~Impl() {
    const BrokenPipeIsAnError pipes; // __gc of an io.popen file flushes it
    if (L != nullptr)
      lua_close(L);
  }
};

Script::Script(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Script::Script(Script &&) noexcept = default;
Script &Script::operator=(Script &&) noexcept = default;
Script::~Script() = default;

const std::string &Script::path() const {
  return impl_->path;
}

const std::string &Script::hash() const {
  return impl_->hash;
}

lua_State *Script::state() {
  return impl_->L;
}

namespace {
/// Restores the process locale (every category) that was in force when it
/// was made: a hook that calls os.setlocale("de_DE.UTF-8") cannot leave its
/// host (slurmstepd, the runner) formatting numbers as "0,5" after it.
class LocaleGuard {
public:
  LocaleGuard() {
    if (const char *l = std::setlocale(LC_ALL, nullptr))
      saved_ = l;
  }
  ~LocaleGuard() {
    const char *now = std::setlocale(LC_ALL, nullptr);
    if (!saved_.empty() && (now == nullptr || saved_ != now))
      std::setlocale(LC_ALL, saved_.c_str());
  }
  LocaleGuard(const LocaleGuard &) = delete;
  LocaleGuard &operator=(const LocaleGuard &) = delete;

private:
  std::string saved_;
};

/// The bytes of a script as Lua compiles them: without what luaL_loadfilex
/// skips, a UTF-8 BOM and a first line starting with '#' (kept as an empty
/// line, so that line numbers stay).
std::string_view chunk_text(std::string_view text) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF")
    text.remove_prefix(3);
  if (!text.empty() && text[0] == '#')
    text.remove_prefix(std::min(text.find('\n'), text.size()));
  return text;
}

/// os.exit() of an in-process script: a Lua error, not the end of the host.
int l_refuse_exit(lua_State *L) {
  return luaL_error(L, "os.exit() is not allowed here: the script runs inside its host "
                       "process (slurmstepd or switch-lua); return a value instead");
}
} // namespace

Expected<Script> Script::load(const std::string &path, LogSink sink) {
  return load(path, std::move(sink), Host::OwnProcess);
}

Expected<Script> Script::load(const std::string &path, LogSink sink, Host host) {
  return load_impl(path, nullptr, std::move(sink), host, default_memory_limit(host));
}

Expected<Script> Script::load(const std::string &path, LogSink sink, Host host,
                              std::size_t memory_limit) {
  return load_impl(path, nullptr, std::move(sink), host, memory_limit);
}

Expected<Script> Script::load_source(const std::string &path, std::string_view source, LogSink sink,
                                     Host host, std::size_t memory_limit) {
  return load_impl(path, &source, std::move(sink), host,
                   memory_limit ? memory_limit : default_memory_limit(host));
}

std::size_t Script::default_memory_limit(Host host) {
  return host == Host::InProcess ? kStepLuaMemoryLimit : kDefaultCtldLuaMemoryLimit;
}

std::vector<std::string> Script::hook_type_errors() const {
  std::vector<std::string> out;
  lua_State *L = impl_->L;
  for (Hook h : kAllHooks) {
    push_global_raw(L, hook_function(h));
    const int type = lua_type(L, -1);
    if (type != LUA_TNIL && type != LUA_TFUNCTION)
      out.push_back(fmt::format("{}: {} is {}, not a function", impl_->path, hook_function(h),
                                describe_value(L, -1)));
    lua_pop(L, 1);
  }
  return out;
}

Expected<Script> Script::load_impl(const std::string &path, const std::string_view *source,
                                   LogSink sink, Host host, std::size_t memory_limit) {
  const LocaleGuard keep_locale;   // the chunk's top level may call os.setlocale
  const BrokenPipeIsAnError pipes; // ... and write to an io.popen helper
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->sink = std::move(sink);
  impl->L = luaL_newstate();
  if (impl->L == nullptr)
    return fail(fmt::format("{}: cannot create a Lua state (out of memory)", path));
  lua_State *L = impl->L;
  impl->memory.install(L, memory_limit);

  // From the file: read it only after the ownership rule passed on the
  // open file (lua/trust.hpp); the bytes then load like a given source.
  std::string file_bytes;
  std::string_view given;
  if (source == nullptr) {
    auto bytes = read_trusted_file(path, slurm_user());
    if (!bytes)
      return Unexpected<Error>{bytes.error()};
    file_bytes = std::move(*bytes);
    given = file_bytes;
    source = &given;
  }
  impl->hash = content_hash(*source);

  lua_pushcfunction(L, l_open_state);
  lua_pushlightuserdata(L, &impl->sink);
  lua_pushlightuserdata(L, const_cast<std::string *>(&impl->path));
  if (lua_pcall(L, 2, 0, 0) != LUA_OK)
    return fail(fmt::format("{}: cannot set up the Lua state: {}", path, pop_message(L)));
  if (host == Host::InProcess) {
    lua_getglobal(L, "os");
    if (lua_istable(L, -1)) {
      lua_pushcfunction(L, l_refuse_exit);
      lua_setfield(L, -2, "exit");
    }
    lua_pop(L, 1);
  }

  lua_pushcfunction(L, l_traceback);
  const int handler = lua_gettop(L);
  // Text chunks only: a precompiled chunk is refused ("attempt to load a
  // binary chunk").  Errors read "cannot open <path>: <strerror>" or
  // "<path>:<line>: <syntax error>".
  const std::string_view text = chunk_text(*source);
  const int loaded = luaL_loadbufferx(L, text.data(), text.size(), ("@" + path).c_str(), "t");
  if (loaded != LUA_OK)
    return fail(pop_message(L));
  if (lua_pcall(L, 0, LUA_MULTRET, handler) != LUA_OK)
    return fail(pop_message(L));
  auto ok = check_chunk_return(L, path, lua_gettop(L) - handler);
  lua_settop(L, 0);
  if (!ok)
    return Unexpected<Error>{ok.error()};
  return Script(std::move(impl));
}

bool Script::has_hook(Hook h) const {
  lua_State *L = impl_->L;
  push_global_raw(L, hook_function(h));
  const bool defined = lua_type(L, -1) == LUA_TFUNCTION;
  lua_pop(L, 1);
  return defined;
}

namespace {

/// Pushes the arguments of hook `h`; the number pushed, or an error for
/// info bytes that do not decode.
Expected<int, CallError> push_args(lua_State *L, Hook h, const JobArgs *job, const StepArgs *step,
                                   const MsgpackBytes *info) {
  switch (h) {
  case Hook::BlockJobComplete:
  case Hook::SetupSpecialSteps:
    return 0;
  case Hook::JobStart:
  case Hook::JobComplete:
    assert(job != nullptr && "job hooks take a job");
    job ? job->push(L) : lua_pushnil(L);
    if (h == Hook::JobStart)
      return 1;
    break;
  case Hook::StepPreinit:
  case Hook::StepInit:
  case Hook::StepPostfini:
    assert(step != nullptr && "step hooks take a step");
    step ? step->push(L) : lua_pushnil(L);
    break;
  }
  if (info == nullptr) {
    lua_pushnil(L);
    return 2;
  }
  if (auto r = push_msgpack(L, *info); !r) {
    const char *what = h == Hook::JobComplete ? "jobinfo" : "stepinfo";
    return Unexpected<CallError>{{CallError::Kind::BadArgument,
                                  fmt::format("{}: cannot decode: {}", what, r.error().message)}};
  }
  return 2;
}

} // namespace

Expected<HookReturn, CallError> Script::call(Hook h, const JobArgs *job, const StepArgs *step,
                                             const MsgpackBytes *info) {
  const LocaleGuard keep_locale;   // a hook's os.setlocale ends with the call
  const BrokenPipeIsAnError pipes; // a write to a gone io.popen helper: nil, "Broken pipe", 32
  lua_State *L = impl_->L;
  const int base = lua_gettop(L);
  auto error = [&](CallError::Kind kind, std::string message) {
    lua_settop(L, base);
    return Unexpected<CallError>{{kind, std::move(message)}};
  };
  lua_pushcfunction(L, l_traceback);
  push_global_raw(L, hook_function(h));
  if (lua_isnil(L, -1)) {
    lua_settop(L, base);
    return missing_hook_return(h);
  }
  if (lua_type(L, -1) != LUA_TFUNCTION)
    return error(CallError::Kind::LuaError, fmt::format("{}: {} is {}, not a function", impl_->path,
                                                        hook_function(h), describe_value(L, -1)));
  auto nargs = push_args(L, h, job, step, info);
  if (!nargs)
    return error(nargs.error().kind, nargs.error().message);
  if (lua_pcall(L, *nargs, LUA_MULTRET, base + 1) != LUA_OK)
    return error(CallError::Kind::LuaError, pop_message(L));
  auto r = parse_hook_return(L, h, lua_gettop(L) - (base + 1));
  lua_settop(L, base);
  if (!r)
    return Unexpected<CallError>{
        {CallError::Kind::BadReturn, fmt::format("{}: {}", impl_->path, r.error().message)}};
  return std::move(*r);
}

} // namespace switchlua
