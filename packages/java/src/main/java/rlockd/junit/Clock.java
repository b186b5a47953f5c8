package rlockd.junit;

/** The server's manual clock ({@code RLOCKD.CLOCK}), in Unix milliseconds. */
public final class Clock {
    private final RlockdServer server;

    Clock(RlockdServer server) {
        this.server = server;
    }

    private long call(Object... args) {
        if (!server.options().manualClock()) {
            throw new RlockdException("this server runs on the real clock (manualClock = false)");
        }
        Object[] command = new Object[args.length + 1];
        command[0] = "RLOCKD.CLOCK";
        System.arraycopy(args, 0, command, 1, args.length);
        return (Long) server.execute(command);
    }

    /** The server's time now. */
    public long now() {
        return call("GET");
    }

    /**
     * Moves time on by {@code ms}: every key whose deadline passed is gone (and its
     * {@code expired} event raised) when this returns. Answers the new time.
     */
    public long advance(long ms) {
        return call("ADVANCE", ms);
    }

    /** Moves time to {@code unixMs} (as {@link #advance}). */
    public long set(long unixMs) {
        return call("SET", unixMs);
    }
}
