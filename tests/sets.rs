//! Set commands whose replies are random (SPOP, SRANDMEMBER), checked for
//! the rules Redis keeps: distinct picks, repeats only for a negative
//! count, popped members gone, and every member picked about as often.

mod common;

use std::collections::{HashMap, HashSet};

use common::{cmd, connect, err, start};

fn members(n: usize, prefix: &str) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

async fn sadd(c: &mut redis::aio::MultiplexedConnection, key: &str, items: &[String]) {
    let mut args = vec!["SADD", key];
    args.extend(items.iter().map(String::as_str));
    let added: i64 = cmd(c, &args).await.unwrap();
    assert_eq!(added as usize, items.len());
}

#[tokio::test]
async fn spop_count_removes_distinct_members() {
    let server = start().await;
    let mut c = connect(&server).await;
    // An intset and a hash table.
    for (key, prefix) in [("ints", ""), ("strs", "m")] {
        let all = members(50, prefix);
        sadd(&mut c, key, &all).await;
        let popped: Vec<String> = cmd(&mut c, &["SPOP", key, "20"]).await.unwrap();
        let unique: HashSet<&String> = popped.iter().collect();
        assert_eq!(unique.len(), 20, "{key}: popped members are distinct");
        for m in &popped {
            assert!(all.contains(m));
            let there: i64 = cmd(&mut c, &["SISMEMBER", key, m]).await.unwrap();
            assert_eq!(there, 0, "{key}: a popped member is gone");
        }
        let left: i64 = cmd(&mut c, &["SCARD", key]).await.unwrap();
        assert_eq!(left, 30);
        let rest: Vec<String> = cmd(&mut c, &["SPOP", key, "100"]).await.unwrap();
        assert_eq!(rest.len(), 30);
        let exists: i64 = cmd(&mut c, &["EXISTS", key]).await.unwrap();
        assert_eq!(exists, 0, "{key}: an emptied set is deleted");
    }
}

#[tokio::test]
async fn srandmember_counts() {
    let server = start().await;
    let mut c = connect(&server).await;
    let all = members(10, "m");
    sadd(&mut c, "s", &all).await;
    for _ in 0..20 {
        let picked: Vec<String> = cmd(&mut c, &["SRANDMEMBER", "s", "7"]).await.unwrap();
        let unique: HashSet<&String> = picked.iter().collect();
        assert_eq!((picked.len(), unique.len()), (7, 7));
        assert!(picked.iter().all(|m| all.contains(m)));
    }
    let repeated: Vec<String> = cmd(&mut c, &["SRANDMEMBER", "s", "-100"]).await.unwrap();
    assert_eq!(repeated.len(), 100);
    assert!(repeated.iter().all(|m| all.contains(m)));
    let unique: HashSet<&String> = repeated.iter().collect();
    assert!(unique.len() < 100, "a negative count repeats members");
    let card: i64 = cmd(&mut c, &["SCARD", "s"]).await.unwrap();
    assert_eq!(card, 10, "SRANDMEMBER leaves the set alone");
    let e = err(&mut c, &["SRANDMEMBER", "s", "-10000001"]).await;
    assert!(e.contains("out of range"), "{e}");
}

#[tokio::test]
async fn random_picks_are_roughly_uniform() {
    let server = start().await;
    let mut c = connect(&server).await;
    let all = members(5, "m");
    sadd(&mut c, "s", &all).await;
    sadd(&mut c, "n", &members(5, "")).await;
    for key in ["s", "n"] {
        let picks: Vec<String> = cmd(&mut c, &["SRANDMEMBER", key, "-20000"]).await.unwrap();
        let mut counts: HashMap<String, usize> = HashMap::new();
        for p in picks {
            *counts.entry(p).or_default() += 1;
        }
        assert_eq!(counts.len(), 5, "{key}: {counts:?}");
        assert!(
            counts.values().all(|&n| (3_400..4_600).contains(&n)),
            "{key}: {counts:?}"
        );
    }
}
