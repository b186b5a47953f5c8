-- Spin lock release: like lock_release.lua without latch or wake-up, since
-- spin-lock waiters poll with back-off instead of subscribing.
-- KEYS[1] lock hash; ARGV[1] lease in ms; ARGV[2] owner field.
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
    return nil
end
if redis.call('hincrby', KEYS[1], ARGV[2], -1) > 0 then
    redis.call('pexpire', KEYS[1], ARGV[1])
    return 0
end
redis.call('del', KEYS[1])
return 1
