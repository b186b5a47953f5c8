package rlockd.junit;

import java.util.ArrayList;
import java.util.List;

/**
 * Starts more servers for one test (three for a Redlock quorum, say); every one is stopped when
 * the test (or class, for {@code @BeforeAll}) ends. A parameter of this type is injected by
 * {@link RlockdExtension}.
 */
public final class RlockdServers implements AutoCloseable {
    private final RlockdOptions defaults;
    private final List<RlockdServer> started = new ArrayList<>();

    RlockdServers(RlockdOptions defaults) {
        this.defaults = defaults;
    }

    /** The options {@link #start()} uses: the {@code @Rlockd} annotation's. */
    public RlockdOptions defaults() {
        return defaults;
    }

    /** A new server as {@code @Rlockd} says. */
    public RlockdServer start() {
        return start(defaults);
    }

    /** A new server as {@code options} say. */
    public synchronized RlockdServer start(RlockdOptions options) {
        RlockdServer server = RlockdServer.start(options);
        started.add(server);
        return server;
    }

    @Override
    public synchronized void close() {
        started.forEach(RlockdServer::close);
        started.clear();
    }
}
