//! Server settings. Each directive is one entry of the `directives!` list
//! below: its name, field, default, parser (and so its range), help text,
//! whether CONFIG SET may change it and what must hear of the change. The
//! `Config` struct, its defaults, the table CONFIG GET/SET, the config file
//! and the binary's flags and `--help` read are all made from that list.
//!
//! `values.rs`: how a field's type reads back and shows as a flag;
//! `parse.rs`: Redis's value checks; `table.rs`: rlockd's directives;
//! `kept/`: Redis's that rlockd checks and reports without acting on them,
//! one file per theme; `file.rs`: reading a config file (`include`,
//! `rename-command`).

pub use file::ConfigFileError;
pub use kept::Kept;
pub(crate) use parse::parse_memory;
pub(crate) use rewrite::{RewriteError, rewrite_file};
pub use table::{Config, parse_primary, save_points};
pub use values::{DebugCommand, DisklessLoad, FileMode};

use crate::util::glob_match;

type Getter = fn(&Config) -> String;
type Setter = fn(&mut Config, &str) -> Result<(), String>;

/// One directive, as the config file, the command line and CONFIG GET/SET
/// see it.
pub struct Param {
    pub name: &'static str,
    pub alias: Option<&'static str>,
    /// What `--help` says of it (the doc comment of its entry).
    pub help: &'static str,
    pub get: Getter,
    /// Reads a value into the config; `None` for the settings rlockd only
    /// reports, whose values in files are accepted and ignored.
    load: Option<Setter>,
    pub(crate) change: Change,
    /// What must be told when CONFIG SET changes it.
    pub(crate) reacts: &'static [Hook],
    /// CONFIG GET lists it for its exact name only, never for a pattern.
    hidden: bool,
    /// Its flag takes every word up to the next flag (`--save 900 1`);
    /// others take one, so that a config file may follow them.
    pub multiword: bool,
    /// What `--name` alone stands for.
    alone: &'static str,
    /// The value's placeholder in `--help`.
    pub shape: &'static str,
}

impl Param {
    /// Reads `value` (a config file's, a flag's or CONFIG SET's) into `config`.
    pub fn apply(&self, config: &mut Config, value: &str) -> Result<(), String> {
        self.load.map_or(Ok(()), |load| load(config, value))
    }

    pub(crate) fn protected(&self) -> bool {
        PROTECTED.contains(&self.name)
    }
}

/// How CONFIG SET treats a setting.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Change {
    /// Fixed at startup, in Redis too: CONFIG SET refuses it.
    Never,
    /// Redis changes it at run time, rlockd keeps its startup value (its
    /// own startup settings): CONFIG SET accepts that value unchanged, as
    /// Redis does, and refuses any other as immutable.
    Startup,
    /// CONFIG SET changes it as the config file does.
    Runtime,
}

/// The parts of the server that keep their own copy of some settings, so
/// CONFIG SET must tell them of a change (the context layer, above this
/// one, knows how).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Hook {
    /// Keyspace events, the pubsub output buffer limit, the tracking table.
    PubSub,
    SlowLog,
    /// When values leave their compact forms.
    Encodings,
    /// What keys' access clocks count: uses under an LFU policy, else time.
    AccessClocks,
    /// The append-only file.
    Persistence,
    Latency,
    /// OOM and NOREPLICAS refusals.
    Guard,
    /// The default user's password.
    Password,
    /// The replication backlog's size.
    Backlog,
    /// The TLS certificates and settings: rebuilt, and refused whole when
    /// they do not load.
    Tls,
    /// The TCP and TLS listeners (`port`, `tls-port`, `bind`): closed and
    /// bound anew, the change refused when an address does not bind.
    Listeners,
}

/// The entry's own expression (its getter, parser…) where it gives one,
/// else the fallback.
macro_rules! given_or {
    ([] $fallback:expr) => {
        $fallback
    };
    ([$given:expr] $($fallback:expr)?) => {
        $given
    };
}

