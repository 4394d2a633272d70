package dev.strata.cache.expert;

/**
 * Chooses which resident expert gives up its slot when a routed expert misses. Pluggable into
 * {@link ExpertPager}; policies differ in how they rank residents, while where a victim may come
 * from (the missing expert's own layer, or any layer) is the pager's {@link SlotScope}.
 *
 * <p>Vocabulary: a <em>key</em> is {@code layer × experts + expert}; a <em>group</em> is the set of
 * slots a key competes for ({@code layer} under {@link SlotScope#PER_LAYER}, {@code 0} under
 * {@link SlotScope#SHARED}). A tick is the pager's monotone step clock.
 *
 * <p>Contract:
 * <ul>
 *   <li>{@link #attach} is called once, before anything else, by the slot table of the pager that
 *       owns the policy ({@code ExpertSlotTable}; a policy instance serves one pager).</li>
 *   <li>The slot table reports every change of residency: {@link #onAdmit} when a key becomes resident,
 *       {@link #onEvict} when it leaves, {@link #onHit} when a routed key was already resident.</li>
 *   <li>{@link #victim} returns a resident key of {@code group} that {@code pins} does not pin (the
 *       experts routed in the current call), or {@code -1} if there is none. It does not remove it.
 *       The slot table refuses, with an exception, a victim that is pinned or not resident.</li>
 *   <li>{@link #onHit} allocates nothing and is O(1): it is on the all-hits hot path.</li>
 * </ul>
 *
 * <p>Threads: not thread-safe; called only by the thread driving the owning pager.
 */
public interface ExpertPolicy {

    /** Tells a policy which keys the current call routes; they must not be chosen as victims. */
    @FunctionalInterface
    interface Pins {
        boolean pinned(int key);
    }

    /** A short name for reports and metrics labels, e.g. {@code lru}. */
    String name();

    /**
     * Sizes the policy.
     *
     * @param groups number of groups (layers, or 1 for a shared pool)
     * @param keys   number of keys ({@code layers × experts})
     */
    void attach(int groups, int keys);

    /** Resident {@code key} of {@code group} was routed again at {@code tick}. */
    void onHit(int group, int key, long tick);

    /** {@code key} became resident in {@code group} at {@code tick} (it was routed and fetched). */
    void onAdmit(int group, int key, long tick);

    /** {@code key} left {@code group}. */
    void onEvict(int group, int key);

    /** A resident, unpinned key of {@code group} to evict, or {@code -1}. */
    int victim(int group, Pins pins);

    /** Keys resident in {@code group} as the policy counts them (for invariant checks). */
    int size(int group);
}
