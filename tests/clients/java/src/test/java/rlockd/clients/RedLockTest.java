package rlockd.clients;

import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/** RedissonRedLock over three independent servers, two of them stopped in turn. */
class RedLockTest {
    @Test
    void quorumOfThree() throws Exception {
        List<RedissonClient> clients = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            Config config = Servers.config(i);
            // A stopped server must fail its part quickly, not after retries.
            config.useSingleServer().setTimeout(300).setRetryAttempts(0).setConnectTimeout(300);
            clients.add(Redisson.create(config));
        }
        try {
            RLock red = redLock(clients, "red:a");
            assertTrue(red.tryLock(2, 10, TimeUnit.SECONDS));
            for (RedissonClient c : clients) {
                assertTrue(c.getLock("red:a").isLocked(), "held on every server");
            }
            assertFalse(Threads.on(() -> redLock(clients, "red:a").tryLock(200, 10_000, TimeUnit.MILLISECONDS)),
                    "a second owner is refused");
            red.unlock();

            Servers.stop(2);
            RLock two = redLock(clients, "red:b");
            assertTrue(two.tryLock(3, 10, TimeUnit.SECONDS), "two of three is a majority");
            assertTrue(clients.get(0).getLock("red:b").isLocked() && clients.get(1).getLock("red:b").isLocked());
            two.unlock();

            Servers.stop(1);
            RLock one = redLock(clients, "red:c");
            assertFalse(one.tryLock(1, 10, TimeUnit.SECONDS), "one of three is no majority");
            assertFalse(clients.get(0).getLock("red:c").isLocked(), "the failed attempt released its part");
        } finally {
            clients.forEach(RedissonClient::shutdown);
        }
    }

    @SuppressWarnings("deprecation")
    static RLock redLock(List<RedissonClient> clients, String name) {
        return new org.redisson.RedissonRedLock(
                clients.stream().map(c -> c.getLock(name)).toArray(RLock[]::new));
    }
}
