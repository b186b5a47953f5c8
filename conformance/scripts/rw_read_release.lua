-- Read/write lock, read side release. When other holds remain, the lock
-- lives on for as long as the longest remaining hold's timeout key.
-- KEYS[1] lock hash; KEYS[2] channel "redisson_rwlock:{name}";
-- KEYS[3] this owner's timeout key prefix; KEYS[4] "{name}" (prefix of
-- every owner's timeout keys).
-- ARGV[1] wake-up payload; ARGV[2] owner field.
-- nil: not a holder; 0: lock still held; 1: lock gone.
local lock, channel = KEYS[1], KEYS[2]
local owner = ARGV[2]
local mode = redis.call('hget', lock, 'mode')
if mode == false then
    redis.call('publish', channel, ARGV[1])
    return 1
end
if redis.call('hexists', lock, owner) == 0 then
    return nil
end
local left = redis.call('hincrby', lock, owner, -1)
if left == 0 then
    redis.call('hdel', lock, owner)
end
redis.call('del', KEYS[3] .. ':' .. (left + 1))

if redis.call('hlen', lock) > 1 then
    local longest = -3
    for _, field in ipairs(redis.call('hkeys', lock)) do
        local holds = redis.call('hget', lock, field)
        -- "mode" and "<owner>:write" fields hold no read timeouts; read
        -- holds are numeric strings, and the for loop takes them as numbers.
        if field ~= 'mode' and tonumber(holds) then
            for i = holds, 1, -1 do
                local ttl = redis.call('pttl', KEYS[4] .. ':' .. field .. ':rwlock_timeout:' .. i)
                longest = math.max(longest, ttl)
            end
        end
    end
    if longest > 0 then
        redis.call('pexpire', lock, longest)
        return 0
    end
    if mode == 'write' then
        return 0
    end
end
redis.call('del', lock)
redis.call('publish', channel, ARGV[1])
return 1
