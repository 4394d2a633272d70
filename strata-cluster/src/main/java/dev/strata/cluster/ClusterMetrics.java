package dev.strata.cluster;

import dev.strata.memory.metrics.PrometheusText;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;

/**
 * The counters of one {@link ClusterBlockStore}, written as the {@code strata_cluster_*} families
 * through {@link PrometheusText}: hits and misses of reads, bytes read and written, request
 * latency by operation (a histogram), errors by kind, corrupt values found (and deleted) by
 * reason, and publishes dropped because the cluster did not answer in time.
 *
 * <p>No label or value ever carries the password or a key's bytes.
 *
 * <p>Threads: any thread may count; {@link #writeTo} reads a consistent-enough snapshot (each
 * counter is read once).
 */
public final class ClusterMetrics {

    /** An operation on the cluster, timed as one request (a batch of EXISTS counts as one). */
    public enum Op { MATCH, READ, PUBLISH, DELETE }

    /** Why a call answered absent or not published without the cluster's answer. */
    public enum ErrorKind { TIMEOUT, UNAVAILABLE, AUTH, OTHER }

    /** Why a value read from the cluster was discarded. */
    public enum Corruption { SHORT, MAGIC, VERSION, LENGTH, GEOMETRY, KEY, CHECKSUM }

    /** Latency bucket upper bounds, seconds: 100 µs to 5 s. */
    static final double[] BOUNDS = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};

    private final LongAdder hits = new LongAdder();          // reads that loaded a verified block
    private final LongAdder misses = new LongAdder();        // reads that found no value
    private final LongAdder matchedBlocks = new LongAdder(); // blocks found published by matchPrefix
    private final LongAdder bytesRead = new LongAdder();     // payload bytes of verified reads
    private final LongAdder bytesWritten = new LongAdder();  // payload bytes of published blocks
    private final LongAdder published = new LongAdder();     // blocks this store published
    private final LongAdder existed = new LongAdder();       // publishes that found the block there
    private final LongAdder dropped = new LongAdder();       // publishes abandoned on an error or timeout
    private final LongAdder[] errors = adders(ErrorKind.values().length);
    private final LongAdder[] corrupt = adders(Corruption.values().length);
    private final AtomicLongArray buckets = new AtomicLongArray(Op.values().length * (BOUNDS.length + 1)); // per op, per bucket
    private final LongAdder[] latencyNanos = adders(Op.values().length); // per op: summed latency, ns

    private static LongAdder[] adders(int n) {
        LongAdder[] a = new LongAdder[n];
        for (int i = 0; i < n; i++) {
            a[i] = new LongAdder();
        }
        return a;
    }

    void hit(long bytes) {
        hits.increment();
        bytesRead.add(bytes);
    }

    void miss() {
        misses.increment();
    }

    void matched(int blocks) {
        matchedBlocks.add(blocks);
    }

    void published(long bytes) {
        published.increment();
        bytesWritten.add(bytes);
    }

    void existed() {
        existed.increment();
    }

    void countDropped() {
        dropped.increment();
    }

    void error(ErrorKind kind) {
        errors[kind.ordinal()].increment();
    }

    void countCorrupt(Corruption why) {
        corrupt[why.ordinal()].increment();
    }

    void latency(Op op, long nanos) {
        double s = nanos / 1e9;
        int b = 0;
        while (b < BOUNDS.length && s > BOUNDS[b]) {
            b++;
        }
        buckets.incrementAndGet(op.ordinal() * (BOUNDS.length + 1) + b);
        latencyNanos[op.ordinal()].add(nanos);
    }

    /** Reads that loaded a verified block. */
    public long hits() {
        return hits.sum();
    }

    /** Reads that found no value. */
    public long misses() {
        return misses.sum();
    }

    /** Errors of one kind so far. */
    public long errors(ErrorKind kind) {
        return errors[kind.ordinal()].sum();
    }

    /** All errors so far. */
    public long errors() {
        long n = 0;
        for (LongAdder a : errors) {
            n += a.sum();
        }
        return n;
    }

    /** Corrupt values of one kind discarded so far. */
    public long corrupt(Corruption why) {
        return corrupt[why.ordinal()].sum();
    }

    /** All corrupt values discarded so far. */
    public long corrupt() {
        long n = 0;
        for (LongAdder a : corrupt) {
            n += a.sum();
        }
        return n;
    }

    /** Blocks this store published. */
    public long published() {
        return published.sum();
    }

    /** Publishes abandoned on an error or timeout. */
    public long dropped() {
        return dropped.sum();
    }

    /** Writes the {@code strata_cluster_*} families. */
    public void writeTo(PrometheusText out) {
        out.family("strata_cluster_hits_total", PrometheusText.Type.COUNTER, "KV blocks read from the cluster and verified");
        out.sample("strata_cluster_hits_total", hits.sum());
        out.family("strata_cluster_misses_total", PrometheusText.Type.COUNTER, "KV block reads that found no value in the cluster");
        out.sample("strata_cluster_misses_total", misses.sum());
        out.family("strata_cluster_matched_blocks_total", PrometheusText.Type.COUNTER, "KV blocks prefix matching found published in the cluster");
        out.sample("strata_cluster_matched_blocks_total", matchedBlocks.sum());
        out.family("strata_cluster_read_bytes_total", PrometheusText.Type.COUNTER, "payload bytes of verified reads from the cluster");
        out.sample("strata_cluster_read_bytes_total", bytesRead.sum());
        out.family("strata_cluster_written_bytes_total", PrometheusText.Type.COUNTER, "payload bytes of KV blocks published to the cluster");
        out.sample("strata_cluster_written_bytes_total", bytesWritten.sum());
        out.family("strata_cluster_publishes_total", PrometheusText.Type.COUNTER, "publishes by outcome: published, exists (already there) or dropped (error or timeout)");
        out.sample("strata_cluster_publishes_total", published.sum(), "outcome", "published");
        out.sample("strata_cluster_publishes_total", existed.sum(), "outcome", "exists");
        out.sample("strata_cluster_publishes_total", dropped.sum(), "outcome", "dropped");
        out.family("strata_cluster_dropped_publishes_total", PrometheusText.Type.COUNTER, "publishes abandoned because the cluster failed or did not answer in time");
        out.sample("strata_cluster_dropped_publishes_total", dropped.sum());
        out.family("strata_cluster_errors_total", PrometheusText.Type.COUNTER, "requests the cluster failed or did not answer in time, by kind; each answered absent or not published");
        for (ErrorKind k : ErrorKind.values()) {
            out.sample("strata_cluster_errors_total", errors[k.ordinal()].sum(), "kind", k.name().toLowerCase(Locale.ROOT));
        }
        out.family("strata_cluster_corrupt_values_total", PrometheusText.Type.COUNTER, "values read from the cluster that failed a check, deleted and never loaded, by check");
        for (Corruption c : Corruption.values()) {
            out.sample("strata_cluster_corrupt_values_total", corrupt[c.ordinal()].sum(), "check", c.name().toLowerCase(Locale.ROOT));
        }
        out.family("strata_cluster_request_seconds", PrometheusText.Type.HISTOGRAM, "latency of requests to the cluster by operation (a batch of EXISTS is one request)");
        for (Op op : Op.values()) {
            long[] counts = new long[BOUNDS.length + 1];
            for (int b = 0; b <= BOUNDS.length; b++) {
                counts[b] = buckets.get(op.ordinal() * (BOUNDS.length + 1) + b);
            }
            out.histogram("strata_cluster_request_seconds", BOUNDS, counts, latencyNanos[op.ordinal()].sum() / 1e9,
                    "op", op.name().toLowerCase(Locale.ROOT));
        }
    }
}
