package rlockd.clients;

import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.redisson.api.RCountDownLatch;
import org.redisson.api.RFencedLock;
import org.redisson.api.RLock;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RReadWriteLock;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;

/** Redisson's other locks and synchronizers. */
class SynchronizerTest extends SharedClient {
    static String name(TestInfo info) {
        return "sync:" + info.getTestMethod().orElseThrow().getName();
    }

    /** Starts `count` waiters one after another, each queued before the next. */
    static List<CompletableFuture<Void>> queueWaiters(RLock lock, int count, List<Integer> order)
            throws InterruptedException {
        List<CompletableFuture<Void>> waiters = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            int me = i;
            waiters.add(Threads.start(() -> {
                lock.lock(10, TimeUnit.SECONDS);
                order.add(me);
                lock.unlock();
                return null;
            }));
            Thread.sleep(150);
        }
        return waiters;
    }

    @Test
    void fairLockServesWaitersInArrivalOrder(TestInfo info) throws Exception {
        RLock lock = redisson.getFairLock(name(info));
        lock.lock(10, TimeUnit.SECONDS);
        List<Integer> order = Collections.synchronizedList(new ArrayList<>());
        List<CompletableFuture<Void>> waiters = queueWaiters(lock, 4, order);
        lock.unlock();
        for (CompletableFuture<Void> w : waiters) {
            w.get(15, TimeUnit.SECONDS);
        }
        assertEquals(List.of(0, 1, 2, 3), order);
    }

    @Test
    void fairLockSkipsAWaiterThatGaveUp(TestInfo info) throws Exception {
        RLock lock = redisson.getFairLock(name(info));
        lock.lock(10, TimeUnit.SECONDS);
        CompletableFuture<Boolean> quitter = Threads.start(() -> lock.tryLock(300, 10_000, TimeUnit.MILLISECONDS));
        Thread.sleep(100);
        CompletableFuture<Long> patient = Threads.start(() -> {
            lock.lock(10, TimeUnit.SECONDS);
            long at = System.nanoTime();
            lock.unlock();
            return at;
        });
        assertFalse(quitter.get(5, TimeUnit.SECONDS), "the first waiter gave up");
        long released = System.nanoTime();
        lock.unlock();
        long late = TimeUnit.NANOSECONDS.toMillis(patient.get(10, TimeUnit.SECONDS) - released);
        Servers.measured("fair lock: second waiter after the first gave up, ms", late);
        assertTrue(late < 2_000, "the waiter behind one that gave up got the lock after " + late + " ms");
    }

    @Test
    void fairLockSkipsADeadWaiter() throws Exception {
        RedissonClient live = FairWaiter.client();
        try {
            RLock lock = live.getFairLock(FairWaiter.LOCK);
            // The unlock message goes to the dead waiter, first in line: the
            // one behind it takes its turn when it next retries, at the
            // latest when this lease would have ended.
            lock.lock(2, TimeUnit.SECONDS);
            Process dead = Jvm.start(FairWaiter.class, true);
            java.io.BufferedReader out = new java.io.BufferedReader(new java.io.InputStreamReader(dead.getInputStream()));
            assertEquals("waiting", out.readLine());
            String queue = "redisson_lock_queue:{" + FairWaiter.LOCK + "}";
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (!"1".equals(Servers.raw(Servers.port(), List.of("LLEN", queue))) && System.nanoTime() < until) {
                Thread.sleep(20);
            }
            assertEquals("1", Servers.raw(Servers.port(), List.of("LLEN", queue)), "the other JVM queued");
            dead.destroyForcibly().waitFor();
            CompletableFuture<Long> next = Threads.start(() -> {
                lock.lock(10, TimeUnit.SECONDS);
                long at = System.nanoTime();
                lock.unlock();
                return at;
            });
            Thread.sleep(200);
            long released = System.nanoTime();
            lock.unlock();
            long late = TimeUnit.NANOSECONDS.toMillis(next.get(15, TimeUnit.SECONDS) - released);
            Servers.measured("fair lock: waiter behind a killed JVM's entry, ms", late);
            assertTrue(late < 3_000, "the waiter behind a dead one got the lock after " + late + " ms");
            assertEquals("0", Servers.raw(Servers.port(), List.of("LLEN", queue)), "the dead waiter was dropped");
        } finally {
            live.shutdown();
        }
    }

    @Test
    void readWriteLock(TestInfo info) throws Exception {
        RReadWriteLock rw = redisson.getReadWriteLock(name(info));
        rw.readLock().lock(10, TimeUnit.SECONDS);
        assertTrue(Threads.on(() -> rw.readLock().tryLock(0, 10, TimeUnit.SECONDS)), "readers share");
        assertFalse(Threads.on(() -> rw.writeLock().tryLock(100, 10_000, TimeUnit.MILLISECONDS)),
                "a writer waits for readers");
        assertEquals("read", Servers.raw(Servers.port(), List.of("HGET", name(info), "mode")));
        rw.readLock().unlock();
        rw.readLock().forceUnlock();
        assertTrue(rw.writeLock().tryLock(0, 10, TimeUnit.SECONDS));
        assertEquals("write", Servers.raw(Servers.port(), List.of("HGET", name(info), "mode")));
        assertFalse(Threads.on(() -> rw.readLock().tryLock(100, 10_000, TimeUnit.MILLISECONDS)),
                "readers wait for the writer");
        assertTrue(rw.readLock().tryLock(0, 10, TimeUnit.SECONDS), "the writer may also read");
        rw.readLock().unlock();
        rw.writeLock().unlock();
        assertFalse(rw.writeLock().isLocked() || rw.readLock().isLocked());
    }

    @Test
    void semaphore(TestInfo info) throws Exception {
        RSemaphore sem = redisson.getSemaphore(name(info));
        assertTrue(sem.trySetPermits(2));
        assertFalse(sem.trySetPermits(5), "already set");
        sem.acquire(2);
        assertEquals(0, sem.availablePermits());
        assertFalse(Threads.on(() -> sem.tryAcquire(100, TimeUnit.MILLISECONDS)));
        CompletableFuture<Long> waiter = Threads.start(() -> {
            sem.acquire();
            return System.nanoTime();
        });
        Thread.sleep(300);
        long released = System.nanoTime();
        sem.release();
        long late = TimeUnit.NANOSECONDS.toMillis(waiter.get(10, TimeUnit.SECONDS) - released);
        Servers.measured("RSemaphore waiter woken after release, ms", late);
        assertTrue(late < LockTest.WAKE_LIMIT_MS, "woken after " + late + " ms");
        sem.release(2);
        assertEquals(2, sem.availablePermits());
    }

    @Test
    void permitExpirableSemaphore(TestInfo info) throws Exception {
        RPermitExpirableSemaphore sem = redisson.getPermitExpirableSemaphore(name(info));
        assertTrue(sem.trySetPermits(1));
        String expiring = sem.acquire(300, TimeUnit.MILLISECONDS);
        assertNotNull(expiring);
        assertNull(sem.tryAcquire(), "the only permit is out");
        Thread.sleep(600);
        String next = sem.tryAcquire(0, 10, TimeUnit.SECONDS);
        assertNotNull(next, "the expired permit came back");
        assertNotEquals(expiring, next);
        assertFalse(sem.tryRelease(expiring), "an expired permit cannot be released");
        sem.release(next);
        assertEquals(1, sem.availablePermits());
    }

    @Test
    void countDownLatch(TestInfo info) throws Exception {
        RCountDownLatch latch = redisson.getCountDownLatch(name(info));
        assertTrue(latch.trySetCount(2));
        CompletableFuture<Long> waiter = Threads.start(() -> {
            assertTrue(latch.await(10, TimeUnit.SECONDS));
            return System.nanoTime();
        });
        Thread.sleep(200);
        latch.countDown();
        assertEquals(1, latch.getCount());
        Thread.sleep(200);
        assertFalse(waiter.isDone(), "one count left");
        long opened = System.nanoTime();
        latch.countDown();
        long late = TimeUnit.NANOSECONDS.toMillis(waiter.get(10, TimeUnit.SECONDS) - opened);
        Servers.measured("RCountDownLatch waiter woken after the last countDown, ms", late);
        assertTrue(late < LockTest.WAKE_LIMIT_MS, "woken after " + late + " ms");
        assertEquals(0, latch.getCount());
    }

    @Test
    void fencedLockTokensIncrease(TestInfo info) throws Exception {
        RFencedLock lock = redisson.getFencedLock(name(info));
        long previous = 0;
        for (int i = 0; i < 4; i++) {
            Long token = i % 2 == 0 ? lock.lockAndGetToken() : Threads.on(() -> {
                Long t = lock.tryLockAndGetToken(1, 10, TimeUnit.SECONDS);
                assertEquals(t, lock.getToken());
                lock.unlock();
                return t;
            });
            assertNotNull(token);
            assertTrue(token > previous, "token " + token + " after " + previous);
            previous = token;
            if (lock.isHeldByCurrentThread()) {
                lock.unlock();
            }
        }
    }

    @Test
    void spinLock(TestInfo info) throws Exception {
        RLock lock = redisson.getSpinLock(name(info));
        lock.lock();
        assertTrue(lock.isHeldByCurrentThread());
        assertFalse(Threads.on(() -> lock.tryLock(200, 10_000, TimeUnit.MILLISECONDS)));
        lock.lock();
        assertEquals(2, lock.getHoldCount());
        CompletableFuture<Boolean> spinner = Threads.start(() -> lock.tryLock(5_000, 10_000, TimeUnit.MILLISECONDS));
        lock.unlock();
        lock.unlock();
        assertTrue(spinner.get(10, TimeUnit.SECONDS), "the spinner got it once released");
    }

    @Test
    void multiLockTakesAllOrNone(TestInfo info) throws Exception {
        String base = name(info);
        RLock a = redisson.getLock(base + ":a");
        RLock b = redisson.getLock(base + ":b");
        RLock c = redisson.getLock(base + ":c");
        RLock multi = redisson.getMultiLock(a, b, c);
        multi.lock(10, TimeUnit.SECONDS);
        assertTrue(a.isLocked() && b.isLocked() && c.isLocked());
        multi.unlock();
        assertFalse(a.isLocked() || b.isLocked() || c.isLocked());
        assertTrue(Threads.on(() -> b.tryLock(0, 10, TimeUnit.SECONDS)));
        assertFalse(multi.tryLock(200, 10_000, TimeUnit.MILLISECONDS), "b is held elsewhere");
        assertFalse(a.isLocked() || c.isLocked(), "a failed multi-lock leaves nothing held");
        b.forceUnlock();
        assertTrue(multi.tryLock(0, 10_000, TimeUnit.MILLISECONDS));
        multi.unlock();
    }
}
