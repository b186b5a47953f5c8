//! The programs in `examples/` run here too, so a change that breaks the
//! documented fixture usage fails `cargo test`, not only `cargo run`.

#[path = "../examples/sync_test.rs"]
mod sync_test;
#[path = "../examples/tokio_test.rs"]
mod tokio_test;

#[test]
fn the_sync_example_passes() {
    sync_test::main().unwrap();
}

#[test]
fn the_tokio_example_passes() {
    tokio_test::main().unwrap();
}
