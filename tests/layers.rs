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
    &["connection"],
    &["command"],
    &["context"],
    &["scripting", "pubsub"],
    &["cluster", "config"],
    &["peer"],
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
