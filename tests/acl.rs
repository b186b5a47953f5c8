//! ACL over real connections: logins, NOPERM at dispatch, in MULTI (queue
//! time and after the rules change before EXEC), in scripts and pub/sub,
//! DELUSER disconnecting a user's clients, and requirepass as the default
//! user's password.

mod common;

use common::{cmd, connect, err, read_replies, start};
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

/// Sends one command on a raw connection and returns its reply, or
/// nothing once the server has closed the connection.
async fn send(s: &mut TcpStream, args: &[&str]) -> String {
    s.write_all(&resp(args)).await.unwrap();
    String::from_utf8_lossy(&read_replies(s, 1).await).into_owned()
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

fn server_with_aclfile(path: &std::path::Path) -> rlockd::ServerBuilder {
    let config = rlockd::Config {
        aclfile: path.display().to_string(),
        ..Default::default()
    };
    Server::builder().config(config).port(0)
}

#[tokio::test]
async fn aclfile_saves_and_loads_users() {
    let dir = std::env::temp_dir().join(format!("rlockd-acl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("users.acl");
    std::fs::write(&path, "user reader on >pw ~r:* resetchannels -@all +get\n").unwrap();
    let server = server_with_aclfile(&path).start().await.unwrap();
    let mut admin = connect(&server).await;
    let users: Vec<String> = cmd(&mut admin, &["ACL", "USERS"]).await.unwrap();
    assert_eq!(users, ["default", "reader"]);
    let rules = [
        "ACL",
        "SETUSER",
        "writer",
        "on",
        "nopass",
        "~w:*",
        "+set",
        "(+get ~x)",
    ];
    let _: () = cmd(&mut admin, &rules).await.unwrap();
    let _: () = cmd(&mut admin, &["ACL", "SAVE"]).await.unwrap();
    let saved = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        saved,
        "user default on nopass ~* &* +@all\n\
         user reader on #30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4 ~r:* resetchannels -@all +get\n\
         user writer on nopass ~w:* resetchannels -@all +set (~x resetchannels -@all +get)\n"
    );
    // A file without `writer`: its clients go, the others keep their user.
    let mut s = TcpStream::connect(server.addr()).await.unwrap();
    assert_eq!(send(&mut s, &["AUTH", "writer", "x"]).await, "+OK\r\n");
    std::fs::write(&path, "user reader on nopass ~* +@all\nbogus line\n").unwrap();
    assert_eq!(
        err(&mut admin, &["ACL", "LOAD"]).await,
        format!("ERR {}:2: should start with user keyword.", path.display())
    );
    std::fs::write(&path, "user reader on nopass ~* +@all\n").unwrap();
    let _: () = cmd(&mut admin, &["ACL", "LOAD"]).await.unwrap();
    let users: Vec<String> = cmd(&mut admin, &["ACL", "USERS"]).await.unwrap();
    assert_eq!(users, ["default", "reader"]);
    assert_eq!(send(&mut s, &["PING"]).await, "");
    server.shutdown().await;
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn missing_aclfile_stops_startup() {
    let path = std::env::temp_dir().join("rlockd-acl-missing/none.acl");
    assert!(server_with_aclfile(&path).start().await.is_err());
}
