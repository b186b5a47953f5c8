//! Memory management tuned for Redis's allocator and dictionaries:
//! rlockd's memory is mimalloc's and its tables rehash as they grow, so
//! these have no effect.

use super::*;

kept! {
    /// Refused when yes, as by a Redis built without jemalloc's defrag
    /// hint: rlockd cannot defragment.
    "activedefrag" = "no", Runtime, Check { read: active_defrag, ..YES_NO };
    /// No effect: no active defragmentation.
    "active-defrag-cycle-max" = "25", Runtime, Check::new(|v| int_text(v, 1, 99));
    /// No effect: no active defragmentation.
    "active-defrag-cycle-min" = "1", Runtime, Check::new(|v| int_text(v, 1, 99));
    /// No effect: no active defragmentation.
    "active-defrag-ignore-bytes" = "104857600", Runtime,
        Check::new(|v| memory_text(v, 1, i64::MAX as u64));
    /// No effect: no active defragmentation.
    "active-defrag-max-scan-fields" = "1000", Runtime, Check::new(|v| int_text(v, 1, i64::MAX));
    /// No effect: no active defragmentation.
    "active-defrag-threshold-lower" = "10", Runtime, Check::new(|v| int_text(v, 0, 1000));
    /// No effect: no active defragmentation.
    "active-defrag-threshold-upper" = "100", Runtime, Check::new(|v| int_text(v, 0, 1000));
    /// No effect: expired keys are reclaimed by their deadline wheels, not
    /// by sampling.
    "active-expire-effort" = "1", Runtime, Check::new(|v| int_text(v, 1, 10));
    /// No effect: the key tables rehash as they grow.
    "activerehashing" = "yes", Runtime, YES_NO;
    /// No effect: the allocator is mimalloc.
    "jemalloc-bg-thread" = "yes", Runtime, YES_NO;
    /// No effect: no eviction (maxmemory refuses writes).
    "lazyfree-lazy-eviction" = "no", Runtime, YES_NO;
    /// No effect: values are freed where they are dropped.
    "lazyfree-lazy-expire" = "no", Runtime, YES_NO;
    /// No effect: values are freed where they are dropped.
    "lazyfree-lazy-server-del" = "no", Runtime, YES_NO;
    /// No effect: DEL frees at once.
    "lazyfree-lazy-user-del" = "no", Runtime, YES_NO;
    /// No effect: FLUSHALL and FLUSHDB free at once unless given ASYNC.
    "lazyfree-lazy-user-flush" = "no", Runtime, YES_NO;
    /// No effect: no LFU eviction.
    "lfu-decay-time" = "1", Runtime, Check::new(|v| int_from(v, 0));
    /// No effect: no LFU eviction.
    "lfu-log-factor" = "10", Runtime, Check::new(|v| int_from(v, 0));
    /// No effect: the kernel's OOM score is left alone.
    "oom-score-adj" = "no", Runtime, Check::new(oom_score_adj);
    /// No effect: the kernel's OOM score is left alone.
    "oom-score-adj-values" = "0 200 800", Runtime, Check::words(oom_score_adj_values);
    /// No effect: transparent huge pages are left as they are.
    "disable-thp" = "yes", Never, YES_NO;
    /// Fixed at Redis's default: HyperLogLogs turn dense past 3000 bytes,
    /// and CONFIG SET refuses another value as immutable.
    "hll-sparse-max-bytes" = "3000", Startup,
        Check::new(|v| memory_text(v, 0, i64::MAX as u64));
}

fn active_defrag(v: &str) -> Result<String, String> {
    if parse_yes_no(v)? {
        return Err(
            "Active defragmentation cannot be enabled: it requires a Redis server \
                    compiled with a modified Jemalloc like the one shipped by default with \
                    the Redis source distribution"
                .into(),
        );
    }
    Ok("no".into())
}

/// `relative` is `yes`'s other name; Redis reports it as `yes`.
fn oom_score_adj(v: &str) -> Result<String, String> {
    let name = parse_enum(v, &["no", "yes", "relative", "absolute"])?;
    Ok(if name == "relative" {
        "yes".into()
    } else {
        name
    })
}

/// Three scores, for a primary, a replica and a background child.
fn oom_score_adj_values(v: &str) -> Result<String, String> {
    let words: Vec<&str> = v.split_whitespace().collect();
    if words.len() != 3 {
        return Err("wrong number of arguments".into());
    }
    let scores = words
        .iter()
        .map(|w| {
            w.parse::<i64>()
                .ok()
                .filter(|n| (-2000..=2000).contains(n))
                .ok_or("Invalid oom-score-adj-values, elements must be between -2000 and 2000.")
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(scores
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(" "))
}
