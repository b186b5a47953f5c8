//! ACL over real connections: logins, NOPERM at dispatch, in MULTI (queue
//! time and after the rules change before EXEC), in scripts and pub/sub,
//! DELUSER disconnecting a user's clients, and requirepass as the default
//! user's password.

mod common;

use common::{cmd, connect, err, read_quiet, start};
use rlockd::Server;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

fn resp(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
    }
    out
}

/// Sends one command on a raw connection and returns what came back.
async fn send(s: &mut TcpStream, args: &[&str]) -> String {
    s.write_all(&resp(args)).await.unwrap();
    String::from_utf8_lossy(&read_quiet(s).await).into_owned()
}

#[tokio::test]
async fn restricted_user_is_refused_everywhere() {
    let server = start().await;
    let mut admin = connect(&server).await;
    let rules = [
        "ACL",
        "SETUSER",
        "locker",
        "on",
        ">pw",
        "~lock:*",
        "&wake:*",
        "+get",
        "+set",
        "+multi",
        "+exec",
        "+eval",
        "+subscribe",
    ];
    let _: () = cmd(&mut admin, &rules).await.unwrap();
    let mut s = TcpStream::connect(server.addr()).await.unwrap();
    assert_eq!(
        send(&mut s, &["AUTH", "locker", "bad"]).await,
        "-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    );
    assert_eq!(send(&mut s, &["AUTH", "locker", "pw"]).await, "+OK\r\n");
    assert_eq!(send(&mut s, &["SET", "lock:a", "1"]).await, "+OK\r\n");
    assert_eq!(
        send(&mut s, &["GET", "other"]).await,
        "-NOPERM this user has no permissions to access one of the keys used as arguments\r\n"
    );
    assert_eq!(
        send(&mut s, &["DEL", "lock:a"]).await,
        "-NOPERM this user has no permissions to run the 'del' command\r\n"
    );
    // Queued while allowed, refused at EXEC once the rules change.
    assert_eq!(send(&mut s, &["MULTI"]).await, "+OK\r\n");
    assert_eq!(send(&mut s, &["GET", "lock:a"]).await, "+QUEUED\r\n");
    let _: () = cmd(&mut admin, &["ACL", "SETUSER", "locker", "-get"])
        .await
        .unwrap();
    assert_eq!(
        send(&mut s, &["EXEC"]).await,
        "*1\r\n-NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: no permission to execute the command or subcommand\r\n"
    );
    let script = "return redis.pcall('get', KEYS[1])";
    assert_eq!(
        send(&mut s, &["EVAL", script, "1", "lock:a"]).await,
        "-ERR The user executing the script can't run this command or subcommand\r\n"
    );
    assert_eq!(
        send(&mut s, &["SUBSCRIBE", "wake:1", "other"]).await,
        "-NOPERM this user has no permissions to access one of the channels used as arguments\r\n"
    );
    let log: Vec<redis::Value> = cmd(&mut admin, &["ACL", "LOG"]).await.unwrap();
    assert_eq!(log.len(), 6, "{log:?}");
    // Deleting the user disconnects its clients.
    let deleted: i64 = cmd(&mut admin, &["ACL", "DELUSER", "locker"])
        .await
        .unwrap();
    assert_eq!(deleted, 1);
    assert_eq!(send(&mut s, &["PING"]).await, "");
    server.shutdown().await;
}

#[tokio::test]
async fn requirepass_is_the_default_users_password() {
    let server = Server::builder()
        .port(0)
        .requirepass("pw")
        .start()
        .await
        .unwrap();
    let mut s = TcpStream::connect(server.addr()).await.unwrap();
    assert_eq!(
        send(&mut s, &["GET", "k"]).await,
        "-NOAUTH Authentication required.\r\n"
    );
    assert_eq!(send(&mut s, &["AUTH", "default", "pw"]).await, "+OK\r\n");
    assert_eq!(
        send(&mut s, &["CONFIG", "SET", "requirepass", ""]).await,
        "+OK\r\n"
    );
    let mut open = connect(&server).await;
    let users: Vec<String> = cmd(&mut open, &["ACL", "LIST"]).await.unwrap();
    assert_eq!(users, ["user default on nopass ~* &* +@all"]);
    assert_eq!(
        err(&mut open, &["AUTH", "x"]).await,
        "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
    );
    server.shutdown().await;
}
