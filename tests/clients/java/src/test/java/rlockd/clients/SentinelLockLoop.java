package rlockd.clients;

import java.io.IOException;
import java.util.concurrent.TimeUnit;

import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.api.redisnode.RedisNodes;
import org.redisson.config.Config;

/**
 * Redisson's `useSentinelServers` taking and releasing a lock on whichever
 * primary the sentinels name, round after round, until its standard input
 * closes (or two minutes pass). Arguments: the master's name, then the
 * sentinels' ports. Each round that held the lock prints `locked PORT`,
 * PORT being the primary Redisson used, before and after; tests/sentinel.rs
 * runs it across a failover and reads those lines.
 */
public final class SentinelLockLoop {
    private SentinelLockLoop() {}

    public static void main(String[] args) throws InterruptedException {
        Config config = new Config();
        var sentinels = config.useSentinelServers().setMasterName(args[0])
                .setCheckSentinelsList(false)
                .setConnectTimeout(300)
                .setTimeout(500)
                .setRetryAttempts(0);
        for (int i = 1; i < args.length; i++) {
            sentinels.addSentinelAddress("redis://127.0.0.1:" + args[i]);
        }
        RedissonClient redisson = Redisson.create(config);
        Thread watcher = new Thread(() -> {
            try {
                while (System.in.read() != -1) {
                    // Only its end matters.
                }
            } catch (IOException e) {
                // Gone all the same.
            }
            System.exit(0);
        });
        watcher.setDaemon(true);
        watcher.start();
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
        RLock lock = redisson.getLock("sentinel-lock");
        while (System.nanoTime() < deadline) {
            try {
                int before = primaryPort(redisson);
                if (lock.tryLock(1, 5, TimeUnit.SECONDS)) {
                    lock.unlock();
                    if (primaryPort(redisson) == before) {
                        System.out.println("locked " + before);
                        System.out.flush();
                    }
                }
            } catch (RuntimeException e) {
                // The primary gone or moving: the next round asks anew.
            }
            Thread.sleep(50);
        }
        System.exit(0);
    }

    private static int primaryPort(RedissonClient redisson) {
        return redisson.getRedisNodes(RedisNodes.SENTINEL_MASTER_SLAVE).getMaster().getAddr().getPort();
    }
}
