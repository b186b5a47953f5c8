package rlockd.clients;

import org.redisson.api.RedissonClient;

/**
 * A JVM that queues on a fair lock and is then killed by the test: a dead
 * waiter, whose turn the others must take after its wait timeout.
 */
public final class FairWaiter {
    static final String LOCK = "sync:fairDeadWaiter";
    /** Redisson's fairLockWaitTimeout, short so that a dead waiter is dropped soon. */
    static final long WAIT_TIMEOUT_MS = 500;

    private FairWaiter() {}

    static RedissonClient client() {
        return Servers.client(c -> c.setFairLockWaitTimeout(WAIT_TIMEOUT_MS));
    }

    public static void main(String[] args) {
        RedissonClient redisson = client();
        System.out.println("waiting");
        System.out.flush();
        redisson.getFairLock(LOCK).lock();
        System.out.println("acquired");
    }
}
