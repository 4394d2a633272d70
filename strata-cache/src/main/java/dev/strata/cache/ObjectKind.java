package dev.strata.cache;

/**
 * What a stored object is.
 *
 * <ul>
 *   <li>{@link #KV_BLOCK}: the K and V of a block of tokens, for every layer.</li>
 *   <li>{@link #EXPERT}: one expert's weights in one layer.</li>
 * </ul>
 *
 * <p>Immutable; any thread.
 */
public enum ObjectKind {
    KV_BLOCK,
    EXPERT
}
