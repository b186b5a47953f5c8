-- Fair lock, release: wakes only the waiter at the head of the queue, on its
-- own channel "redisson_lock__channel:{name}:<owner>".
-- KEYS[1] lock hash; KEYS[2] queue; KEYS[3] deadlines; KEYS[4] channel prefix.
-- ARGV[1] wake-up payload; ARGV[2] lease ms; ARGV[3] owner field; ARGV[4] now ms.
-- nil: not the owner; 0: still held; 1: released (or already free).
local lock, queue, deadlines, prefix = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now = tonumber(ARGV[4])

-- The same stale-waiter rule as fair_acquire.lua, from the head only: a
-- release must not pay for a long queue.
local head = redis.call('lindex', queue, 0)
while head do
    local deadline = redis.call('zscore', deadlines, head)
    if deadline and tonumber(deadline) > now then
        break
    end
    redis.call('zrem', deadlines, head)
    redis.call('lpop', queue)
    head = redis.call('lindex', queue, 0)
end

local function wake_next()
    local next_owner = redis.call('lindex', queue, 0)
    if next_owner then
        redis.call('publish', prefix .. ':' .. next_owner, ARGV[1])
    end
end

if redis.call('exists', lock) == 0 then
    wake_next()
    return 1
end
if redis.call('hexists', lock, ARGV[3]) == 0 then
    return nil
end
if redis.call('hincrby', lock, ARGV[3], -1) > 0 then
    redis.call('pexpire', lock, ARGV[2])
    return 0
end
redis.call('del', lock)
wake_next()
return 1
