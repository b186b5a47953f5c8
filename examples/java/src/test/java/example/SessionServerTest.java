package example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.redisson.api.RLock;
import rlockd.junit.RlockdServer;
import rlockd.junit.RlockdSession;

/**
 * One server for the whole run, shared with {@link SessionServerAgainTest}: no {@code @Rlockd}
 * needed, the parameter's annotation brings the extension.
 */
class SessionServerTest {
    /** The tests of this run that have used the session's server so far. */
    private static final AtomicLong VISITS = new AtomicLong();

    /**
     * Counts a visit on the server and here: a server per class would count from 1 again. Also
     * leaves its process id for tests/java_extension.rs, which checks, once Maven is done, that
     * the run's end stopped it.
     */
    static void visit(RlockdServer session) throws IOException {
        assertEquals(VISITS.incrementAndGet(), session.execute("INCR", "session:visits"));
        String info = (String) session.execute("INFO", "server");
        String pid = info.lines()
                .filter(line -> line.startsWith("process_id:"))
                .findFirst()
                .orElseThrow()
                .substring("process_id:".length());
        Files.writeString(Path.of("target", "rlockd-session.pid"), pid.strip());
    }

    @Test
    void redissonLocksOnTheSessionServer(@RlockdSession RlockdServer session) throws Exception {
        visit(session);
        RLock lock = session.redisson().getLock("session:orders");
        assertTrue(lock.tryLock(0, 10, TimeUnit.SECONDS));
        assertEquals(1, session.locks("session:orders").size());
        lock.unlock();
        assertFalse(lock.isLocked());
    }

    @Test
    void aTestsOwnServerIsAnotherOne(@RlockdSession RlockdServer session, RlockdServer own)
            throws IOException {
        visit(session);
        assertNotEquals(session.url(), own.url());
        assertEquals(0L, own.execute("EXISTS", "session:visits"));
    }
}
