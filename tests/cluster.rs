//! Cluster mode through a real cluster client: redis-rs's async cluster
//! connection reads our CLUSTER SLOTS, then routes commands and scripts by
//! slot to the one node it finds there.

mod common;

use redis::AsyncCommands;
use redis::cluster::ClusterClient;
use rlockd::{Server, ServerHandle};

async fn start_cluster() -> ServerHandle {
    Server::builder()
        .port(0)
        .cluster_enabled(true)
        .start()
        .await
        .expect("server starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_client_sets_gets_and_runs_scripts() {
    let server = start_cluster().await;
    let client = ClusterClient::new(vec![server.url()]).unwrap();
    let mut con = client
        .get_async_connection()
        .await
        .expect("cluster handshake");

    // Keys in many slots, each routed on its own.
    for i in 0..50 {
        let key = format!("key:{i}");
        let () = con.set(&key, i).await.unwrap();
    }
    for i in 0..50 {
        let got: i64 = con.get(format!("key:{i}")).await.unwrap();
        assert_eq!(got, i);
    }

    // MGET over several slots: the client splits it, one slot per request.
    let spread: Vec<i64> = con
        .mget(&["key:1", "key:2", "key:3", "key:40"])
        .await
        .unwrap();
    assert_eq!(spread, [1, 2, 3, 40]);

    // A lock: acquire with SET NX PX, release with the check-and-delete script.
    let lock = "{orders}:lock";
    let taken: bool = redis::cmd("SET")
        .arg(lock)
        .arg("token-1")
        .arg("NX")
        .arg("PX")
        .arg(30_000)
        .query_async::<Option<String>>(&mut con)
        .await
        .unwrap()
        .is_some();
    assert!(taken);
    let unlock = redis::Script::new(
        "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end",
    );
    let wrong: i64 = unlock
        .key(lock)
        .arg("token-2")
        .invoke_async(&mut con)
        .await
        .unwrap();
    assert_eq!(wrong, 0);
    let released: i64 = unlock
        .key(lock)
        .arg("token-1")
        .invoke_async(&mut con)
        .await
        .unwrap();
    assert_eq!(released, 1);

    // Keys sharing a hash tag may go together, in a script or in MGET.
    let both: i64 = redis::cmd("EVAL")
        .arg("redis.call('set', KEYS[1], 1) redis.call('set', KEYS[2], 2) return redis.call('get', KEYS[1]) + redis.call('get', KEYS[2])")
        .arg(2)
        .arg("{orders}:a")
        .arg("{orders}:b")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(both, 3);
    let values: Vec<i64> = con.mget(&["{orders}:a", "{orders}:b"]).await.unwrap();
    assert_eq!(values, [1, 2]);

    // Declared keys in two slots: the error cluster clients detect.
    let err = redis::cmd("EVAL")
        .arg("return 1")
        .arg(2)
        .arg("a")
        .arg("b")
        .query_async::<redis::Value>(&mut con)
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some("CROSSSLOT"), "{err}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topology_names_this_node_where_the_client_reached_it() {
    let server = start_cluster().await;
    let mut con = common::connect(&server).await;
    let id: String = common::cmd(&mut con, &["CLUSTER", "MYID"]).await.unwrap();
    assert_eq!(id.len(), 40);
    assert!(
        id.bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    );
    let port = server.addr().port();
    let slots: redis::Value = common::cmd(&mut con, &["CLUSTER", "SLOTS"]).await.unwrap();
    let expected = redis::Value::Array(vec![redis::Value::Array(vec![
        redis::Value::Int(0),
        redis::Value::Int(16383),
        redis::Value::Array(vec![
            redis::Value::BulkString(b"127.0.0.1".to_vec()),
            redis::Value::Int(port.into()),
            redis::Value::BulkString(id.clone().into_bytes()),
            redis::Value::Array(vec![]),
        ]),
    ])]);
    assert_eq!(slots, expected);
    let nodes: String = common::cmd(&mut con, &["CLUSTER", "NODES"]).await.unwrap();
    assert_eq!(
        nodes,
        format!(
            "{id} 127.0.0.1:{port}@{} myself,master - 0 0 0 connected 0-16383\n",
            u32::from(port) + 10_000
        )
    );
    // The id is the server's, not the connection's.
    let mut other = common::connect(&server).await;
    let again: String = common::cmd(&mut other, &["CLUSTER", "MYID"]).await.unwrap();
    assert_eq!(again, id);
    // READONLY shows as the `r` flag until READWRITE or RESET.
    let flags = |info: String| {
        info.split(' ')
            .find(|f| f.starts_with("flags="))
            .unwrap()
            .to_string()
    };
    let info: String = common::cmd(&mut con, &["CLIENT", "INFO"]).await.unwrap();
    assert_eq!(flags(info), "flags=N");
    let () = common::cmd(&mut con, &["READONLY"]).await.unwrap();
    let info: String = common::cmd(&mut con, &["CLIENT", "INFO"]).await.unwrap();
    assert_eq!(flags(info), "flags=r");
    let () = common::cmd(&mut con, &["EVAL", "return redis.call('readwrite')", "0"])
        .await
        .unwrap();
    let info: String = common::cmd(&mut con, &["CLIENT", "INFO"]).await.unwrap();
    assert_eq!(flags(info), "flags=r", "a script's READWRITE is its own");
    let () = common::cmd(&mut con, &["READWRITE"]).await.unwrap();
    let info: String = common::cmd(&mut con, &["CLIENT", "INFO"]).await.unwrap();
    assert_eq!(flags(info), "flags=N");
    let () = common::cmd(&mut con, &["READONLY"]).await.unwrap();
    let _: String = common::cmd(&mut con, &["RESET"]).await.unwrap();
    let info: String = common::cmd(&mut con, &["CLIENT", "INFO"]).await.unwrap();
    assert_eq!(flags(info), "flags=N");
    // Our own HELP text: it names what a one-node cluster answers.
    let help: Vec<String> = common::cmd(&mut con, &["CLUSTER", "HELP"]).await.unwrap();
    for sub in [
        "SLOTS",
        "NODES",
        "SHARDS",
        "KEYSLOT",
        "GETKEYSINSLOT",
        "HELP",
    ] {
        assert!(help.iter().any(|l| l.starts_with(sub)), "{sub} in {help:?}");
    }
    // The topology is fixed: what would change it is refused, keys stay.
    let () = common::cmd(&mut con, &["SET", "{a}k", "v"]).await.unwrap();
    for args in [
        &["CLUSTER", "RESET", "HARD"][..],
        &["CLUSTER", "addslots", "1"],
        &["CLUSTER", "MEET", "127.0.0.1", "7000"],
        &["CLUSTER", "REPLICAS", "abc"],
    ] {
        let err = common::cmd::<redis::Value>(&mut con, args)
            .await
            .unwrap_err();
        let sub = args[1].to_uppercase();
        assert_eq!(
            err.detail(),
            Some(
                format!(
                    "CLUSTER {sub} is not supported: this rlockd is a one-node cluster owning every slot"
                )
                .as_str()
            ),
            "{args:?}"
        );
    }
    let v: String = common::cmd(&mut con, &["GET", "{a}k"]).await.unwrap();
    assert_eq!(v, "v");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_client_refused_outside_cluster_mode() {
    let server = common::start().await;
    let client = ClusterClient::new(vec![server.url()]).unwrap();
    let err = match client.get_async_connection().await {
        Ok(_) => panic!("a cluster client must not connect to a standalone server"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("cluster support disabled"), "{err}");
    server.shutdown().await;
}
