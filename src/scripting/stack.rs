//! The Lua C API, behind one type: the functions rlockd writes as Lua C
//! functions (`redis.call` and its siblings, the hardened string and table
//! functions) and the reply conversion touch a Lua stack only through
//! [`Stack`], so the rules the C API leaves to its caller are stated, and
//! audited, here once.
//!
//! A `Stack` is made with `unsafe`, once per call of a C function (or of
//! the instruction hook). That is where the function takes on the rules
//! below, which neither Lua 5.1 (built without API checks) nor Rust's types
//! can check; its methods are then safe to call.
//!
//! 1. **An error skips frames.** Lua raises errors (a bad argument, out of
//!    memory, whatever a Lua function called from here raises) with
//!    `longjmp`, which runs no destructor and is undefined behaviour across
//!    a Rust frame that has one. So until the C function returns, its
//!    frames hold only borrows, plain values and memory Lua owns (a
//!    userdata on the stack) while a method that raises runs. Whatever must
//!    own memory lives outside them (the run's `CallScope`) and is borrowed.
//!    The methods that never raise say so; every other one may.
//! 2. **Room.** Lua gives a C function `LUA_MINSTACK` (20) free slots above
//!    its arguments, and does not check a push against them: a function
//!    that may hold more values at once makes room first, with
//!    [`Stack::ensure`] or [`Stack::check_stack`].
//! 3. **Indices.** A positive index or an upvalue index may name a slot past
//!    the top (it reads as none); a negative index must name a value the
//!    function has pushed and not popped, as 5.1 does not check it.
//! 4. **Borrowed bytes.** The bytes read from a string on the stack, and
//!    the scratch memory of a userdata, are Lua's, valid while the value
//!    stays in its slot (Lua's collector never moves an object). The
//!    function does not pop or replace a slot whose bytes it still uses; the
//!    lifetime `'l` these borrows carry is that of the whole call.

use std::ffi::CStr;
use std::marker::PhantomData;
use std::os::raw::c_int;

use mlua::ffi;

/// The state Lua passes a C function.
pub type State = ffi::lua_State;
/// What Lua passes a hook about the function it interrupted.
pub type Activation = ffi::lua_Debug;
/// A function Lua calls as a C function.
pub type CFunction = ffi::lua_CFunction;

/// A Lua value's type, as far as the callers tell types apart.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Number,
    String,
    Table,
    Function,
    Other,
}

/// The stack of one C function call; see the module's rules.
#[derive(Clone, Copy)]
pub struct Stack<'l> {
    state: *mut State,
    call: PhantomData<&'l State>,
}

/// A string being built in Lua's own buffer, on the stack (5.1's
/// `luaL_Buffer`), which points into itself: it stays in the frame of
/// [`Stack::build_string`], unmoved.
pub struct Buffer<'b> {
    raw: &'b mut ffi::luaL_Buffer,
}

