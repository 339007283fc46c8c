package io.redisync.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RPatternTopic;
import org.redisson.api.RReadWriteLock;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

/**
 * The names Redisson derives from a lock name, observed on a real server: the lock and
 * read-write lock channels (from the release messages themselves) and the read-hold
 * timeout keys. The expected values are the table redisync's internal/keys tests check
 * for the Go side (TestRedissonNames there): the two must agree for the libraries to
 * hear each other (that table names x, {t}x, a{b, {}x, a{}b; here they carry "nt-" so
 * that they meet no key of the Go tests sharing the server). The Go interop test runs
 * this class with -Dredis.address set.
 */
class NamesTest {
    private static RedissonClient redisson;
    private static final List<String> channels = new CopyOnWriteArrayList<>();

    @BeforeAll
    static void connect() {
        String address = System.getProperty("redis.address", "");
        Assumptions.assumeFalse(address.isEmpty(), "redis.address not set (run through the Go interop tests)");
        Config config = new Config();
        config.useSingleServer().setAddress(address);
        redisson = Redisson.create(config);
        RPatternTopic topic = redisson.getPatternTopic("redisson_*", StringCodec.INSTANCE);
        topic.addListener(String.class, (pattern, channel, msg) -> channels.add(channel.toString()));
    }

    @AfterAll
    static void close() {
        if (redisson != null) {
            redisson.shutdown();
        }
    }

    // name -> {lock channel, rwlock channel, read-hold timeout key prefix}
    private static final String[][] TABLE = {
        {"nt-x", "redisson_lock__channel:{nt-x}", "redisson_rwlock:{nt-x}", "{nt-x}:"},
        {"{t}nt-x", "redisson_lock__channel:{t}nt-x", "redisson_rwlock:{t}nt-x", "{t}nt-x:"},
        {"nt-a{b", "redisson_lock__channel:nt-a{b", "redisson_rwlock:nt-a{b", "nt-a{b:"},
        {"{}nt-x", "redisson_lock__channel:{}nt-x", "redisson_rwlock:{}nt-x", "{}nt-x:"},
        {"nt-a{}b", "redisson_lock__channel:nt-a{}b", "redisson_rwlock:nt-a{}b", "nt-a{}b:"},
    };

    @Test
    void derivedNamesFollowContainsBrace() throws Exception {
        for (String[] row : TABLE) {
            String name = row[0];
            channels.clear();
            RLock lock = redisson.getLock(name);
            lock.lock(10, TimeUnit.SECONDS);
            lock.unlock();
            awaitChannel(row[1]);

            RReadWriteLock rw = redisson.getReadWriteLock(name);
            rw.readLock().lock(10, TimeUnit.SECONDS);
            List<String> timeouts = new ArrayList<>();
            redisson.getKeys().getKeysByPattern("*rwlock_timeout*").forEach(k -> {
                if (k.startsWith(row[3])) {
                    timeouts.add(k);
                }
            });
            assertEquals(1, timeouts.size(), "read-hold keys of " + name + ": " + timeouts);
            assertTrue(timeouts.get(0).startsWith(row[3] + redisson.getId() + ":"),
                    "read-hold key of " + name + ": " + timeouts.get(0));
            rw.readLock().unlock();
            awaitChannel(row[2]);
            assertEquals(Collections.emptyList(), keys(name), "keys left after " + name);
        }
    }

    // The keys that contain name (the Go tests share the server, and their
    // keys with an expiry may still be there).
    private static List<String> keys(String name) {
        List<String> mine = new ArrayList<>();
        redisson.getKeys().getKeys().forEach(k -> {
            if (k.contains(name)) {
                mine.add(k);
            }
        });
        return mine;
    }

    private static void awaitChannel(String channel) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!channels.contains(channel)) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("no message on " + channel + "; saw " + channels);
            }
            Thread.sleep(10);
        }
    }
}
