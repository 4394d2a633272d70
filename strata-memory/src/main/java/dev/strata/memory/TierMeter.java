package dev.strata.memory;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * Measures a tier's reads and writes: counts, bytes, and decayed averages of bandwidth and
 * latency, so that placement can use measured costs instead of preset constants.
 *
 * <p>Bandwidth of one operation is its bytes over its duration; the averages are exponentially
 * decayed with weight {@link #ALPHA} per sample. Threads: any; recording is lock-free (a CAS loop
 * on each average).
 *
 * <p>Small operations are timed by sampling: {@link #startRead()} and {@link #startWrite()} read the clock for about one
 * operation in {@link #SAMPLE_EVERY} and {@link #readDone}/{@link #writeDone} fold only those into
 * the averages, while counts and bytes stay exact. Two clock reads and two CAS loops cost about as
 * much as copying a few hundred bytes; sampling keeps the meter off the cost of small objects.
 */
public final class TierMeter {

    /** Weight of a new sample in the decayed averages. */
    public static final double ALPHA = 0.05;

    /** About one operation in this many is timed by {@link #start()}. */
    public static final int SAMPLE_EVERY = 16;

    /** What {@link #start()} returns for an operation that is not timed. */
    public static final long NOT_TIMED = Long.MIN_VALUE;

    private volatile boolean timedRead; // a read has been timed
    private volatile boolean timedWrite; // a write has been timed
    private final LongAdder readOps = new LongAdder();
    private final LongAdder writeOps = new LongAdder();
    private final LongAdder bytesRead = new LongAdder();
    private final LongAdder bytesWritten = new LongAdder();
    private final AtomicLong readBandwidthBits = new AtomicLong(); // bytes/s as double bits
    private final AtomicLong writeBandwidthBits = new AtomicLong(); // bytes/s as double bits
    private final AtomicLong readLatencyBits = new AtomicLong(); // ns as double bits
    private final AtomicLong writeLatencyBits = new AtomicLong(); // ns as double bits

    /**
     * The start of a read: the clock for a sampled read, else {@link #NOT_TIMED}. Until one read
     * has been timed, every read is, so the averages exist as soon as anything ran.
     */
    public long startRead() {
        return !timedRead || java.util.concurrent.ThreadLocalRandom.current().nextInt(SAMPLE_EVERY) == 0
                ? System.nanoTime() : NOT_TIMED;
    }

    /** Like {@link #startRead()}, for a write. */
    public long startWrite() {
        return !timedWrite || java.util.concurrent.ThreadLocalRandom.current().nextInt(SAMPLE_EVERY) == 0
                ? System.nanoTime() : NOT_TIMED;
    }

    /** Records one completed read of {@code bytes} that began at {@code start} (from {@link #startRead()} or {@link #startWrite()}). */
    public void readDone(long bytes, long start) {
        if (start == NOT_TIMED) {
            readOps.increment();
            bytesRead.add(bytes);
        } else {
            recordReads(1, bytes, System.nanoTime() - start);
        }
    }

    /** Records one completed write of {@code bytes} that began at {@code start} (from {@link #startRead()} or {@link #startWrite()}). */
    public void writeDone(long bytes, long start) {
        if (start == NOT_TIMED) {
            writeOps.increment();
            bytesWritten.add(bytes);
        } else {
            recordWrites(1, bytes, System.nanoTime() - start);
        }
    }

    /** Records one completed read of {@code bytes} that took {@code nanos}. */
    public void recordRead(long bytes, long nanos) {
        recordReads(1, bytes, nanos);
    }

    /** Records one completed write of {@code bytes} that took {@code nanos}. */
    public void recordWrite(long bytes, long nanos) {
        recordWrites(1, bytes, nanos);
    }

    /**
     * Records {@code ops} completed reads, back to back, of {@code bytes} in all that took
     * {@code nanos} in all: one latency sample of their mean, one bandwidth sample of the whole.
     */
    public void recordReads(long ops, long bytes, long nanos) {
        if (!timedRead) {
            timedRead = true;
        }
        readOps.add(ops);
        bytesRead.add(bytes);
        decay(readLatencyBits, (double) nanos / ops);
        if (nanos > 0) {
            decay(readBandwidthBits, bytes * 1e9 / nanos);
        }
    }

    /** Like {@link #recordReads}, for writes. */
    public void recordWrites(long ops, long bytes, long nanos) {
        if (!timedWrite) {
            timedWrite = true;
        }
        writeOps.add(ops);
        bytesWritten.add(bytes);
        decay(writeLatencyBits, (double) nanos / ops);
        if (nanos > 0) {
            decay(writeBandwidthBits, bytes * 1e9 / nanos);
        }
    }

    private static void decay(AtomicLong bits, double sample) {
        long prev;
        long next;
        do {
            prev = bits.get();
            double old = Double.longBitsToDouble(prev);
            double v = old == 0.0 ? sample : old + ALPHA * (sample - old);
            next = Double.doubleToRawLongBits(v);
        } while (!bits.compareAndSet(prev, next));
    }

    /** A snapshot combining these measurements with the tier's occupancy. */
    public TierStats snapshot(String name, TierKind kind, long capacity, long used, long allocations) {
        return new TierStats(name, kind, capacity, used, allocations,
                readOps.sum(), writeOps.sum(), bytesRead.sum(), bytesWritten.sum(),
                Double.longBitsToDouble(readBandwidthBits.get()),
                Double.longBitsToDouble(writeBandwidthBits.get()),
                Double.longBitsToDouble(readLatencyBits.get()),
                Double.longBitsToDouble(writeLatencyBits.get()));
    }
}
