//! The architecture, checked: the crate's top-level modules form layers and
//! a module imports only from layers below its own. A request flows down
//! them (server → connection → command → context → scripting, pub/sub →
//! keyspace → util); anything that must call back up (a script's
//! `redis.call`, the keyspace's notifications) goes through a trait the
//! lower layer defines (`scripting::Host`, `keyspace::EventSink`).

use std::collections::BTreeMap;
use std::path::Path;

/// Top to bottom; modules on one line are side by side and may not import
/// each other.
const LAYERS: &[&[&str]] = &[
    &["server", "fuzzing"],
    // Replication serves the connections that asked to become replicas.
    &["replication"],
    &["connection"],
    &["command"],
    &["context"],
    &["scripting", "pubsub", "tls"],
    &["cluster", "config"],
    &["client_handle"],
    &["keyspace"],
    &["expiry", "persist"],
    &["protocol", "clock"],
    &["error"],
    &["util"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// The top-level modules a source file names through `crate::`, outside
/// comments and its unit tests.
fn imports(source: &str) -> Vec<String> {
    let code = source.split("#[cfg(test)]").next().unwrap_or(source);
    let mut found = Vec::new();
    for line in code.lines() {
        let line = line.split("//").next().unwrap_or("");
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let named: Vec<&str> = if let Some(group) = rest.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                group[..end].split(',').collect()
            } else {
                vec![rest]
            };
            for item in named {
                let module: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !module.is_empty() {
                    found.push(module);
                }
            }
        }
    }
    found
}

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn modules_import_only_from_layers_below() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut upward: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut unplaced = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        // The crate root and the binary sit above every layer.
        if top == "lib" || top == "main" {
            continue;
        }
        let Some(own) = layer_of(&top) else {
            unplaced.push(top);
            continue;
        };
        let text = std::fs::read_to_string(file).unwrap();
        for module in imports(&text) {
            if module == top {
                continue;
            }
            match layer_of(&module) {
                Some(layer) if layer > own => {}
                _ => upward
                    .entry(rel.display().to_string())
                    .or_default()
                    .push(module),
            }
        }
    }
    unplaced.sort();
    unplaced.dedup();
    assert!(
        unplaced.is_empty(),
        "modules with no layer (add them to LAYERS): {unplaced:?}"
    );
    assert!(
        upward.is_empty(),
        "imports from the same or a higher layer: {upward:#?}"
    );
}

#[test]
fn the_checker_sees_grouped_and_plain_imports() {
    let found = imports(
        "use crate::keyspace::Db;\nuse crate::{error::CmdError, util::parse_i64};\n\
         // crate::server in a comment\nlet x = crate::command::REGISTRY.len();\n\
         #[cfg(test)]\nmod tests { use crate::server::Server; }",
    );
    assert_eq!(found, ["keyspace", "error", "util", "command"]);
}

/// `command/`, top to bottom; a file not named sits on the `None` floor,
/// beside the other families. The root (`mod`) lists the families and
/// dispatches; they and the base modules below them import no family. The
/// command table itself (`registry`) sits below the families, so that
/// what runs or describes other commands (EXEC, scripts, COMMAND, ACL,
/// CLIENT LIST's `cmd=`) reads it without naming the root: the root
/// builds it from the families and installs it there.
const COMMAND_FLOORS: &[Option<&[&str]>] = &[
    Some(&["mod"]),
    None,
    Some(&["args", "permissions", "session", "values", "waiting"]),
    Some(&["auth"]),
    Some(&["reply"]),
    Some(&["registry"]),
    Some(&["docs", "presets"]),
    Some(&["spec"]),
    Some(&["ctx"]),
];

/// `keyspace/`, top to bottom: the keyspace's own types (`mod.rs`, and
/// any file it is split into, on the `None` floor, which may import each
/// other) over the databases' pieces, over the values, over what they
/// are built from.
const KEYSPACE_FLOORS: &[Option<&[&str]>] = &[
    None,
    Some(&["dbmap", "dump", "journal", "memory"]),
    Some(&["value"]),
    Some(&["compact"]),
    Some(&["hash", "set", "zset", "stream"]),
    Some(&["access", "events", "limits", "slot"]),
];

