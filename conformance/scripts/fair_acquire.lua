-- Fair lock, acquire. Waiters queue in a list and each has a deadline in a
-- sorted set; a waiter whose deadline passed (it gave up or died) is dropped
-- before anything else so that it cannot block the queue.
-- KEYS[1] lock hash; KEYS[2] queue "redisson_lock_queue:{name}";
-- KEYS[3] deadlines "redisson_lock_timeout:{name}".
-- ARGV[1] lease ms; ARGV[2] owner field; ARGV[3] how long a waiter may wait
-- ms; ARGV[4] the caller's clock in ms (the caller's, so that all servers of
-- a deployment agree on deadlines).
-- nil when held by the caller afterwards, else the ms to wait.
local lock, queue, deadlines = KEYS[1], KEYS[2], KEYS[3]
local lease, owner, patience, now = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])

-- Stale waiters, a page at a time: ZRANGEBYSCORE hands back up to 100 ids
-- and one ZREM takes them all.
while true do
    local stale = redis.call('zrangebyscore', deadlines, '-inf', now, 'LIMIT', 0, 100)
    if #stale == 0 then
        break
    end
    redis.call('zrem', deadlines, unpack(stale))
    for _, id in ipairs(stale) do
        redis.call('lrem', queue, 0, id)
    end
end

local head = redis.call('lindex', queue, 0)
if redis.call('exists', lock) == 0 and (head == false or head == owner) then
    redis.call('lpop', queue)
    redis.call('zrem', deadlines, owner)
    -- Everyone behind us now waits one turn less: their deadlines move up.
    local rest = redis.call('zrange', deadlines, 0, -1, 'WITHSCORES')
    for i = 1, #rest, 2 do
        redis.call('zadd', deadlines, rest[i + 1] - patience, rest[i])
    end
    redis.call('hset', lock, owner, 1)
    redis.call('pexpire', lock, lease)
    return nil
end

if redis.call('hexists', lock, owner) == 1 then
    redis.call('hincrby', lock, owner, 1)
    redis.call('pexpire', lock, lease)
    return nil
end

-- Already queued: the wait is what is left of our turn.
local mine = redis.call('zscore', deadlines, owner)
if mine then
    return mine - patience - now
end

-- Join the end of the queue: our turn comes when the last waiter's does.
local last = redis.call('lindex', queue, -1)
local wait
if last and last ~= owner then
    wait = redis.call('zscore', deadlines, last) - now
else
    wait = redis.call('pttl', lock)
end
if redis.call('zadd', deadlines, wait + patience + now, owner) == 1 then
    redis.call('rpush', queue, owner)
end
return wait
