-- Builds the sandbox a script sees. Called once per Lua state with the
-- real globals table, the debug library (kept out of the sandbox) and the
-- context table shared with the host. Returns the script environment
-- and the function that runs a script.
local G, debug_getinfo, CTX = ...

local error, type, tostring, rawget, setmetatable = error, type, tostring, rawget, setmetatable
local raw_rawset, xpcall = rawset, xpcall
local table_concat = table.concat

-- Tables no script may change: every library and the global environment.
local READONLY = setmetatable({}, { __mode = "k" })

local function readonly_error()
  error("Attempt to modify a readonly table", 2)
end

local function protect(t)
  local proxy = setmetatable({}, {
    __index = t,
    __newindex = readonly_error,
    __metatable = false,
  })
  READONLY[proxy] = true
  READONLY[t] = true
  return proxy
end

-- redis.call and redis.pcall are the host's C functions.
local redis = G.redis

-- Errors raised as Redis error tables: the handler adds where they happened.
local function raise(message)
  error({ err = "ERR " .. message }, 0)
end

local raw_log, raw_sha1hex = redis.log, redis.sha1hex
function redis.log(level, ...)
  if select("#", ...) < 1 then
    raise("redis.log() requires two arguments or more.")
  end
  if type(level) ~= "number" or level < 0 or level > 3 then
    raise("Invalid debug level.")
  end
  raw_log(level, ...)
end

function redis.sha1hex(...)
  if select("#", ...) ~= 1 then
    raise("wrong number of arguments")
  end
  return raw_sha1hex((...))
end

-- A killed run's error may be caught, but never survives the catch: each
-- way of catching an error raises it again once the run is killed, so
-- SCRIPT KILL ends the script whatever it wraps its loop in.
local killed = CTX.killed
local function rethrow_if_killed(ok, ...)
  if not ok and killed() then
    error((...), 0)
  end
  return ok, ...
end

-- Redis's pcall hands back the message of a Redis error table, not the table.
local raw_pcall = pcall
local function pcall_result(ok, ...)
  if ok then
    return ok, ...
  end
  rethrow_if_killed(ok, ...)
  local e = ...
  if type(e) == "table" and type(e.err) == "string" then
    return false, e.err
  end
  -- An error raised by a library written in Rust is an object; Redis's
  -- C libraries raise strings.
  if type(e) == "userdata" then
    local text = tostring(e):gsub("^runtime error: ", ""):gsub("\nstack traceback:.*$", "")
    return false, text
  end
  return false, e
end
G.pcall = function(...)
  return pcall_result(raw_pcall(...))
end

-- When an error handler fails, Lua 5.1 calls it again on the new error
-- from inside the failed call, each time deeper in the C stack, up to
-- some 220 levels. A handler whose C frames are large (a failing
-- string.format: 9 KiB each) overflows a 2 MiB thread stack before that,
-- and the process aborts. The same handler calls, made in a loop, give
-- the same answers with the stack flat (found by fuzz/eval). As in Lua,
-- handlers running inside handlers share one budget of calls: each level
-- with its own would make nested failing handlers exponential. The
-- script's handler does not run for a killed run (it might loop).
local HANDLER_CALLS = 200
local handler_calls_left, handler_depth = 0, 0
local raw_xpcall = xpcall
G.xpcall = function(f, handler)
  return rethrow_if_killed(raw_xpcall(f, function(e)
    if handler_depth == 0 then
      handler_calls_left = HANDLER_CALLS
    end
    handler_depth = handler_depth + 1
    local result = "error in error handling"
    while handler_calls_left > 0 do
      if killed() then
        result = e
        break
      end
      handler_calls_left = handler_calls_left - 1
      local ok, value = raw_pcall(handler, e)
      if ok then
        result = value
        break
      end
      e = value
    end
    handler_depth = handler_depth - 1
    return result
  end))
end

local raw_resume = G.coroutine.resume
G.coroutine.resume = function(...)
  return rethrow_if_killed(raw_resume(...))
end

local function error_table(text)
  -- "-CODE message" keeps its code; anything else becomes an ERR.
  if text:sub(1, 1) == "-" then
    local space = text:find(" ", 1, true)
    if space then
      return { err = text:sub(2, space - 1) .. " " .. text:sub(space + 1) }
    end
    return { err = "ERR " .. text:sub(2) }
  end
  return { err = "ERR " .. text }
end

function redis.error_reply(text)
  if type(text) ~= "string" then
    error("wrong number or type of arguments", 2)
  end
  return error_table("-" .. (text:sub(1, 1) == "-" and text:sub(2) or text))
end

function redis.status_reply(text)
  if type(text) ~= "string" then
    error("wrong number or type of arguments", 2)
  end
  return { ok = text }
end

function redis.setresp(version)
  if version ~= 2 and version ~= 3 then
    error("RESP version must be 2 or 3.", 2)
  end
  CTX.set_resp(version)
end

function redis.set_repl(flags)
  if type(flags) ~= "number" or flags < 0 or flags > 3 then
    error("Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.", 2)
  end
