-- Read/write lock, read side. The hash keeps "mode" ("read" or "write") and
-- one hold count per owner; every read hold also gets its own timeout key
-- "{name}:<owner>:rwlock_timeout:<n>", so the lock lives as long as its
-- longest-lived reader.
-- KEYS[1] lock hash; KEYS[2] this owner's timeout key prefix.
-- ARGV[1] lease ms; ARGV[2] owner field; ARGV[3] owner's write field
-- ("<owner>:write"): a writer may also take the read side.
-- nil when acquired, else the ms the lock still has.
local lock, timeouts = KEYS[1], KEYS[2]
local lease, owner = ARGV[1], ARGV[2]
local mode = redis.call('hget', lock, 'mode')
if mode == false then
    redis.call('hset', lock, 'mode', 'read', owner, 1)
    redis.call('set', timeouts .. ':1', 1, 'PX', lease)
    redis.call('pexpire', lock, lease)
    return nil
end
if mode == 'read' or redis.call('hexists', lock, ARGV[3]) == 1 then
    local n = redis.call('hincrby', lock, owner, 1)
    redis.call('set', timeouts .. ':' .. n, 1, 'px', lease)
    redis.call('pexpire', lock, math.max(redis.call('pttl', lock), lease))
    return nil
end
return redis.call('pttl', lock)
