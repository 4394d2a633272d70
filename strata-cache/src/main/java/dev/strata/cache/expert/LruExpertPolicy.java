package dev.strata.cache.expert;

/**
 * Least recently used, per group: the seed's policy (a use stamp per resident, evict the oldest).
 *
 * <p>Design note: every reference takes the next value of a monotone counter as the key's use
 * stamp (hits in the order the call lists them, then admissions), so stamps order the residents
 * exactly as a recency list would. Two ways to keep that order were weighed: an intrusive doubly
 * linked list (O(1) victim, but each hit relinks three keys, about six scattered writes) and stamps
 * (a hit is one store; the victim is a scan of the group's residents for the smallest unpinned
 * stamp). Hits are the hot path and far outnumber misses, and a miss copies megabytes, so stamps:
 * the scan is O(k) per miss with per-layer slots, O(k × layers) with a shared pool (about a
 * microsecond for 1536 residents, against a 9 MiB copy of about a millisecond). Nothing is
 * allocated after {@link #attach}.
 *
 * <p>Its miss counts at every capacity equal the reuse-distance miss curve of
 * {@code dev.strata.cache.curve.MissCurve} (for one group and single-expert steps), which is what
 * the budget controller reasons with; a test holds it to that.
 *
 * <p>Threads: confined to the owning pager's thread.
 */
public final class LruExpertPolicy implements ExpertPolicy {

    private long[] lastUse;       // [keys] stamp of the latest reference
    private long clock;           // the latest stamp given
    private GroupMembers members; // residents of each group

    @Override
    public String name() {
        return "lru";
    }

    @Override
    public void attach(int groups, int keys) {
        if (lastUse != null) {
            throw new IllegalStateException("policy 'lru' is already attached to a pager");
        }
        lastUse = new long[keys];
        members = new GroupMembers(groups, keys);
    }

    @Override
    public void onHit(int group, int key, long tick) {
        lastUse[key] = ++clock;
    }

    @Override
    public void onAdmit(int group, int key, long tick) {
        lastUse[key] = ++clock;
        members.add(group, key);
    }

    @Override
    public void onEvict(int group, int key) {
        members.remove(group, key);
    }

    @Override
    public int victim(int group, Pins pins) {
        int[] m = members.of(group);
        long[] use = lastUse;
        int best = -1;
        long oldest = Long.MAX_VALUE;
        for (int i = 0, n = members.size(group); i < n; i++) {
            int k = m[i];
            long u = use[k];
            if (u < oldest && !pins.pinned(k)) {
                best = k;
                oldest = u;
            }
        }
        return best;
    }

    @Override
    public int size(int group) {
        return members.size(group);
    }
}
