package rlockd.clients;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.function.Consumer;

import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * The servers a run was started against, as the Rust harness
 * (tests/compiled_clients.rs) describes them in system properties, and the
 * harness's control socket for stopping a server or dropping its
 * connections.
 */
final class Servers {
    private Servers() {}

    /** Short enough that the watchdog renews several times in a test. */
    static final long WATCHDOG_MS = 1_000;

    static String name() {
        return System.getProperty("rlockd.server", "?");
    }

    static boolean isRlockd() {
        return name().equals("rlockd");
    }

    static List<Integer> ports() {
        String ports = System.getProperty("rlockd.ports");
        if (ports == null) {
            throw new IllegalStateException("no -Drlockd.ports: run these through tests/compiled_clients.rs");
        }
        return Arrays.stream(ports.split(",")).map(Integer::valueOf).toList();
    }

    static int port() {
        return ports().get(0);
    }

    static String password() {
        return System.getProperty("rlockd.password");
    }

    /**
     * The directory of the throw-away PKI the harness made when the ports
     * are TLS ports (-Drlockd.tls), or null.
     */
    static String tlsDir() {
        return System.getProperty("rlockd.tls");
    }

    static String address(int port) {
        return (tlsDir() == null ? "redis://" : "rediss://") + "127.0.0.1:" + port;
    }

    /** A single-server config for server `index` with a short watchdog. */
    static Config config(int index) {
        Config config = new Config();
        config.setLockWatchdogTimeout(WATCHDOG_MS);
        var server = config.useSingleServer()
                .setAddress(address(ports().get(index)))
                .setPassword(password())
                .setConnectionMinimumIdleSize(2)
                .setConnectionPoolSize(8)
                .setSubscriptionConnectionMinimumIdleSize(1);
        if (tlsDir() != null) {
            server.setSslTrustManagerFactory(trust()).setSslKeyManagerFactory(clientCertificate());
        }
        return config;
    }

    private static Path tlsFile(String name) {
        return Path.of(tlsDir(), name);
    }

    /** Trusts the CA of the harness's PKI (ca.pem) alone. */
    private static TrustManagerFactory trust() {
        try (var in = Files.newInputStream(tlsFile("ca.pem"))) {
            KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
            store.load(null, null);
            store.setCertificateEntry("ca", CertificateFactory.getInstance("X.509").generateCertificate(in));
            TrustManagerFactory factory = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            factory.init(store);
            return factory;
        } catch (IOException | GeneralSecurityException e) {
            throw new IllegalStateException("ca.pem: " + e, e);
        }
    }

    /** The client certificate that CA issued (client.pem, its EC key in client.key). */
    private static KeyManagerFactory clientCertificate() {
        try (var in = Files.newInputStream(tlsFile("client.pem"))) {
            Certificate cert = CertificateFactory.getInstance("X.509").generateCertificate(in);
            String pem = Files.readString(tlsFile("client.key"));
            byte[] der = Base64.getMimeDecoder().decode(pem.replaceAll("-----[A-Z ]+-----", ""));
            PrivateKey key = KeyFactory.getInstance("EC").generatePrivate(new PKCS8EncodedKeySpec(der));
            KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
            store.load(null, null);
            char[] none = new char[0];
            store.setKeyEntry("client", key, none, new Certificate[] {cert});
            KeyManagerFactory factory = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            factory.init(store, none);
            return factory;
        } catch (IOException | GeneralSecurityException e) {
            throw new IllegalStateException("client.pem: " + e, e);
        }
    }

    /** A plain socket, or over TLS as Redisson connects when the ports are TLS ports. */
    private static Socket open(int port) throws IOException {
        if (tlsDir() == null) {
            return new Socket("127.0.0.1", port);
        }
        try {
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(clientCertificate().getKeyManagers(), trust().getTrustManagers(), null);
            return context.getSocketFactory().createSocket("127.0.0.1", port);
        } catch (GeneralSecurityException e) {
            throw new IOException(e);
        }
    }

    static RedissonClient client() {
        return Redisson.create(config(0));
    }

    static RedissonClient client(Consumer<Config> adjust) {
        Config config = config(0);
        adjust.accept(config);
        return Redisson.create(config);
    }

    /** Asks the harness to stop server `index` and waits until it is down. */
    static void stop(int index) {
        control("stop " + index, "stopped");
    }

    /** Asks the harness to close every client connection of server `index`. */
    static void dropConnections(int index) {
        control("drop " + index, "dropped");
    }

    private static void control(String request, String expected) {
        int port = Integer.parseInt(System.getProperty("rlockd.control"));
        try (Socket s = new Socket("127.0.0.1", port)) {
            PrintWriter out = new PrintWriter(s.getOutputStream(), true, StandardCharsets.UTF_8);
            BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
            out.println(request);
            String answer = in.readLine();
            if (!expected.equals(answer)) {
                throw new IllegalStateException(request + ": the harness answered " + answer);
            }
        } catch (IOException e) {
            throw new IllegalStateException(request + ": " + e, e);
        }
    }

    /**
     * Sends commands on a fresh connection, plain or TLS as the run's (after AUTH when the server
     * has a password) and returns the reply of the last one as text: a
     * status, error, integer or bulk string's content, or the elements of an
     * array joined by newlines. The test's own view of the server, beside
     * what Redisson reports.
     */
    static String raw(int port, List<String>... commands) {
        List<List<String>> all = new ArrayList<>();
        if (password() != null) {
            all.add(List.of("AUTH", password()));
        }
        all.addAll(Arrays.asList(commands));
        try (Socket s = open(port)) {
            OutputStream out = s.getOutputStream();
            for (List<String> command : all) {
                StringBuilder b = new StringBuilder("*" + command.size() + "\r\n");
                for (String arg : command) {
                    b.append('$').append(arg.getBytes(StandardCharsets.UTF_8).length).append("\r\n").append(arg).append("\r\n");
                }
                out.write(b.toString().getBytes(StandardCharsets.UTF_8));
            }
            out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
            String reply = null;
            for (int i = 0; i < all.size(); i++) {
                reply = readReply(in);
            }
            return reply;
        } catch (IOException e) {
            throw new IllegalStateException("raw " + all + ": " + e, e);
        }
    }

    private static String readReply(BufferedReader in) throws IOException {
        String line = in.readLine();
        if (line == null) {
            throw new IOException("connection closed");
        }
        char kind = line.charAt(0);
        String rest = line.substring(1);
        switch (kind) {
            case '+', '-', ':':
                return rest;
            case '$': {
                int n = Integer.parseInt(rest);
                if (n < 0) {
                    return null;
                }
                char[] buf = new char[n + 2];
                int got = 0;
                while (got < buf.length) {
                    int r = in.read(buf, got, buf.length - got);
                    if (r < 0) {
                        throw new IOException("connection closed");
                    }
                    got += r;
                }
                return new String(buf, 0, n);
            }
            case '*': {
                int n = Integer.parseInt(rest);
                List<String> items = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    items.add(readReply(in));
                }
                return String.join("\n", items);
            }
            default:
                throw new IOException("unexpected reply " + line);
        }
    }

    /** Prints a measured value, which the harness shows with the results. */
    static void measured(String what, Object value) {
        System.out.println("measured " + name() + ": " + what + " = " + value);
    }
}
