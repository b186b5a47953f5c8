package rlockd.clients;

import static org.junit.jupiter.api.Assertions.*;

import java.util.List;

import org.junit.jupiter.api.Test;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.api.redisnode.RedisNodes;
import org.redisson.config.Config;

/** `useClusterServers()` against a one-node cluster. */
class ClusterTest {
    @Test
    void clusterModeLocksWithShardedPubSub() throws Exception {
        Config config = new Config();
        config.setLockWatchdogTimeout(Servers.WATCHDOG_MS);
        config.useClusterServers().addNodeAddress(Servers.address(Servers.port()));
        RedissonClient redisson = Redisson.create(config);
        try {
            assertEquals(1, redisson.getRedisNodes(RedisNodes.CLUSTER).getMasters().size(), "the cluster was detected");
            // Keys in many slots, all on the one node.
            for (int i = 0; i < 8; i++) {
                RLock lock = redisson.getLock("cluster:lock:" + i);
                lock.lock();
                assertTrue(lock.isHeldByCurrentThread());
                lock.unlock();
            }
            long late = Threads.wakeAfter(redisson.getLock("cluster:wake"), () -> {
                String shard = Servers.raw(Servers.port(), List.of("PUBSUB", "SHARDCHANNELS"));
                assertTrue(shard.contains("redisson_lock__channel:{cluster:wake}"), "waiter on a shard channel: " + shard);
                String plain = Servers.raw(Servers.port(), List.of("PUBSUB", "CHANNELS"));
                assertFalse(plain.contains("cluster:wake"), "not on a plain channel: " + plain);
            });
            Servers.measured("cluster waiter woken by SPUBLISH, ms", late);
            assertTrue(late < LockTest.WAKE_LIMIT_MS, "woken after " + late + " ms");
            RLock watched = redisson.getLock("cluster:watchdog");
            watched.lock();
            Thread.sleep(2 * Servers.WATCHDOG_MS);
            assertTrue(watched.isHeldByCurrentThread(), "renewed by the watchdog in cluster mode");
            watched.unlock();
        } finally {
            redisson.shutdown();
        }
    }
}
