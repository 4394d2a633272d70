package dev.strata.cache.policy;

import dev.strata.cache.PriorityClass;

/**
 * Chooses which resident copy of one tier leaves first when the tier is under pressure.
 *
 * <p>Contract:
 * <ul>
 *   <li>The store reports every change: {@link #onInsert} when a copy becomes resident,
 *       {@link #onAccess} on a hit, {@link #onRemove} when it leaves, {@link #onEligibilityChange}
 *       when {@link PolicyNode#evictable()} flips (pinned / unpinned, to or from ACTIVE), and
 *       {@link #onPriorityChange} for other class changes.</li>
 *   <li>{@link #victim()} returns the best candidate, always an evictable node, or null. It does
 *       not remove it: the store then either evicts it (and calls {@link #onRemove}) or cannot move
 *       it (a BACKED object with nowhere to go) and calls {@link #skip}, which hides the node until
 *       {@link #restoreSkipped()} puts every skipped node back exactly where it was. The store
 *       calls {@link #restoreSkipped()} at the end of each pressure pass.</li>
 *   <li>Every operation is O(1) (amortised) and allocates nothing.</li>
 * </ul>
 *
 * <p>Threads: not thread-safe; one instance per tier, guarded by the store's lock.
 */
public interface EvictionPolicy {

    /** A short name for reports, e.g. {@code priority-lru}. */
    String name();

    /** {@code node} became resident in this tier. */
    void onInsert(PolicyNode node);

    /** {@code node} was read (a hit). */
    void onAccess(PolicyNode node);

    /** {@code node} left this tier (evicted, demoted, dropped or removed). */
    void onRemove(PolicyNode node);

    /** {@link PolicyNode#evictable()} of {@code node} changed. */
    void onEligibilityChange(PolicyNode node);

    /** The priority class of {@code node} changed from {@code previous} (eligibility unchanged). */
    void onPriorityChange(PolicyNode node, PriorityClass previous);

    /** The next victim (evictable, not skipped), or null if there is none. */
    PolicyNode victim();

    /** Hides {@code node}, the last {@link #victim()}, from candidacy until {@link #restoreSkipped()}. */
    void skip(PolicyNode node);

    /** Returns every skipped node to its former place, in its former order. */
    void restoreSkipped();

    /** Nodes tracked (evictable or not). */
    int size();
}
