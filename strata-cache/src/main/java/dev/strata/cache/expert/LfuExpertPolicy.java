package dev.strata.cache.expert;

/**
 * Least frequently used with aging: evicts the resident expert with the fewest recent references,
 * the least recently used among equals.
 *
 * <p>Design note:
 * <ul>
 *   <li>Every reference (hit or admission) adds one to the key's count. Counts are kept for every
 *       key, resident or not, so an expert that leaves keeps its history and competes on it when
 *       it returns: a popular expert pushed out by a burst wins its slot back, which LRU cannot
 *       do. The key space is small ({@code layers × experts}, a few thousand), so exact counts
 *       cost less than a sketch.</li>
 *   <li>Aging: after every {@code agingPeriod} references all counts are halved, so popularity
 *       decays with a half-life of about {@code agingPeriod} references and the policy follows a
 *       workload that changes topic. The halving is O(keys) once per period, O(1) amortised per
 *       reference when the period is at least the key count.</li>
 *   <li>No admission filter: unlike a store cache (TinyLFU's duel), a routed expert must be resident
 *       for the step to compute, so every miss is admitted; frequency decides only who leaves.</li>
 *   <li>Victim search scans the group's residents (an array with O(1) insert and removal): O(k)
 *       per miss for a per-layer scope, O(k × layers) for a shared pool, i.e. a few microseconds
 *       at most, against a miss that copies megabytes. Hits stay O(1).</li>
 * </ul>
 *
 * <p>Threads: confined to the owning pager's thread.
 */
public final class LfuExpertPolicy implements ExpertPolicy {

    /** Aging period used by {@link #LfuExpertPolicy()}: this many references per key of the model. */
    public static final int DEFAULT_PERIOD_PER_KEY = 8;

    private final int agingPeriodOverride; // references between halvings, 0 = DEFAULT_PERIOD_PER_KEY x keys
    private int agingPeriod;               // references between halvings
    private int[] count;                   // [keys] decayed references
    private long[] last;                   // [keys] stamp of the latest reference (ties between equal counts: oldest leaves)
    private long clock;                    // the latest stamp given
    private GroupMembers members;          // residents of each group
    private int untilAging;                // references left before the next halving

    /** Aging every {@value #DEFAULT_PERIOD_PER_KEY} × keys references. */
    public LfuExpertPolicy() {
        this.agingPeriodOverride = 0;
    }

    /** Aging every {@code agingPeriod} references, {@code >= 1}. */
    public LfuExpertPolicy(int agingPeriod) {
        if (agingPeriod < 1) {
            throw new IllegalArgumentException("aging period must be at least 1 reference, got " + agingPeriod);
        }
        this.agingPeriodOverride = agingPeriod;
    }

    @Override
    public String name() {
        return "lfu-aging";
    }

    @Override
    public void attach(int groups, int keys) {
        if (count != null) {
            throw new IllegalStateException("policy 'lfu-aging' is already attached to a pager");
        }
        agingPeriod = agingPeriodOverride > 0 ? agingPeriodOverride
                : (int) Math.min(Integer.MAX_VALUE, (long) DEFAULT_PERIOD_PER_KEY * keys);
        untilAging = agingPeriod;
        count = new int[keys];
        last = new long[keys];
        members = new GroupMembers(groups, keys);
    }

    /** The decayed reference count of {@code key} (for tests and reports). */
    public int frequency(int key) {
        return count[key];
    }

    private void reference(int key, long tick) {
        count[key]++;
        last[key] = ++clock;
        if (--untilAging == 0) {
            untilAging = agingPeriod;
            int[] c = count;
            for (int i = 0; i < c.length; i++) {
                c[i] >>>= 1;
            }
        }
    }

    @Override
    public void onHit(int group, int key, long tick) {
        reference(key, tick);
    }

    @Override
    public void onAdmit(int group, int key, long tick) {
        reference(key, tick);
        members.add(group, key);
    }

    @Override
    public void onEvict(int group, int key) {
        members.remove(group, key);
    }

    @Override
    public int victim(int group, Pins pins) {
        int[] m = members.of(group);
        int best = -1;
        int bestCount = Integer.MAX_VALUE;
        long bestLast = Long.MAX_VALUE;
        for (int i = 0, n = members.size(group); i < n; i++) {
            int k = m[i];
            int c = count[k];
            if (c < bestCount || (c == bestCount && last[k] < bestLast)) {
                if (!pins.pinned(k)) {
                    best = k;
                    bestCount = c;
                    bestLast = last[k];
                }
            }
        }
        return best;
    }

    @Override
    public int size(int group) {
        return members.size(group);
    }
}
