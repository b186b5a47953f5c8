-- Permit-expirable semaphore, release the permit ARGV[1] (a lapsed one is no
-- longer ours): 1 released, 0 not held.
-- KEYS[1] counter; KEYS[2] "{name}:timeout"; KEYS[3] channel.
if redis.call('zrem', KEYS[2], ARGV[1]) == 0 then
    return 0
end
redis.call('publish', KEYS[3], redis.call('incr', KEYS[1]))
return 1
