-- Count-down latch: set the count once. KEYS[1] counter; KEYS[2] channel
-- "redisson_countdownlatch__channel__{name}"; ARGV[1] "new count" message;
-- ARGV[2] count. 1 if set, 0 if a latch is already counting.
if redis.call('exists', KEYS[1]) == 1 then
    return 0
end
redis.call('set', KEYS[1], ARGV[2])
redis.call('publish', KEYS[2], ARGV[1])
return 1
