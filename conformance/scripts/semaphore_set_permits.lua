-- Semaphore: set the number of permits once. 1 if set, 0 if already set.
-- KEYS[1] counter; KEYS[2] channel; ARGV[1] permits.
if redis.call('get', KEYS[1]) then
    return 0
end
redis.call('set', KEYS[1], ARGV[1])
redis.call('publish', KEYS[2], ARGV[1])
return 1
