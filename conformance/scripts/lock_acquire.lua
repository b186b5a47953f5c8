-- Reentrant lock, acquire (Redisson's RLock key layout, our own text).
-- KEYS[1] lock hash; ARGV[1] lease in ms; ARGV[2] owner field "<uuid>:<threadId>".
-- nil when the caller holds the lock afterwards, else the holder's remaining ms,
-- which a client uses as its wait before retrying.
local lock, lease, owner = KEYS[1], ARGV[1], ARGV[2]
local free = redis.call('exists', lock) == 0
if free or redis.call('hexists', lock, owner) == 1 then
    redis.call('hincrby', lock, owner, 1)
    redis.call('pexpire', lock, lease)
    return nil
end
return redis.call('pttl', lock)
