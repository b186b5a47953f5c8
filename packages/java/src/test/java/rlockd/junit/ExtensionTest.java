package rlockd.junit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The extension's own behaviour: scopes, options, errors and clean-up. */
@Rlockd(args = {"--databases", "3"})
class ExtensionTest {
    private static RlockdServer classServer;
    /** Every test server's port, which must refuse connections once the class is done. */
    private static final List<Integer> testPorts = new ArrayList<>();
    /** The session's server as each test that asked got it. */
    private static final List<RlockdServer> sessionServers = new ArrayList<>();

    @BeforeAll
    static void startTheClassServer(RlockdServer server) {
        classServer = server;
    }

    @AfterAll
    static void everyTestServerIsStopped(RlockdServer server) {
        assertEquals(classServer, server, "one server for the class");
        for (int port : testPorts) {
            assertThrows(ConnectException.class, () -> {
                try (Socket socket = new Socket()) {
                    socket.connect(new InetSocketAddress("127.0.0.1", port), 1000);
                }
            }, "port " + port + " is closed");
        }
        assertEquals(2, sessionServers.size());
        assertSame(sessionServers.get(0), sessionServers.get(1), "one server for the run");
        assertEquals("PONG", sessionServers.get(0).execute("PING"), "it outlives the class");
    }

    @Test
    void theSessionServerIsNotTheTestsOwn(@RlockdSession RlockdServer session, RlockdServer own) {
        testPorts.add(own.port());
        sessionServers.add(session);
        assertNotEquals(own.port(), session.port());
        assertNotEquals(classServer.port(), session.port());
    }

    @Test
    void theSessionServerTakesNoClassOptions(@RlockdSession RlockdServer session) {
        sessionServers.add(session);
        assertEquals(List.of("databases", "16"), session.execute("CONFIG", "GET", "databases"));
        assertTrue(session.clock().now() > 0, "on the manual clock, as the defaults say");
    }

    @Test
    void aTestHasAServerOfItsOwnShapedByTheClassAnnotation(RlockdServer server, RlockdServers more) {
        testPorts.add(server.port());
        assertNotEquals(classServer.port(), server.port());
        assertEquals(List.of("databases", "3"), server.execute("CONFIG", "GET", "databases"));
        assertEquals("PONG", server.execute("PING"));
        assertEquals(Optional.of("127.0.0.1"), server.host());
        assertEquals("redis://127.0.0.1:" + server.port(), server.url());

        RlockdServer another = more.start();
        testPorts.add(another.port());
        assertNotEquals(server.port(), another.port());
        assertEquals(List.of("databases", "3"), another.execute("CONFIG", "GET", "databases"));
    }

    @Test
    @Rlockd(unixSocket = true, password = "pw", manualClock = false)
    void aMethodAnnotationWins(RlockdServer server) {
        assertEquals(0, server.port());
        assertEquals(Optional.empty(), server.host());
        assertTrue(Files.exists(server.unixSocket().orElseThrow()));
        assertEquals(List.of("databases", "16"), server.execute("CONFIG", "GET", "databases"));
        assertEquals(List.of("requirepass", "pw"), server.execute("CONFIG", "GET", "requirepass"));
        assertThrows(RlockdException.class, server::url);
        RlockdException realClock = assertThrows(RlockdException.class, () -> server.clock().now());
        assertTrue(realClock.getMessage().contains("real clock"), realClock.getMessage());
    }

    @Test
    @Rlockd(password = "p w+")
    void aPasswordGoesIntoTheUrlAndTheRedissonConfig(RlockdServer server) {
        testPorts.add(server.port());
        assertEquals("redis://:p%20w%2B@127.0.0.1:" + server.port(), server.url());
        assertEquals("p w+", server.redissonConfig().useSingleServer().getPassword());
        assertEquals("OK", server.execute("SET", "k", "v"), "the fixture authenticated");
    }