impl<'l> Stack<'l> {
    /// # Safety
    /// `state` is the one Lua called the running C function (or hook) with,
    /// and that function keeps the module's rules for as long as it uses
    /// the `Stack` and what it lends.
    pub unsafe fn new(state: *mut State) -> Stack<'l> {
        Stack {
            state,
            call: PhantomData,
        }
    }

    /// The number of values on the stack. Never raises.
    pub fn top(self) -> c_int {
        // SAFETY: reads the state the holder vouched for.
        unsafe { ffi::lua_gettop(self.state) }
    }

    /// Pops or pads with nils to `n` values. Never raises.
    pub fn set_top(self, n: c_int) {
        // SAFETY: the holder pops no slot it still borrows (rule 4) and pads
        // within its room (rule 2).
        unsafe { ffi::lua_settop(self.state, n) }
    }

    /// Never raises.
    pub fn pop(self, n: c_int) {
        // SAFETY: as for `set_top`.
        unsafe { ffi::lua_pop(self.state, n) }
    }

    /// Never raises.
    pub fn kind(self, idx: c_int) -> Kind {
        // SAFETY: `idx` follows rule 3.
        match unsafe { ffi::lua_type(self.state, idx) } {
            ffi::LUA_TNUMBER => Kind::Number,
            ffi::LUA_TSTRING => Kind::String,
            ffi::LUA_TTABLE => Kind::Table,
            ffi::LUA_TFUNCTION => Kind::Function,
            _ => Kind::Other,
        }
    }

    /// Never raises.
    pub fn is_none_or_nil(self, idx: c_int) -> bool {
        // SAFETY: `idx` follows rule 3.
        unsafe { ffi::lua_isnoneornil(self.state, idx) != 0 }
    }

    /// Whether the value counts as true. Never raises.
    pub fn to_boolean(self, idx: c_int) -> bool {
        // SAFETY: `idx` follows rule 3.
        unsafe { ffi::lua_toboolean(self.state, idx) != 0 }
    }

    /// Whether the value is a string or a number. Never raises.
    pub fn is_string(self, idx: c_int) -> bool {
        // SAFETY: `idx` follows rule 3.
        unsafe { ffi::lua_isstring(self.state, idx) != 0 }
    }

    /// The value as a number, 0 when it is none. Never raises.
    pub fn to_number(self, idx: c_int) -> f64 {
        // SAFETY: `idx` follows rule 3; a string is converted into a
        // temporary, not in place.
        unsafe { ffi::lua_tonumber(self.state, idx) }
    }

    /// Never raises.
    pub fn to_integer(self, idx: c_int) -> i64 {
        // SAFETY: as for `to_number`.
        unsafe { ffi::lua_tointeger_(self.state, idx) as i64 }
    }

    /// A string's bytes, or a number's after turning it into a string in
    /// place (which may raise, out of memory); `None` for anything else.
    /// A string is read as it is, which never raises.
    pub fn to_bytes(self, idx: c_int) -> Option<&'l [u8]> {
        let mut len = 0usize;
        // SAFETY: `idx` follows rule 3. A non-null pointer is to the
        // string's `len` bytes, alive while it stays in its slot (rule 4).
        unsafe {
            let p = ffi::lua_tolstring(self.state, idx, &mut len);
            (!p.is_null()).then(|| std::slice::from_raw_parts(p.cast(), len))
        }
    }

    /// The name of the value's type, as error messages give it. Never
    /// raises.
    pub fn type_name(self, idx: c_int) -> &'static CStr {
        // SAFETY: `idx` follows rule 3; Lua's type names are static
        // NUL-terminated strings.
        unsafe { CStr::from_ptr(ffi::luaL_typename(self.state, idx)) }
    }

    /// Argument `arg`'s bytes (a number is turned into a string in place);
    /// raises the argument error otherwise.
    pub fn check_bytes(self, arg: c_int) -> &'l [u8] {
        let mut len = 0usize;
        // SAFETY: `luaL_checklstring` raises unless the argument is a
        // string or a number, and returns the string's bytes, alive while
        // the argument stays in its slot (rule 4).
        unsafe {
            let p = ffi::luaL_checklstring(self.state, arg, &mut len);
            std::slice::from_raw_parts(p.cast(), len)
        }
    }

    /// `luaL_checkint`: the integer argument narrowed to `int` as 5.1 does.
    pub fn check_int(self, arg: c_int) -> i64 {
        // SAFETY: raises for a bad argument, over frames that own nothing
        // (rule 1).
        unsafe { ffi::luaL_checkinteger(self.state, arg) as c_int as i64 }
    }

    /// An optional integer argument, at its full width.
    pub fn opt_integer(self, arg: c_int, default: i64) -> i64 {
        // SAFETY: as for `check_int`.
        unsafe { ffi::luaL_optinteger(self.state, arg, default as ffi::lua_Integer) as i64 }
    }

    /// `luaL_optint`: an optional integer argument narrowed to `int`.
    pub fn opt_int(self, arg: c_int, default: i64) -> i64 {
        self.opt_integer(arg, default) as c_int as i64
    }

    pub fn check_table(self, arg: c_int) {
        // SAFETY: as for `check_int`.
        unsafe { ffi::luaL_checktype(self.state, arg, ffi::LUA_TTABLE) }
    }

    /// Raises "bad argument #`arg` to '<function>' (`message`)".
    pub fn arg_error(self, arg: c_int, message: &CStr) -> ! {
        // SAFETY: raises over frames that own nothing (rule 1).
        unsafe { ffi::luaL_argerror(self.state, arg, message.as_ptr()) };
        unreachable!("luaL_argerror raises")
    }

    /// Raises `message` with the position of the Lua code that called the
    /// C function, as `luaL_error` does.
    pub fn error(self, message: &CStr) -> ! {
        self.error_around(message, c"", c"")
    }

    /// As [`Stack::error`], the message made of three parts (one is usually
    /// a name known only at run time).
    pub fn error_around(self, before: &CStr, name: &CStr, after: &CStr) -> ! {
        // SAFETY: three C strings for the three `%s`; raises over frames
        // that own nothing (rule 1).
        unsafe {
            ffi::luaL_error(
                self.state,
                c"%s%s%s".as_ptr(),
                before.as_ptr(),
                name.as_ptr(),
                after.as_ptr(),
            )
        };
        unreachable!("luaL_error raises")
    }

    /// Raises the value on top as the error.
    pub fn raise(self) -> ! {
        // SAFETY: raises over frames that own nothing (rule 1).
        unsafe { ffi::lua_error(self.state) }
    }

    /// Makes room for `n` more values, or raises "stack overflow (`what`)".
    pub fn ensure(self, n: c_int, what: &CStr) {
        // SAFETY: as for `check_int`.
        unsafe { ffi::luaL_checkstack(self.state, n, what.as_ptr()) }
    }

    /// Makes room for `n` more values; false when the stack cannot grow
    /// that far. Raises only when out of memory.
    pub fn check_stack(self, n: c_int) -> bool {
        // SAFETY: as for `check_int`.
        unsafe { ffi::lua_checkstack(self.state, n) != 0 }
    }

    // Pushes: each takes one slot of the holder's room (rule 2), and may
    // raise when out of memory.

    pub fn push_nil(self) {
        // SAFETY: rule 2.
        unsafe { ffi::lua_pushnil(self.state) }
    }

    pub fn push_bool(self, b: bool) {
        // SAFETY: rule 2.
        unsafe { ffi::lua_pushboolean(self.state, c_int::from(b)) }
    }

    pub fn push_number(self, n: f64) {
        // SAFETY: rule 2.
        unsafe { ffi::lua_pushnumber(self.state, n) }
    }

    pub fn push_integer(self, n: i64) {
        // SAFETY: rule 2.
        unsafe { ffi::lua_pushinteger(self.state, n as ffi::lua_Integer) }
    }

    /// Lua copies the bytes into a string of its own.
    pub fn push_bytes(self, bytes: &[u8]) {
        // SAFETY: rule 2; the slice is valid for its length.
        unsafe { ffi::lua_pushlstring_(self.state, bytes.as_ptr().cast(), bytes.len()) }
    }

    pub fn push_c_str(self, s: &CStr) {
        // SAFETY: rule 2; a NUL-terminated string.
        unsafe { ffi::lua_pushstring_(self.state, s.as_ptr()) }
    }

    /// A copy of the value at `idx`.
    pub fn push_value(self, idx: c_int) {
        // SAFETY: rules 2 and 3.
        unsafe { ffi::lua_pushvalue(self.state, idx) }
    }

    /// Pops the top `upvalues` values into a new closure of `function`.
    ///
    /// # Safety
    /// `function` keeps the module's rules whatever it is called with.
    pub unsafe fn push_closure(self, function: CFunction, upvalues: c_int) {
        // SAFETY: the caller vouches for `function`; the upvalues are
        // values this function pushed (rule 3).
        unsafe { ffi::lua_pushcclosure(self.state, function, upvalues) }
    }

    /// `bytes` repeated into a string of `total` bytes (a whole number of
    /// copies), pushed. Built in a userdata left below it: memory Lua owns,
    /// checked against the heap limit (raising out of memory) before any
    /// copying, as the result may be huge.
    pub fn push_repeated(self, bytes: &[u8], total: usize) {
        // SAFETY: two pushes (rule 2). The userdata has `total` bytes: the
        // first copy fills `bytes.len()` of them (at most `total`), and each
        // doubling copies from the filled part to just past it, at most up
        // to `total`, never overlapping. `bytes` is borrowed from a value
        // on the stack or from Rust, so the allocation cannot free it.
        unsafe {
            let buf = ffi::lua_newuserdata(self.state, total).cast::<u8>();
            let len = bytes.len().min(total);
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf, len);
            let mut filled = len;
            while filled < total {
                let chunk = filled.min(total - filled);
                std::ptr::copy_nonoverlapping(buf, buf.add(filled), chunk);
                filled += chunk;
            }
            ffi::lua_pushlstring_(self.state, buf.cast(), total);
        }
    }

    /// Zeroed scratch memory for `len` integers, in a userdata pushed on
    /// top: Lua owns it, so an error raised while it is in use leaks
    /// nothing. Valid until the userdata is popped (rule 4).
    pub fn push_scratch(self, len: usize) -> &'l mut [i64] {
        // SAFETY: one push (rule 2). The userdata has room for `len`
        // integers (for one at least, so a real block), aligned for `i64`
        // as Lua aligns every userdata, and is zeroed before it is lent.
        unsafe {
            let data =
                ffi::lua_newuserdata(self.state, len.max(1) * size_of::<i64>()).cast::<i64>();
            data.write_bytes(0, len);
            std::slice::from_raw_parts_mut(data, len)
        }
    }

    /// The stack index of the running C closure's upvalue `n`.
    pub fn upvalue(n: c_int) -> c_int {
        ffi::lua_upvalueindex(n)
    }

    /// Pops the top value into `idx`. Never raises.
    pub fn replace(self, idx: c_int) {
        // SAFETY: rule 3, and the holder replaces no slot it still borrows
        // (rule 4).
        unsafe { ffi::lua_replace(self.state, idx) }
    }

    /// Pushes a new table with room for `array` and `hash` entries.
    pub fn new_table(self, array: c_int, hash: c_int) {
        // SAFETY: rule 2.
        unsafe { ffi::lua_createtable(self.state, array, hash) }
    }

    /// `t[name] = v`, `t` at `idx`, `v` popped from the top. Runs the
    /// table's `__newindex`, if any, which may run any Lua code.
    pub fn set_field(self, idx: c_int, name: &CStr) {
        // SAFETY: rule 3; the value is on top.
        unsafe { ffi::lua_setfield(self.state, idx, name.as_ptr()) }
    }

    /// As [`Stack::set_field`] on the globals.
    pub fn set_global(self, name: &CStr) {
        self.set_field(ffi::LUA_GLOBALSINDEX, name);
    }

    /// `t[k]`, `t` at `idx`, `k` on top and replaced by the value. Runs the
    /// table's `__index`, if any.
    pub fn get_table(self, idx: c_int) {
        // SAFETY: rule 3; the key is on top.
        unsafe { ffi::lua_gettable_(self.state, idx) }
    }

    /// `t[k] = v` without metamethods, `t` at `idx`, `v` on top and `k`
    /// below it, both popped.
    pub fn raw_set(self, idx: c_int) {
        // SAFETY: rule 3; the key and value are on top.
        unsafe { ffi::lua_rawset(self.state, idx) }
    }

    /// Pushes `t[n]` without metamethods, `t` at `idx`. Never raises.
    pub fn raw_get_at(self, idx: c_int, n: c_int) {
        // SAFETY: rules 2 and 3.
        unsafe { ffi::lua_rawgeti_(self.state, idx, n) }
    }

    /// `t[n] = v` without metamethods, `t` at `idx`, `v` popped from the
    /// top.
    pub fn raw_set_at(self, idx: c_int, n: c_int) {
        // SAFETY: rule 3; the value is on top.
        unsafe { ffi::lua_rawseti_(self.state, idx, n) }
    }

    /// The length operator without metamethods (5.1 has none for tables).
    /// Never raises.
    pub fn raw_len(self, idx: c_int) -> usize {
        // SAFETY: rule 3.
        unsafe { ffi::lua_objlen(self.state, idx) }
    }

    /// One step of a walk over the table at `idx`: pops a key and pushes
    /// the next key and its value, or pushes nothing at the end. The walk
    /// starts from a nil and keeps each key as it was.
    pub fn next(self, idx: c_int) -> bool {
        // SAFETY: rules 2 and 3; the key is on top.
        unsafe { ffi::lua_next(self.state, idx) != 0 }
    }

    /// Calls the function below `nargs` arguments on top, leaving
    /// `nresults` results. Runs any Lua code.
    pub fn call(self, nargs: c_int, nresults: c_int) {
        // SAFETY: rule 3 for the function and its arguments, rule 2 for
        // the results.
        unsafe { ffi::lua_call(self.state, nargs, nresults) }
    }

    /// The chunk name and current line of the function that called the C
    /// function, if there is one. Never raises.
    pub fn caller_position(self) -> Option<(&'l CStr, c_int)> {
        // SAFETY: a zeroed `lua_Debug` is valid (integers, pointers,
        // bytes), and filled by `lua_getstack` for level 1, the function
        // that made the call, or left alone when there is none.
        unsafe {
            let mut ar: Activation = std::mem::zeroed();
            if ffi::lua_getstack(self.state, 1, &mut ar) == 0 {
                return None;
            }
            self.position(&mut ar)
        }
    }

    /// The chunk name and current line of the function a hook interrupted.
    /// Never raises.
    ///
    /// # Safety
    /// `ar` is the record Lua passed the running hook.
    pub unsafe fn interrupted_position(self, ar: *mut Activation) -> Option<(&'l CStr, c_int)> {
        // SAFETY: the caller vouches for `ar`.
        unsafe { self.position(ar) }
    }

    /// # Safety
    /// `ar` describes a function running on this stack.
    unsafe fn position(self, ar: *mut Activation) -> Option<(&'l CStr, c_int)> {
        // SAFETY: "Sl" fills `ar` without allocating or running Lua code;
        // `source` is then the function's NUL-terminated chunk name, which
        // the running function keeps alive.
        unsafe {
            if ffi::lua_getinfo(self.state, c"Sl".as_ptr(), ar) == 0 {
                return None;
            }
            Some((CStr::from_ptr((*ar).source), (*ar).currentline))
        }
    }

    /// Calls `hook` every `every` instructions from now on (setting it again
    /// restarts the count). Never raises.
    ///
    /// # Safety
    /// `hook` keeps the module's rules.
    pub unsafe fn set_count_hook(self, hook: ffi::lua_Hook, every: c_int) {
        // SAFETY: the caller vouches for `hook`; a state may set its hook
        // while it runs.
        unsafe { ffi::lua_sethook(self.state, Some(hook), ffi::LUA_MASKCOUNT, every) };
    }

    /// Runs `build` with a buffer in this frame and, when it succeeds,
    /// pushes the string built. The buffer uses the stack above what is
    /// there when it starts: `build` leaves it so, pushing only values it
    /// then adds with [`Buffer::add_value`].
    pub fn build_string<R, E>(
        self,
        build: impl FnOnce(&mut Buffer<'_>) -> Result<R, E>,
    ) -> Result<R, E> {
        // SAFETY: a zeroed `luaL_Buffer` (pointers, an integer and bytes:
        // zero is valid) is only a place for `luaL_buffinit` to fill; it
        // stays in this frame, unmoved, while `build` borrows it and until
        // `luaL_pushresult`, as 5.1's buffer points into itself.
        unsafe {
            let mut raw: ffi::luaL_Buffer = std::mem::zeroed();
            ffi::luaL_buffinit(self.state, &mut raw);
            let built = build(&mut Buffer { raw: &mut raw })?;
            ffi::luaL_pushresult(&mut raw);
            Ok(built)
        }
    }
}

