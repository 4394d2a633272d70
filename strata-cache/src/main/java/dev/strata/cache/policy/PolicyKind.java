package dev.strata.cache.policy;

import java.util.Locale;

/**
 * The eviction policies Strata ships, by name (for configuration files and flags).
 *
 * <p>Immutable; any thread.
 */
public enum PolicyKind {
    /** {@link PriorityLruPolicy}, the default of the tiered store. */
    PRIORITY_LRU,
    /** {@link LruPolicy}. */
    LRU,
    /** {@link TinyLfuPolicy}. */
    TINY_LFU,
    /** {@link PrefixAwarePolicy}: leaves of the prefix tree first, for KV blocks. */
    PREFIX_AWARE,
    /** {@link AdaptiveReachPolicy}: LRU within reach levels, adapting the room of once-reached blocks and recency against frequency; the default for KV slots. */
    ADAPTIVE_REACH;

    /** The policy of KV block slots unless configured otherwise ({@code KvManagerConfig.defaults()}). */
    public static final PolicyKind KV_DEFAULT = ADAPTIVE_REACH;

    /** The policy's name in configuration files and reports, e.g. {@code adaptive-reach}. */
    public String configName() {
        return name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    /** A new, empty policy of this kind (one per tier). */
    public EvictionPolicy create() {
        return switch (this) {
            case PRIORITY_LRU -> new PriorityLruPolicy();
            case LRU -> new LruPolicy();
            case TINY_LFU -> new TinyLfuPolicy();
            case PREFIX_AWARE -> new PrefixAwarePolicy();
            case ADAPTIVE_REACH -> new AdaptiveReachPolicy();
        };
    }

    /**
     * Parses {@code priority-lru}, {@code lru}, {@code tiny-lfu}, {@code prefix-aware} or {@code adaptive-reach} (case and
     * {@code _}/{@code -} insensitive).
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
        throw new IllegalArgumentException("unknown eviction policy '" + text + "' (choose priority-lru, lru, tiny-lfu, prefix-aware or adaptive-reach)");
    }
}
