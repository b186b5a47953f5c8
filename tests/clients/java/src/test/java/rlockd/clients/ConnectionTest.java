package rlockd.clients;

import static org.junit.jupiter.api.Assertions.*;

import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Protocol;

/** How Redisson connects: keep-alive PINGs, names, RESP3, reconnects. */
class ConnectionTest {
    /** The `CLIENT LIST` lines of connections named `name`. */
    static List<String> connectionsNamed(String name) {
        return Arrays.stream(Servers.raw(Servers.port(), List.of("CLIENT", "LIST")).split("\n"))
                .filter(line -> line.contains(" name=" + name + " "))
                .toList();
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void pingKeepAliveOnEveryConnectionIncludingSubscribed() throws Exception {
        RedissonClient redisson = Servers.client(c -> c.useSingleServer()
                .setClientName("java-ping")
                .setPingConnectionInterval(200));
        try {
            RLock lock = redisson.getLock("conn:ping");
            long late = Threads.wakeAfter(lock, () -> {
                sleep(1_000);
                List<String> named = connectionsNamed("java-ping");
                assertTrue(named.size() >= 3, "command and pub/sub connections: " + named);
                for (String line : named) {
                    assertTrue(line.contains(" cmd=ping") || line.contains(" cmd=evalsha")
                            || line.contains(" cmd=subscribe"), "last command of " + line);
                }
                assertTrue(named.stream().anyMatch(l -> l.contains(" cmd=ping") && l.contains(" sub=1")),
                        "the subscribed connection is pinged too: " + named);
            });
            Servers.measured("waiter woken after 1 s of keep-alive PINGs, ms", late);
            assertTrue(late < LockTest.WAKE_LIMIT_MS, "woken after " + late + " ms");
        } finally {
            redisson.shutdown();
        }
    }

    @Test
    void clientSetName() {
        RedissonClient redisson = Servers.client(c -> c.useSingleServer().setClientName("java-named"));
        try {
            redisson.getLock("conn:named").lock();
            assertFalse(connectionsNamed("java-named").isEmpty());
            redisson.getLock("conn:named").unlock();
        } finally {
            redisson.shutdown();
        }
        sleep(200);
        assertEquals(List.of(), connectionsNamed("java-named"), "closed at shutdown");
    }

    @Test
    void resp3() throws Exception {
        RedissonClient redisson = Servers.client(c -> {
            c.setProtocol(Protocol.RESP3);
            c.useSingleServer().setClientName("java-resp3");
        });
        try {
            RLock lock = redisson.getLock("conn:resp3");
            long late = Threads.wakeAfter(lock, () -> {
                assertEquals(1, lock.getHoldCount());
                List<String> named = connectionsNamed("java-resp3");
                assertFalse(named.isEmpty());
                assertTrue(named.stream().allMatch(l -> l.contains(" resp=3")), named.toString());
            });
            Servers.measured("RESP3 waiter woken after unlock, ms", late);
            assertTrue(late < LockTest.WAKE_LIMIT_MS, "woken after " + late + " ms");
            assertEquals(1L, redisson.getFencedLock("conn:resp3:fenced").lockAndGetToken(), "first token");
        } finally {
            redisson.shutdown();
        }
    }

    @Test
    void reconnectsAfterTheServerDropsEveryConnection() throws Exception {
        RedissonClient redisson = Servers.client(c -> c.useSingleServer().setClientName("java-reconnect"));
        try {
            RLock lock = redisson.getLock("conn:reconnect");
            long late = Threads.wakeAfter(lock, () -> {
                Servers.dropConnections(0);
                // Redisson notices the closed sockets, reconnects and
                // subscribes the waiter's channel again.
                sleep(1_500);
            });
            Servers.measured("waiter woken after a connection drop and unlock, ms", late);
            assertTrue(late < 5_000, "the resubscribed waiter was woken after " + late + " ms");
            assertTrue(lock.tryLock(0, 10, TimeUnit.SECONDS), "commands work again");
            lock.unlock();
        } finally {
            redisson.shutdown();
        }
    }
}