impl Buffer<'_> {
    pub fn add_byte(&mut self, byte: u8) {
        // SAFETY: the buffer is initialised and in place (`build_string`).
        unsafe { ffi::luaL_addchar(self.raw, byte as std::os::raw::c_char) }
    }

    pub fn add_bytes(&mut self, bytes: &[u8]) {
        // SAFETY: as for `add_byte`; the slice is valid for its length.
        unsafe { ffi::luaL_addlstring(self.raw, bytes.as_ptr().cast(), bytes.len()) }
    }

    /// Pops the string or number on top into the buffer.
    pub fn add_value(&mut self) {
        // SAFETY: as for `add_byte`; the value was pushed above the
        // buffer's own use of the stack (`build_string`).
        unsafe { ffi::luaL_addvalue(self.raw) }
    }
}

#[cfg(test)]
mod tests {
    use std::os::raw::c_int;

    use mlua::Lua;

    use super::{CFunction, Kind, Stack, State};

    /// `script`'s result as text, with `f` as the global `f`.
    fn run(f: CFunction, script: &str) -> String {
        let lua = Lua::new();
        // SAFETY: the functions below keep the module's rules.
        let function = unsafe { lua.create_c_function(f) }.unwrap();
        lua.globals().set("f", function).unwrap();
        let result: mlua::LuaString = lua.load(script).eval().unwrap();
        String::from_utf8_lossy(&result.as_bytes()).into_owned()
    }

