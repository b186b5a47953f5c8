if (redis.call('exists', KEYS) == 0) then
    redis.call('hset', KEYS, ARGV, 1);
    redis.call('pexpire', KEYS, ARGV);
    return nil;
end;
if (redis.call('hexists', KEYS, ARGV) == 1) then
    redis.call('hincrby', KEYS, ARGV, 1);
    redis.call('pexpire', KEYS, ARGV);
    return nil;
end;
return redis.call('pttl', KEYS);