    @Test
    void theClockMovesOnlyWhenTold(RlockdServer server) {
        testPorts.add(server.port());
        long now = server.clock().now();
        assertEquals("OK", server.execute("SET", "lease", "me", "PX", "100"));
        assertEquals(now + 99, server.clock().advance(99));
        assertEquals(1L, server.execute("PTTL", "lease"));
        // As in Redis, a key lives through its deadline's millisecond.
        server.clock().advance(1);
        assertEquals(0L, server.execute("PTTL", "lease"));
        server.clock().advance(1);
        assertEquals(0L, server.execute("EXISTS", "lease"));
        assertEquals(now + 5_000, server.clock().set(now + 5_000));
    }

    @Test
    void errorRepliesAreThrownWithRedisText(RlockdServer server) {
        RlockdException e = assertThrows(RlockdException.class, () -> server.execute("NOSUCH", "x"));
        assertTrue(e.getMessage().startsWith("ERR unknown command 'NOSUCH'"), e.getMessage());
        assertEquals("PONG", server.execute("PING"), "the connection goes on");
    }

    @Test
    void aFailedStartSaysWhyAndLeavesNoTempFolder() throws IOException {
        List<Path> before = tempFolders();
        RlockdException e = assertThrows(
                RlockdException.class,
                () -> RlockdServer.start(RlockdOptions.defaults().withArgs("--no-such-flag")));
        assertTrue(e.getMessage().contains("before it was ready"), e.getMessage());
        assertTrue(e.getMessage().contains("no-such-flag"), "the server's own words: " + e.getMessage());
        assertEquals(before, tempFolders());
    }

    @Test
    void aMissingBinaryIsNamed() {
        Path missing = Path.of("/nonexistent/rlockd");
        RlockdException e = assertThrows(
                RlockdException.class, () -> RlockdServer.start(RlockdOptions.defaults().withBinary(missing)));
        assertEquals("rlockd binary /nonexistent/rlockd is not an executable file", e.getMessage());
    }

    @Test
    void theJarsOwnBinaryIsExtractedOnce() {
        Path first = Binary.find(Optional.empty());
        assertTrue(Files.isExecutable(first));
        assertEquals(first, Binary.find(Optional.empty()));
        assertEquals(first, classServer.binary(), "no $RLOCKD_BINARY here: the jar's own");
    }

    @Test
    void javasArchitectureNamesPickTheBinary() {
        assertEquals("linux-x86_64", Binary.platform("Linux", "amd64"));
        assertEquals("linux-x86_64", Binary.platform("Linux", "x86_64"));
        assertEquals("linux-aarch64", Binary.platform("Linux", "aarch64"));
        assertEquals("mac-os-x-aarch64", Binary.platform("Mac OS X", "aarch64"));
    }

    @Test
    void aPlatformWithoutABinaryIsNamed() {
        RlockdException e = assertThrows(RlockdException.class, () -> Binary.extract("linux-riscv64"));
        assertEquals(
                "this jar has no rlockd for linux-riscv64 (it carries: "
                        + String.join(", ", Binary.carried())
                        + "): set -Drlockd.binary or $RLOCKD_BINARY to one built for it"
                        + " (cargo build --release)",
                e.getMessage());
        assertTrue(Binary.carried().contains("linux-x86_64"), Binary.carried().toString());
    }

    /** ELF's e_machine for each platform's processor. */
    private static final Map<String, Integer> ELF_MACHINES = Map.of("linux-x86_64", 62, "linux-aarch64", 183);

    @Test
    void eachCarriedBinaryIsBuiltForItsPlatform() throws IOException {
        for (String platform : Binary.carried()) {
            Path file = Binary.extract(platform);
            try {
                assertTrue(Files.isExecutable(file), file.toString());
                ByteBuffer header = ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.LITTLE_ENDIAN);
                assertEquals(0x464c457f, header.getInt(0), platform + ": an ELF file");
                assertEquals(ELF_MACHINES.get(platform), (int) header.getShort(18), platform + "'s machine");
            } finally {
                Files.delete(file);
            }
        }
    }

    private static List<Path> tempFolders() throws IOException {
        try (Stream<Path> all = Files.list(Path.of(System.getProperty("java.io.tmpdir")))) {
            return all.filter(p -> p.getFileName().toString().startsWith("rlockd-") && Files.isDirectory(p))
                    .sorted()
                    .toList();
        }
    }
}
