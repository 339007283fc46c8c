package io.redisync.interop;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * Runs Redisson lock operations on command, for the Go interop tests.
 *
 * <p>Usage: {@code java -cp ... io.redisync.interop.Driver redis://127.0.0.1:PORT}. The
 * driver prints {@code 0 OK <redisson client id>} once connected, then reads one request
 * per line on stdin, {@code <id> <op> <args...>}, and answers each with one line,
 * {@code <id> OK [result]} or {@code <id> ERR <message>}, when the operation completes.
 * Operations run concurrently (a blocked lock does not hold up the next request), so
 * answers may come in any order; the id pairs them up.
 *
 * <p>Owners are explicit: every operation names the "thread id" Redisson uses in its
 * owner id {@code <client id>:<thread id>}, through the async API's threadId overloads,
 * so the Go side can name a Java owner exactly (and share it).
 *
 * <p>Operations (kind is lock, read, write or fair; leases and waits in ms, -1 for
 * Redisson's watchdog):
 * <pre>
 *   lock KIND NAME TID LEASE          blocks until held
 *   trylock KIND NAME TID WAIT LEASE  true | false
 *   unlock KIND NAME TID              OK, or ERR when not held
 *   force KIND NAME                   forceUnlock: true | false
 *   locked KIND NAME                  isLockedAsync: true | false
 *   lockedsync KIND NAME              isLocked: true | false (RedissonReadLock and
 *                                     RedissonWriteLock override the blocking call only,
 *                                     with answers of their own side)
 *   held KIND NAME TID                isHeldByThread: true | false
 *   critical KIND NAME TID ROUNDS HOLD
 *                                     ROUNDS times: lock (watchdog), INCR NAME:inside
 *                                     (and NAME:overlaps when it was not 1) and
 *                                     NAME:entries, sleep HOLD ms, DECR NAME:inside,
 *                                     unlock; answers ROUNDS
 *   latchset NAME COUNT               RCountDownLatch.trySetCount: true | false
 *   latchdown NAME                    countDown
 *   latchcount NAME                   getCount
 *   latchawait NAME WAIT              await(WAIT ms): true (count zero) | false (timed out)
 *   latchdelete NAME                  delete: true | false
 * </pre>
 * End of input shuts the client down and exits.
 */
public final class Driver {
    private final RedissonClient redisson;
    private final PrintStream out;
    private final ExecutorService workers = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "critical");
        t.setDaemon(true);
        return t;
    });

    private Driver(RedissonClient redisson, PrintStream out) {
        this.redisson = redisson;
        this.out = out;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: Driver redis://host:port");
            System.exit(2);
        }
        Config config = new Config();
        config.useSingleServer().setAddress(args[0]);
        RedissonClient redisson = Redisson.create(config);
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        Driver d = new Driver(redisson, out);
        d.reply("0", "OK " + redisson.getId());
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                if (!line.isBlank()) {
                    d.handle(line.trim().split(" "));
                }
            }
        } finally {
            redisson.shutdown();
        }
    }

    private synchronized void reply(String id, String text) {
        out.println(id + " " + text);
    }

    RLock lock(String kind, String name) {
        switch (kind) {
            case "lock": return redisson.getLock(name);
            case "read": return redisson.getReadWriteLock(name).readLock();
            case "write": return redisson.getReadWriteLock(name).writeLock();
            case "fair": return redisson.getFairLock(name);
            default: throw new IllegalArgumentException("unknown lock kind " + kind);
        }
    }

    private void handle(String[] f) {
        String id = f[0];
        try {
            CompletionStage<?> op = start(f);
            op.whenComplete((v, err) -> {
                if (err != null) {
                    reply(id, "ERR " + describe(err));
                } else {
                    reply(id, v == null ? "OK" : "OK " + v);
                }
            });
        } catch (RuntimeException e) {
            reply(id, "ERR " + describe(e));
        }
    }

    private CompletionStage<?> start(String[] f) {
        String op = f[1];
        switch (op) {
            case "lock":
                return lock(f[2], f[3]).lockAsync(Long.parseLong(f[5]), TimeUnit.MILLISECONDS, Long.parseLong(f[4]));
            case "trylock":
                return lock(f[2], f[3]).tryLockAsync(Long.parseLong(f[5]), Long.parseLong(f[6]),
                        TimeUnit.MILLISECONDS, Long.parseLong(f[4]));
            case "unlock":
                return lock(f[2], f[3]).unlockAsync(Long.parseLong(f[4]));
            case "force":
                return lock(f[2], f[3]).forceUnlockAsync();
            case "locked":
                return lock(f[2], f[3]).isLockedAsync();
            case "lockedsync":
                return CompletableFuture.supplyAsync(() -> lock(f[2], f[3]).isLocked(), workers);
            case "held":
                return lock(f[2], f[3]).isHeldByThreadAsync(Long.parseLong(f[4]));
            case "latchset":
                return redisson.getCountDownLatch(f[2]).trySetCountAsync(Long.parseLong(f[3]));
            case "latchdown":
                return redisson.getCountDownLatch(f[2]).countDownAsync();
            case "latchcount":
                return redisson.getCountDownLatch(f[2]).getCountAsync();
            case "latchawait":
                return redisson.getCountDownLatch(f[2]).awaitAsync(Long.parseLong(f[3]), TimeUnit.MILLISECONDS);
            case "latchdelete":
                return redisson.getCountDownLatch(f[2]).deleteAsync();
            case "critical":
                return CompletableFuture.supplyAsync(() -> critical(f[2], f[3], Long.parseLong(f[4]),
                        Integer.parseInt(f[5]), Long.parseLong(f[6])), workers);
            default:
                throw new IllegalArgumentException("unknown operation " + op);
        }
    }

    // The overlap detector: every holder counts itself in and out in Redis.
    private int critical(String kind, String name, long tid, int rounds, long holdMs) {
        RLock lock = lock(kind, name);
        for (int i = 0; i < rounds; i++) {
            lock.lockAsync(-1, TimeUnit.MILLISECONDS, tid).toCompletableFuture().join();
            try {
                if (redisson.getAtomicLong(name + ":inside").incrementAndGet() != 1) {
                    redisson.getAtomicLong(name + ":overlaps").incrementAndGet();
                }
                redisson.getAtomicLong(name + ":entries").incrementAndGet();
                Thread.sleep(holdMs);
                redisson.getAtomicLong(name + ":inside").decrementAndGet();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            } finally {
                lock.unlockAsync(tid).toCompletableFuture().join();
            }
        }
        return rounds;
    }

    private static String describe(Throwable e) {
        while (e.getCause() != null && (e instanceof java.util.concurrent.CompletionException
                || e instanceof java.util.concurrent.ExecutionException)) {
            e = e.getCause();
        }
        String msg = e.getClass().getSimpleName() + ": " + e.getMessage();
        return msg.replace('\n', ' ');
    }
}
