//! COMMAND DOCS entries, built from the command table.

use super::spec::CommandSpec;
use crate::protocol::Reply;

pub fn command_doc(spec: &CommandSpec) -> Reply {
    let mut fields = vec![
        (Reply::bulk_str("summary"), Reply::bulk_str(spec.summary)),
        (Reply::bulk_str("since"), Reply::bulk_str(spec.since)),
        (Reply::bulk_str("group"), Reply::bulk_str(spec.group.name())),
    ];
    if !spec.subcommands.is_empty() {
        let subs = spec
            .subcommands
            .iter()
            .map(|sub| {
                (
                    Reply::bulk_str(&format!("{}|{}", spec.name, sub.name)),
                    command_doc(sub),
                )
            })
            .collect();
        fields.push((Reply::bulk_str("subcommands"), Reply::Map(subs)));
    }
    Reply::Map(fields)
}
