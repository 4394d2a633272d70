package dev.strata.cache;

/**
 * How much an object is needed now, from most to least; eviction prefers the later classes.
 *
 * <ul>
 *   <li>{@link #ACTIVE}: in use by a running step (e.g. a running sequence's attention window);
 *       never evicted.</li>
 *   <li>{@link #RECENT}: recently used and likely reused (e.g. shared prefix blocks); evicted last.</li>
 *   <li>{@link #IDLE}: belongs to a waiting or preempted sequence.</li>
 *   <li>{@link #EVICTABLE}: safe to move out; evicted first.</li>
 * </ul>
 *
 * <p>Immutable; any thread.
 */
public enum PriorityClass {
    ACTIVE,
    RECENT,
    IDLE,
    EVICTABLE;

    private static final PriorityClass[] VALUES = values();

    /** The class with the given {@link #ordinal()}. */
    public static PriorityClass ofOrdinal(int ordinal) {
        return VALUES[ordinal];
    }
}
