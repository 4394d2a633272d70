package dev.strata.cache.peer;

import dev.strata.memory.Tier;

/**
 * A {@link Tier} whose memory its owner can take back at any time (PEER). On top of the tier
 * contract: a read of an allocation whose memory was taken back returns {@code false} (never stale
 * bytes), a write to one stores nothing (and {@link #live} turns false), and the
 * {@link RevokedHandles} listeners are told which allocations died.
 *
 * <p>Threads: as {@link Tier}; listeners run on the thread that ends the revocation (see
 * {@link RevocationCallback}).
 */
public interface RevocableTier extends Tier {

    /** Adds a listener for revoked allocations; call before the first allocation. */
    void listen(RevokedHandles listener);

    /** Removes a listener added by {@link #listen}; nothing if it is not there. */
    void unlisten(RevokedHandles listener);

    /**
     * True while the memory of allocation {@code handle} is still lent (a read or write of it can
     * succeed); false once its lease was revoked, fenced or lost, and for handles not allocated.
     */
    boolean live(long handle);
}
