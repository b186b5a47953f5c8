package rlockd.clients;

import static org.junit.jupiter.api.Assertions.*;

import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.redisson.api.RBucket;
import org.redisson.api.RClientSideCaching;
import org.redisson.api.RedissonClient;
import org.redisson.api.options.ClientSideCachingOptions;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Protocol;

/**
 * Redisson's client-side caching, which rests on CLIENT TRACKING over RESP3:
 * a value read once is served from the local cache (the server sees no
 * further read), and another client's write invalidates it.
 */
class ClientSideCachingTest {
    static long keyspaceHits() {
        String info = Servers.raw(Servers.port(), List.of("INFO", "stats"));
        Matcher m = Pattern.compile("keyspace_hits:(\\d+)").matcher(info);
        assertTrue(m.find(), info);
        return Long.parseLong(m.group(1));
    }

    @Test
    void aCachedValueIsInvalidatedByAnotherClientsWrite() throws Exception {
        RedissonClient redisson = Servers.client(c -> c.setProtocol(Protocol.RESP3));
        try {
            Servers.raw(Servers.port(), List.of("SET", "csc:bucket", "v1"));
            RClientSideCaching caching = redisson.getClientSideCaching(ClientSideCachingOptions.defaults());
            RBucket<String> cached = caching.getBucket("csc:bucket", StringCodec.INSTANCE);
            assertEquals("v1", cached.get());
            String clients = Servers.raw(Servers.port(), List.of("CLIENT", "LIST"));
            assertTrue(clients.matches("(?s).*flags=[A-Za-z]*t.*"), "no tracking client:\n" + clients);

            long hits = keyspaceHits();
            assertEquals("v1", cached.get());
            assertEquals(hits, keyspaceHits(), "the second read went to the server");

            Servers.raw(Servers.port(), List.of("SET", "csc:bucket", "v2"));
            long deadline = System.currentTimeMillis() + 5000;
            while (!"v2".equals(cached.get())) {
                assertTrue(System.currentTimeMillis() < deadline, "the cached value was never invalidated");
                Thread.sleep(10);
            }
            caching.destroy();
        } finally {
            redisson.shutdown();
        }
    }
}
