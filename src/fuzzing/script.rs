//! Lua scripts written from fuzz bytes: each byte picks the next
//! production of a small grammar of statements and expressions that mixes
//! the sandbox's libraries and `redis.call`. Every input is a valid choice
//! sequence, and running out of bytes picks the simplest productions, so
//! every input gives a script that ends.
//!
//! An input starting with `#` is the script itself, so regression cases
//! and hand-written seeds can sit in the corpus as readable Lua.
//!
//! Loops the script writes run a bounded number of times, so that a script
//! ends in milliseconds rather than at the harness's SCRIPT KILL. The library calls get
//! hostile arguments too (huge ranges and counts, patterns of a hundred
//! thousand items, deep nesting), which the sandbox must refuse quickly.

use crate::command::REGISTRY;

/// Deepest nesting of blocks and expressions.
const MAX_DEPTH: usize = 4;
/// A script stops growing past this many bytes.
const MAX_LEN: usize = 8 * 1024;

/// The Lua source `data` stands for.
pub fn generate(data: &[u8]) -> String {
    if let Some(source) = data.strip_prefix(b"#") {
        return String::from_utf8_lossy(source).into_owned();
    }
    let mut g = Gen {
        data,
        out: String::from("local v1, v2, v3, v4 = 1, 'x', {}, nil\n"),
        depth: 0,
    };
    g.block();
    g.out.push_str("return ");
    g.expr();
    g.out.push('\n');
    g.out
}

const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "3",
    "7",
    "10",
    "0.5",
    "-2.5",
    "1e308",
    "-1e308",
    "2^31",
    "2^53",
    "-2^63",
    "2^63",
    "1/0",
    "-1/0",
    "0/0",
    "255",
    "65536",
    "4294967295",
    "-0",
];
const STRINGS: &[&str] = &[
    "''",
    "'a'",
    "'x'",
    "'hello world'",
    "'42'",
    "'-7'",
    "'3.5'",
    "'inf'",
    "'nan'",
    "'\\0'",
    "'\\255\\254'",
    "'a,b,,c'",
    "'{\"a\":[1,2,{\"b\":null}]}'",
    "'[1,2,3]'",
    "'[[[[]]]]'",
    "'{}'",
    "'\\147\\1\\2\\3'",
    "'\\129\\161a\\1'",
    "'%'",
    "'%d'",
    "'(x)'",
    "'OK'",
    "'ERR'",
    "'key'",
    "'{k}1'",
    "'{k}2'",
    "'{k}3'",
];
const PATTERNS: &[&str] = &[
    "'a'",
    "'%a+'",
    "'(%d+)'",
    "'[a-z]*'",
    "'.-'",
    "'%b()'",
    "'%f[%w]%w+'",
    "'a?b?c?d?e?'",
    "'^(.-)$'",
    "'(a)(b)(c)'",
    "'%s*(.-)%s*$'",
    "'[^,]+'",
    "'()'",
    "'.'",
    "'x*'",
    "'%'",
    "'['",
    "'(()'",
    "'%1'",
    "'[%a-]'",
    "'(.)%1'",
    "'$'",
    "'^'",
];
/// Counts and positions, from ordinary to hostile.
const COUNTS: &[&str] = &[
    "0", "1", "3", "-1", "100", "-2^31", "2^31 - 1", "2^31", "1e9", "1e10", "-1e10", "2^53", "0/0",
    "1/0",
];
/// Patterns built at run time, too large or too deep for the fixed list.
const BIG_PATTERNS: &[&str] = &[
    "string.rep('a?', 1e5)",
    "string.rep('(', 300)",
    "string.rep('%f[%w]', 1e4)",
    "string.rep('.-', 5e4) .. 'x'",
    "string.rep('[a', 1000)",
    "string.rep('%b()', 1e4)",
];
/// Nested data for the converters and the reply encoder.
const DEEP: &[&str] = &[
    "(function() local t = {} for i = 1, 1000 do t = {t} end return t end)()",
    "(function() local t = {} for i = 1, 10 do t = {t, t} end return t end)()",
    "cjson.decode(string.rep('[', 1000) .. string.rep(']', 1000))",
    "cmsgpack.unpack(string.rep('\\145', 1000) .. '\\1')",
    "(function() local t = {} t[1] = t return t end)()",
    "(function() local t = {} for i = 1, 300 do t = {ok = t} end return t end)()",
];
const FORMATS: &[&str] = &[
    "'%d'", "'%5.2f'", "'%s-%s'", "'%q'", "'%x'", "'%c'", "'%g'", "'%10s'", "'%-5d|'", "'%%'",
    "'%i'", "'%o'", "'%e'", "'%u'", "'%'", "'%z'",
];
const STRUCT_FORMATS: &[&str] = &[
    "'>I4'",
    "'<i8'",
    "'HHb'",
    "'s'",
    "'c3'",
    "'c0'",
    "'d'",
    "'f'",
    "'!4 i2 i4'",
    "'x'",
    "'>l<L'",
    "'B'",
    "'i3'",
    "'c'",
    "'I17'",
];
/// Commands a script calls most often; any other one is picked from the
/// whole table too.
const COMMANDS: &[&str] = &[
    "set",
    "get",
    "del",
    "incr",
    "hset",
    "hget",
    "hgetall",
    "hincrby",
    "lpush",
    "rpop",
    "lrange",
    "zadd",
    "zrange",
    "expire",
    "pexpire",
    "pttl",
    "exists",
    "publish",
    "eval",
    "type",
    "keys",
    "scan",
    "mget",
    "mset",
    "getdel",
    "hdel",
    "lmove",
    "zrangebyscore",
];
const ARGS: &[&str] = &[
    "KEYS[1]",
    "KEYS[2]",
    "'{k}3'",
    "ARGV[1]",
    "ARGV[2]",
    "'EX'",
    "'PX'",
    "'NX'",
    "'XX'",
    "'GET'",
    "'KEEPTTL'",
    "'WITHSCORES'",
    "'LIMIT'",
    "'BYSCORE'",
    "'REV'",
    "'-inf'",
    "'+inf'",
    "'(1'",
    "'LEFT'",
    "'RIGHT'",
    "'MATCH'",
    "'COUNT'",
    "'*'",
    "'f'",
    "'0'",
    "'-1'",
    "'100'",
];

