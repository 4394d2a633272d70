package dev.strata.cache.policy;

import java.util.Locale;

/**
 * The eviction policies Strata ships, by name (for configuration files and flags).
 *
 * <p>Immutable; any thread.
 */
public enum PolicyKind {
    /** {@link PriorityLruPolicy}, the default. */
    PRIORITY_LRU,
    /** {@link LruPolicy}. */
    LRU,
    /** {@link TinyLfuPolicy}. */
    TINY_LFU,
    /** {@link PrefixAwarePolicy}: leaves of the prefix tree first, for KV blocks. */
    PREFIX_AWARE;

    /** A new, empty policy of this kind (one per tier). */
    public EvictionPolicy create() {
        return switch (this) {
            case PRIORITY_LRU -> new PriorityLruPolicy();
            case LRU -> new LruPolicy();
            case TINY_LFU -> new TinyLfuPolicy();
            case PREFIX_AWARE -> new PrefixAwarePolicy();
        };
    }

    /**
     * Parses {@code priority-lru}, {@code lru}, {@code tiny-lfu} or {@code prefix-aware} (case and {@code _}/{@code -}
     * insensitive).
     *
     * @throws IllegalArgumentException naming the text and the choices
     */
    public static PolicyKind parse(String text) {
        String t = text == null ? "" : text.trim().toUpperCase(Locale.ROOT).replace('-', '_');
        for (PolicyKind k : values()) {
            if (k.name().equals(t)) {
                return k;
            }
        }
        throw new IllegalArgumentException("unknown eviction policy '" + text + "' (choose priority-lru, lru, tiny-lfu or prefix-aware)");
    }
}
