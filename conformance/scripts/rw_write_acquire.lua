-- Read/write lock, write side: only one writer (re-entrant), no readers
-- but the writer itself.
-- KEYS[1] lock hash; ARGV[1] lease ms; ARGV[2] write field "<owner>:write".
-- nil when acquired, else the ms the lock still has.
local lock, lease, writer = KEYS[1], ARGV[1], ARGV[2]
local mode = redis.call('hget', lock, 'mode')
if mode == false then
    redis.call('hset', lock, 'mode', 'write')
    redis.call('hset', lock, writer, 1)
    redis.call('pexpire', lock, lease)
    return nil
end
if mode == 'write' and redis.call('hexists', lock, writer) == 1 then
    redis.call('hincrby', lock, writer, 1)
    redis.call('pexpire', lock, redis.call('pttl', lock) + lease)
    return nil
end
return redis.call('pttl', lock)
