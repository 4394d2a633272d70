package dev.strata.cache.expert;

import java.util.Arrays;

/**
 * Least recently used, per group: the seed's policy (a tick per slot, evict the oldest).
 *
 * <p>Design note: one intrusive doubly linked list per group over the key space ({@code prev} and
 * {@code next} arrays indexed by key, so nothing is allocated after {@link #attach}); the head is
 * the most recently used key. A hit moves the key to the head, an admission pushes it there, and
 * the victim is found by walking from the tail past pinned keys. Because the pager touches every
 * hit of a call before admitting its misses, the keys routed in the current call sit at the head
 * and the walk stops at the first step in all but degenerate cases. Every operation is O(1).
 *
 * <p>Its miss counts at every capacity follow the reuse-distance miss curve of
 * {@code dev.strata.cache.curve.MissCurve} exactly (for one group and single-expert steps), which
 * is what the budget controller reasons with.
 *
 * <p>Threads: confined to the owning pager's thread.
 */
public final class LruExpertPolicy implements ExpertPolicy {

    private static final int NONE = -1;

    private int[] prev;  // [keys] towards the head (more recent), NONE at the head
    private int[] next;  // [keys] towards the tail (less recent), NONE at the tail
    private int[] head;  // [groups] most recently used key, NONE if empty
    private int[] tail;  // [groups] least recently used key, NONE if empty
    private int[] sizes; // [groups] keys in each list

    @Override
    public String name() {
        return "lru";
    }

    @Override
    public void attach(int groups, int keys) {
        if (prev != null) {
            throw new IllegalStateException("policy 'lru' is already attached to a pager");
        }
        prev = new int[keys];
        next = new int[keys];
        head = new int[groups];
        tail = new int[groups];
        sizes = new int[groups];
        Arrays.fill(head, NONE);
        Arrays.fill(tail, NONE);
    }

    @Override
    public void onHit(int group, int key, long tick) {
        if (head[group] == key) {
            return;
        }
        unlink(group, key);
        pushHead(group, key);
    }

    @Override
    public void onAdmit(int group, int key, long tick) {
        pushHead(group, key);
        sizes[group]++;
    }

    @Override
    public void onEvict(int group, int key) {
        unlink(group, key);
        sizes[group]--;
    }

    @Override
    public int victim(int group, Pins pins) {
        for (int k = tail[group]; k != NONE; k = prev[k]) {
            if (!pins.pinned(k)) {
                return k;
            }
        }
        return NONE;
    }

    @Override
    public int size(int group) {
        return sizes[group];
    }

    private void unlink(int group, int key) {
        int p = prev[key];
        int n = next[key];
        if (p == NONE) {
            head[group] = n;
        } else {
            next[p] = n;
        }
        if (n == NONE) {
            tail[group] = p;
        } else {
            prev[n] = p;
        }
    }

    private void pushHead(int group, int key) {
        int h = head[group];
        prev[key] = NONE;
        next[key] = h;
        if (h == NONE) {
            tail[group] = key;
        } else {
            prev[h] = key;
        }
        head[group] = key;
    }
}
