package dev.strata.cache;

/**
 * Outcome of {@link TieredStore#put}. Every outcome is expected; none is an error.
 *
 * <ul>
 *   <li>{@link #STORED}: the object is stored (in the target tier or, if that had no room, in a
 *       lower tier of the chain).</li>
 *   <li>{@link #ALREADY_PRESENT}: an object with this key is stored; it is left unchanged (keys are
 *       content identities: remove first to replace bytes).</li>
 *   <li>{@link #REFUSED_NO_SPACE}: no tier from the target down could make room without dropping a
 *       BACKED object or moving an ACTIVE or pinned one.</li>
 *   <li>{@link #REFUSED_TOO_LARGE}: the object is larger than every tier from the target down.</li>
 * </ul>
 *
 * <p>Immutable; any thread.
 */
public enum PutStatus {
    STORED,
    ALREADY_PRESENT,
    REFUSED_NO_SPACE,
    REFUSED_TOO_LARGE
}
