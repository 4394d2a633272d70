package dev.strata.memory.transfer;

/**
 * A snapshot of one link's measurements.
 *
 * <p>Immutable; any thread.
 *
 * @param source          source tier name ({@code memory} for raw memory ranges of a gather)
 * @param destination     destination tier name ({@code memory} for raw memory ranges of a scatter)
 * @param workers         worker threads serving the link
 * @param operations      transfers finished (completed, not found or failed)
 * @param completed       transfers that moved every byte
 * @param notFound        transfers whose source object was missing
 * @param failed          transfers that failed with an exception
 * @param bytes           bytes moved by completed transfers
 * @param queueDepth      requests waiting now (a batch slice counts as one)
 * @param maxQueueDepth   most requests ever waiting at once
 * @param p50Nanos        median latency, submission to completion, ns
 * @param p99Nanos        99th percentile latency, ns
 * @param p999Nanos       99.9th percentile latency, ns
 * @param maxNanos        largest latency, ns
 * @param busyNanos       time workers spent running transfers, summed over workers, ns
 * @param wallNanos       time since the link's first transfer started, ns
 * @param busyGBps        bytes over busy time, GB/s (1e9 bytes per second)
 * @param wallGBps        bytes over wall time, GB/s
 */
public record LinkStats(
        String source,
        String destination,
        int workers,
        long operations,
        long completed,
        long notFound,
        long failed,
        long bytes,
        long queueDepth,
        long maxQueueDepth,
        long p50Nanos,
        long p99Nanos,
        long p999Nanos,
        long maxNanos,
        long busyNanos,
        long wallNanos,
        double busyGBps,
        double wallGBps) {

    /** {@code source->destination}. */
    public String name() {
        return source + "->" + destination;
    }
}