/// Makes `Config`, its `Default` and `PARAMS` from the list of directives.
/// A field entry names its field, type and default, how a value is read
/// (`parse`, into the field, or `set`, given the whole config) and, when
/// its type's reading is not the one wanted, `get`. Settings rlockd
/// only checks and reports are declared in `kept/`. The doc comment is the
/// `--help` text.
macro_rules! directives {
    (
        $(
            $(#[doc = $doc:literal])*
            $name:literal $(| $alias:literal)? => $field:ident: $ty:ty {
                default: $default:expr,
                $(get: $get:expr,)?
                $(parse: $parse:expr,)?
                $(set: $set:expr,)?
                change: $change:ident,
                $(reacts: [$($hook:ident),*],)?
                $(hidden: $hidden:literal,)?
                $(multiword: $multiword:literal,)?
            }
        )*
    ) => {
        /// One server's settings: a field per directive.
        #[derive(Debug, Clone, PartialEq)]
        pub struct Config {
            $($(#[doc = $doc])* pub $field: $ty,)*
            /// The values of Redis's settings that rlockd checks and reports
            /// but does not act on (`kept/`).
            pub kept: Kept,
            /// `rename-command` lines, in order: a command's name, lower
            /// case, and its new one ("": the command is removed).
            pub renamed_commands: Vec<(String, String)>,
            /// `user NAME rules...` lines: each user's name and ACL rules.
            pub users: Vec<Vec<String>>,
            /// The config file the server started from, as an absolute
            /// path: what CONFIG REWRITE writes and INFO names.
            pub config_file: Option<std::path::PathBuf>,
        }

        impl Default for Config {
            fn default() -> Self {
                Config {
                    $($field: $default,)*
                    kept: Kept::default(),
                    renamed_commands: Vec::new(),
                    users: Vec::new(),
                    config_file: None,
                }
            }
        }

        pub static PARAMS: &[Param] = &[
            $(Param {
                name: $name,
                alias: given_or!([$(Some($alias))?] None),
                help: concat!($($doc),*),
                get: given_or!([$($get)?] |c| Value::show(&c.$field)),
                load: Some(given_or!(
                    [$(|c, v| {
                        c.$field = ($parse)(v)?;
                        Ok(())
                    })?]
                    $($set)?
                )),
                change: Change::$change,
                reacts: &[$($(Hook::$hook),*)?],
                hidden: given_or!([$($hidden)?] false),
                multiword: given_or!([$($multiword)?] false),
                alone: <$ty as Value>::ALONE,
                shape: <$ty as Value>::SHAPE,
            },)*
        ];
    };
}

// After the macros, which the table uses.
mod file;
mod kept;
mod parse;
mod rewrite;
mod table;
mod values;

/// Redis 7.0's PROTECTED_CONFIG directives: where files are written, so
/// CONFIG SET changes them only as `enable-protected-configs` allows.
const PROTECTED: &[&str] = &["dir", "dbfilename"];

/// Every directive CONFIG GET lists: rlockd's settings, then those it
/// only keeps.
pub fn params() -> impl Iterator<Item = &'static Param> {
    table::PARAMS.iter().chain(kept::params())
}

pub fn find_param(name: &str) -> Option<&'static Param> {
    let lower = name.to_ascii_lowercase();
    params().find(|p| p.name == lower || p.alias == Some(lower.as_str()))
}

/// CONFIG GET: every (name, value) whose name or alias matches one of the
/// patterns, each once.
pub(crate) fn get_matching(config: &Config, patterns: &[&[u8]]) -> Vec<(&'static str, String)> {
    let mut out: Vec<(&'static str, String)> = Vec::new();
    for pat in patterns {
        let lower = pat.to_ascii_lowercase();
        for p in params() {
            for name in std::iter::once(p.name).chain(p.alias) {
                let listed = !p.hidden || lower == name.as_bytes();
                if listed
                    && glob_match(&lower, name.as_bytes(), true)
                    && !out.iter().any(|(n, _)| *n == name)
                {
                    out.push((name, (p.get)(config)));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyspace_events_are_stored_canonically() {
        let mut c = Config::default();
        let param = find_param("notify-keyspace-events").unwrap();
        let set = |c: &mut Config, v| param.apply(c, v);
        let get = param.get;
        set(&mut c, "KEA").unwrap();
        assert_eq!(get(&c), "AKE");
        assert!(set(&mut c, "q").is_err());
        assert_eq!(get(&c), "AKE");
        set(&mut c, "AKn").unwrap();
        assert_eq!(get(&c), "AK");
        assert_eq!(c.notify_keyspace_events, "AKn");
    }

    #[test]
    fn get_by_pattern_and_alias() {
        let c = Config::default();
        let got = get_matching(&c, &[b"lua-time-limit"]);
        assert_eq!(got, vec![("lua-time-limit", "5000".to_string())]);
        let got = get_matching(&c, &[b"max*"]);
        assert!(got.iter().any(|(n, _)| *n == "maxclients"));
    }
}