    /// `f(s, n)`: `s` repeated `n` times.
    unsafe extern "C-unwind" fn repeated(l: *mut State) -> c_int {
        // SAFETY: Lua called this with `l`; the frame owns nothing, and
        // argument 1 stays in place.
        let stack = unsafe { Stack::new(l) };
        let s = stack.check_bytes(1);
        stack.push_repeated(s, s.len() * stack.check_int(2) as usize);
        1
    }

    #[test]
    fn repeated_bytes_fill_the_string_exactly() {
        let script = "local bad = {} \
            for len = 1, 9 do for n = 1, 70 do \
              local s = string.sub('abcdefghi', 1, len) \
              if f(s, n) ~= string.rep(s, n) then bad[#bad + 1] = len .. 'x' .. n end \
            end end \
            return table.concat(bad, ',')";
        assert_eq!(run(repeated, script), "");
    }

    /// `f(s, n)`: `s|0s|1...s|n-1`, built in Lua's buffer.
    unsafe extern "C-unwind" fn joined(l: *mut State) -> c_int {
        // SAFETY: as for `repeated`; each integer is pushed and at once
        // taken into the buffer.
        let stack = unsafe { Stack::new(l) };
        let s = stack.check_bytes(1);
        let n = stack.check_int(2);
        let built: Result<(), ()> = stack.build_string(|b| {
            for i in 0..n {
                b.add_bytes(s);
                b.add_byte(b'|');
                stack.push_integer(i);
                b.add_value();
            }
            Ok(())
        });
        c_int::from(built.is_ok())
    }

