package rlockd.clients;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.Callable;

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
}
