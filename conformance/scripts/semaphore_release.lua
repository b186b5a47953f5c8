-- Semaphore: give back ARGV[1] permits and tell waiters how many there are
-- now on KEYS[2] ("redisson_sc:{name}"). Returns the new count.
local now_free = redis.call('incrby', KEYS[1], ARGV[1])
redis.call('publish', KEYS[2], now_free)
return now_free
