package example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import rlockd.junit.HeldLock;
import rlockd.junit.Rlockd;
import rlockd.junit.RlockdServer;

/** Redisson's locks on a server of each test's own, on the manual clock. */
@Rlockd
class RedissonLockTest {
    /** Redisson's lock owners are threads: a contender needs one of its own. */
    static <T> T onAnotherThread(Attempt<T> attempt) throws Exception {
        return CompletableFuture.supplyAsync(() -> {
                    try {
                        return attempt.run();
                    } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                })
                .get(10, TimeUnit.SECONDS);
    }

    interface Attempt<T> {
        T run() throws InterruptedException;
    }

    @Test
    void lockIsReentrantAndUnlockReleasesIt(RlockdServer rlockd) throws Exception {
        RLock lock = rlockd.redisson().getLock("orders");
        lock.lock();
        lock.lock();

        List<HeldLock> held = rlockd.locks();
        assertEquals(1, held.size());
        assertEquals("orders", held.get(0).key());
        assertEquals("hash", held.get(0).type());
        assertEquals(List.of(2L), List.copyOf(held.get(0).owners().values()), "two holds, one owner");
        assertFalse(onAnotherThread(() -> lock.tryLock(0, 10, TimeUnit.SECONDS)));

        lock.unlock();
        lock.unlock();
        // "orders" only: an unlock that Redisson retried leaves a short-lived string,
        // redisson_unlock_latch:{orders}:…, which RLOCKD.LOCKS lists as any leased string.
        assertEquals(List.of(), rlockd.locks("orders"));
        assertTrue(onAnotherThread(() -> lock.tryLock(0, 10, TimeUnit.SECONDS)));
    }

    @Test
    void aLeaseRunsOutOnlyWhenTheClockSaysSo(RlockdServer rlockd) throws Exception {
        RLock lock = rlockd.redisson().getLock("orders");
        assertTrue(lock.tryLock(0, 10, TimeUnit.SECONDS));
        assertEquals(10_000, rlockd.locks().get(0).pttl());

        rlockd.clock().advance(9_999);
        assertEquals(1, rlockd.locks().get(0).pttl());
        assertFalse(onAnotherThread(() -> lock.tryLock(0, 10, TimeUnit.SECONDS)));

        rlockd.clock().advance(2); // past the deadline
        assertEquals(List.of(), rlockd.locks());
        assertTrue(onAnotherThread(() -> lock.tryLock(0, 10, TimeUnit.SECONDS)));
        assertFalse(lock.isHeldByCurrentThread(), "the expired lease took the old owner's hold");
    }

    @Test
    void aFairLockServesWaitersInArrivalOrder(RlockdServer rlockd) throws Exception {
        RedissonClient redisson = rlockd.redisson();
        RLock lock = redisson.getFairLock("orders");
        lock.lock(30, TimeUnit.SECONDS);
        List<Integer> order = Collections.synchronizedList(new ArrayList<>());
        List<CompletableFuture<Void>> waiters = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            int me = i;
            waiters.add(CompletableFuture.runAsync(() -> {
                lock.lock(30, TimeUnit.SECONDS);
                order.add(me);
                lock.unlock();
            }, runnable -> new Thread(runnable).start()));
            awaitQueue(rlockd, me + 1);
        }

        lock.unlock();
        for (CompletableFuture<Void> waiter : waiters) {
            waiter.get(10, TimeUnit.SECONDS);
        }
        assertEquals(List.of(0, 1, 2), order);
        assertEquals(List.of(), rlockd.locks("orders"));
    }

    /**
     * Waits (bounded) until Redisson's fair-lock queue holds {@code length} waiters, each
     * listening on a channel of its own for its turn.
     */
    private static void awaitQueue(RlockdServer rlockd, long length) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!Long.valueOf(length).equals(rlockd.execute("LLEN", "redisson_lock_queue:{orders}"))
                || rlockd.waiters("redisson_lock__channel:{orders}:*").size() != length) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("no " + length + " waiters queued: " + rlockd.waiters());
            }
            Thread.sleep(5);
        }
    }

    @Test
    void ownersAreTheClientsIdAndThread(RlockdServer rlockd) {
        RedissonClient redisson = rlockd.redisson();
        redisson.getLock("orders").lock();
        Map<String, Long> owners = rlockd.locks("ord*").get(0).owners();
        assertEquals(
                Map.of(redisson.getId() + ":" + Thread.currentThread().getId(), 1L), owners);
        assertEquals(List.of(), rlockd.locks("invoices*"));
    }
}
