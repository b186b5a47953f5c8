-- Semaphore: take ARGV[1] permits from the counter KEYS[1] if there are
-- that many. 1 when taken, 0 when not.
local have = redis.call('get', KEYS[1])
if have and tonumber(have) >= tonumber(ARGV[1]) then
    redis.call('decrby', KEYS[1], ARGV[1])
    return 1
end
return 0
