-- Watchdog: renew many locks (any hash slots) in one call.
-- KEYS[i] lock hash i; ARGV[1] new lease in ms; ARGV[i + 1] owner field of lock i.
-- One 1 (renewed) or 0 (no longer ours) per key, in KEYS order.
local renewed = {}
for i, lock in ipairs(KEYS) do
    local ours = redis.call('hexists', lock, ARGV[i + 1]) == 1
    if ours then
        redis.call('pexpire', lock, ARGV[1])
    end
    renewed[i] = ours and 1 or 0
end
return renewed