    #[test]
    fn a_built_string_outgrows_the_buffer_intact() {
        let script = "local t = {} for i = 0, 2999 do t[#t + 1] = 'ab|' .. i end \
            return tostring(f('ab', 3000) == table.concat(t))";
        assert_eq!(run(joined, script), "true");
    }

    /// `f(n)`: whether `n` scratch integers come zeroed, and their sum
    /// once each holds its index.
    unsafe extern "C-unwind" fn scratch(l: *mut State) -> c_int {
        // SAFETY: as for `repeated`; the scratch userdata stays on top
        // until the function returns.
        let stack = unsafe { Stack::new(l) };
        let keys = stack.push_scratch(stack.check_int(1) as usize);
        let zeroed = keys.iter().all(|&k| k == 0);
        keys.iter_mut().zip(0..).for_each(|(k, i)| *k = i);
        stack.push_bool(zeroed);
        stack.push_integer(keys.iter().sum());
        2
    }

    #[test]
    fn scratch_memory_comes_zeroed_and_holds_what_is_written() {
        let script = "local z0, s0 = f(0) local z, s = f(1000) \
            return tostring(z0) .. s0 .. tostring(z) .. s";
        assert_eq!(run(scratch, script), "true0true499500");
    }

    /// `f(x, y)`: raises when `x` is true, else answers how `y` was read.
    unsafe extern "C-unwind" fn reads(l: *mut State) -> c_int {
        // SAFETY: as for `repeated`.
        let stack = unsafe { Stack::new(l) };
        if stack.to_boolean(1) {
            stack.error_around(c"bad ", stack.type_name(1), c" given");
        }
        let converted = stack.to_bytes(2).is_some();
        let kind = match stack.kind(2) {
            Kind::Number => c"number",
            Kind::String => c"string",
            Kind::Table => c"table",
            Kind::Function => c"function",
            Kind::Other => c"other",
        };
        stack.push_bool(converted);
        stack.push_c_str(kind);
        2
    }

    #[test]
    fn a_number_read_as_bytes_becomes_a_string_in_place() {
        let script = "local function show(...) local t = {} \
              for i = 1, select('#', ...) do t[i] = tostring((select(i, ...))) end \
              return table.concat(t, ' ') end \
            return show(f(false, 12)) .. '/' .. show(f(false, {})) .. '/' \
              .. show(pcall(f, true)) .. '/' .. show(f(nil, print))";
        assert_eq!(
            run(reads, script),
            "true string/false table/false bad boolean given/false function"
        );
    }

    /// `f()`: the line it was called from.
    unsafe extern "C-unwind" fn line(l: *mut State) -> c_int {
        // SAFETY: as for `repeated`.
        let stack = unsafe { Stack::new(l) };
        let (_, line) = stack.caller_position().unwrap();
        stack.push_integer(line as i64);
        1
    }

    #[test]
    fn the_caller_position_is_the_calling_line() {
        assert_eq!(run(line, "\n\nlocal at = f()\nreturn tostring(at)"), "3");
    }
}
