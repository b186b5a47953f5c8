//! How a directive's field reads back and looks as a flag, and the
//! setting types of rlockd's own.

use super::parse::{not_one_of, out_of_range};

/// `enable-debug-command`: nobody (Redis's default), everybody, or
/// clients on the loopback interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DebugCommand {
    #[default]
    No,
    Yes,
    Local,
}

impl DebugCommand {
    fn name(self) -> &'static str {
        match self {
            DebugCommand::No => "no",
            DebugCommand::Yes => "yes",
            DebugCommand::Local => "local",
        }
    }

    pub(super) fn parse(v: &str) -> Result<Self, String> {
        [DebugCommand::No, DebugCommand::Yes, DebugCommand::Local]
            .into_iter()
            .find(|d| v.eq_ignore_ascii_case(d.name()))
            .ok_or_else(|| "argument(s) must be one of the following: no, yes, local".into())
    }
}

/// `repl-diskless-load`: how a replica takes a full sync's snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DisklessLoad {
    /// Written to the snapshot file (`dir/dbfilename`), then loaded.
    #[default]
    Disabled,
    /// Loaded straight from the link when the replica holds no keys, else
    /// as `Disabled`.
    OnEmptyDb,
    /// Loaded straight from the link, whatever the replica holds.
    Swapdb,
}

impl DisklessLoad {
    const ALL: [DisklessLoad; 3] = [
        DisklessLoad::Disabled,
        DisklessLoad::OnEmptyDb,
        DisklessLoad::Swapdb,
    ];

    fn name(self) -> &'static str {
        match self {
            DisklessLoad::Disabled => "disabled",
            DisklessLoad::OnEmptyDb => "on-empty-db",
            DisklessLoad::Swapdb => "swapdb",
        }
    }

    pub(super) fn parse(v: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|d| v.eq_ignore_ascii_case(d.name()))
            .ok_or_else(|| not_one_of(&Self::ALL.map(DisklessLoad::name)))
    }
}

/// A file's permission bits (`unixsocketperm`), read and shown in octal
/// as Redis does; 0 leaves them as the umask made them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileMode(pub u32);

impl FileMode {
    /// The most a mode may be: the permission bits, without setuid and the
    /// like.
    const MAX: i64 = 0o777;

    /// Read as Redis's `strtoll(v, &end, 8)` reads it: leading blanks and
    /// a sign allowed, nothing at all read as 0.
    pub(super) fn parse(v: &str) -> Result<Self, String> {
        let n = match v.trim_start_matches(|c: char| c.is_ascii_whitespace()) {
            _ if v.is_empty() => 0,
            digits => i64::from_str_radix(digits, 8)
                .map_err(|_| "argument couldn't be parsed as an octal number".to_string())?,
        };
        if !(0..=Self::MAX).contains(&n) {
            return Err(out_of_range(0, format!("{:o}", Self::MAX)));
        }
        Ok(FileMode(n as u32))
    }
}

/// How a directive's field reads back in CONFIG GET, and how its flag
/// looks on the command line.
pub(super) trait Value {
    /// What `--name` given with no value stands for.
    const ALONE: &'static str = "";
    /// The value's placeholder in `--help`.
    const SHAPE: &'static str = "VALUE";
    fn show(&self) -> String;
}

impl Value for bool {
    const ALONE: &'static str = "yes";
    const SHAPE: &'static str = "yes|no";
    fn show(&self) -> String {
        if *self { "yes" } else { "no" }.into()
    }
}

macro_rules! numbers_are_values {
    ($($ty:ty),*) => {
        $(impl Value for $ty {
            const SHAPE: &'static str = "N";
            fn show(&self) -> String {
                self.to_string()
            }
        })*
    };
}
numbers_are_values!(u16, u32, u64, usize, i64);

impl Value for String {
    fn show(&self) -> String {
        self.clone()
    }
}

/// A password: none reads as empty.
impl Value for Option<String> {
    fn show(&self) -> String {
        self.clone().unwrap_or_default()
    }
}

/// A port that may be off: off reads as 0.
impl Value for Option<u16> {
    const SHAPE: &'static str = "N";
    fn show(&self) -> String {
        self.unwrap_or(0).to_string()
    }
}

impl Value for Vec<String> {
    const SHAPE: &'static str = "VALUE...";
    fn show(&self) -> String {
        self.join(" ")
    }
}

impl Value for FileMode {
    const SHAPE: &'static str = "OCTAL";
    fn show(&self) -> String {
        format!("{:o}", self.0)
    }
}

impl Value for DisklessLoad {
    const SHAPE: &'static str = "disabled|on-empty-db|swapdb";
    fn show(&self) -> String {
        self.name().into()
    }
}

impl Value for DebugCommand {
    const SHAPE: &'static str = "no|yes|local";
    fn show(&self) -> String {
        self.name().into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_are_octal_as_redis_reads_them() {
        assert_eq!(FileMode::parse("0777"), Ok(FileMode(0o777)));
        assert_eq!(FileMode::parse("+7"), Ok(FileMode(0o7)));
        assert_eq!(FileMode::parse(""), Ok(FileMode(0)));
        let not_octal = Err("argument couldn't be parsed as an octal number".to_string());
        assert_eq!(FileMode::parse("8"), not_octal);
        assert_eq!(FileMode::parse("7 "), not_octal);
        assert_eq!(FileMode::parse("+"), not_octal);
        let range = Err("argument must be between 0 and 777 inclusive".to_string());
        assert_eq!(FileMode::parse("1777"), range);
        assert_eq!(FileMode::parse("-1"), range);
        assert_eq!(FileMode(0o750).show(), "750");
    }
}
