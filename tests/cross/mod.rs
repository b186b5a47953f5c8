//! The aarch64 rlockd that `.ci/run` cross-builds for the Java extension's
//! jar: where it lies and how it is made.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

pub const TARGET: &str = "aarch64-unknown-linux-gnu";
/// Its profile (about 3 CPU minutes to build, so no cheaper one).
pub const PROFILE: &str = "release";
/// What builds it (with Debian's gcc-aarch64-linux-gnu, which
/// `.cargo/config.toml` names as its linker).
pub const BUILD: &str = "cargo build --release --target aarch64-unknown-linux-gnu --bin rlockd";
/// What the build and an emulated run need (as root).
pub const INSTALL: &str = "rustup target add aarch64-unknown-linux-gnu; apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user";
/// Debian's aarch64 libraries, for qemu-user's `-L` (libc6-arm64-cross).
pub const SYSROOT: &str = "/usr/aarch64-linux-gnu";
/// ELF's `e_machine` for aarch64.
pub const ELF_MACHINE: u16 = 183;

/// The cross-built binary, beside this build's own in the same target
/// folder (`TARGET/PROFILE/rlockd`); it may not be built.
pub fn binary() -> PathBuf {
    let own = Path::new(env!("CARGO_BIN_EXE_rlockd"));
    let target_dir = own
        .parent()
        .and_then(Path::parent)
        .expect("the binary lies in TARGET_DIR/PROFILE/");
    target_dir.join(TARGET).join(PROFILE).join("rlockd")
}

/// Why a test that needs the binary goes without: `binary()` is not built.
pub fn not_built() -> String {
    format!("no {} (`{BUILD}`)", binary().display())
}
