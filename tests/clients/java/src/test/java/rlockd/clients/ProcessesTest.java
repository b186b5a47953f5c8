package rlockd.clients;

import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.redisson.api.RBucket;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;

/** Several JVMs incrementing a plain counter under one RLock. */
class ProcessesTest {
    static final int PROCESSES = 4;
    static final int ROUNDS = 100;
    static final String COUNTER = "procs:counter";
    static final String LOCK = "procs:lock";

    @Test
    void lockedIncrementsFromSeveralJvmsAddUp() throws Exception {
        List<Process> workers = new ArrayList<>();
        long started = System.nanoTime();
        for (int i = 0; i < PROCESSES; i++) {
            workers.add(Jvm.start(ProcessesTest.class, false));
        }
        for (Process p : workers) {
            assertTrue(p.waitFor(90, TimeUnit.SECONDS), "a worker JVM hung");
            assertEquals(0, p.exitValue(), "a worker JVM failed");
        }
        Servers.measured(PROCESSES + " JVMs x " + ROUNDS + " locked increments, ms", Threads.millisSince(started));
        assertEquals(String.valueOf(PROCESSES * ROUNDS), Servers.raw(Servers.port(), List.of("GET", COUNTER)));
    }

    /** One worker JVM: GET and SET (no INCR) under the lock, so a lost update shows. */
    public static void main(String[] args) {
        RedissonClient redisson = Servers.client();
        try {
            RLock lock = redisson.getLock(LOCK);
            RBucket<String> counter = redisson.getBucket(COUNTER, StringCodec.INSTANCE);
            for (int i = 0; i < ROUNDS; i++) {
                lock.lock();
                String value = counter.get();
                counter.set(String.valueOf(value == null ? 1 : Long.parseLong(value) + 1));
                lock.unlock();
            }
        } finally {
            redisson.shutdown();
        }
    }
}
