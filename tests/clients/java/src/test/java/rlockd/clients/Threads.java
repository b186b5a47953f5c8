package rlockd.clients;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.Callable;

import org.redisson.api.RLock;

/** Runs lock calls on threads of their own: Redisson's owner is the thread. */
final class Threads {
    private Threads() {}

    static <T> CompletableFuture<T> start(Callable<T> body) {
        CompletableFuture<T> result = new CompletableFuture<>();
        Thread t = new Thread(() -> {
            try {
                result.complete(body.call());
            } catch (Throwable e) {
                result.completeExceptionally(e);
            }
        });
        t.setDaemon(true);
        t.start();
        return result;
    }

    /** Runs `body` on a fresh thread and waits for its result. */
    static <T> T on(Callable<T> body) throws Exception {
        return start(body).get(20, TimeUnit.SECONDS);
    }

    static long millisSince(long nanos) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - nanos);
    }

    /**
     * Holds `lock` (lease 30 s) while another thread waits on it, so that a
     * pub/sub connection is subscribed; lets `meanwhile` run, then releases
     * it and returns how many ms the waiter took to get it. A waiter that
     * polled would wait out the lease instead.
     */
    static long wakeAfter(RLock lock, Runnable meanwhile) throws Exception {
        lock.lock(30, TimeUnit.SECONDS);
        CompletableFuture<Long> waiter = start(() -> {
            lock.lock(30, TimeUnit.SECONDS);
            long at = System.nanoTime();
            lock.unlock();
            return at;
        });
        // Long enough for the waiter to have tried once and subscribed.
        Thread.sleep(300);
        meanwhile.run();
        long released = System.nanoTime();
        lock.unlock();
        return TimeUnit.NANOSECONDS.toMillis(waiter.get(20, TimeUnit.SECONDS) - released);
    }
}
