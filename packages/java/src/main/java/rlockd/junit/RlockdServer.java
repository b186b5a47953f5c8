package rlockd.junit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.SocketAddress;
import java.net.URLEncoder;
import java.net.UnixDomainSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import java.util.stream.Stream;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import org.redisson.config.SingleServerConfig;

/**
 * An rlockd process on a free port (or a unix socket), and the controls its own commands give
 * a test. Stopped by {@link #close()}.
 *
 * <p>Everything goes through the server's public surface: the ready file ({@code
 * --ready-file}) says where it listens, and {@code RLOCKD.CLOCK}, {@code RLOCKD.LOCKS}, {@code
 * RLOCKD.WAITERS}, {@code CLIENT PAUSE} and {@code CLIENT KILL} do the work. Nothing about
 * locks or time is modelled in Java.
 */
public final class RlockdServer implements AutoCloseable {
    /** How long a start may take: a debug build on a loaded CI machine is the slow case. */
    static final Duration START_TIMEOUT = Duration.ofSeconds(30);
    /** How long a graceful stop (SIGTERM) may take before the process is killed. */
    static final Duration STOP_TIMEOUT = Duration.ofSeconds(10);
    /** How often a start looks for the ready file. */
    private static final long READY_POLL_MS = 10;
    /** The ready line's fixed part; what follows is {@code ADDR, ADDR, …, SOCKET}. */
    private static final String READY_MARK = " ready to accept connections on ";
    /** The fixture's own connection's name, which {@link #dropConnections} spares. */
    private static final String CONTROL_NAME = "rlockd-fixture";

    private final RlockdOptions options;
    private final Path binary;
    private final Path dir;
    private final Clock clock = new Clock(this);
    /** The Redisson clients handed out, as their shutdowns (no Redisson type is touched when none was). */
    private final List<Runnable> redissonShutdowns = new ArrayList<>();
    private Process process;
    /**
     * SIGSTOPped by {@link #freeze()} and not yet continued. Not under the monitor: a thread
     * stuck in {@link #execute} on the frozen server holds it.
     */
    private final AtomicBoolean frozen = new AtomicBoolean();
    private ControlConnection control;
    private String host;
    private int port;

    private RlockdServer(RlockdOptions options) throws IOException {
        this.options = options;
        this.binary = Binary.find(options.binary());
        this.dir = Files.createTempDirectory("rlockd-");
    }

    /** Starts a server as {@code options} say; it is ready to serve when this returns. */
    public static RlockdServer start(RlockdOptions options) {
        RlockdServer server;
        try {
            server = new RlockdServer(options);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot make the server's temp folder", e);
        }
        try {
            server.launch(0);
        } catch (RuntimeException e) {
            server.close(); // its temp folder too
            throw e;
        }
        return server;
    }

    /** {@link #start(RlockdOptions)} with {@link RlockdOptions#defaults()}. */
    public static RlockdServer start() {
        return start(RlockdOptions.defaults());
    }

    // -- life cycle -------------------------------------------------------

    public RlockdOptions options() {
        return options;
    }

    /** The executable this server runs. */
    public Path binary() {
        return binary;
    }

    /** The server's stdout and stderr. */
    public Path logFile() {
        return dir.resolve("rlockd.log");
    }

    private Path readyFile() {
        return dir.resolve("ready");
    }

    private Path socketPath() {
        return dir.resolve("rlockd.sock");
    }

    private List<String> commandLine(int port) {
        List<String> line = new ArrayList<>();
        line.addAll(List.of(binary.toString(), "--port", Integer.toString(port)));
        line.addAll(List.of("--ready-file", readyFile().toString()));
        if (options.unixSocket()) {
            line.addAll(List.of("--unixsocket", socketPath().toString()));
        } else {
            line.addAll(List.of("--bind", "127.0.0.1"));
        }
        if (options.manualClock()) {
            line.add("--enable-clock-control");
        }
        options.password().ifPresent(p -> line.addAll(List.of("--requirepass", p)));
        line.addAll(List.of("--loglevel", "warning"));
        line.addAll(options.args());
        return line;
    }

