package dev.strata.cache;

/**
 * Decides whether a tier of a {@link TieredStore} takes a copy demoted into it from above, e.g.
 * to spare an SSD the writes of objects that are never read back (admit only objects seen twice).
 * A refused copy goes on to the next tier down; a LOSSY object that no tier takes is dropped and
 * reported; a BACKED one stays where it is.
 *
 * <p>Threads: called under the store's lock, from any thread that operates on the store;
 * implementations must be fast, thread-safe and must not call the store.
 */
@FunctionalInterface
public interface AdmissionFilter {

    /** Admits every copy. */
    AdmissionFilter ALL = (key, kind, sizeBytes) -> true;

    /**
     * @param key       the object being demoted
     * @param kind      its kind
     * @param sizeBytes its size in bytes
     * @return true to let the tier take the copy
     */
    boolean admit(ObjectKey key, ObjectKind kind, long sizeBytes);
}
