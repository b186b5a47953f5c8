package rlockd.clients;

import static org.junit.jupiter.api.Assertions.*;

import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;

/** A server with `requirepass`: Redisson AUTHs and SELECTs its database. */
class AuthDbTest {
    @Test
    void passwordAndDatabase() throws Exception {
        assertNotNull(Servers.password(), "run against a server with a password");
        RedissonClient redisson = Servers.client(c -> c.useSingleServer().setDatabase(3));
        try {
            RLock lock = redisson.getLock("auth:lock");
            lock.lock(10, TimeUnit.SECONDS);
            assertEquals("1", Servers.raw(Servers.port(), List.of("SELECT", "3"), List.of("EXISTS", "auth:lock")));
            assertEquals("0", Servers.raw(Servers.port(), List.of("EXISTS", "auth:lock")), "not in db 0");
            long late = Threads.wakeAfter(redisson.getLock("auth:wake"), () -> { });
            assertTrue(late < LockTest.WAKE_LIMIT_MS, "woken after " + late + " ms");
            lock.unlock();
        } finally {
            redisson.shutdown();
        }
    }

    @Test
    void wrongPasswordIsRefused() {
        Exception e = assertThrows(Exception.class,
                () -> Servers.client(c -> c.useSingleServer().setPassword("wrong").setRetryAttempts(0)).shutdown());
        String all = "";
        for (Throwable t = e; t != null; t = t.getCause()) {
            all += t.getMessage() + "\n";
        }
        assertTrue(all.contains("WRONGPASS"), all);
    }
}
