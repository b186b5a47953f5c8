package rlockd.junit;

import java.util.List;

/**
 * One channel, pattern or shard channel with subscribers, as {@code RLOCKD.WAITERS} reports
 * it: where Redisson's lock waiters wait for an unlock message.
 *
 * @param kind {@code "channel"}, {@code "pattern"} or {@code "shardchannel"}
 * @param name the channel or pattern
 * @param clients the subscribers' CLIENT IDs
 */
public record Waiters(String kind, String name, List<Long> clients) {}
