-- Reentrant lock, forced release by anyone: 1 if there was a lock to delete.
-- KEYS[1] lock hash; KEYS[2] wake-up channel; ARGV[1] wake-up payload.
if redis.call('del', KEYS[1]) == 1 then
    redis.call('publish', KEYS[2], ARGV[1])
    return 1
end
return 0
