package dev.strata.cache;

/**
 * Test access, for tests of the modules above strata-cache, to the store's package-private
 * placement check.
 */
public final class StoreChecks {
    private StoreChecks() {
    }

    /** Runs {@link TieredStore#checkPlacement()}: throws naming the first broken invariant. */
    public static void checkPlacement(TieredStore store) {
        store.checkPlacement();
    }
}