    private void launch(int port) {
        try {
            Files.deleteIfExists(readyFile());
            process =
                    new ProcessBuilder(commandLine(port))
                            .directory(dir.toFile())
                            .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()))
                            .redirectErrorStream(true)
                            .redirectOutput(ProcessBuilder.Redirect.appendTo(logFile().toFile()))
                            .start();
            long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
            while (!Files.exists(readyFile())) {
                if (!process.isAlive()) {
                    throw new RlockdException(
                            "rlockd exited with "
                                    + process.exitValue()
                                    + " before it was ready:\n"
                                    + Files.readString(logFile(), StandardCharsets.UTF_8));
                }
                if (System.nanoTime() > deadline) {
                    kill();
                    throw new RlockdException(
                            "rlockd was not ready after " + START_TIMEOUT.toSeconds() + "s");
                }
                Thread.sleep(READY_POLL_MS);
            }
            readReadyLine(Files.readString(readyFile(), StandardCharsets.UTF_8).strip());
        } catch (IOException e) {
            throw new RlockdException("cannot start " + binary, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            kill();
            throw new RlockdException("interrupted while rlockd started", e);
        }
    }

    private void readReadyLine(String line) {
        int mark = line.indexOf(READY_MARK);
        if (mark < 0) {
            throw new RlockdException("rlockd's ready line is not understood: " + line);
        }
        if (options.unixSocket()) {
            return;
        }
        String first = line.substring(mark + READY_MARK.length()).split(", ")[0];
        int colon = first.lastIndexOf(':');
        host = first.substring(0, colon).replace("[", "").replace("]", "");
        port = Integer.parseInt(first.substring(colon + 1));
    }

    /**
     * Closes the fixture's connection and every Redisson client it handed out, stops the server
     * (SIGTERM, then SIGKILL after {@link #STOP_TIMEOUT}) and removes its temp folder;
     * idempotent.
     */
    @Override
    public void close() {
        redissonShutdowns.forEach(Runnable::run);
        redissonShutdowns.clear();
        closeControl();
        stopProcess();
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            // Already gone, or a leftover in the system's temp folder: nothing to stop.
        }
    }

    private void closeControl() {
        if (control != null) {
            try {
                control.close();
            } catch (IOException e) {
                // The server is going anyway.
            }
            control = null;
        }
    }

    private void stopProcess() {
        if (process == null || !process.isAlive()) {
            return;
        }
        thaw(); // a frozen server cannot stop
        process.destroy();
        try {
            if (!process.waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                kill();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            kill();
        }
    }

    private void kill() {
        if (process != null) {
            process.destroyForcibly();
            try {
                process.waitFor();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Sends SIGname to the server: Java's Process knows only TERM and KILL. */
    private void signal(String name) {
        try {
            Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(process.pid())).start();
            if (kill.waitFor() != 0) {
                throw new RlockdException("kill -" + name + " " + process.pid() + " failed");
            }
        } catch (IOException e) {
            throw new RlockdException("cannot run kill", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RlockdException("interrupted while signalling rlockd", e);
        }
    }

    // -- connecting -------------------------------------------------------

    /** 127.0.0.1, or empty on a unix socket. */
    public Optional<String> host() {
        return Optional.ofNullable(host);
    }

    /** The TCP port, or 0 on a unix socket. */
    public int port() {
        return port;
    }

    /** The socket's path, when the server serves one. */
    public Optional<Path> unixSocket() {
        return options.unixSocket() ? Optional.of(socketPath()) : Optional.empty();
    }

    /**
     * {@code redis://127.0.0.1:PORT} (with {@code :PASSWORD@} when there is one), what
     * Redisson's {@code setAddress}, Jedis and Lettuce take. A unix socket has no URL here:
     * use {@link #unixSocket()}.
     */
    public String url() {
        if (options.unixSocket()) {
            throw new RlockdException("this server serves a unix socket only: use unixSocket()");
        }
        String auth =
                options.password()
                        .map(p -> ":" + URLEncoder.encode(p, StandardCharsets.UTF_8).replace("+", "%20") + "@")
                        .orElse("");
        return "redis://" + auth + host + ":" + port;
    }

    /**
     * A Redisson {@link Config} for this server (single server, its password), ready for
     * {@code Redisson.create}; change it as the test needs. Redisson connects over TCP only.
     */
    public Config redissonConfig() {
        if (options.unixSocket()) {
            throw new RlockdException("Redisson connects over TCP: start this server without unixSocket");
        }
        Config config = new Config();
        SingleServerConfig single = config.useSingleServer().setAddress("redis://" + host + ":" + port);
        options.password().ifPresent(single::setPassword);
        return config;
    }

    /** A new Redisson client on {@link #redissonConfig()}, shut down when the server stops. */
    public RedissonClient redisson() {
        RedissonClient client = Redisson.create(redissonConfig());
        redissonShutdowns.add(client::shutdown);
        return client;
    }

    /**
     * Runs one command on the fixture's own connection (which fault injection leaves alone)
     * and answers its reply: a String, a Long, null, or a List of those.
     */
    public synchronized Object execute(Object... args) {
        try {
            if (control == null) {
                SocketAddress address =
                        options.unixSocket()
                                ? UnixDomainSocketAddress.of(socketPath())
                                : ControlConnection.tcp(host, port);
                ControlConnection opened = ControlConnection.open(address);
                if (options.password().isPresent()) {
                    opened.call("AUTH", options.password().get());
                }
                opened.call("CLIENT", "SETNAME", CONTROL_NAME);
                control = opened;
            }
            return control.call(args);
        } catch (IOException e) {
            closeControl(); // the next call opens a new one (after a restart, say)
            throw new RlockdException("rlockd's control connection failed", e);
        }
    }

    // -- time and introspection --------------------------------------------

    /** The manual clock (when {@link RlockdOptions#manualClock()}). */
    public Clock clock() {
        return clock;
    }

    /** The locks held now ({@code RLOCKD.LOCKS}), in every database. */
    public List<HeldLock> locks() {
        return locks(null);
    }

    /** The locks held now whose key matches the glob {@code pattern}. */
    public List<HeldLock> locks(String pattern) {
        return entries("RLOCKD.LOCKS", pattern, RlockdServer::heldLock);
    }

    /**
     * Every channel, pattern and shard channel that has subscribers ({@code RLOCKD.WAITERS}):
     * where pub/sub lock waiters wait.
     */
    public List<Waiters> waiters() {
        return waiters(null);
    }

    /** {@link #waiters()} whose name matches the glob {@code pattern}. */
    public List<Waiters> waiters(String pattern) {
        return entries("RLOCKD.WAITERS", pattern, RlockdServer::waitersOf);
    }

    /** An introspection command's reply, one map per entry, each read by {@code read}. */
    private <T> List<T> entries(String command, String pattern, Function<Map<String, Object>, T> read) {
        Object reply = pattern == null ? execute(command) : execute(command, pattern);
        List<T> entries = new ArrayList<>();
        for (Object entry : (List<?>) reply) {
            entries.add(read.apply(asMap(entry)));
        }
        return entries;
    }

    private static HeldLock heldLock(Map<String, Object> fields) {
        Map<String, Long> owners = new LinkedHashMap<>();
        asMap(fields.get("owners")).forEach((owner, holds) -> owners.put(owner, asLong(holds)));
        return new HeldLock(
                (String) fields.get("key"),
                (int) asLong(fields.get("db")),
                (String) fields.get("type"),
                asLong(fields.get("pttl")),
                Map.copyOf(owners));
    }

    private static Waiters waitersOf(Map<String, Object> fields) {
        List<Long> clients = new ArrayList<>();
        for (Object id : (List<?>) fields.get("clients")) {
            clients.add(asLong(id));
        }
        return new Waiters((String) fields.get("kind"), (String) fields.get("name"), List.copyOf(clients));
    }

    /** A RESP2 map: its pairs flattened into a list. */
    private static Map<String, Object> asMap(Object reply) {
        List<?> flat = (List<?>) reply;
        Map<String, Object> map = new LinkedHashMap<>();
        for (int i = 0; i + 1 < flat.size(); i += 2) {
            map.put((String) flat.get(i), flat.get(i + 1));
        }
        return map;
    }

    private static long asLong(Object value) {
        return value instanceof Long number ? number : Long.parseLong((String) value);
    }

    // -- fault injection --------------------------------------------------

    /**
     * {@code CLIENT PAUSE ms WRITE|ALL}: commands (writes, scripts and PUBLISH under WRITE;
     * everything under ALL) wait unanswered until {@code ms} pass or {@link #unpause()}; no key
     * expires meanwhile.
     */
    public void pause(long ms, PauseMode mode) {
        execute("CLIENT", "PAUSE", ms, mode.name());
    }

    /** Ends a WRITE pause at once (under ALL, CLIENT UNPAUSE waits too, as in Redis). */
    public void unpause() {
        execute("CLIENT", "UNPAUSE");
    }

    /**
     * Closes every client connection but the fixture's own, as a network failure would ({@code
     * CLIENT KILL TYPE normal}, then {@code pubsub}); answers how many were closed.
     */
    public long dropConnections() {
        long closed = 0;
        for (String type : List.of("normal", "pubsub")) {
            closed += (Long) execute("CLIENT", "KILL", "TYPE", type);
        }
        return closed;
    }

    /**
     * Stops the process (SIGSTOP) until the answer is closed (SIGCONT): connections stay open
     * and nothing answers, as with a hung server or a partition. For try-with-resources.
     */
    public Frozen freeze() {
        frozen.set(true);
        signal("STOP");
        // The signal is delivered later: wait until the kernel reports the process stopped.
        Path stat = Path.of("/proc", Long.toString(process.pid()), "stat");
        long deadline = System.nanoTime() + STOP_TIMEOUT.toNanos();
        try {
            while (!stopped(Files.readString(stat))) {
                if (System.nanoTime() > deadline) {
                    throw new RlockdException("rlockd did not stop after SIGSTOP");
                }
                Thread.sleep(1);
            }
        } catch (IOException e) {
            throw new RlockdException("cannot read " + stat, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RlockdException("interrupted while rlockd stopped", e);
        }
        return new Frozen();
    }

    /** Lets a frozen server run on (SIGCONT); the signal is sent only when needed. */
    private void thaw() {
        if (frozen.getAndSet(false) && process.isAlive()) {
            signal("CONT");
        }
    }

    /** {@code /proc/PID/stat}'s state (after the parenthesized name) is T when stopped. */
    private static boolean stopped(String stat) {
        return stat.substring(stat.lastIndexOf(')') + 2).startsWith("T");
    }

    /** A frozen server; closing it lets the server run on. */
    public final class Frozen implements AutoCloseable {
        private Frozen() {}

        @Override
        public void close() {
            thaw();
        }
    }

    /**
     * Stops the server gracefully and starts it again on the same port (or socket) with the
     * same flags: what it held in memory is gone; clients reconnect as after a real restart.
     */
    public synchronized void restart() {
        closeControl();
        stopProcess();
        launch(port);
    }
}
