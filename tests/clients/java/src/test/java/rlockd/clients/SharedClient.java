package rlockd.clients;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.redisson.api.RedissonClient;

/** One Redisson client for all the tests of a class, on the run's first server. */
abstract class SharedClient {
    static RedissonClient redisson;

    @BeforeAll
    static void connect() {
        redisson = Servers.client();
    }

    @AfterAll
    static void close() {
        redisson.shutdown();
    }
}
