//! Function libraries beyond what the conformance cases compare: FUNCTION
//! DUMP / RESTORE round trips (Redis's payload format), FUNCTION KILL and
//! STATS on a running function, a library's load timeout, and a replaced
//! library seen by every Lua state at once.

mod common;

use std::time::{Duration, Instant};

use common::{cmd, connect, err, start};

const LIB: &str =
    "#!lua name=mylib\nredis.register_function('hello', function(keys, args) return 'v1' end)";
const LIB_V2: &str =
    "#!lua name=mylib\nredis.register_function('hello', function(keys, args) return 'v2' end)";

#[tokio::test]
async fn dump_and_restore_round_trip_with_each_policy() {
    let server = start().await;
    let mut c = connect(&server).await;
    cmd::<String>(&mut c, &["FUNCTION", "LOAD", LIB])
        .await
        .unwrap();
    let payload: Vec<u8> = redis::cmd("FUNCTION")
        .arg("DUMP")
        .query_async(&mut c)
        .await
        .unwrap();
    let restore = |policy: Option<&'static str>| {
        let mut command = redis::cmd("FUNCTION");
        command.arg("RESTORE").arg(payload.clone());
        if let Some(policy) = policy {
            command.arg(policy);
        }
        command
    };
    let mut c2 = c.clone();
    let mut run = async move |command: redis::Cmd| -> Result<String, String> {
        command
            .query_async::<String>(&mut c2)
            .await
            .map_err(|e| e.to_string())
    };
    let taken = run(restore(None)).await.unwrap_err();
    assert!(taken.contains("Library mylib already exists"), "{taken}");
    cmd::<()>(&mut c, &["FUNCTION", "LOAD", "REPLACE", LIB_V2])
        .await
        .unwrap();
    assert_eq!(run(restore(Some("REPLACE"))).await.unwrap(), "OK");
    assert_eq!(
        cmd::<String>(&mut c, &["FCALL", "hello", "0"])
            .await
            .unwrap(),
        "v1"
    );
    cmd::<()>(&mut c, &["FUNCTION", "FLUSH"]).await.unwrap();
    assert_eq!(run(restore(None)).await.unwrap(), "OK");
    assert_eq!(
        cmd::<String>(&mut c, &["FCALL", "hello", "0"])
            .await
            .unwrap(),
        "v1"
    );
    cmd::<()>(
        &mut c,
        &[
            "FUNCTION",
            "LOAD",
            "#!lua name=other\nredis.register_function('x', function() return 1 end)",
        ],
    )
    .await
    .unwrap();
    assert_eq!(run(restore(Some("FLUSH"))).await.unwrap(), "OK");
    let listed: Vec<redis::Value> = cmd(&mut c, &["FUNCTION", "LIST"]).await.unwrap();
    assert_eq!(
        listed.len(),
        1,
        "FLUSH dropped the library not in the payload"
    );
    // A damaged payload is refused whole.
    let mut damaged = payload.clone();
    let last = damaged.len() - 1;
    damaged[last] ^= 0xff;
    let refused = redis::cmd("FUNCTION")
        .arg("RESTORE")
        .arg(damaged)
        .query_async::<String>(&mut c)
        .await
        .unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("DUMP payload version or checksum are wrong"),
        "{refused}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replaced_library_is_what_every_connection_runs() {
    let server = start().await;
    let mut admin = connect(&server).await;
    cmd::<String>(&mut admin, &["FUNCTION", "LOAD", LIB])
        .await
        .unwrap();
    let mut clients = Vec::new();
    for _ in 0..8 {
        clients.push(connect(&server).await);
    }
    // Every connection runs the function concurrently, so several Lua
    // states load the library.
    let runs = clients.iter().cloned().map(|mut c| {
        tokio::spawn(async move { cmd::<String>(&mut c, &["FCALL", "hello", "0"]).await })
    });
    for run in runs {
        assert_eq!(run.await.unwrap().unwrap(), "v1");
    }
    cmd::<String>(&mut admin, &["FUNCTION", "LOAD", "REPLACE", LIB_V2])
        .await
        .unwrap();
    let runs = clients.iter().cloned().map(|mut c| {
        tokio::spawn(async move { cmd::<String>(&mut c, &["FCALL", "hello", "0"]).await })
    });
    for run in runs {
        assert_eq!(run.await.unwrap().unwrap(), "v2");
    }
    cmd::<()>(&mut admin, &["FUNCTION", "DELETE", "mylib"])
        .await
        .unwrap();
    let mut c = clients.pop().unwrap();
    assert_eq!(
        err(&mut c, &["FCALL", "hello", "0"]).await,
        "ERR Function not found"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn function_kill_stops_a_busy_function_and_script_kill_does_not() {
    let server = start().await;
    let mut admin = connect(&server).await;
    cmd::<()>(&mut admin, &["CONFIG", "SET", "lua-time-limit", "100"])
        .await
        .unwrap();
    cmd::<String>(
        &mut admin,
        &[
            "FUNCTION",
            "LOAD",
            "#!lua name=spin\nredis.register_function('spin', function(keys) while true do end end)",
        ],
    )
    .await
    .unwrap();
    let mut runner = connect(&server).await;
    let running = tokio::spawn(async move {
        cmd::<redis::Value>(&mut runner, &["FCALL", "spin", "1", "k"]).await
    });
    let asked = Instant::now();
    loop {
        let stats: redis::Value = cmd(&mut admin, &["FUNCTION", "STATS"]).await.unwrap();
        if format!("{stats:?}").contains("spin") {
            let text = format!("{stats:?}");
            assert!(
                text.contains("FCALL") && text.contains("duration_ms"),
                "{text}"
            );
            break;
        }
        assert!(asked.elapsed() < Duration::from_secs(10), "never busy");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        err(&mut admin, &["SCRIPT", "KILL"]).await,
        "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
    );
    cmd::<()>(&mut admin, &["FUNCTION", "KILL"]).await.unwrap();
    let reply = tokio::time::timeout(Duration::from_secs(5), running)
        .await
        .expect("the function ends after FUNCTION KILL")
        .unwrap();
    let e = reply.expect_err("a killed function fails");
    assert!(e.to_string().contains("Script killed by user"), "{e}");
    assert_eq!(
        err(&mut admin, &["FUNCTION", "KILL"]).await,
        "NOTBUSY No scripts in execution right now."
    );
}

#[tokio::test]
async fn a_library_that_loops_while_loading_is_refused_in_time() {
    let server = start().await;
    let mut c = connect(&server).await;
    for code in [
        "#!lua name=loop\nwhile true do end",
        "#!lua name=loop\nlocal n = 0 while true do n = n + 1 end",
    ] {
        let started = Instant::now();
        assert_eq!(
            err(&mut c, &["FUNCTION", "LOAD", code]).await,
            "ERR Error registering functions: ERR FUNCTION LOAD timeout"
        );
        assert!(started.elapsed() < Duration::from_secs(2));
    }
    // The server still answers, and nothing was loaded.
    let listed: Vec<redis::Value> = cmd(&mut c, &["FUNCTION", "LIST"]).await.unwrap();
    assert!(listed.is_empty());
}
