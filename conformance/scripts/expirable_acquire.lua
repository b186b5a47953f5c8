-- Permit-expirable semaphore, acquire one permit. Taken permits are members
-- of a sorted set scored by when they lapse; lapsed ones go back to the
-- counter first. Permit ids are whatever bytes the client chose (16 random
-- bytes in Redisson).
-- KEYS[1] counter; KEYS[2] "{name}:timeout" sorted set; KEYS[3] channel.
-- ARGV[1] permit id; ARGV[2] lease ms; ARGV[3] now ms.
-- The permit id when taken; else nil, or the ms until the soonest permit
-- lapses when one is out.
local counter, taken, channel = KEYS[1], KEYS[2], KEYS[3]
local id, lease, now = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])

local lapsed = redis.call('zrangebyscore', taken, 0, now, 'LIMIT', 0, 100)
if #lapsed > 0 then
    redis.call('zrem', taken, unpack(lapsed))
    local free = redis.call('incrby', counter, #lapsed)
    redis.call('publish', channel, free)
end

local free = tonumber(redis.call('get', counter))
if free and free > 0 then
    redis.call('decr', counter)
    redis.call('zadd', taken, now + lease, id)
    return id
end
local soonest = redis.call('zrange', taken, 0, 0, 'WITHSCORES')
if soonest[1] == nil then
    return nil
end
return soonest[2] - now
