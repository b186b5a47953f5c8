//! RLOCKD.CLOCK: moving a server's clock from outside the process, only
//! when the server was started with clock control.

mod common;

use std::time::Duration;

use common::{cmd, connect, err};
use futures_util::StreamExt;
use rlockd::{Config, ServerHandle};

async fn start_controlled() -> ServerHandle {
    let config = Config {
        enable_clock_control: true,
        notify_keyspace_events: "Ex".into(),
        ..Config::default()
    };
    common::start_with(config).await
}

#[tokio::test]
async fn a_client_moves_time_and_leases_expire_with_their_events() {
    let server = start_controlled().await;
    let mut c = connect(&server).await;
    let mut events = redis::Client::open(server.url())
        .unwrap()
        .get_async_pubsub()
        .await
        .unwrap();
    events.subscribe("__keyevent@0__:expired").await.unwrap();

    let t0: i64 = cmd(&mut c, &["RLOCKD.CLOCK", "GET"]).await.unwrap();
    cmd::<()>(&mut c, &["SET", "lease", "owner", "PX", "30000"])
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(30)).await;
    assert_eq!(cmd::<i64>(&mut c, &["PTTL", "lease"]).await.unwrap(), 30000);

    let t1: i64 = cmd(&mut c, &["RLOCKD.CLOCK", "ADVANCE", "29000"])
        .await
        .unwrap();
    assert_eq!(t1, t0 + 29000, "ADVANCE answers the new time");
    assert_eq!(cmd::<i64>(&mut c, &["PTTL", "lease"]).await.unwrap(), 1000);
    assert_eq!(cmd::<i64>(&mut c, &["TTL", "lease"]).await.unwrap(), 1);
    cmd::<i64>(&mut c, &["RLOCKD.CLOCK", "ADVANCE", "1000"])
        .await
        .unwrap();
    // As in Redis, the key lives through its deadline's millisecond.
    assert_eq!(cmd::<i64>(&mut c, &["PTTL", "lease"]).await.unwrap(), 0);
    cmd::<i64>(&mut c, &["RLOCKD.CLOCK", "ADVANCE", "1"])
        .await
        .unwrap();
    // Reclaimed by the command itself, not on the next lookup.
    assert_eq!(cmd::<i64>(&mut c, &["DBSIZE"]).await.unwrap(), 0);
    let msg = tokio::time::timeout(Duration::from_secs(5), events.on_message().next())
        .await
        .expect("an expired event")
        .unwrap();
    assert_eq!(msg.get_payload::<String>().unwrap(), "lease");

    let t2: i64 = cmd(&mut c, &["RLOCKD.CLOCK", "SET", "4102444800000"])
        .await
        .unwrap();
    assert_eq!(t2, 4_102_444_800_000);
    let (secs, _): (String, String) = cmd(&mut c, &["TIME"]).await.unwrap();
    assert_eq!(secs, "4102444800");
    // Earlier is allowed: deadlines are absolute.
    cmd::<i64>(&mut c, &["RLOCKD.CLOCK", "SET", &t0.to_string()])
        .await
        .unwrap();
    assert_eq!(
        cmd::<i64>(&mut c, &["RLOCKD.CLOCK", "GET"]).await.unwrap(),
        t0
    );
    // The handle moves the same clock.
    server.clock().unwrap().advance(Duration::from_millis(5));
    assert_eq!(
        cmd::<i64>(&mut c, &["RLOCKD.CLOCK", "GET"]).await.unwrap(),
        t0 + 5
    );
}

