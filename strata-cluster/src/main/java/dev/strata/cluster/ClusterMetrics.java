package dev.strata.cluster;

import dev.strata.memory.metrics.PrometheusText;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;

/**
 * The counters of one {@link ClusterBlockStore}, written as the {@code strata_cluster_*} families
 * through {@link PrometheusText}: hits and misses of reads, bytes read and written, request
 * latency by operation (a histogram), errors by kind, corrupt values found (and deleted) by
 * reason, writes dropped by reason, refused by admission or left to write-behind, the write
 * window's depth, whether the cluster is in use, and topology changes followed.
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

    /** Why a write was not sent or not stored. */
    public enum DropReason { QUEUE_FULL, ERROR, UNAVAILABLE }

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
    private final LongAdder[] dropped = adders(DropReason.values().length); // writes not sent or not stored, by reason
    private final LongAdder refused = new LongAdder();       // writes the admission filter refused
    private final LongAdder deferred = new LongAdder();      // publishes left to write-behind
    private final LongAdder topologyRefreshes = new LongAdder(); // changes of the cluster's topology the client followed
    private final LongAdder skipped = new LongAdder();       // calls answered without the cluster while it was marked unavailable
    private volatile java.util.function.IntSupplier queuedBlocks = () -> 0;  // writes in flight
    private volatile java.util.function.LongSupplier queuedBytes = () -> 0L; // value bytes in flight
    private volatile java.util.function.BooleanSupplier available = () -> true; // false while calls skip the cluster
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

    void countDropped(DropReason why) {
        dropped[why.ordinal()].increment();
    }

    void countRefused() {
        refused.increment();
    }

    void deferred() {
        deferred.increment();
    }

    void topologyRefreshed() {
        topologyRefreshes.increment();
    }

    void countSkipped() {
        skipped.increment();
    }

    void queue(java.util.function.IntSupplier blocks, java.util.function.LongSupplier bytes) {
        queuedBlocks = blocks;
        queuedBytes = bytes;
    }

    void availability(java.util.function.BooleanSupplier a) {
        available = a;
    }

    private volatile long capacityHint; // bytes, 0: not given

    void capacityHint(long bytes) {
        capacityHint = bytes;
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

    /** Writes not sent or not stored, for every reason. */
    public long dropped() {
        long n = 0;
        for (LongAdder a : dropped) {
            n += a.sum();
        }
        return n;
    }

    /** Writes not sent or not stored for {@code why}. */
    public long dropped(DropReason why) {
        return dropped[why.ordinal()].sum();
    }

    /** Writes the admission filter refused. */
    public long refused() {
        return refused.sum();
    }

    /** Blocks that were found published already when written. */
    public long alreadyPresent() {
        return existed.sum();
    }

    /** Topology changes the client followed (a failover is one or more). */
    public long topologyRefreshes() {
        return topologyRefreshes.sum();
    }

    /** Calls answered without the cluster while it was marked unavailable. */
    public long skipped() {
        return skipped.sum();
    }

    /** Writes in flight now. */
    public int queuedBlocks() {
        return queuedBlocks.getAsInt();
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
        out.family("strata_cluster_publishes_total", PrometheusText.Type.COUNTER,
                "block writes by outcome: published, exists (already there), dropped, refused (admission) or deferred (left to write-behind)");
        out.sample("strata_cluster_publishes_total", published.sum(), "outcome", "published");
        out.sample("strata_cluster_publishes_total", existed.sum(), "outcome", "exists");
        out.sample("strata_cluster_publishes_total", dropped(), "outcome", "dropped");
        out.sample("strata_cluster_publishes_total", refused.sum(), "outcome", "refused");
        out.sample("strata_cluster_publishes_total", deferred.sum(), "outcome", "deferred");
        out.family("strata_cluster_dropped_writes_total", PrometheusText.Type.COUNTER,
                "block writes not stored, by reason: queue_full (the write window was full), error (failed or timed out), unavailable (cluster marked down)");
        for (DropReason r : DropReason.values()) {
            out.sample("strata_cluster_dropped_writes_total", dropped[r.ordinal()].sum(), "reason", r.name().toLowerCase(Locale.ROOT));
        }
        out.family("strata_cluster_write_queue_blocks", PrometheusText.Type.GAUGE, "block writes sent to the cluster and not yet answered");
        out.sample("strata_cluster_write_queue_blocks", queuedBlocks.getAsInt());
        out.family("strata_cluster_write_queue_bytes", PrometheusText.Type.GAUGE, "value bytes of the block writes not yet answered");
        out.sample("strata_cluster_write_queue_bytes", queuedBytes.getAsLong());
        out.family("strata_cluster_available", PrometheusText.Type.GAUGE, "1 while the cluster is used, 0 while calls skip it after failures");
        out.sample("strata_cluster_available", available.getAsBoolean() ? 1 : 0);
        out.family("strata_cluster_skipped_total", PrometheusText.Type.COUNTER, "calls answered without the cluster while it was marked unavailable");
        out.sample("strata_cluster_skipped_total", skipped.sum());
        if (capacityHint > 0) {
            out.family("strata_cluster_capacity_hint_bytes", PrometheusText.Type.GAUGE, "the cluster's memory for KV blocks as configured (tiers.cluster.capacity)");
            out.sample("strata_cluster_capacity_hint_bytes", capacityHint);
        }
        out.family("strata_cluster_topology_refreshes_total", PrometheusText.Type.COUNTER, "changes of the cluster's topology the client followed");
        out.sample("strata_cluster_topology_refreshes_total", topologyRefreshes.sum());
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
