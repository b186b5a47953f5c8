//! The last test binary of a `cargo test` run (cargo runs them in order of
//! name): lists what the run skipped for want of a tool or package, so a
//! green run says what it did not test. Without a harness: it only reports.

#[path = "refserver/mod.rs"]
mod refserver;

/// What installs every tool and package the skipped tests need (apt-get
/// for the system ones, so as root; pip, npm ci, Maven and Go modules
/// into the checkout), then runs the whole suite.
const INSTALL_ALL: &str = ".ci/run";

fn main() {
    let record = refserver::skip_record();
    let Ok(skips) = std::fs::read_to_string(&record) else {
        return;
    };
    let _ = std::fs::remove_file(&record);
    let mut lines: Vec<&str> = skips.lines().collect();
    lines.sort_unstable();
    lines.dedup();
    let mut report = format!(
        "\n=== {} SKIP(s): tests that passed without testing, and why:\n",
        lines.len()
    );
    for line in &lines {
        report.push_str(&format!("  {line}\n"));
    }
    report.push_str(&format!(
        "Install what they need and run everything: `{INSTALL_ALL}` (as root). ===\n"
    ));
    refserver::loud(&report);
}
