package dev.strata.memory.transfer;

import dev.strata.memory.Tier;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;

/**
 * One transfer for {@link TransferEngine#submitBatch}: a whole-object copy between two tiers, a
 * gather of memory ranges into one object, or a scatter of one object over memory ranges.
 *
 * <p>Immutable; any thread.
 *
 * @param kind              what is moved
 * @param source            source tier; null for {@link Kind#GATHER} (its sources are memory ranges)
 * @param sourceHandle      allocation in {@code source}; ignored for GATHER
 * @param destination       destination tier; null for {@link Kind#SCATTER}
 * @param destinationHandle allocation in {@code destination}; ignored for SCATTER
 * @param length            bytes moved: the object's length (for GATHER and SCATTER the sum of the segments)
 * @param segments          GATHER: the source ranges in order; SCATTER: the destination ranges in order; COPY: empty
 */
public record Transfer(Kind kind, Tier source, long sourceHandle, Tier destination, long destinationHandle,
                       long length, List<MemorySegment> segments) {

    /** What a transfer moves. */
    public enum Kind {
        /** A whole object from an allocation of one tier to an allocation of another. */
        COPY,
        /** Many memory ranges, concatenated, into one object. */
        GATHER,
        /** One object split over many memory ranges. */
        SCATTER
    }

    public Transfer {
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(segments, "segments");
        switch (kind) {
            case COPY -> {
                Objects.requireNonNull(source, "source tier");
                Objects.requireNonNull(destination, "destination tier");
                if (length <= 0) {
                    throw new IllegalArgumentException("copy length must be positive, got " + length);
                }
            }
            case GATHER -> Objects.requireNonNull(destination, "destination tier");
            case SCATTER -> Objects.requireNonNull(source, "source tier");
        }
    }

    /** A whole-object copy of {@code length} bytes. */
    public static Transfer copy(Tier source, long sourceHandle, Tier destination, long destinationHandle, long length) {
        return new Transfer(Kind.COPY, source, sourceHandle, destination, destinationHandle, length, List.of());
    }

    /** The concatenation of {@code sources} into the object at {@code destinationHandle}. */
    public static Transfer gather(List<MemorySegment> sources, Tier destination, long destinationHandle) {
        return new Transfer(Kind.GATHER, null, -1, destination, destinationHandle, totalBytes(sources), List.copyOf(sources));
    }

    /** The object at {@code sourceHandle} split over {@code destinations} in order. */
    public static Transfer scatter(Tier source, long sourceHandle, List<MemorySegment> destinations) {
        return new Transfer(Kind.SCATTER, source, sourceHandle, null, -1, totalBytes(destinations), List.copyOf(destinations));
    }

    static long totalBytes(List<MemorySegment> segments) {
        long total = 0;
        for (int i = 0, n = segments.size(); i < n; i++) {
            total += segments.get(i).byteSize();
        }
        return total;
    }
}
