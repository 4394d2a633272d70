package dev.strata.cache.expert;

import java.util.Arrays;

/**
 * The resident keys of each group as dense arrays, for policies that scan a group's residents to
 * pick a victim: O(1) insert and removal (swap with the last), no allocation after construction.
 *
 * <p>Not thread-safe; owned by one policy.
 */
final class GroupMembers {
    private final int[][] members; // [groups][keys per group] resident keys, dense in [0, sizes[g])
    private final int[] position;  // [keys] index of each key in its group's array, -1 when absent
    private final int[] sizes;     // [groups] resident keys

    /** Groups of {@code keys / groups} keys each (or all keys in one group). */
    GroupMembers(int groups, int keys) {
        this.members = new int[groups][(keys + groups - 1) / groups];
        this.position = new int[keys];
        this.sizes = new int[groups];
        Arrays.fill(position, -1);
    }

    void add(int group, int key) {
        if (position[key] >= 0) {
            throw new IllegalStateException("key " + key + " is already resident in its group");
        }
        int at = sizes[group]++;
        members[group][at] = key;
        position[key] = at;
    }

    void remove(int group, int key) {
        int at = position[key];
        if (at < 0) {
            throw new IllegalStateException("key " + key + " is not resident in group " + group);
        }
        int last = --sizes[group];
        int moved = members[group][last];
        members[group][at] = moved;
        position[moved] = at;
        position[key] = -1;
    }

    int size(int group) {
        return sizes[group];
    }

    /** The group's array; entries {@code [0, size(group))} are its residents. */
    int[] of(int group) {
        return members[group];
    }
}
