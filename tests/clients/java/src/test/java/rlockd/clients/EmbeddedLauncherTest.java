package rlockd.clients;

import static org.junit.jupiter.api.Assertions.*;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RScript;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

/**
 * A launcher in the style of Java's embedded-redis libraries, given a
 * redis-server executable (-Drlockd.redisExecutable; tests/redis_server_fixtures.rs
 * passes a redis-server symlink to rlockd, or the real redis-server):
 * a config file of settings, `executable CONF --port N`, the output read
 * until Redis's ready line, stopped with destroy().
 */
class EmbeddedLauncherTest {
    /** The line embedded-redis waits for. */
    static final Pattern READY = Pattern.compile(".*[Rr]eady to accept connections.*");

    /** One server process, as embedded-redis's RedisServer runs it. */
    static final class EmbeddedServer implements AutoCloseable {
        final int port;
        final Process process;

        EmbeddedServer(File executable, int port, List<String> settings) throws IOException {
            this.port = port;
            Path conf = Files.createTempFile("embedded-redis", ".conf");
            conf.toFile().deleteOnExit();
            Files.write(conf, settings);
            process = new ProcessBuilder(executable.getAbsolutePath(), conf.toString(), "--port",
                    Integer.toString(port))
                    .redirectErrorStream(true)
                    .start();
            BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream()));
            StringBuilder seen = new StringBuilder();
            for (String line; (line = out.readLine()) != null;) {
                seen.append(line).append('\n');
                if (READY.matcher(line).matches()) {
                    // Keep draining, so the server never blocks on a full pipe.
                    Thread drain = new Thread(() -> {
                        try {
                            out.lines().forEach(l -> { });
                        } catch (UncheckedIOException stopped) {
                            // The server was stopped: nothing more to read.
                        }
                    });
                    drain.setDaemon(true);
                    drain.start();
                    return;
                }
            }
            throw new IllegalStateException("the server stopped before it was ready:\n" + seen);
        }

        @Override
        public void close() throws InterruptedException {
            process.destroy();
            assertTrue(process.waitFor(10, TimeUnit.SECONDS), "the server stops on SIGTERM");
        }
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    @Test
    void launcherStartsTheServerAndRedissonLocks() throws Exception {
        File executable = new File(System.getProperty("rlockd.redisExecutable"));
        String expects = System.getProperty("rlockd.expects");
        try (EmbeddedServer server = new EmbeddedServer(executable, freePort(),
                List.of("bind 127.0.0.1", "save \"\"", "appendonly no"))) {
            Config config = new Config();
            config.useSingleServer().setAddress("redis://127.0.0.1:" + server.port);
            RedissonClient redisson = Redisson.create(config);
            try {
                String info = redisson.getScript(StringCodec.INSTANCE).eval(RScript.Mode.READ_ONLY,
                        "return redis.call('INFO', 'server')", RScript.ReturnType.VALUE);
                assertEquals("rlockd".equals(expects), info.contains("rlockd_version:"), info);
                RLock lock = redisson.getLock("embedded:lock");
                assertTrue(lock.tryLock(1, 30, TimeUnit.SECONDS));
                assertTrue(lock.isHeldByCurrentThread());
                lock.unlock();
                assertFalse(lock.isLocked());
            } finally {
                redisson.shutdown();
            }
        }
    }
}
