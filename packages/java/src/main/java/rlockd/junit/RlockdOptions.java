package rlockd.junit;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * How a server is started; {@link Rlockd @Rlockd} takes the same names. Immutable: each
 * {@code with…} answers a copy.
 *
 * @param unixSocket serve a unix socket only (no TCP), in the server's own temp folder
 * @param manualClock run on the manual clock ({@code --enable-clock-control}): time moves
 *     only when the test calls {@code clock().advance}/{@code set}
 * @param password {@code requirepass}, which {@link RlockdServer#redissonConfig()} and the
 *     fixture's own connection use
 * @param args any further flags, as on the command line ({@code "--databases", "4"})
 * @param binary the rlockd executable, else {@link Binary#find}'s choice
 */
public record RlockdOptions(
        boolean unixSocket,
        boolean manualClock,
        Optional<String> password,
        List<String> args,
        Optional<Path> binary) {

    public RlockdOptions {
        args = List.copyOf(args);
    }

    /** A TCP server on the manual clock, no password, no further flags. */
    public static RlockdOptions defaults() {
        return new RlockdOptions(false, true, Optional.empty(), List.of(), Optional.empty());
    }

    /** As {@code @Rlockd} says. */
    static RlockdOptions of(Rlockd annotation) {
        return new RlockdOptions(
                annotation.unixSocket(),
                annotation.manualClock(),
                Optional.of(annotation.password()).filter(p -> !p.isEmpty()),
                List.of(annotation.args()),
                Optional.of(annotation.binary()).filter(b -> !b.isEmpty()).map(Path::of));
    }

    public RlockdOptions withUnixSocket(boolean on) {
        return new RlockdOptions(on, manualClock, password, args, binary);
    }

    public RlockdOptions withManualClock(boolean on) {
        return new RlockdOptions(unixSocket, on, password, args, binary);
    }

    public RlockdOptions withPassword(String requirepass) {
        return new RlockdOptions(unixSocket, manualClock, Optional.of(requirepass), args, binary);
    }

    public RlockdOptions withArgs(String... flags) {
        return new RlockdOptions(unixSocket, manualClock, password, List.of(flags), binary);
    }

    public RlockdOptions withBinary(Path executable) {
        return new RlockdOptions(unixSocket, manualClock, password, args, Optional.of(executable));
    }
}
