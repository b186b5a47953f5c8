//! Redis's settings that rlockd reads with Redis's checks and reports, but
//! does not act on: each is accepted so that a redis.conf and the clients
//! and tools reading CONFIG GET work unchanged. Their values live as text in
//! `Config::kept`. One file per theme; the doc comment of an entry is its
//! `--help` text and says why it has no effect.

use std::collections::BTreeMap;

use super::parse::{int_text, not_one_of, out_of_range, parse_enum, parse_memory, parse_yes_no};
use super::{Change, Param};

/// The kept settings' values, by name; a setting never given reads as its
/// default.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Kept(BTreeMap<&'static str, String>);

impl Kept {
    fn get(&self, name: &'static str, default: &str) -> String {
        self.0
            .get(name)
            .map_or_else(|| default.to_string(), String::clone)
    }

    fn set(&mut self, name: &'static str, value: String) {
        self.0.insert(name, value);
    }
}

type Read = fn(&str) -> Result<String, String>;

/// How a kept setting's value is checked and stored, and how its flag looks.
pub(super) struct Check {
    read: Read,
    /// What `--name` alone stands for.
    alone: &'static str,
    shape: &'static str,
    /// Its flag and CONFIG SET take several words.
    multiword: bool,
}

impl Check {
    const fn new(read: Read) -> Check {
        Check {
            read,
            alone: "",
            shape: "VALUE",
            multiword: false,
        }
    }

    const fn words(read: Read) -> Check {
        Check {
            multiword: true,
            shape: "VALUE...",
            ..Check::new(read)
        }
    }
}

const YES_NO: Check = Check {
    alone: "yes",
    shape: "yes|no",
    ..Check::new(|v| parse_yes_no(v).map(|b| if b { "yes" } else { "no" }.into()))
};

const TEXT: Check = Check::new(|v| Ok(v.to_string()));

/// A memory size (with units) within bounds, kept in bytes.
fn memory_text(v: &str, min: u64, max: u64) -> Result<String, String> {
    let n = parse_memory(v)?;
    if n < min || n > max {
        return Err(out_of_range(min, max));
    }
    Ok(n.to_string())
}

/// An `int` setting of Redis's from `min` up.
fn int_from(v: &str, min: i64) -> Result<String, String> {
    int_text(v, min, i32::MAX.into())
}

/// A port number, or 0 for none.
fn port(v: &str) -> Result<String, String> {
    int_text(v, 0, 65535)
}

/// Makes a theme's `PARAMS`: each entry is `name [| alias] = default,
/// change, check [, hidden: true];` under its doc comment (hidden: CONFIG
/// GET lists it for its exact name only, as Redis's testing settings).
macro_rules! kept {
    ($(
        $(#[doc = $doc:literal])*
        $name:literal $(| $alias:literal)? = $default:literal, $change:ident, $check:expr
            $(, hidden: $hidden:literal)?;
    )*) => {
        pub(super) static PARAMS: &[Param] = &[$(Param {
            name: $name,
            alias: given_or!([$(Some($alias))?] None),
            help: concat!($($doc),*),
            get: |c| c.kept.get($name, $default),
            load: Some(|c, v| {
                let value = ($check.read)(v)?;
                c.kept.set($name, value);
                Ok(())
            }),
            change: Change::$change,
            reacts: &[],
            hidden: given_or!([$($hidden)?] false),
            multiword: $check.multiword,
            alone: $check.alone,
            shape: $check.shape,
        },)*];
    };
}

// After the macro, which the themes use.
mod cluster;
mod memory;
mod process;
mod replication;

/// Every kept setting.
pub(super) fn params() -> impl Iterator<Item = &'static Param> {
    [
        replication::PARAMS,
        cluster::PARAMS,
        memory::PARAMS,
        process::PARAMS,
    ]
    .into_iter()
    .flatten()
}
