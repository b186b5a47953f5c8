package rlockd.clients;

import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.redisson.Redisson;
import org.redisson.api.RAtomicLong;
import org.redisson.api.RFencedLock;
import org.redisson.api.RLock;
import org.redisson.api.RPatternTopic;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

/**
 * Redisson in master/slave mode over server 0, a primary, and servers 1
 * and 2, its replicas (the harness, tests/compiled_clients.rs, set them
 * up): what its locks write on the primary reaches each replica exactly
 * (DUMP payloads equal, the same remaining lease within the link's lag),
 * the unlock message reaches subscribers of the replicas, and the WAIT it
 * sends after each lock write is answered by the replicas' acks.
 */
class MasterSlaveTest {
    static RedissonClient redisson;
    /** One single-server client per server, to read each one's own keys. */
    static final List<RedissonClient> nodes = new ArrayList<>();
    static final int REPLICAS = 2;

    @BeforeAll
    static void connect() {
        List<Integer> ports = Servers.ports();
        Config config = new Config();
        config.setLockWatchdogTimeout(Servers.WATCHDOG_MS);
        config.useMasterSlaveServers()
                .setMasterAddress(Servers.address(ports.get(0)))
                .addSlaveAddress(Servers.address(ports.get(1)), Servers.address(ports.get(2)))
                .setPassword(Servers.password());
        redisson = Redisson.create(config);
        for (int i = 0; i <= REPLICAS; i++) {
            nodes.add(Redisson.create(Servers.config(i)));
        }
    }

    @AfterAll
    static void close() {
        redisson.shutdown();
        nodes.forEach(RedissonClient::shutdown);
    }

    static String info(int server, String section) {
        return Servers.raw(Servers.ports().get(server), List.of("INFO", section));
    }

    static String field(String info, String name) {
        return Arrays.stream(info.split("\r?\n"))
                .filter(line -> line.startsWith(name + ":"))
                .map(line -> line.substring(name.length() + 1).trim())
                .findFirst()
                .orElse("");
    }

