//! DEBUG's gate (`enable-debug-command`, fixed at startup as in Redis),
//! the crashing subcommands refused, and DEBUG SLEEP stopping others.

mod common;

use std::time::{Duration, Instant};

use common::{cmd, connect, err};
use rlockd::{Config, DebugCommand};

async fn server_with(debug: DebugCommand) -> rlockd::ServerHandle {
    let config = Config {
        enable_debug_command: debug,
        ..Config::default()
    };
    common::start_with(config).await
}

#[tokio::test]
async fn debug_is_refused_unless_enabled() {
    let server = common::start().await;
    let mut c = connect(&server).await;
    let e = err(&mut c, &["DEBUG", "SLEEP", "0"]).await;
    assert!(e.contains("DEBUG command not allowed"), "{e}");
    let e = err(&mut c, &["CONFIG", "SET", "enable-debug-command", "yes"]).await;
    assert!(e.contains("can't set immutable config"), "{e}");
    let got: Vec<String> = cmd(&mut c, &["CONFIG", "GET", "enable-debug-command"])
        .await
        .unwrap();
    assert_eq!(got, ["enable-debug-command", "no"]);

    // Clients of this test connect over the loopback interface.
    let local = server_with(DebugCommand::Local).await;
    let mut c = connect(&local).await;
    let ok: String = cmd(&mut c, &["DEBUG", "SLEEP", "0"]).await.unwrap();
    assert_eq!(ok, "OK");
}

#[tokio::test]
async fn crashing_subcommands_are_refused_and_the_server_lives() {
    let server = server_with(DebugCommand::Yes).await;
    let mut c = connect(&server).await;
    for sub in [
        "SEGFAULT",
        "PANIC",
        "ASSERT",
        "OOM",
        "CRASH-AND-RECOVER",
        "RESTART",
    ] {
        let e = err(&mut c, &["DEBUG", sub]).await;
        assert!(e.contains("does not crash on request"), "{sub}: {e}");
    }
    let pong: String = cmd(&mut c, &["PING"]).await.unwrap();
    assert_eq!(pong, "PONG");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debug_sleep_holds_the_keyspace() {
    let server = server_with(DebugCommand::Yes).await;
    let mut sleeper = connect(&server).await;
    let mut other = connect(&server).await;
    let started = Instant::now();
    let sleep = tokio::spawn(async move {
        let _: String = cmd(&mut sleeper, &["DEBUG", "SLEEP", "0.3"]).await.unwrap();
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let _: () = cmd(&mut other, &["SET", "k", "v"]).await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(250));
    sleep.await.unwrap();
}

/// SET-DISABLE-DENY-SCRIPTS 1 lets a script call a `noscript` command
/// (DEBUG itself, as Redis's suite does); 0 refuses it again.
#[tokio::test]
async fn scripts_may_call_denied_commands_while_allowed() {
    let server = server_with(DebugCommand::Yes).await;
    let mut c = connect(&server).await;
    let script = [
        "EVAL",
        "return redis.call('debug', 'protocol', 'integer')",
        "0",
    ];
    let e = err(&mut c, &script).await;
    assert!(
        e.contains("This Redis command is not allowed from script"),
        "{e}"
    );
    let ok: String = cmd(&mut c, &["DEBUG", "SET-DISABLE-DENY-SCRIPTS", "1"])
        .await
        .unwrap();
    assert_eq!(ok, "OK");
    let n: i64 = cmd(&mut c, &script).await.unwrap();
    assert_eq!(n, 12345);
    let _: String = cmd(&mut c, &["DEBUG", "SET-DISABLE-DENY-SCRIPTS", "0"])
        .await
        .unwrap();
    let e = err(&mut c, &script).await;
    assert!(
        e.contains("This Redis command is not allowed from script"),
        "{e}"
    );
}
