-- Count-down latch: one count down; at zero the latch is gone and waiters
-- hear ARGV[1] on KEYS[2]. Returns the count left (0 once open).
local left = redis.call('decr', KEYS[1])
if left <= 0 then
    redis.call('del', KEYS[1])
end
if left == 0 then
    redis.call('publish', KEYS[2], ARGV[1])
end
return math.max(left, 0)
