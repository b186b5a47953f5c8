package rlockd.clients;

import static org.junit.jupiter.api.Assertions.*;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.redisson.api.RLock;
import org.redisson.api.RLockReactive;

/** RLock, each behaviour checked from Redisson's side and the server's. */
class LockTest extends SharedClient {
    /** A waiter woken by polling would wait out the holder's lease instead. */
    static final long WAKE_LIMIT_MS = 300;
    static RLock lock(TestInfo info) {
        return redisson.getLock("lock:" + info.getDisplayName());
    }

    @Test
    void lockAndUnlock(TestInfo info) {
        RLock lock = lock(info);
        assertFalse(lock.isLocked());
        lock.lock();
        assertTrue(lock.isLocked());
        assertEquals(1, lock.getHoldCount());
        // The hold is a hash field `<uuid>:<thread id>` with the count.
        String fields = Servers.raw(Servers.port(), java.util.List.of("HGETALL", lock.getName()));
        assertTrue(fields.endsWith(":" + Thread.currentThread().getId() + "\n1"), fields);
        lock.unlock();
        assertFalse(lock.isLocked());
        assertEquals("0", Servers.raw(Servers.port(), java.util.List.of("EXISTS", lock.getName())));
    }

    @Test
    void reentrantHoldCounts(TestInfo info) {
        RLock lock = lock(info);
        for (int i = 1; i <= 3; i++) {
            lock.lock();
            assertEquals(i, lock.getHoldCount());
        }
        for (int i = 2; i >= 0; i--) {
            lock.unlock();
            assertEquals(i, lock.getHoldCount());
        }
        assertFalse(lock.isLocked());
    }

    @Test
    void tryLockWithWaitAndLease(TestInfo info) throws Exception {
        RLock lock = lock(info);
        assertTrue(lock.tryLock(0, 10, TimeUnit.SECONDS));
        long asked = System.nanoTime();
        assertFalse(Threads.on(() -> lock.tryLock(200, 5_000, TimeUnit.MILLISECONDS)));
        long waited = Threads.millisSince(asked);
        assertTrue(waited >= 190, "gave up after " + waited + " ms, before its wait time");
        lock.unlock();
        assertTrue(Threads.on(() -> {
            boolean got = lock.tryLock(1_000, 500, TimeUnit.MILLISECONDS);
            long ttl = lock.remainTimeToLive();
            assertTrue(ttl > 0 && ttl <= 500, "lease 500 ms, ttl " + ttl);
            return got;
        }));
        lock.forceUnlock();
    }

    @Test
    void leaseExpires(TestInfo info) throws Exception {
        RLock lock = lock(info);
        lock.lock(300, TimeUnit.MILLISECONDS);
        assertFalse(Threads.on(() -> lock.tryLock()));
        Thread.sleep(600);
        assertFalse(lock.isLocked(), "the lease ran out");
        assertTrue(Threads.on(() -> lock.tryLock(0, 5, TimeUnit.SECONDS)));
        lock.forceUnlock();
    }

    @Test
    void forceUnlockReleasesAnotherOwnersLock(TestInfo info) throws Exception {
        RLock lock = lock(info);
        assertTrue(Threads.on(() -> lock.tryLock(0, 30, TimeUnit.SECONDS)));
        assertTrue(lock.isLocked());
        assertFalse(lock.isHeldByCurrentThread());
        assertTrue(lock.forceUnlock());
        assertFalse(lock.isLocked());
        assertFalse(lock.forceUnlock(), "nothing left to force");
    }

    @Test
    void heldByCurrentThreadOnly(TestInfo info) throws Exception {
        RLock lock = lock(info);
        lock.lock();
        assertTrue(lock.isHeldByCurrentThread());
        assertFalse(Threads.on(lock::isHeldByCurrentThread));
        assertTrue(lock.isHeldByThread(Thread.currentThread().getId()));
        lock.unlock();
        assertFalse(lock.isHeldByCurrentThread());
    }

