package rlockd.junit;

import java.util.Map;

/**
 * One lock as {@code RLOCKD.LOCKS} reports it.
 *
 * @param key the lock's key
 * @param db its database
 * @param type {@code "hash"} (Redisson's: owner → holds) or {@code "string"} (the owner as
 *     the value, with a deadline)
 * @param pttl milliseconds left on its lease, -1 without one
 * @param owners owner → reentrant holds (1 for a string lock)
 */
public record HeldLock(String key, int db, String type, long pttl, Map<String, Long> owners) {}