    /** Waits until both replicas applied all the primary wrote. */
    static void inSync() throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            String offset = field(info(0, "replication"), "master_repl_offset");
            boolean all = true;
            for (int i = 1; i <= REPLICAS; i++) {
                String replica = info(i, "replication");
                all &= field(replica, "master_link_status").equals("up")
                        && field(replica, "master_repl_offset").equals(offset);
            }
            if (all) {
                return;
            }
            assertTrue(System.nanoTime() < deadline, "the replicas did not catch up with offset " + offset);
            Thread.sleep(20);
        }
    }

    /** The primary's keys matching `pattern`. */
    static List<String> keys(String pattern) {
        String listed = Servers.raw(Servers.ports().get(0), List.of("KEYS", pattern));
        return listed.isEmpty() ? List.of() : List.of(listed.split("\n"));
    }

    /**
     * Every key of the primary's matching `pattern` (at least `least` of
     * them) is on each replica with the same DUMP payload and the same
     * remaining time to live, within the link's lag.
     */
    static void sameEverywhere(String pattern, int least) throws InterruptedException {
        inSync();
        List<String> keys = keys(pattern);
        assertTrue(keys.size() >= least, pattern + ": " + keys);
        for (String key : keys) {
            byte[] want = nodes.get(0).getBucket(key).dump();
            long ttl = nodes.get(0).getBucket(key).remainTimeToLive();
            assertNotNull(want, key);
            for (int i = 1; i <= REPLICAS; i++) {
                assertArrayEquals(want, nodes.get(i).getBucket(key).dump(), key + " on replica " + i);
                long got = nodes.get(i).getBucket(key).remainTimeToLive();
                if (ttl < 0) {
                    assertEquals(ttl, got, key + "'s deadline on replica " + i);
                } else {
                    assertTrue(Math.abs(ttl - got) < 1_000, key + ": " + ttl + " ms left on the primary, " + got + " on replica " + i);
                }
            }
        }
    }

    @Test
    void aLockReachesTheReplicasWithItsLeaseAndItsUnlockMessage() throws Exception {
        RLock lock = redisson.getLock("ms:lock");
        lock.lock(30, TimeUnit.SECONDS);
        sameEverywhere("ms:lock", 1);
        assertTrue(nodes.get(1).getBucket("ms:lock").remainTimeToLive() > 25_000);

        CountDownLatch heard = new CountDownLatch(REPLICAS);
        List<Integer> listeners = new ArrayList<>();
        for (int i = 1; i <= REPLICAS; i++) {
            RPatternTopic topic = nodes.get(i).getPatternTopic("*ms:lock*", StringCodec.INSTANCE);
            listeners.add(topic.addListener(String.class, (pattern, channel, message) -> heard.countDown()));
        }
        lock.unlock();
        assertTrue(heard.await(5, TimeUnit.SECONDS), "each replica's subscriber got the unlock message");
        inSync();
        for (int i = 1; i <= REPLICAS; i++) {
            assertFalse(nodes.get(i).getBucket("ms:lock").isExists(), "released on replica " + i);
            nodes.get(i).getPatternTopic("*ms:lock*", StringCodec.INSTANCE).removeListener(listeners.get(i - 1));
        }
    }

    @Test
    void fencingTokensCountersAndSemaphoresReplicateExactly() throws Exception {
        RFencedLock fenced = redisson.getFencedLock("ms:fenced");
        long first = fenced.lockAndGetToken(30, TimeUnit.SECONDS);
        fenced.unlock();
        assertEquals(first + 1, fenced.lockAndGetToken(30, TimeUnit.SECONDS));
        RAtomicLong counter = redisson.getAtomicLong("ms:counter");
        for (int i = 0; i < 5; i++) {
            counter.incrementAndGet();
        }
        RSemaphore semaphore = redisson.getSemaphore("ms:semaphore");
        assertTrue(semaphore.trySetPermits(3));
        semaphore.acquire(2);
        sameEverywhere("*ms:fenced*", 2);
        sameEverywhere("ms:counter", 1);
        sameEverywhere("ms:semaphore", 1);
        assertEquals(5, nodes.get(2).getAtomicLong("ms:counter").get());
        assertEquals(1, nodes.get(2).getSemaphore("ms:semaphore").availablePermits());
        fenced.unlock();
    }

    @Test
    void theFairLocksQueueAndTimeoutsReplicateExactly() throws Exception {
        RLock fair = redisson.getFairLock("ms:fair");
        fair.lock(30, TimeUnit.SECONDS);
        CompletableFuture<Boolean> waiter = Threads.start(() -> {
            RLock mine = redisson.getFairLock("ms:fair");
            boolean got = mine.tryLock(10, 30, TimeUnit.SECONDS);
            if (got) {
                mine.unlock();
            }
            return got;
        });
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!"1".equals(Servers.raw(Servers.ports().get(0), List.of("LLEN", "redisson_lock_queue:{ms:fair}")))) {
            assertTrue(System.nanoTime() < deadline, "the waiter queued");
            Thread.sleep(20);
        }
        // The lock, its queue and its waiters' timeouts.
        sameEverywhere("*ms:fair*", 3);
        fair.unlock();
        assertTrue(waiter.get(15, TimeUnit.SECONDS), "the waiter got the lock");
    }

    @Test
    void itsWaitIsAnsweredByTheReplicasAcks() throws Exception {
        RLock lock = redisson.getLock("ms:acked");
        for (int i = 0; i < 5; i++) {
            lock.lock(30, TimeUnit.SECONDS);
            lock.unlock();
        }
        String stats = info(0, "commandstats");
        String waits = field(stats, "cmdstat_wait");
        assertTrue(waits.startsWith("calls="), "the primary answered WAIT:\n" + stats);
        Servers.measured("WAIT calls on the primary", waits);
        // Each replica acknowledged the whole stream.
        inSync();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            String replication = info(0, "replication");
            String offset = field(replication, "master_repl_offset");
            boolean acked = true;
            for (int i = 0; i < REPLICAS; i++) {
                acked &= field(replication, "slave" + i).contains("state=online,offset=" + offset + ",");
            }
            if (acked) {
                break;
            }
            assertTrue(System.nanoTime() < deadline, "the replicas' acks:\n" + replication);
            Thread.sleep(50);
        }
    }
}