end

function redis.replicate_commands()
  return true
end

function redis.breakpoint()
  return false
end

function redis.debug() end

redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL = 0, 1, 2, 2, 3
redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING = 0, 1, 2, 3

-- The compiler's own message for a script or library that does not
-- compile, as bytes.
function CTX.compile_error(source, chunk_name)
  local _, err = G.loadstring(source, chunk_name)
  return err
end

-- Chunks of source only: loading bytecode could break out of the sandbox.
-- Loaded functions run in the sandbox environment, not the real globals.
local raw_loadstring, raw_load, setfenv = G.loadstring, G.load, G.setfenv
local ENV

local relevel = CTX.relevel

G.loadstring = function(s, name)
  if type(s) == "string" and s:byte(1) == 27 then
    return nil, "loadstring: bytecode is not allowed"
  end
  -- Nested [[ in a level-0 long bracket is plain content, as in Redis
  -- since CVE-2025-46819; the chunk keeps its original text as its name.
  if type(s) == "string" then
    if name == nil then
      name = s
    end
    s = relevel(s)
  end
  local f, err = raw_loadstring(s, name)
  if f then
    setfenv(f, ENV)
  end
  return f, err
end

-- Lua 5.1's parser does not anchor the chunk name it makes, so a
-- collection while it compiles could free it (CVE-2025-49844). Every load
-- therefore names its chunk with a string that is already alive: the
-- source itself or the caller's name for loadstring, this constant (held
-- by the closure below) for an unnamed load, and "@user_script" (held by
-- script_frame) for scripts.
local UNNAMED_LOAD = "=(load)"

G.load = function(reader, name)
  if name == nil then
    name = UNNAMED_LOAD
  end
  -- The whole source is read first, so that it can be relevelled as
  -- loadstring's is; the parser then gets it as one piece.
  local done = false
  local function guarded()
    if done then
      return nil
    end
    done = true
    local pieces = {}
    while true do
      local piece = reader()
      if piece == nil or piece == "" then
        break
      end
      local kind = type(piece)
      if kind ~= "string" and kind ~= "number" then
        return piece
      end
      if #pieces == 0 and kind == "string" and piece:byte(1) == 27 then
        error("load: bytecode is not allowed")
      end
      pieces[#pieces + 1] = piece
    end
    return relevel(table_concat(pieces))
  end
  local f, err = raw_load(guarded, name)
  if f then
    setfenv(f, ENV)
  end
  return f, err
end

G.rawset = function(t, k, v)
  if READONLY[t] then
    error("Attempt to modify a readonly table", 0)
  end
  return raw_rawset(t, k, v)
end

G.setmetatable = function(t, mt)
  if READONLY[t] then
    error("Attempt to modify a readonly table", 0)
  end
  return setmetatable(t, mt)
end

-- What Redis 7.0 leaves out of the script environment.
for _, name in ipairs({ "setfenv", "getfenv", "dofile", "loadfile", "require", "module",
                        "print", "newproxy", "os", "io", "debug", "package" }) do
  G[name] = nil
end

for _, lib in ipairs({ "string", "table", "math", "coroutine", "redis", "cjson", "bit",
                       "struct", "cmsgpack" }) do
  if G[lib] then
    G[lib] = protect(G[lib])
  end
end

-- Strings index the protected string library, so `("x"):rep(2)` works and
-- the string metatable cannot be changed either.
local string_meta = getmetatable("")
string_meta.__index = G.string
string_meta.__metatable = protect(string_meta)

-- A script reads a global through ENV straight from G's own table, with
-- no function call on the way; only a global that does not exist reaches
-- G's fallback. The prelude is done reading globals that may be missing.
setmetatable(G, {
  __index = function(_, name)
    error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
  end,
  __metatable = false,
})
-- getmetatable(_G) shows an empty read-only table: changing it fails with
-- Redis's error, and it does not lead to G itself.
ENV = setmetatable({}, {
  __index = G,
  __newindex = readonly_error,
  __metatable = protect({}),
})
READONLY[ENV] = true
G._G = ENV

-- Errors become Redis error tables carrying where in the script they
-- happened: the innermost frame of the script itself, since sandbox
-- helpers written in Lua may sit between it and the error.
local function script_frame()
  local level = 3
  while true do
    local info = debug_getinfo(level, "Sl")
    if not info then
      return nil
    end
    if info.source == "@user_script" or info.source == "@user_function" then
      return info
    end
    level = level + 1
  end
end

local function handler(err)
  local where = script_frame()
  if type(err) ~= "table" then
    err = { err = "ERR " .. tostring(err) }
  end
  if where and err.source == nil then
    err.source = where.source
    err.line = where.currentline
  end
  return err
end

local set_args = CTX.set_args
local function run(f)
  set_args()
  -- A kill may have unwound a handler loop of the last run.
  handler_depth = 0
  return xpcall(f, handler)
end

-- Functions (FUNCTION LOAD, FCALL). Every library's code runs in LIB_ENV.
-- While it loads, its globals are only `redis`, and that offers only
-- register_function, log and the version; once loaded, its functions see
-- the same globals as scripts, less KEYS and ARGV: they get keys and
-- arguments as parameters.
local loading, registered = false, nil

local function nonexistent(name, level)
  error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", level)
end

local function strict(t)
  return setmetatable(t, {
    __index = function(_, name)
      nonexistent(name, 3)
    end,
    __newindex = readonly_error,
    __metatable = false,
  })
end

local function register_error(text)
  error({ err = "ERR " .. text }, 0)
end

local function name_of(value)
  local kind = type(value)
  if kind == "string" or kind == "number" then
    return tostring(value)
  end
  return nil
end

local function read_flags(list)
  local names = {}
  local i = 1
  while true do
    local flag = list[i]
    if flag == nil then
      return names
    end
    if type(flag) ~= "string" and type(flag) ~= "number" then
      register_error("unknown flag given")
    end
    flag = tostring(flag):lower()
    if not CTX.known_flags[flag] then
      register_error("unknown flag given")
    end
    names[#names + 1] = flag
    i = i + 1
  end
end

local function register_function(...)
  -- A function that kept `redis` from its library's loading cannot
  -- register more once the library is loaded.
  if not loading then
    register_error("redis.register_function can only be called on FUNCTION LOAD command")
  end
  local count = select("#", ...)
  if count < 1 or count > 2 then
    register_error("wrong number of arguments to redis.register_function")
  end
  local name, callback, flags, description
  if count == 2 then
    local first, second = ...
    name = name_of(first)
    if not name then
      register_error("first argument to redis.register_function must be a string")
    end
    if type(second) ~= "function" then
      register_error("second argument to redis.register_function must be a function")
    end
    callback, flags = second, {}
  else
    local args = ...
    if type(args) ~= "table" then
      register_error("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).")
    end
    for key, value in next, args do
      if type(key) ~= "string" and type(key) ~= "number" then
        register_error("named argument key given to redis.register_function is not a string")
      end
      key = tostring(key):lower()
      if key == "function_name" then
        name = name_of(value)
        if not name then
          register_error("function_name argument given to redis.register_function must be a string")
        end
      elseif key == "description" then
        description = name_of(value)
        if not description then
          register_error("description argument given to redis.register_function must be a string")
        end
      elseif key == "callback" then
        if type(value) ~= "function" then
          register_error("callback argument given to redis.register_function must be a function")
        end
        callback = value
      elseif key == "flags" then
        if type(value) ~= "table" then
          register_error("flags argument to redis.register_function must be a table representing function flags")
        end
        flags = read_flags(value)
      else
        register_error("unknown argument given to redis.register_function")
      end
    end
    if not name then
      register_error("redis.register_function must get a function name argument")
    end
    if not callback then
      register_error("redis.register_function must get a callback argument")
    end
  end
  if not CTX.valid_name(name) then
    register_error(CTX.name_rule)
  end
  for _, f in ipairs(registered) do
    if f.name == name then
      register_error("Function already exists in the library")
    end
  end
  registered[#registered + 1] = {
    name = name, callback = callback, flags = flags or {}, description = description,
  }
end

local LOAD_GLOBALS = {
  redis = strict({
    register_function = register_function,
    log = redis.log,
    LOG_DEBUG = redis.LOG_DEBUG,
    LOG_VERBOSE = redis.LOG_VERBOSE,
    LOG_NOTICE = redis.LOG_NOTICE,
    LOG_WARNING = redis.LOG_WARNING,
    REDIS_VERSION = redis.REDIS_VERSION,
    REDIS_VERSION_NUM = redis.REDIS_VERSION_NUM,
  }),
}

local LIB_ENV = setmetatable({}, {
  __index = function(_, name)
    local value
    if loading then
      value = rawget(LOAD_GLOBALS, name)
    elseif name ~= "KEYS" and name ~= "ARGV" then
      value = rawget(G, name)
    end
    if value == nil then
      nonexistent(name, 3)
    end
    return value
  end,
  __newindex = readonly_error,
  __metatable = false,
})
READONLY[LIB_ENV] = true
CTX.lib_env = LIB_ENV

-- Runs a library's compiled code. Answers true and the functions it
-- registered, or false and the error's text.
function CTX.load_library(code)
  set_args()
  handler_depth = 0
  loading, registered = true, {}
  local ok, err = xpcall(code, handler)
  loading = false
  local functions = registered
  registered = nil
  if ok then
    return true, functions
  end
  if type(err) == "table" and type(err.err) == "string" then
    return false, err.err
  end
  return false, "ERR " .. tostring(err)
end

-- Runs one function with its keys and arguments.
local function run_function(f)
  set_args()
  handler_depth = 0
  local keys, args = rawget(G, "KEYS"), rawget(G, "ARGV")
  return xpcall(function()
    return f(keys, args)
  end, handler)
end

return ENV, run, run_function
