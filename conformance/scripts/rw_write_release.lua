-- Read/write lock, write side release. Read holds taken by the writer
-- survive it: the lock turns back into a read lock.
-- KEYS[1] lock hash; KEYS[2] channel "redisson_rwlock:{name}".
-- ARGV[1] wake-up payload; ARGV[2] lease ms; ARGV[3] write field.
-- nil: not the writer; 0: still held; 1: write side released.
local lock, channel = KEYS[1], KEYS[2]
local mode = redis.call('hget', lock, 'mode')
if mode == false then
    redis.call('publish', channel, ARGV[1])
    return 1
end
if mode ~= 'write' or redis.call('hexists', lock, ARGV[3]) == 0 then
    return nil
end
if redis.call('hincrby', lock, ARGV[3], -1) > 0 then
    redis.call('pexpire', lock, ARGV[2])
    return 0
end
redis.call('hdel', lock, ARGV[3])
if redis.call('hlen', lock) == 1 then
    redis.call('del', lock)
    redis.call('publish', channel, ARGV[1])
else
    redis.call('hset', lock, 'mode', 'read')
end
return 1
