//! `rename-command`: the names clients call commands by, once the config
//! file has renamed or removed some, as Redis applies its lines one by one.

use std::collections::HashMap;

/// What a name a client sends stands for.
pub enum Called<'a> {
    /// Itself: no line renamed it.
    AsSent,
    /// The command of this (original) name.
    Command(&'a str),
    /// Nothing: the command was renamed or removed.
    Removed,
}

/// Names that differ from the command table's: a new name leads to its
/// command's original name, a name given up leads nowhere.
#[derive(Debug, Default)]
pub struct CommandNames(HashMap<String, Option<String>>);

impl CommandNames {
    /// Applies `renames` (lower-case names; a new name "" removes the
    /// command) in order, given which names the command table has.
    pub fn build(
        renames: &[(String, String)],
        exists: impl Fn(&str) -> bool,
    ) -> Result<Self, String> {
        let mut names = CommandNames::default();
        for (name, new_name) in renames {
            let original = match names.0.get(name) {
                Some(Some(original)) => original.clone(),
                None if exists(name) => name.clone(),
                _ => return Err("No such command in rename-command".into()),
            };
            names.0.insert(name.clone(), None);
            if new_name.is_empty() {
                continue;
            }
            let taken = match names.0.get(new_name) {
                Some(entry) => entry.is_some(),
                None => exists(new_name),
            };
            if taken {
                return Err("Target command name already exists".into());
            }
            names.0.insert(new_name.clone(), Some(original));
        }
        Ok(names)
    }

    pub fn called(&self, name: &[u8]) -> Called<'_> {
        if self.0.is_empty() {
            return Called::AsSent;
        }
        let lower = String::from_utf8_lossy(name).to_ascii_lowercase();
        match self.0.get(&lower) {
            None => Called::AsSent,
            Some(Some(original)) => Called::Command(original),
            Some(None) => Called::Removed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(lines: &[(&str, &str)]) -> Result<CommandNames, String> {
        let lines: Vec<(String, String)> = lines
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        CommandNames::build(&lines, |n| ["get", "set", "del", "flushall"].contains(&n))
    }

    #[test]
    fn lines_apply_in_order_as_redis_applies_them() {
        let names = build(&[("set", "put"), ("get", "set"), ("flushall", "")]).unwrap();
        assert!(matches!(names.called(b"PUT"), Called::Command("set")));
        assert!(matches!(names.called(b"set"), Called::Command("get")));
        assert!(matches!(names.called(b"get"), Called::Removed));
        assert!(matches!(names.called(b"flushall"), Called::Removed));
        assert!(matches!(names.called(b"del"), Called::AsSent));
        let again = build(&[("set", "put"), ("put", "store")]).unwrap();
        assert!(matches!(again.called(b"store"), Called::Command("set")));
        assert!(matches!(again.called(b"put"), Called::Removed));
        assert_eq!(
            build(&[("nosuch", "x")]).unwrap_err(),
            "No such command in rename-command"
        );
        assert_eq!(
            build(&[("set", "get")]).unwrap_err(),
            "Target command name already exists"
        );
        assert_eq!(
            build(&[("set", "")]).map(|n| matches!(n.called(b"set"), Called::Removed)),
            Ok(true)
        );
    }
}
