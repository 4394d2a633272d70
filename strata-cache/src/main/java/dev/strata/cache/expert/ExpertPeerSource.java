package dev.strata.cache.expert;

import java.lang.foreign.MemorySegment;

/**
 * Where an {@link ExpertPager} looks for an expert before its master: copies of experts kept in
 * memory lent by peers ({@link ExpertRebalancer}). A miss asks the source first and fetches from
 * the master only when the source has no valid copy; a miss never places anything in the source.
 *
 * <p>Threads: called on the pager's driving thread; implementations must tolerate their copies
 * being revoked at any moment from another thread (the call then returns false).
 */
@FunctionalInterface
public interface ExpertPeerSource {

    /**
     * Copies the whole image of expert {@code expert} of {@code layer} into {@code dst}
     * ({@link ExpertLayout#bytes()} bytes) from a valid peer copy.
     *
     * @return true if {@code dst} now holds the image; false when there is no valid copy (none
     *         placed, or its lease was revoked), in which case {@code dst}'s bytes are unspecified
     *         and the pager fetches the master
     */
    boolean fetch(int layer, int expert, MemorySegment dst);
}