/// The code of a source file that counts: outside comments and unit tests.
fn code_of(source: &str) -> String {
    let code = source.split("#[cfg(test)]").next().unwrap_or(source);
    code.lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first names of the paths after each `prefix` (`super::{a, b::c}`
/// names `a` and `b`).
fn names_after(code: &str, prefix: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.trim()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        let preceded = rest[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
        rest = &rest[at + prefix.len()..];
        if preceded {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut start = 0;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        found.push(ident(&group[start..i]));
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        found.push(ident(&group[start..i]));
                        start = i + 1;
                    }
                    _ => {}
                }
            }
        } else {
            found.push(ident(rest));
        }
    }
    found.retain(|n| !n.is_empty() && n != "self");
    found
}

/// What names a layer's `mod.rs` takes from its files (`use file::Item`,
/// `pub use file::{A, B as C}`, `pub(crate) use …`): through `super::` they
/// lead to that file.
fn brought_in(mod_rs: &str, units: &[String]) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for statement in code_of(mod_rs).split(';') {
        let statement = statement.trim();
        let Some(path) = statement
            .strip_prefix("pub use ")
            .or_else(|| statement.strip_prefix("pub(crate) use "))
            .or_else(|| statement.strip_prefix("use "))
        else {
            continue;
        };
        let Some((unit, items)) = path.split_once("::") else {
            continue;
        };
        if !units.iter().any(|u| u == unit) {
            continue;
        }
        let items = items.trim_start_matches('{').trim_end_matches('}');
        for item in items.split(',') {
            let name = item.rsplit(" as ").next().unwrap_or("").trim();
            if !name.is_empty() {
                names.insert(name.to_string(), unit.to_string());
            }
        }
    }
    names
}

/// The imports between the files of one layer that break its floor plan,
/// as "file -> unit".
fn floor_breaks(layer: &str, floors: &[Option<&[&str]>], rest_side_by_side: bool) -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src")
        .join(layer);
    let mut files = Vec::new();
    sources(&dir, &mut files);
    let unit_of = |file: &Path| -> String {
        let rel = file.strip_prefix(&dir).unwrap();
        let first = rel.components().next().unwrap().as_os_str();
        first.to_string_lossy().trim_end_matches(".rs").to_string()
    };
    let mut units: Vec<String> = files.iter().map(|f| unit_of(f)).collect();
    units.sort();
    units.dedup();
    let mod_rs = std::fs::read_to_string(dir.join("mod.rs")).unwrap();
    let via_mod = brought_in(&mod_rs, &units);
    let floor = |unit: &str| {
        floors
            .iter()
            .position(|f| f.is_some_and(|names| names.contains(&unit)))
            .unwrap_or_else(|| floors.iter().position(Option::is_none).unwrap())
    };
    let listed = |unit: &str| floors.iter().flatten().any(|names| names.contains(&unit));
    let mut breaks = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&dir).unwrap();
        let own = unit_of(file);
        let code = code_of(&std::fs::read_to_string(file).unwrap());
        // In a folder's own files, `super::` is the folder itself.
        let nested = rel.components().count() > 1 && !rel.ends_with("mod.rs");
        let mut named = names_after(&code, &format!("crate::{layer}::"));
        if !nested {
            named.extend(names_after(&code, "super::"));
        }
        for name in named {
            let unit = if units.contains(&name) {
                name
            } else {
                via_mod.get(&name).cloned().unwrap_or_else(|| "mod".into())
            };
            let (from, to) = (floor(&own), floor(&unit));
            let shared_rest = rest_side_by_side && !listed(&own) && !listed(&unit);
            if unit != own && to <= from && !shared_rest {
                breaks.push(format!("{} -> {unit}", rel.display()));
            }
        }
    }
    breaks.sort();
    breaks.dedup();
    breaks
}

#[test]
fn command_files_import_only_floors_below() {
    let breaks = floor_breaks("command", COMMAND_FLOORS, false);
    assert!(
        breaks.is_empty(),
        "command/ imports running up: {breaks:#?}"
    );
}

#[test]
fn keyspace_files_import_only_floors_below() {
    let breaks = floor_breaks("keyspace", KEYSPACE_FLOORS, true);
    assert!(
        breaks.is_empty(),
        "keyspace/ imports running up: {breaks:#?}"
    );
}
