package example;

import static example.RedissonLockTest.onAnotherThread;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.client.RedisTimeoutException;
import org.redisson.config.Config;
import rlockd.junit.PauseMode;
import rlockd.junit.Rlockd;
import rlockd.junit.RlockdServer;
import rlockd.junit.RlockdServers;

/** What Redisson's locks do when the server pauses, drops them, hangs or restarts. */
@Rlockd
class FaultsTest {
    @Test
    void aWritePauseHoldsAnAcquireBackUntilUnpause(RlockdServer rlockd) throws Exception {
        RLock lock = rlockd.redisson().getLock("orders");
        rlockd.pause(10_000, PauseMode.WRITE);
        CompletableFuture<Boolean> acquired = CompletableFuture.supplyAsync(() -> {
            try {
                return lock.tryLock(0, 30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        assertThrows(TimeoutException.class, () -> acquired.get(300, TimeUnit.MILLISECONDS));
        assertEquals(List.of(), rlockd.locks());

        rlockd.unpause();
        assertTrue(acquired.get(10, TimeUnit.SECONDS));
        assertEquals(1, rlockd.locks().size());
    }

    @Test
    void aFrozenServerTimesTheClientOut(RlockdServer rlockd) throws Exception {
        Config config = rlockd.redissonConfig();
        config.useSingleServer().setTimeout(200).setRetryAttempts(0);
        RedissonClient impatient = Redisson.create(config);
        try {
            RLock lock = impatient.getLock("orders");
            try (RlockdServer.Frozen frozen = rlockd.freeze()) {
                assertThrows(RedisTimeoutException.class, () -> lock.tryLock(0, 30, TimeUnit.SECONDS));
            }
            assertTrue(onAnotherThread(() -> lock.tryLock(0, 30, TimeUnit.SECONDS)));
        } finally {
            impatient.shutdown();
        }
    }

    @Test
    void droppedConnectionsReconnectAndTheLockStays(RlockdServer rlockd) throws Exception {
        RLock lock = rlockd.redisson().getLock("orders");
        assertTrue(lock.tryLock(0, 30, TimeUnit.SECONDS));

        assertTrue(rlockd.dropConnections() >= 1);
        assertEquals(List.of("orders"), rlockd.locks().stream().map(l -> l.key()).toList());
        assertTrue(lock.isHeldByCurrentThread(), "Redisson reconnected and still holds it");
        lock.unlock();
        assertEquals(List.of(), rlockd.locks("orders"));
    }

    @Test
    void aRestartForgetsTheLocksAndKeepsTheAddress(RlockdServer rlockd) throws Exception {
        RLock lock = rlockd.redisson().getLock("orders");
        assertTrue(lock.tryLock(0, 30, TimeUnit.SECONDS));
        String url = rlockd.url();

        rlockd.restart();
        assertEquals(url, rlockd.url());
        assertEquals(List.of(), rlockd.locks());
        assertTrue(onAnotherThread(() -> lock.tryLock(0, 30, TimeUnit.SECONDS)));
    }

    @Test
    void aQuorumOfThreeServers(RlockdServers servers) throws Exception {
        List<RlockdServer> three = List.of(servers.start(), servers.start(), servers.start());
        assertEquals(3, three.stream().mapToInt(RlockdServer::port).distinct().count());
        for (RlockdServer server : three) {
            assertTrue(server.redisson().getLock("orders").tryLock(0, 10, TimeUnit.SECONDS));
        }

        // One server's clock moves on: two of three still hold it.
        three.get(0).clock().advance(10_001);
        assertEquals(List.of(0, 1, 1), three.stream().map(s -> s.locks().size()).toList());
        assertFalse(three.get(1).locks().isEmpty());
    }
}
