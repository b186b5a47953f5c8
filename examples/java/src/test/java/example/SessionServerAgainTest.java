package example;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.util.List;
import org.junit.jupiter.api.Test;
import rlockd.junit.Rlockd;
import rlockd.junit.RlockdServer;
import rlockd.junit.RlockdSession;

/** Another class on the run's server; its own {@code @Rlockd} shapes only its own servers. */
@Rlockd(args = {"--databases", "4"})
class SessionServerAgainTest {
    @Test
    void theSameServerCountsOn(@RlockdSession RlockdServer session) throws IOException {
        SessionServerTest.visit(session);
        assertEquals(List.of("databases", "16"), session.execute("CONFIG", "GET", "databases"));
    }
}
