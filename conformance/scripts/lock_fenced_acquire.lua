-- Fenced lock, acquire: the reentrant lock plus a token counter that grows
-- on every successful acquire, so a storage service can refuse writes from
-- an owner whose lease ran out.
-- KEYS[1] lock hash; KEYS[2] token counter "redisson_lock_token:{name}";
-- ARGV[1] lease in ms; ARGV[2] owner field.
-- {-1, token} when acquired, {remaining ms, -1} when held by someone else.
local lock, counter = KEYS[1], KEYS[2]
if redis.call('exists', lock) == 0 or redis.call('hexists', lock, ARGV[2]) == 1 then
    local token = redis.call('incr', counter)
    redis.call('hincrby', lock, ARGV[2], 1)
    redis.call('pexpire', lock, ARGV[1])
    return {-1, token}
end
return {redis.call('pttl', lock), -1}
