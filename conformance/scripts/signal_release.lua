-- Release of a SET NX lock whose waiters block on a signal list (the
-- python-redis-lock pattern: waiters BLPOP the list instead of polling).
-- KEYS[1] lock; KEYS[2] signal list "lock-signal:<name>".
-- ARGV[1] owner token; ARGV[2] how long an unclaimed signal stays, ms.
-- 0 released; 1 not the owner (or not held).
if redis.call('get', KEYS[1]) ~= ARGV[1] then
    return 1
end
-- One fresh signal: a stale one from an earlier release must not wake two.
redis.call('del', KEYS[2], KEYS[1])
redis.call('lpush', KEYS[2], 1)
redis.call('pexpire', KEYS[2], ARGV[2])
return 0
