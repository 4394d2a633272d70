package dev.strata.memory.pool;

import dev.strata.memory.Allocator;
import java.io.BufferedWriter;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.locks.LockSupport;

/**
 * A process that attaches to a pool and does one job, for the multi-process tests. Usage:
 * {@code PoolChild <job> <pool name> <comma-separated paths> args...}; it reports on stdout.
 *
 * <ul>
 *   <li>{@code churn <seed> <ops> <log>}: allocates, writes, verifies, frees, holding up to four
 *       objects at once; logs {@code handle size heldFromNanos heldUntilNanos} per object.</li>
 *   <li>{@code write <seed> <count>}: publishes objects of seeded random bytes and leaves them;
 *       prints {@code obj <handle> <size> <seed>} per object.</li>
 *   <li>{@code read <spec file>}: reads and verifies the objects listed as {@code obj} lines.</li>
 *   <li>{@code slowwrite <size>}: publishes a small object, then writes a large one slowly,
 *       announcing {@code writing <handle>} first; meant to be killed mid-write.</li>
 * </ul>
 */
public final class PoolChild {
    private PoolChild() {
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = System.out;
        PoolConfig config = PoolConfig.builder(args[1])
                .paths(Arrays.stream(args[2].split(",")).map(Path::of).toList())
                .mode(PoolConfig.Mode.ATTACH)
                .sweepInterval(Duration.ZERO)
                .conclude();
        try (PoolTier pool = PoolTier.open(config)) {
            out.println("attached slot " + pool.processSlot());
            out.flush();
            int status = switch (args[0]) {
                case "churn" -> churn(pool, Long.parseLong(args[3]), Integer.parseInt(args[4]), Path.of(args[5]), out);
                case "write" -> write(pool, Long.parseLong(args[3]), Integer.parseInt(args[4]), out);
                case "read" -> read(pool, Path.of(args[3]), out);
                case "slowwrite" -> slowWrite(pool, Long.parseLong(args[3]), out);
                default -> throw new IllegalArgumentException("unknown job " + args[0]);
            };
            out.flush();
            if (status != 0) {
                System.exit(status);
            }
        }
    }

    static byte[] bytes(long seed, int size) {
        byte[] b = new byte[size];
        new SplittableRandom(seed).nextBytes(b);
        b[0] |= 1; // never all zero
        return b;
    }

    private record Held(long handle, byte[] payload, long since) {
    }

    private static int churn(PoolTier pool, long seed, int ops, Path log, PrintStream out) throws Exception {
        SplittableRandom random = new SplittableRandom(seed);
        List<Held> held = new ArrayList<>();
        int full = 0;
        try (BufferedWriter w = Files.newBufferedWriter(log)) {
            for (int op = 0; op < ops; op++) {
                if (held.size() < 4 && (held.isEmpty() || random.nextBoolean())) {
                    int size = 1 + random.nextInt(200 * 1024);
                    long h = pool.allocate(size);
                    if (h == Allocator.FULL) {
                        full++;
                        continue;
                    }
                    long since = System.nanoTime();
                    byte[] payload = bytes(random.nextLong(), size);
                    pool.write(h, MemorySegment.ofArray(payload));
                    held.add(new Held(h, payload, since));
                } else {
                    Held x = held.remove(random.nextInt(held.size()));
                    if (!verify(pool, x)) {
                        out.println("CORRUPT handle " + x.handle() + " of " + x.payload().length + " bytes");
                        return 2;
                    }
                    long until = System.nanoTime();
                    w.write(x.handle() + " " + pool.allocationSize(x.handle()) + " " + x.since() + " " + until + "\n");
                    pool.free(x.handle());
                }
                if (random.nextInt(8) == 0) {
                    LockSupport.parkNanos(random.nextInt(200_000));
                }
            }
            for (Held x : held) {
                if (!verify(pool, x)) {
                    out.println("CORRUPT handle " + x.handle());
                    return 2;
                }
                w.write(x.handle() + " " + pool.allocationSize(x.handle()) + " " + x.since() + " " + System.nanoTime() + "\n");
                pool.free(x.handle());
            }
        }
        out.println("ok full=" + full);
        return 0;
    }

    private static boolean verify(PoolTier pool, Held x) {
        byte[] back = new byte[x.payload().length];
        return pool.read(x.handle(), MemorySegment.ofArray(back)) && Arrays.equals(back, x.payload());
    }

    private static int write(PoolTier pool, long seed, int count, PrintStream out) {
        SplittableRandom random = new SplittableRandom(seed);
        for (int i = 0; i < count; i++) {
            int size = 1 + random.nextInt(300 * 1024);
            long objectSeed = random.nextLong();
            long h = pool.allocate(size);
            if (h == Allocator.FULL) {
                out.println("FULL at object " + i);
                return 4;
            }
            pool.write(h, MemorySegment.ofArray(bytes(objectSeed, size)));
            out.println("obj " + h + " " + size + " " + objectSeed);
        }
        out.println("done");
        return 0;
    }

    private static int read(PoolTier pool, Path spec, PrintStream out) throws Exception {
        int verified = 0;
        for (String line : Files.readAllLines(spec)) {
            String[] f = line.split(" ");
            if (!f[0].equals("obj")) {
                continue;
            }
            long h = Long.parseLong(f[1]);
            int size = Integer.parseInt(f[2]);
            byte[] back = new byte[size];
            if (!pool.read(h, MemorySegment.ofArray(back))) {
                out.println("MISSING " + h);
                return 3;
            }
            if (!Arrays.equals(back, bytes(Long.parseLong(f[3]), size))) {
                out.println("WRONG BYTES " + h);
                return 3;
            }
            verified++;
        }
        out.println("verified " + verified);
        return 0;
    }

    private static int slowWrite(PoolTier pool, long size, PrintStream out) {
        // The large run first: this process's next-fit cursor starts at a chunk that depends on its
        // pid, and a small object placed first near the middle of a pool little more than twice
        // the large one would leave no free run long enough for it (nor for the parent's
        // allocation of the same size after the reclaim). Allocated first, the large run starts
        // at the cursor or at chunk 0, and the small object lands right after it.
        long h = pool.allocate(size);
        if (h == Allocator.FULL) {
            throw new IllegalStateException("no run of " + size + " bytes in an empty pool of " + pool.capacity() + " bytes");
        }
        byte[] small = bytes(42, 1001);
        long h0 = pool.allocate(small.length);
        pool.write(h0, MemorySegment.ofArray(small));
        out.println("published " + h0 + " " + small.length + " 42");
        out.println("writing " + h);
        out.flush();
        byte[] piece = bytes(7, 64 * 1024);
        for (long at = 0; at < size; at += piece.length) {
            long n = Math.min(piece.length, size - at);
            MemorySegment.copy(MemorySegment.ofArray(piece), 0, pool.segment(h, at, n), 0, n);
            LockSupport.parkNanos(20_000_000L);
        }
        pool.publish(h, size);
        out.println("published-big " + h);
        return 0;
    }
}
