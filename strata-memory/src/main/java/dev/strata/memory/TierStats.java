package dev.strata.memory;

/**
 * A snapshot of one tier's occupancy and measured performance.
 *
 * @param name              the tier's name
 * @param kind              the tier's kind
 * @param capacityBytes     bytes the tier may hold
 * @param usedBytes         bytes allocated (framing and rounding included)
 * @param allocations       live allocations
 * @param readOps           completed reads since open
 * @param writeOps          completed writes since open
 * @param bytesRead         payload bytes read since open
 * @param bytesWritten      payload bytes written since open
 * @param readBytesPerSec   measured read bandwidth (recent, decayed average), 0 if never measured
 * @param writeBytesPerSec  measured write bandwidth (recent, decayed average), 0 if never measured
 * @param readLatencyNanos  measured latency of one read (recent, decayed average), 0 if never measured
 * @param writeLatencyNanos measured latency of one write (recent, decayed average), 0 if never measured
 */
public record TierStats(
        String name,
        TierKind kind,
        long capacityBytes,
        long usedBytes,
        long allocations,
        long readOps,
        long writeOps,
        long bytesRead,
        long bytesWritten,
        double readBytesPerSec,
        double writeBytesPerSec,
        double readLatencyNanos,
        double writeLatencyNanos) {

    /** Bytes not allocated. */
    public long freeBytes() {
        return capacityBytes - usedBytes;
    }

    /** Fraction of the capacity allocated, in [0, 1]. */
    public double occupancy() {
        return capacityBytes == 0 ? 0.0 : (double) usedBytes / capacityBytes;
    }
}
