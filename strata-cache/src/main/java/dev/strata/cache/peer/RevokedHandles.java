package dev.strata.cache.peer;

/**
 * Told which allocations of a {@link RevocableTier} died with a lease: their bytes are gone and
 * every later read of them misses.
 *
 * <p>Threads: called on the thread that ends the lease's revocation (see
 * {@link RevocationCallback}), after the lease's in-flight accesses were drained; must not block
 * for long and must not allocate in the tier that calls it (the lender's deadline is running).
 */
@FunctionalInterface
public interface RevokedHandles {
    /**
     * @param tier    the tier whose allocations died
     * @param handles the allocation handles that were live on the revoked lease (each still needs
     *                its {@code free}, which releases nothing on the peer)
     * @param reason  why the lease ended
     */
    void revoked(RevocableTier tier, long[] handles, RevocationReason reason);
}
