-- The publish command arrives as an argument, the way a client picks
-- PUBLISH or SPUBLISH per deployment. KEYS[1] channel; ARGV[1] command name;
-- ARGV[2] payload. Returns the receiver count.
return redis.call(ARGV[1], KEYS[1], ARGV[2])