/// With `clock-control-runs`, the clock goes on by itself and a move steps
/// it: a lease ends early by the step, as on a host whose wall clock an
/// operator or NTP stepped forward.
#[tokio::test]
async fn a_running_clock_goes_on_and_a_step_ends_leases_early() {
    let server = common::start_with(Config {
        enable_clock_control: true,
        clock_control_runs: true,
        ..Config::default()
    })
    .await;
    let mut c = connect(&server).await;
    let t0: i64 = cmd(&mut c, &["RLOCKD.CLOCK", "GET"]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let t1: i64 = cmd(&mut c, &["RLOCKD.CLOCK", "GET"]).await.unwrap();
    assert!(t1 >= t0 + 50, "the clock runs: {t0} then {t1}");

    cmd::<()>(&mut c, &["SET", "lease", "owner", "PX", "30000"])
        .await
        .unwrap();
    let t2: i64 = cmd(&mut c, &["RLOCKD.CLOCK", "ADVANCE", "29000"])
        .await
        .unwrap();
    assert!(t2 >= t1 + 29000, "{t2}");
    let left: i64 = cmd(&mut c, &["PTTL", "lease"]).await.unwrap();
    assert!((0..=1000).contains(&left), "{left} ms left after the step");
    // The clock keeps running from where the step put it.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(cmd::<i64>(&mut c, &["EXISTS", "lease"]).await.unwrap(), 0);

    // SET steps it too, back as well as forward.
    let t3: i64 = cmd(&mut c, &["RLOCKD.CLOCK", "SET", &t0.to_string()])
        .await
        .unwrap();
    assert!((t0..t0 + 1000).contains(&t3), "{t3}");
    let (secs, _): (i64, i64) = cmd(&mut c, &["TIME"]).await.unwrap();
    assert!((t0 / 1000..=t0 / 1000 + 1).contains(&secs), "TIME {secs}");
}

#[tokio::test]
async fn bad_arguments_get_redis_style_errors() {
    let server = start_controlled().await;
    let mut c = connect(&server).await;
    for (args, expected) in [
        (
            &["RLOCKD.CLOCK", "ADVANCE", "-1"][..],
            "ERR value is not an integer or out of range",
        ),
        (
            &["RLOCKD.CLOCK", "SET", "soon"],
            "ERR value is not an integer or out of range",
        ),
        (
            &["RLOCKD.CLOCK", "ADVANCE"],
            "ERR wrong number of arguments for 'rlockd.clock|advance' command",
        ),
        (
            &["RLOCKD.CLOCK", "WARP", "1"],
            "ERR unknown subcommand 'WARP'. Try RLOCKD.CLOCK HELP.",
        ),
    ] {
        assert_eq!(err(&mut c, args).await, expected, "{args:?}");
    }
    cmd::<()>(&mut c, &["MULTI"]).await.unwrap();
    assert_eq!(
        err(&mut c, &["RLOCKD.CLOCK", "ADVANCE", "1"]).await,
        "ERR Command not allowed inside a transaction"
    );
    cmd::<()>(&mut c, &["DISCARD"]).await.unwrap();
    let help: Vec<String> = cmd(&mut c, &["RLOCKD.CLOCK", "HELP"]).await.unwrap();
    assert!(help.iter().any(|l| l.starts_with("ADVANCE")), "{help:?}");
}

#[tokio::test]
async fn without_clock_control_the_command_does_not_exist() {
    let server = common::start().await;
    let mut c = connect(&server).await;
    assert_eq!(
        err(&mut c, &["RLOCKD.CLOCK", "ADVANCE", "1000"]).await,
        "ERR unknown command 'RLOCKD.CLOCK', with args beginning with: 'ADVANCE' '1000'"
    );
    assert_eq!(
        err(&mut c, &["rlockd.clock"]).await,
        "ERR unknown command 'rlockd.clock', with args beginning with:"
    );
    let listed: Vec<String> = cmd(
        &mut c,
        &["COMMAND", "LIST", "FILTERBY", "PATTERN", "rlockd.*"],
    )
    .await
    .unwrap();
    assert!(
        !listed.iter().any(|n| n.starts_with("rlockd.clock")),
        "{listed:?}"
    );
    let count: i64 = cmd(&mut c, &["COMMAND", "COUNT"]).await.unwrap();
    let controlled = start_controlled().await;
    let mut cc = connect(&controlled).await;
    let more: i64 = cmd(&mut cc, &["COMMAND", "COUNT"]).await.unwrap();
    assert_eq!(
        more,
        count + 1,
        "RLOCKD.CLOCK is listed only where it exists"
    );
    let from_script = err(
        &mut c,
        &["EVAL", "return redis.call('rlockd.clock', 'get')", "0"],
    )
    .await;
    assert!(
        from_script.starts_with("ERR Unknown Redis command called from script"),
        "{from_script}"
    );
}
