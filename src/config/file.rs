//! Reading a redis.conf-style file.

use std::path::{Path, PathBuf};

use super::{Config, find_param};
use crate::util::glob_match;

/// A line of a config file that could not be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigFileError {
    pub line: usize,
    pub text: String,
    pub reason: String,
}

impl std::fmt::Display for ConfigFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "config file, line {}: '{}': {}",
            self.line, self.text, self.reason
        )
    }
}

impl std::error::Error for ConfigFileError {}

/// How deep `include`s may nest: past it, a file includes itself.
const INCLUDE_DEPTH_MAX: usize = 16;

impl Config {
    /// Applies a redis.conf-style file: one `directive value...` per line,
    /// `#` comments, Redis's quoting. Directives are the names CONFIG GET
    /// knows, and `include`, `rename-command` and `user`.
    pub fn apply_file(&mut self, text: &str) -> Result<(), ConfigFileError> {
        self.apply_file_at(text, 0)
    }

    fn apply_file_at(&mut self, text: &str, depth: usize) -> Result<(), ConfigFileError> {
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fail = |reason: String| ConfigFileError {
                line: i + 1,
                text: line.to_string(),
                reason,
            };
            let words = crate::protocol::parse::split_args(line.as_bytes())
                .ok_or_else(|| fail("unbalanced quotes".into()))?;
            let words: Vec<String> = words
                .iter()
                .map(|w| String::from_utf8_lossy(w).into_owned())
                .collect();
            let (directive, values) = words
                .split_first()
                .ok_or_else(|| fail("empty line".into()))?;
            if values.is_empty() {
                return Err(fail("a value is missing".into()));
            }
            self.apply_line(directive, values, depth).map_err(fail)?;
        }
        Ok(())
    }

    /// Applies one directive (a config file line, or the command-line flag
    /// of the same name) with its values; a flag given alone has none.
    pub fn apply_directive(&mut self, directive: &str, values: &[String]) -> Result<(), String> {
        self.apply_line(directive, values, 0)
    }

    fn apply_line(
        &mut self,
        directive: &str,
        values: &[String],
        depth: usize,
    ) -> Result<(), String> {
        match (directive.to_ascii_lowercase().as_str(), values) {
            ("include", [path]) => return self.include(path, depth),
            ("rename-command", [command, new_name]) => {
                self.renamed_commands
                    .push((command.to_ascii_lowercase(), new_name.to_ascii_lowercase()));
                return Ok(());
            }
            ("user", [_, ..]) => {
                self.users.push(values.to_vec());
                return Ok(());
            }
            ("loadmodule", _) => return Err("rlockd loads no modules".into()),
            ("sentinel", _) => return Err("rlockd is no Sentinel".into()),
            (name, _) if name.contains('.') => {
                return Err("a module's setting: rlockd loads no modules".into());
            }
            ("include" | "rename-command", _) => {
                return Err("Bad directive or wrong number of arguments".into());
            }
            _ => {}
        }
        let param = find_param(directive).ok_or("unknown directive")?;
        if values.len() > 1 && !param.multiword {
            return Err("wrong number of arguments".into());
        }
        let value = match values {
            [] => param.alone.to_string(),
            _ => values.join(" "),
        };
        param.apply(self, &value)
    }

    /// `include PATH`: the file's lines, applied here. A `*`, `?` or `[`
    /// in its name makes it a pattern: every file it matches, in name
    /// order (none is no error, as with Redis).
    fn include(&mut self, path: &str, depth: usize) -> Result<(), String> {
        if depth >= INCLUDE_DEPTH_MAX {
            return Err(format!("includes nest more than {INCLUDE_DEPTH_MAX} deep"));
        }
        for file in included_files(Path::new(path))? {
            let text = std::fs::read_to_string(&file).map_err(|e| {
                format!(
                    "Fatal error, can't open config file '{}': {e}",
                    file.display()
                )
            })?;
            self.apply_file_at(&text, depth + 1)
                .map_err(|e| format!("in {}: {e}", file.display()))?;
        }
        Ok(())
    }
}

/// The files an `include` names: the path itself, or those its file
/// name's pattern matches in its directory.
fn included_files(path: &Path) -> Result<Vec<PathBuf>, String> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let Some(pattern) = name.filter(|n| n.contains(['*', '?', '['])) else {
        return Ok(vec![path.to_path_buf()]);
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| glob_match(pattern.as_bytes(), e.file_name().as_encoded_bytes(), false))
        .map(|e| dir.join(e.file_name()))
        .collect();
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod file_tests {
    use super::*;

    #[test]
    fn applies_directives_and_names_bad_lines() {
        let mut c = Config::default();
        c.apply_file("# rlockd\nport 7000\nbind 127.0.0.1 ::1\nrequirepass \"s e\"\nmaxmemory 1mb\nlua-time-limit 100\ndaemonize no\n")
            .unwrap();
        assert_eq!(c.port, 7000);
        assert_eq!(c.bind, vec!["127.0.0.1".to_string(), "::1".to_string()]);
        assert_eq!(c.requirepass.as_deref(), Some("s e"));
        assert_eq!(c.maxmemory, 1 << 20);
        c.apply_file("io-threads 3\n").unwrap();
        assert_eq!(c.io_threads, 3);
        for bad in ["io-threads 0\n", "io-threads 129\n", "io-threads many\n"] {
            let err = c.apply_file(bad).unwrap_err().to_string();
            assert!(
                err.contains("io-threads must be between 1 and 128"),
                "{err}"
            );
        }
        assert_eq!(c.io_threads, 3, "a bad value leaves the setting alone");
        assert_eq!(c.busy_reply_threshold, 100);
        let err = Config::default()
            .apply_file("port 1\nfrobnicate yes\n")
            .unwrap_err();
        assert_eq!((err.line, err.text.as_str()), (2, "frobnicate yes"));
        assert_eq!(err.reason, "unknown directive");
        let err = Config::default().apply_file("maxclients lots").unwrap_err();
        assert_eq!(
            err.to_string(),
            "config file, line 1: 'maxclients lots': argument couldn't be parsed into an integer"
        );
        assert!(Config::default().apply_file("port").is_err());
        c.apply_file("tcp-backlog 4096\n").unwrap();
        assert_eq!(c.tcp_backlog, 4096);
        for (bad, why) in [
            ("-1", "argument must be between 0 and 2147483647 inclusive"),
            (
                "2147483648",
                "argument must be between 0 and 2147483647 inclusive",
            ),
            ("x", "argument couldn't be parsed into an integer"),
        ] {
            let err = c.apply_file(&format!("tcp-backlog {bad}")).unwrap_err();
            assert_eq!(err.reason, why);
        }
        assert_eq!(c.tcp_backlog, 4096);
    }
}
