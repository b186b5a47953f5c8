//! The first line of a script or library: `#!lua flags=no-writes,...` for
//! EVAL (Redis 7.0's script flags), `#!lua name=mylib` for FUNCTION LOAD.

use crate::error::CmdError;

/// Script flags, from an EVAL shebang or `redis.register_function`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScriptFlags(u8);

impl ScriptFlags {
    pub const NO_WRITES: ScriptFlags = ScriptFlags(1);
    pub const ALLOW_OOM: ScriptFlags = ScriptFlags(1 << 1);
    pub const ALLOW_STALE: ScriptFlags = ScriptFlags(1 << 2);
    pub const NO_CLUSTER: ScriptFlags = ScriptFlags(1 << 3);
    pub const ALLOW_CROSS_SLOT: ScriptFlags = ScriptFlags(1 << 4);

    /// Every flag with its name, in the order FUNCTION LIST shows them.
    pub const NAMED: [(ScriptFlags, &'static str); 5] = [
        (ScriptFlags::NO_WRITES, "no-writes"),
        (ScriptFlags::ALLOW_OOM, "allow-oom"),
        (ScriptFlags::ALLOW_STALE, "allow-stale"),
        (ScriptFlags::NO_CLUSTER, "no-cluster"),
        (ScriptFlags::ALLOW_CROSS_SLOT, "allow-cross-slot-keys"),
    ];

    pub fn named(name: &str) -> Option<ScriptFlags> {
        Self::NAMED
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(f, _)| *f)
    }

    pub fn has(self, flag: ScriptFlags) -> bool {
        self.0 & flag.0 != 0
    }

    pub fn with(self, flag: ScriptFlags) -> ScriptFlags {
        ScriptFlags(self.0 | flag.0)
    }

    pub fn names(self) -> impl Iterator<Item = &'static str> {
        Self::NAMED
            .into_iter()
            .filter(move |(f, _)| self.has(*f))
            .map(|(_, n)| n)
    }
}

/// What an EVAL script's first line declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Declared {
    /// No shebang: Redis 6's behaviour (writes allowed, no checks by flag).
    Nothing,
    Flags(ScriptFlags),
}

/// The first line of `body` when it starts with `#!`, and where the rest
/// starts. The line itself is compiled as an empty line, so that error
/// line numbers count it, as Redis's do.
fn first_line(body: &[u8]) -> Option<(&[u8], bool)> {
    if !body.starts_with(b"#!") {
        return None;
    }
    Some(match body.iter().position(|&b| b == b'\n') {
        Some(end) => (&body[..end], true),
        None => (body, false),
    })
}

/// The words of a shebang line: split on spaces, empty words dropped.
fn words(line: &[u8]) -> impl Iterator<Item = String> + '_ {
    line.split(|&b| b == b' ')
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned())
}

/// Parses an EVAL script's shebang, if it has one.
pub fn script_flags(body: &[u8]) -> Result<Declared, CmdError> {
    let Some((line, terminated)) = first_line(body) else {
        return Ok(Declared::Nothing);
    };
    if !terminated {
        return Err(CmdError::other("ERR Invalid script shebang"));
    }
    let mut words = words(line);
    let engine = words.next().unwrap_or_default();
    if engine != "#!lua" {
        return Err(CmdError::Other(format!(
            "ERR Unexpected engine in script shebang: {engine}"
        )));
    }
    let mut flags = ScriptFlags::default();
    for option in words {
        let Some(list) = option.strip_prefix("flags=") else {
            return Err(CmdError::Other(format!(
                "ERR Unknown lua shebang option: {option}"
            )));
        };
        if list.is_empty() {
            continue;
        }
        for name in list.split(',') {
            let flag = ScriptFlags::named(name).ok_or_else(|| {
                CmdError::Other(format!("ERR Unexpected flag in script shebang: {name}"))
            })?;
            flags = flags.with(flag);
        }
    }
    Ok(Declared::Flags(flags))
}

/// The source Lua compiles: a shebang line becomes an empty line.
pub fn without_shebang(body: &[u8]) -> &[u8] {
    match first_line(body) {
        Some((line, true)) => &body[line.len()..],
        _ => body,
    }
}