struct Gen<'a> {
    data: &'a [u8],
    out: String,
    depth: usize,
}

impl Gen<'_> {
    /// The next choice among `n`; 0, the simplest, once the bytes run out.
    fn pick(&mut self, n: usize) -> usize {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b as usize % n
            }
            None => 0,
        }
    }

    fn one_of(&mut self, list: &[&str]) {
        let i = self.pick(list.len());
        self.out.push_str(list[i]);
    }

    fn small(&mut self, max: usize) -> usize {
        self.pick(max + 1)
    }

    fn exhausted(&self) -> bool {
        self.data.is_empty() || self.out.len() > MAX_LEN
    }

    fn nested(&mut self, f: impl FnOnce(&mut Self)) {
        self.depth += 1;
        f(self);
        self.depth -= 1;
    }

    fn block(&mut self) {
        if self.depth >= MAX_DEPTH {
            return;
        }
        let count = self.pick(6);
        self.nested(|g| {
            for _ in 0..count {
                if g.exhausted() {
                    break;
                }
                g.statement();
                g.out.push('\n');
            }
        });
    }

    fn var(&mut self) {
        self.one_of(&["v1", "v2", "v3", "v4"]);
    }

    fn statement(&mut self) {
        match self.pick(14) {
            0 => {
                self.var();
                self.out.push_str(" = ");
                self.expr();
            }
            1 => {
                self.out.push_str("if ");
                self.expr();
                self.out.push_str(" then\n");
                self.block();
                self.out.push_str("else\n");
                self.block();
                self.out.push_str("end");
            }
            2 => {
                let n = self.small(20);
                self.out.push_str(&format!("for i = 1, {n} do\n"));
                self.block();
                self.out.push_str("end");
            }
            3 => {
                self.out.push_str("pcall(function()\n");
                self.block();
                self.out.push_str("end)");
            }
            4 => {
                self.out.push_str("local _ = ");
                self.expr();
            }
            5 => {
                self.out
                    .push_str("if type(v3) == 'table' then pcall(table.insert, v3, ");
                if self.pick(2) == 1 {
                    self.one_of(COUNTS);
                    self.out.push_str(", ");
                }
                self.expr();
                self.out.push_str(") end");
            }
            6 => {
                self.out
                    .push_str("do local co = coroutine.wrap(function(a)\n");
                self.block();
                self.out.push_str("coroutine.yield(");
                self.expr();
                self.out.push_str(")\n");
                self.block();
                self.out.push_str("end) pcall(co, ");
                self.expr();
                self.out.push_str(") pcall(co) pcall(co) end");
            }
            7 => {
                self.out.push_str("pcall(error, ");
                self.expr();
                self.out.push(')');
            }
            8 => {
                self.out.push_str("error(");
                self.expr();
                self.out.push(')');
            }
            9 => {
                self.out.push_str("do return ");
                self.expr();
                self.out.push_str(" end");
            }
            10 => {
                self.out.push_str("for w in string.gmatch(tostring(");
                self.expr();
                self.out.push_str("), ");
                self.pattern();
                self.out.push_str(") do\n");
                self.block();
                self.out.push_str("end");
            }
            11 => {
                self.out.push_str("xpcall(function()\n");
                self.block();
                self.out.push_str("end, function(e) return ");
                self.expr();
                self.out.push_str(" end)");
            }
            12 => {
                self.out.push_str("redis.setresp(");
                self.one_of(&["2", "3", "4", "'x'"]);
                self.out.push(')');
            }
            _ => {
                let n = self.small(10);
                self.out
                    .push_str(&format!("local n = 0 while n < {n} do n = n + 1\n"));
                self.block();
                self.out.push_str("end");
            }
        }
    }

    fn args(&mut self, max: usize) {
        let n = self.small(max);
        for i in 0..n {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.expr();
        }
    }

    /// Arguments after a first one.
    fn more_args(&mut self, max: usize) {
        for _ in 0..self.small(max) {
            self.out.push_str(", ");
            self.expr();
        }
    }

    fn expr(&mut self) {
        if self.depth >= MAX_DEPTH || self.exhausted() {
            self.one_of(NUMBERS);
            return;
        }
        self.nested(Self::expr_at_depth);
    }

    fn call(&mut self, name: &str, f: impl FnOnce(&mut Self)) {
        self.out.push_str(name);
        self.out.push('(');
        f(self);
        self.out.push(')');
    }

    fn expr_at_depth(&mut self) {
        match self.pick(40) {
            0 => self.one_of(NUMBERS),
            1 => self.one_of(STRINGS),
            2 => self.var(),
            3 => self.one_of(&["KEYS[1]", "ARGV[1]", "ARGV[2]", "#KEYS", "i", "nil", "true"]),
            4 => {
                self.out.push('{');
                self.args(4);
                self.out.push('}');
            }
            5 => {
                self.out.push_str("{a = ");
                self.expr();
                self.out.push_str(", [");
                self.expr_or_key();
                self.out.push_str("] = ");
                self.expr();
                self.out.push('}');
            }
            6 => {
                self.out.push('(');
                self.expr();
                self.one_of(&[
                    " .. ", " + ", " - ", " * ", " / ", " % ", " ^ ", " == ", " < ", " <= ",
                    " and ", " or ",
                ]);
                self.expr();
                self.out.push(')');
            }
            7 => {
                // Parenthesised: `-` before a negative number would open a comment.
                self.one_of(&["#(", "not (", "-("]);
                self.expr();
                self.out.push(')');
            }
            8 => self.call("tostring", Self::expr),
            9 => self.call("tonumber", Self::expr),
            10 => self.call("type", Self::expr),
            11 => self.call("string.find", |g| g.pattern_args(true)),
            12 => self.call("string.match", |g| g.pattern_args(false)),
            13 => self.call("string.gsub", |g| {
                g.string_arg();
                g.out.push_str(", ");
                g.pattern();
                g.out.push_str(", ");
                match g.pick(4) {
                    0 => g.one_of(STRINGS),
                    1 => g.one_of(&["'%0%1'", "'%2'", "'%%'", "'%'"]),
                    2 => g.out.push_str("{a = 'b', x = 1}"),
                    _ => g.function_of_one(),
                }
                g.out.push_str(", ");
                g.one_of(NUMBERS);
            }),
            14 => self.call("string.rep", |g| {
                g.one_of(STRINGS);
                g.out.push_str(", ");
                g.one_of(COUNTS);
                if g.pick(2) == 1 {
                    g.out.push_str(", ");
                    g.one_of(STRINGS);
                }
            }),
            15 => self.call("string.format", |g| {
                g.one_of(FORMATS);
                g.more_args(3);
            }),
            16 => self.call("string.sub", |g| {
                g.string_arg();
                g.out.push_str(", ");
                g.one_of(NUMBERS);
                g.out.push_str(", ");
                g.one_of(NUMBERS);
            }),
            17 => self.call("string.byte", |g| {
                g.string_arg();
                g.out.push_str(", ");
                g.one_of(&["1", "-1", "0", "2", "100"]);
                g.out.push_str(", ");
                g.one_of(&["1", "-1", "0", "5", "10"]);
            }),
            18 => {
                self.one_of(&[
                    "string.upper",
                    "string.lower",
                    "string.len",
                    "string.reverse",
                    "string.char",
                ]);
                self.out.push('(');
                self.expr();
                self.out.push(')');
            }
            19 => self.call("table.concat", |g| {
                g.table_arg();
                g.out.push_str(", ");
                g.one_of(&["','", "''", "1", "{}"]);
                g.out.push_str(", ");
                g.one_of(COUNTS);
                g.out.push_str(", ");
                g.one_of(COUNTS);
            }),
            20 => self.call("unpack", |g| {
                g.table_arg();
                g.out.push_str(", ");
                g.one_of(COUNTS);
                g.out.push_str(", ");
                g.one_of(COUNTS);
            }),
            21 => self.call("pcall", |g| {
                g.out.push_str("table.sort, ");
                g.table_arg();
                if g.pick(2) == 1 {
                    g.out.push_str(", function(a, b) return ");
                    g.expr();
                    g.out.push_str(" end");
                }
            }),
            22 => self.call("pcall", |g| {
                g.out.push_str("table.remove, ");
                g.table_arg();
                g.out.push_str(", ");
                g.one_of(NUMBERS);
            }),
            23 => self.call("cjson.encode", Self::expr),
            24 => self.call("cjson.decode", Self::string_arg),
            25 => self.call("cmsgpack.pack", |g| g.args(3)),
            26 => self.call("cmsgpack.unpack", Self::string_arg),
            27 => self.call("struct.pack", |g| {
                g.one_of(STRUCT_FORMATS);
                g.more_args(3);
            }),
            28 => self.call("struct.unpack", |g| {
                g.one_of(STRUCT_FORMATS);
                g.out.push_str(", ");
                g.string_arg();
            }),
            29 => {
                self.one_of(&[
                    "bit.band",
                    "bit.bor",
                    "bit.bxor",
                    "bit.lshift",
                    "bit.rshift",
                    "bit.arshift",
                    "bit.rol",
                    "bit.ror",
                    "bit.tohex",
                    "bit.bnot",
                    "bit.tobit",
                    "bit.bswap",
                ]);
                self.out.push('(');
                self.args(3);
                self.out.push(')');
            }
            30 | 31 => self.redis_call(),
            32 => self.call("redis.sha1hex", Self::expr),
            33 => {
                self.one_of(&["redis.status_reply", "redis.error_reply"]);
                self.out.push('(');
                self.expr();
                self.out.push(')');
            }
            34 => {
                self.one_of(&[
                    "math.floor",
                    "math.abs",
                    "math.sqrt",
                    "math.max",
                    "math.fmod",
                ]);
                self.out.push('(');
                self.args(2);
                self.out.push(')');
            }
            35 => self.call("select", |g| {
                g.one_of(&["'#'", "1", "2", "-1"]);
                g.more_args(3);
            }),
            36 => {
                self.out.push_str("(function(...) ");
                self.block();
                self.out.push_str(" return ... end)(");
                self.args(2);
                self.out.push(')');
            }
            37 => self.call("pcall", |g| {
                g.function_of_one();
                g.out.push_str(", ");
                g.expr();
            }),
            38 if self.pick(2) == 0 => self.one_of(DEEP),
            38 => {
                self.out.push_str("setmetatable({}, {__index = ");
                self.function_of_one();
                self.out.push_str("})[");
                self.expr_or_key();
                self.out.push(']');
            }
            _ => {
                self.out.push('(');
                self.expr();
                self.out.push_str(")[");
                self.expr_or_key();
                self.out.push(']');
            }
        }
    }

    fn expr_or_key(&mut self) {
        match self.pick(3) {
            0 => self.one_of(&["1", "2", "'a'", "'ok'", "'err'"]),
            _ => self.expr(),
        }
    }

    fn string_arg(&mut self) {
        self.call("tostring", Self::expr);
    }

    fn table_arg(&mut self) {
        match self.pick(3) {
            0 => self.out.push_str("v3"),
            1 => {
                self.out.push('{');
                self.args(6);
                self.out.push('}');
            }
            _ => {
                self.out.push_str("{redis.pcall(");
                self.command_line();
                self.out.push_str(")}");
            }
        }
    }

    fn function_of_one(&mut self) {
        self.out.push_str("function(a, b) ");
        self.block();
        self.out.push_str(" return ");
        self.expr();
        self.out.push_str(" end");
    }

    fn pattern(&mut self) {
        match self.pick(8) {
            0 => self.one_of(BIG_PATTERNS),
            _ => self.one_of(PATTERNS),
        }
    }

    fn pattern_args(&mut self, with_plain: bool) {
        self.string_arg();
        self.out.push_str(", ");
        self.pattern();
        self.out.push_str(", ");
        self.one_of(&["1", "-1", "0", "3", "100"]);
        if with_plain {
            self.out.push_str(", ");
            self.one_of(&["true", "false", "nil"]);
        }
    }

    fn redis_call(&mut self) {
        self.one_of(&["redis.pcall", "redis.call"]);
        self.out.push('(');
        self.command_line();
        self.out.push(')');
    }

    fn command_line(&mut self) {
        if self.pick(4) == 0 {
            let specs = &REGISTRY.specs;
            let spec = specs[self.pick(specs.len())];
            self.out.push_str(&format!("'{}'", spec.name));
        } else {
            self.out.push('\'');
            self.one_of(COMMANDS);
            self.out.push('\'');
        }
        let n = self.small(5);
        for _ in 0..n {
            self.out.push_str(", ");
            if self.pick(3) == 0 {
                self.expr();
            } else {
                self.one_of(ARGS);
            }
        }
    }
}
