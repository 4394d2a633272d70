package dev.strata.cache.kv;

import dev.strata.cache.ObjectKey;

/**
 * The manager's map from a block's chained key to the DEVICE block holding it: open addressing
 * with linear probing over parallel arrays (the key's two halves side by side, the block beside),
 * sized once for the number of slots so it never resizes, with backward-shift deletion (no
 * tombstones). A lookup touches one run of the key array, where a {@code HashMap} would chase a
 * table entry, a node and a key object. Each block records its position, so removal needs no
 * probe; the shift after it hashes the keys in the array rather than reading each following
 * block, which would be a cache miss per entry looked at.
 *
 * <p>Invariant: every key is at the first free-or-matching position of its probe run, so a lookup
 * stops at the first empty entry. Capacity is at least twice the most entries it can hold, so
 * probe runs stay short.
 *
 * <p>Threads: the manager's scheduler thread.
 */
final class BlockKeyTable {
    private long[] keys; // [2 * capacity] high, low of each entry's key
    private DeviceBlock[] blocks; // [capacity] null when the entry is empty
    private int mask; // capacity - 1
    private int maxEntries; // entries it may hold (raised by ensureCapacity when the slots grow)
    private int size; // entries held

    /** A table for at most {@code maxEntries} keys. */
    BlockKeyTable(int maxEntries) {
        int capacity = Integer.highestOneBit(Math.max(4, maxEntries) * 2 - 1) << 1;
        this.keys = new long[2 * capacity];
        this.blocks = new DeviceBlock[capacity];
        this.mask = capacity - 1;
        this.maxEntries = maxEntries;
    }

    /**
     * Raises the limit to {@code entries} (when the manager's slots grow), rehashing into larger
     * arrays if the capacity would no longer be twice the limit. Never lowers it.
     */
    void ensureCapacity(int entries) {
        if (entries <= maxEntries) {
            return;
        }
        int capacity = Integer.highestOneBit(Math.max(4, entries) * 2 - 1) << 1;
        if (capacity > blocks.length) {
            long[] oldKeys = keys;
            DeviceBlock[] oldBlocks = blocks;
            keys = new long[2 * capacity];
            blocks = new DeviceBlock[capacity];
            mask = capacity - 1;
            size = 0;
            maxEntries = entries;
            for (int i = 0; i < oldBlocks.length; i++) {
                if (oldBlocks[i] != null) {
                    putIfAbsent(new dev.strata.cache.ObjectKey(oldKeys[2 * i], oldKeys[2 * i + 1]), oldBlocks[i]);
                }
            }
        }
        maxEntries = entries;
    }

    int size() {
        return size;
    }

    /** The block of {@code key}, or null. */
    DeviceBlock get(ObjectKey key) {
        long hi = key.high();
        long lo = key.low();
        int i = (int) ObjectKey.hash64(hi, lo) & mask;
        while (true) {
            DeviceBlock b = blocks[i];
            if (b == null) {
                return null;
            }
            if (keys[2 * i] == hi && keys[2 * i + 1] == lo) {
                return b;
            }
            i = (i + 1) & mask;
        }
    }

    boolean containsKey(ObjectKey key) {
        return get(key) != null;
    }

    /**
     * Maps {@code key} to {@code block} unless it is mapped already.
     *
     * @return the block already mapped (left in place), or null when {@code block} was added
     * @throws IllegalStateException if the table is full (more blocks than slots: a manager bug)
     */
    DeviceBlock putIfAbsent(ObjectKey key, DeviceBlock block) {
        long hi = key.high();
        long lo = key.low();
        long hash = ObjectKey.hash64(hi, lo);
        int i = (int) hash & mask;
        while (true) {
            DeviceBlock b = blocks[i];
            if (b == null) {
                if (size == maxEntries) {
                    throw new IllegalStateException("block key table holds " + size + " keys, its limit");
                }
                keys[2 * i] = hi;
                keys[2 * i + 1] = lo;
                blocks[i] = block;
                block.keyHash = hash;
                block.tableIndex = i;
                size++;
                return null;
            }
            if (keys[2 * i] == hi && keys[2 * i + 1] == lo) {
                return b;
            }
            i = (i + 1) & mask;
        }
    }

    /** Removes {@code key} if it maps to {@code block}; true if it did. */
    boolean remove(ObjectKey key, DeviceBlock block) {
        int i = block.tableIndex;
        if (i < 0 || i > mask || blocks[i] != block || keys[2 * i] != key.high() || keys[2 * i + 1] != key.low()) {
            return false;
        }
        deleteAt(i);
        block.tableIndex = -1;
        return true;
    }

    /** Empties entry {@code hole}, shifting later entries of its run back so no lookup stops early. */
    private void deleteAt(int hole) {
        size--;
        int i = hole;
        while (true) {
            i = (i + 1) & mask;
            DeviceBlock b = blocks[i];
            if (b == null) {
                break;
            }
            // the home from the key beside it: the block itself is read only if it moves
            int home = (int) ObjectKey.hash64(keys[2 * i], keys[2 * i + 1]) & mask;
            // move the entry at i into the hole if its home is not in (hole, i] (cyclically)
            boolean stays = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
            if (!stays) {
                keys[2 * hole] = keys[2 * i];
                keys[2 * hole + 1] = keys[2 * i + 1];
                blocks[hole] = b;
                b.tableIndex = hole;
                hole = i;
            }
        }
        blocks[hole] = null;
        keys[2 * hole] = 0;
        keys[2 * hole + 1] = 0;
    }
}
