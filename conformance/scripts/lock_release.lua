-- Reentrant lock, release, with an unlock latch so that a retried release
-- (the reply was lost) answers what the first one did instead of failing.
-- KEYS[1] lock hash; KEYS[2] wake-up channel; KEYS[3] latch key
--   "redisson_unlock_latch:{name}:<hex>".
-- ARGV[1] wake-up payload; ARGV[2] lease in ms; ARGV[3] owner field;
-- ARGV[4] the publish command (PUBLISH, or SPUBLISH for sharded channels);
-- ARGV[5] latch lifetime in ms.
-- nil: not the owner; 0: still held (re-entered); 1: released.
local lock, channel, latch = KEYS[1], KEYS[2], KEYS[3]
local earlier = redis.call('get', latch)
if earlier then
    return tonumber(earlier)
end
if redis.call('hexists', lock, ARGV[3]) == 0 then
    return nil
end
local holds = redis.call('hincrby', lock, ARGV[3], -1)
if holds > 0 then
    redis.call('pexpire', lock, ARGV[2])
    redis.call('set', latch, 0, 'px', ARGV[5])
    return 0
end
redis.call('del', lock)
redis.call(ARGV[4], channel, ARGV[1])
redis.call('set', latch, 1, 'px', ARGV[5])
return 1