/// A library's name from its `#!<engine> name=<name>` line.
pub fn library_name(code: &[u8]) -> Result<String, CmdError> {
    let Some((line, terminated)) = first_line(code) else {
        return Err(CmdError::other("ERR Missing library metadata"));
    };
    if !terminated {
        return Err(CmdError::other("ERR Invalid library metadata"));
    }
    // Split as Redis splits it: quotes group (`name="lib"`), and the first
    // word, less its `#!`, names the engine (`#! name=x` names none).
    let words = crate::protocol::parse::split_args(line)
        .filter(|w| !w.is_empty())
        .ok_or_else(|| CmdError::other("ERR Invalid library metadata"))?;
    let mut words = words
        .into_iter()
        .map(|w| String::from_utf8_lossy(&w).into_owned());
    let engine = words.next().unwrap_or_default();
    let engine = engine.get(2..).unwrap_or_default();
    if !engine.eq_ignore_ascii_case("lua") {
        return Err(CmdError::Other(format!("ERR Engine '{engine}' not found")));
    }
    let mut name = None;
    for option in words {
        let value = option
            .get(..5)
            .filter(|p| p.eq_ignore_ascii_case("name="))
            .map(|_| &option[5..]);
        match value {
            Some(_) if name.is_some() => {
                return Err(CmdError::other(
                    "ERR Invalid metadata value, name argument was given multiple times",
                ));
            }
            Some(value) => name = Some(value.to_string()),
            None => {
                return Err(CmdError::Other(format!(
                    "ERR Invalid metadata value given: {option}"
                )));
            }
        }
    }
    let name = name.ok_or_else(|| CmdError::other("ERR Library name was not given"))?;
    if !valid_name(&name) {
        return Err(CmdError::other(NAME_RULE));
    }
    Ok(name)
}

/// Library and function names share one rule.
pub const NAME_RULE: &str = "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long";

pub fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(body: &str) -> Result<Declared, String> {
        script_flags(body.as_bytes()).map_err(|e| e.to_string())
    }

    #[test]
    fn eval_shebangs() {
        assert_eq!(flags("return 1"), Ok(Declared::Nothing));
        assert_eq!(
            flags("#!lua\nreturn 1"),
            Ok(Declared::Flags(ScriptFlags::default()))
        );
        assert_eq!(
            flags("#!lua  flags=no-writes,allow-oom  \nreturn 1"),
            Ok(Declared::Flags(
                ScriptFlags::NO_WRITES.with(ScriptFlags::ALLOW_OOM)
            ))
        );
        assert_eq!(flags("#!lua"), Err("ERR Invalid script shebang".into()));
        assert_eq!(
            flags("#!lua flags=no-writes,,x\n"),
            Err("ERR Unexpected flag in script shebang: ".into())
        );
        assert_eq!(
            flags("#!luajit\n"),
            Err("ERR Unexpected engine in script shebang: #!luajit".into())
        );
        assert_eq!(
            flags("#!lua name=x\n"),
            Err("ERR Unknown lua shebang option: name=x".into())
        );
        assert_eq!(without_shebang(b"#!lua\nreturn 1"), b"\nreturn 1");
    }

    #[test]
    fn library_metadata() {
        let name = |code: &str| library_name(code.as_bytes()).map_err(|e| e.to_string());
        assert_eq!(name("#!LUA name=lib_1\n"), Ok("lib_1".into()));
        assert_eq!(name("return 1"), Err("ERR Missing library metadata".into()));
        assert_eq!(
            name("#!lua\n"),
            Err("ERR Library name was not given".into())
        );
        assert_eq!(
            name("#!luax name=a\n"),
            Err("ERR Engine 'luax' not found".into())
        );
        assert_eq!(
            name("#!lua name=a foo=bar\n"),
            Err("ERR Invalid metadata value given: foo=bar".into())
        );
        assert_eq!(name("#!lua name=b-c\n"), Err(NAME_RULE.into()));
        assert_eq!(
            name("#!lua name=a"),
            Err("ERR Invalid library metadata".into())
        );
        assert_eq!(name("#!lua name=\"q\"\n"), Ok("q".into()));
        assert_eq!(name("#!lua NAME=u\n"), Ok("u".into()));
        assert_eq!(name("#! name=a\n"), Err("ERR Engine '' not found".into()));
        assert_eq!(
            name("#!lua name=\"a\n"),
            Err("ERR Invalid library metadata".into())
        );
        assert_eq!(
            name("#!lua name=a name=b\n"),
            Err("ERR Invalid metadata value, name argument was given multiple times".into())
        );
    }
}
