package dev.strata.cache;

/**
 * Whether losing an object is allowed.
 *
 * <ul>
 *   <li>{@link #BACKED}: the store holds the authoritative copy; it is never dropped (the store
 *       demotes it, or refuses the put that would force a drop).</li>
 *   <li>{@link #LOSSY}: may be dropped when it leaves its last tier; its owner is told exactly once
 *       through the {@link DropListener} and reconstructs it (e.g. recomputes the KV block).</li>
 * </ul>
 *
 * <p>Immutable; any thread.
 */
public enum Durability {
    BACKED,
    LOSSY
}