    @Test
    void unlockByAnotherThreadIsRefused(TestInfo info) throws Exception {
        RLock lock = lock(info);
        lock.lock();
        CompletableFuture<Void> other = Threads.start(() -> {
            lock.unlock();
            return null;
        });
        Exception e = assertThrows(Exception.class, () -> other.get(10, TimeUnit.SECONDS));
        assertInstanceOf(IllegalMonitorStateException.class, e.getCause(), e.toString());
        assertTrue(lock.isHeldByCurrentThread(), "the refused unlock left the lock alone");
        lock.unlock();
    }

    @Test
    void watchdogKeepsTheLockPastItsLease(TestInfo info) throws Exception {
        RLock lock = lock(info);
        lock.lock();
        long ttl = lock.remainTimeToLive();
        assertTrue(ttl > 0 && ttl <= Servers.WATCHDOG_MS, "watchdog lease, ttl " + ttl);
        Thread.sleep(3 * Servers.WATCHDOG_MS);
        assertTrue(lock.isHeldByCurrentThread(), "renewed by the watchdog");
        ttl = lock.remainTimeToLive();
        assertTrue(ttl > 0 && ttl <= Servers.WATCHDOG_MS, "renewed lease, ttl " + ttl);
        assertFalse(Threads.on(() -> lock.tryLock()));
        lock.unlock();
        assertFalse(lock.isLocked());
    }

    @Test
    void waiterWokenByTheUnlockMessage(TestInfo info) throws Exception {
        long late = Threads.wakeAfter(lock(info), () -> { });
        Servers.measured("RLock waiter woken after unlock, ms", late);
        assertTrue(late < WAKE_LIMIT_MS, "woken " + late + " ms after unlock: by polling, not by the message");
    }

    @Test
    void asyncApi(TestInfo info) throws Exception {
        RLock lock = lock(info);
        long alice = 1001;
        long bob = 1002;
        lock.lockAsync(10, TimeUnit.SECONDS, alice).get(5, TimeUnit.SECONDS);
        assertTrue(lock.isHeldByThreadAsync(alice).get(5, TimeUnit.SECONDS));
        assertTrue(lock.isLockedAsync().get(5, TimeUnit.SECONDS));
        assertFalse(lock.tryLockAsync(0, 10_000, TimeUnit.MILLISECONDS, bob).get(5, TimeUnit.SECONDS));
        lock.lockAsync(10, TimeUnit.SECONDS, alice).get(5, TimeUnit.SECONDS);
        assertTrue(lock.remainTimeToLiveAsync().get(5, TimeUnit.SECONDS) > 0);
        lock.unlockAsync(alice).get(5, TimeUnit.SECONDS);
        assertTrue(lock.isLockedAsync().get(5, TimeUnit.SECONDS), "one of two holds left");
        lock.unlockAsync(alice).get(5, TimeUnit.SECONDS);
        assertTrue(lock.tryLockAsync(0, 10_000, TimeUnit.MILLISECONDS, bob).get(5, TimeUnit.SECONDS));
        ExecutionException e = assertThrows(ExecutionException.class,
                () -> lock.unlockAsync(alice).get(5, TimeUnit.SECONDS));
        assertInstanceOf(IllegalMonitorStateException.class, e.getCause());
        assertTrue(lock.forceUnlockAsync().get(5, TimeUnit.SECONDS));
    }

    @Test
    void reactiveApi(TestInfo info) {
        RLockReactive lock = redisson.reactive().getLock("lock:" + info.getDisplayName());
        long alice = 2001;
        long bob = 2002;
        lock.lock(10, TimeUnit.SECONDS, alice).block();
        assertEquals(Boolean.TRUE, lock.isLocked().block());
        assertEquals(Boolean.FALSE, lock.tryLock(0, 10, TimeUnit.SECONDS, bob).block());
        lock.unlock(alice).block();
        assertEquals(Boolean.TRUE, lock.tryLock(0, 10, TimeUnit.SECONDS, bob).block());
        assertEquals(Boolean.TRUE, lock.isHeldByThread(bob).block());
        lock.unlock(bob).block();
        assertEquals(Boolean.FALSE, lock.isLocked().block());
    }
}
