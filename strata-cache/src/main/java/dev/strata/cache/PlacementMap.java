package dev.strata.cache;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.function.Consumer;

/**
 * The unified block table: object key to the object's record (and through it its resident
 * copies), as an open-addressing hash table owned by the store.
 *
 * <p>Design: linear probing over a power-of-two number of slots, all in one {@code long[]}: slot
 * {@code i} is the three longs {@code [3i, 3i+2]} = key high, key low, and a tag holding the
 * upper 32 bits of {@link ObjectKey#hash64()} (the home slot is taken from them) and the index + 1
 * of the record in {@link Table#objects} (tag 0: empty slot). So a probe, a miss, an insert and
 * the back-shift of a removal read and write only the slot array, one cache line per step; the
 * record array is touched on a hit, and on insert and removal at the record's index, which a
 * free-index stack hands out last-freed first (a put that evicts reuses the index it just freed).
 * Deletion shifts the following entries of the cluster back (no tombstones), so a probe for a
 * missing key stops at the first empty slot. The slot array doubles when it would pass
 * {@value #MAX_LOAD_PERCENT}% full (load between a quarter and a half); the record array doubles
 * when its indices run out.
 *
 * <p>Threads and the lock-free readers: every mutation ({@link #insert}, {@link #remove},
 * {@link #clear}) and {@link #get}/{@link #findForInsert} run under the store's lock. The readers
 * {@link #contains}, {@link #tierMask} and {@link #size} never take the lock: they read the table
 * under a sequence counter ({@link #version}). A writer makes the counter odd before it changes
 * slots or records and even again after (release store); a reader reads the counter (acquire),
 * probes with plain reads that tolerate races (indices are masked or bounds-checked, a probe is
 * bounded by the table length), and retries if the counter was odd or has changed. So a reader
 * never blocks on the lock and sees the table as of a completed insert or remove; it spins only
 * while a single table mutation is in progress (a few stores, or the copy of a resize), never for
 * the rest of a store operation such as an eviction or a copy between tiers.
 *
 * <p>Invariants (under the lock, checked by {@link #checkInvariants}): {@link #size} non-empty
 * slots; every key sits in the probe run from its home slot with no empty slot between; no key
 * appears twice; a slot's tag names the record of that key, whose {@link StoredObject#placementIndex}
 * is that index; free record indices hold null; a key maps to a {@link StoredObject.State#LIVE}
 * object, and only while it has at least one copy (the store keeps that one).
 */
public final class PlacementMap {

    /** The slot array grows (doubles) when an insert would make it fuller than this. */
    static final int MAX_LOAD_PERCENT = 50;
    static final int MIN_SLOTS = 1024;
    private static final int SLOT_LONGS = 3; // key high, key low, tag
    private static final long INDEX_MASK = 0xFFFF_FFFFL; // tag bits holding record index + 1

    /** One generation of the table; replaced whole on resize so a reader sees matching arrays. */
    private static final class Table {
        final long[] slots; // [3 * slotCount]: key high, key low, tag = (hash >>> 32) << 32 | (index + 1)
        final StoredObject[] objects; // [record capacity]: the record at each index, null if free
        final int mask; // slotCount - 1
        final int shift; // 32 - log2(slotCount): home slot = (tag >>> 32) >>> shift
        final int maxSize; // entries allowed before the slot array doubles

        Table(long[] slots, StoredObject[] objects) {
            this.slots = slots;
            this.objects = objects;
            int slotCount = slots.length / SLOT_LONGS;
            mask = slotCount - 1;
            shift = 32 - Integer.numberOfTrailingZeros(slotCount);
            maxSize = (int) ((long) slotCount * MAX_LOAD_PERCENT / 100);
        }

        int home(long hash) {
            return (int) (hash >>> 32 >>> shift);
        }

        int homeOfTag(long tag) {
            return (int) (tag >>> 32 >>> shift);
        }
    }

    private static final VarHandle VERSION;

    static {
        try {
            VERSION = MethodHandles.lookup().findVarHandle(PlacementMap.class, "version", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private Table table = emptyTable(); // written under the lock inside a version window
    private int size; // entries; written under the lock inside a version window
    @SuppressWarnings("unused") // accessed through VERSION
    private long version; // even: table stable; odd: a mutation is in progress
    private int[] freeIndices = new int[0]; // stack of free record indices (top at freeCount - 1)
    private int freeCount;
    private int insertHint = -1; // empty slot found by findForInsert for hintHigh/hintLow; -1 after any change
    private long hintHigh;
    private long hintLow;

    private static Table emptyTable() {
        return new Table(new long[SLOT_LONGS * MIN_SLOTS], new StoredObject[0]);
    }

    private static long tagOf(long hash, int index) {
        return (hash >>> 32) << 32 | (index + 1L);
    }

    // ------------------------------------------------------------------ lock-free readers

    /** True if an object with this key is stored. Lock-free (see the class notes). */
    public boolean contains(ObjectKey key) {
        return findStable(key) != null;
    }

    /**
     * Bit {@code i} set when chain tier {@code i} holds a copy of {@code key}; 0 if not stored.
     * Lock-free (see the class notes).
     */
    public int tierMask(ObjectKey key) {
        StoredObject o = findStable(key);
        return o == null ? 0 : o.tierMaskAcquire();
    }

    /** Objects stored. Lock-free (see the class notes). */
    public int size() {
        while (true) {
            long v = (long) VERSION.getAcquire(this);
            if ((v & 1) == 0) {
                int n = size;
                VarHandle.loadLoadFence();
                if ((long) VERSION.getOpaque(this) == v) {
                    return n;
                }
            }
            Thread.onSpinWait();
        }
    }

    /** The object under {@code key} as of a completed mutation, read without the lock. */
    private StoredObject findStable(ObjectKey key) {
        long high = key.high();
        long low = key.low();
        long hash = key.hash64();
        while (true) {
            long v = (long) VERSION.getAcquire(this);
            if ((v & 1) == 0) {
                Table t = table;
                StoredObject found = null;
                boolean complete = false;
                long[] slots = t.slots;
                StoredObject[] objects = t.objects;
                int mask = t.mask;
                int i = t.home(hash);
                for (int n = 0; n <= mask; n++) { // bounded: a racy view may have no empty slot
                    long tag = slots[SLOT_LONGS * i + 2];
                    if (tag == 0) {
                        complete = true;
                        break;
                    }
                    if (slots[SLOT_LONGS * i] == high && slots[SLOT_LONGS * i + 1] == low) {
                        long index = (tag & INDEX_MASK) - 1;
                        if (index >= 0 && index < objects.length) { // else a torn read: retry
                            found = objects[(int) index];
                            complete = true;
                        }
                        break;
                    }
                    i = (i + 1) & mask;
                }
                VarHandle.loadLoadFence();
                if (complete && (long) VERSION.getOpaque(this) == v) {
                    return found;
                }
            }
            Thread.onSpinWait();
        }
    }

    // ------------------------------------------------------------------ under the store's lock

    /** The object under {@code key}, or null. Under the lock. */
    StoredObject get(ObjectKey key) {
        Table t = table;
        long high = key.high();
        long low = key.low();
        long[] slots = t.slots;
        int mask = t.mask;
        for (int i = t.home(key.hash64()); ; i = (i + 1) & mask) {
            int s = SLOT_LONGS * i;
            long tag = slots[s + 2];
            if (tag == 0) {
                return null;
            }
            if (slots[s] == high && slots[s + 1] == low) {
                return t.objects[(int) (tag & INDEX_MASK) - 1];
            }
        }
    }

    /**
     * The object under {@code key} (hash {@code hash}), or null; on a miss, remembers the empty
     * slot where the key would go, so that an {@link #insert} of that key before any other change
     * of the table takes it without probing again. Under the lock.
     */
    StoredObject findForInsert(ObjectKey key, long hash) {
        Table t = table;
        long high = key.high();
        long low = key.low();
        long[] slots = t.slots;
        int mask = t.mask;
        for (int i = t.home(hash); ; i = (i + 1) & mask) {
            int s = SLOT_LONGS * i;
            long tag = slots[s + 2];
            if (tag == 0) {
                insertHint = i;
                hintHigh = high;
                hintLow = low;
                return null;
            }
            if (slots[s] == high && slots[s + 1] == low) {
                return t.objects[(int) (tag & INDEX_MASK) - 1];
            }
        }
    }

    /**
     * Adds {@code o}, whose key must not be in the table. Under the lock.
     *
     * @throws IllegalStateException if the key is already present
     */
    void insert(StoredObject o) {
        long high = o.key.high();
        long low = o.key.low();
        if (size + 1 > table.maxSize) {
            resizeSlots(table.mask + 1 << 1);
        }
        if (freeCount == 0) {
            growObjects();
        }
        Table t = table;
        long[] slots = t.slots;
        int slot = insertHint;
        if (slot < 0 || hintHigh != high || hintLow != low) {
            int mask = t.mask;
            slot = t.home(o.keyHash);
            while (slots[SLOT_LONGS * slot + 2] != 0) {
                if (slots[SLOT_LONGS * slot] == high && slots[SLOT_LONGS * slot + 1] == low) {
                    throw new IllegalStateException("object " + o.key + " is already in the placement map");
                }
                slot = (slot + 1) & mask;
            }
        }
        insertHint = -1;
        int index = freeIndices[--freeCount];
        o.placementIndex = index;
        long v = beginWrite();
        t.objects[index] = o;
        int s = SLOT_LONGS * slot;
        slots[s] = high;
        slots[s + 1] = low;
        slots[s + 2] = tagOf(o.keyHash, index);
        size++;
        endWrite(v);
    }

    /** Removes {@code o} (found by its record index). False if it is not in the table. Under the lock. */
    boolean remove(StoredObject o) {
        int index = o.placementIndex;
        Table t = table;
        if (index < 0 || index >= t.objects.length || t.objects[index] != o) {
            return false;
        }
        long[] slots = t.slots;
        int mask = t.mask;
        long want = index + 1L;
        int i = t.home(o.keyHash);
        while ((slots[SLOT_LONGS * i + 2] & INDEX_MASK) != want) {
            i = (i + 1) & mask; // o is in the table, so its slot is in this run
        }
        insertHint = -1;
        long v = beginWrite();
        t.objects[index] = null;
        deleteAt(t, i);
        size--;
        endWrite(v);
        o.placementIndex = -1;
        freeIndices[freeCount++] = index;
        return true;
    }

    /**
     * Empties slot {@code hole} and shifts back each following entry of the cluster that may move
     * there (its home is not cyclically within (hole, its slot]).
     */
    private static void deleteAt(Table t, int hole) {
        long[] slots = t.slots;
        int mask = t.mask;
        int j = hole;
        while (true) {
            j = (j + 1) & mask;
            long tag = slots[SLOT_LONGS * j + 2];
            if (tag == 0) {
                break;
            }
            int home = t.homeOfTag(tag);
            // distance from home to j versus from hole to j: the entry may move back to hole
            // only if its home is at or before hole in probe order
            if (((j - home) & mask) >= ((j - hole) & mask)) {
                slots[SLOT_LONGS * hole] = slots[SLOT_LONGS * j];
                slots[SLOT_LONGS * hole + 1] = slots[SLOT_LONGS * j + 1];
                slots[SLOT_LONGS * hole + 2] = tag;
                hole = j;
            }
        }
        slots[SLOT_LONGS * hole] = 0;
        slots[SLOT_LONGS * hole + 1] = 0;
        slots[SLOT_LONGS * hole + 2] = 0;
    }

    private void resizeSlots(int slotCount) {
        Table old = table;
        long[] slots = new long[SLOT_LONGS * slotCount];
        Table t = new Table(slots, old.objects);
        long[] oldSlots = old.slots;
        for (int s = 0; s < oldSlots.length; s += SLOT_LONGS) {
            long tag = oldSlots[s + 2];
            if (tag == 0) {
                continue;
            }
            int j = t.homeOfTag(tag);
            while (slots[SLOT_LONGS * j + 2] != 0) {
                j = (j + 1) & t.mask;
            }
            slots[SLOT_LONGS * j] = oldSlots[s];
            slots[SLOT_LONGS * j + 1] = oldSlots[s + 1];
            slots[SLOT_LONGS * j + 2] = tag;
        }
        insertHint = -1;
        long v = beginWrite();
        table = t;
        endWrite(v);
    }

    /** Doubles the record array; the new indices go on the free stack, lowest on top. */
    private void growObjects() {
        Table old = table;
        int n = old.objects.length;
        int grown = Math.max(MIN_SLOTS / 2, n * 2);
        StoredObject[] objects = java.util.Arrays.copyOf(old.objects, grown);
        if (freeIndices.length < grown) {
            freeIndices = java.util.Arrays.copyOf(freeIndices, grown);
        }
        for (int i = grown - 1; i >= n; i--) {
            freeIndices[freeCount++] = i;
        }
        Table t = new Table(old.slots, objects);
        long v = beginWrite();
        table = t;
        endWrite(v);
    }

    /** Empties the table (back to its initial size). Under the lock. */
    void clear() {
        insertHint = -1;
        Table old = table;
        for (StoredObject o : old.objects) {
            if (o != null) {
                o.placementIndex = -1;
            }
        }
        Table t = emptyTable();
        freeIndices = new int[0];
        freeCount = 0;
        long v = beginWrite();
        table = t;
        size = 0;
        endWrite(v);
    }

    /** Calls {@code action} for every stored object, in record order. Under the lock; do not mutate meanwhile. */
    void forEach(Consumer<StoredObject> action) {
        for (StoredObject o : table.objects) {
            if (o != null) {
                action.accept(o);
            }
        }
    }

    /** Slots of the current table (for tests). */
    int capacity() {
        return table.mask + 1;
    }

    /**
     * Checks every invariant of the table; throws {@link IllegalStateException} naming the first
     * broken one. Under the lock; for tests.
     */
    void checkInvariants() {
        Table t = table;
        long[] slots = t.slots;
        int n = 0;
        boolean[] named = new boolean[t.objects.length];
        for (int i = 0; i <= t.mask; i++) {
            int s = SLOT_LONGS * i;
            long tag = slots[s + 2];
            if (tag == 0) {
                if (slots[s] != 0 || slots[s + 1] != 0) {
                    throw new IllegalStateException("empty slot " + i + " holds key bits");
                }
                continue;
            }
            n++;
            long index = (tag & INDEX_MASK) - 1;
            if (index < 0 || index >= t.objects.length || t.objects[(int) index] == null) {
                throw new IllegalStateException("slot " + i + " names record " + index + ", which holds nothing");
            }
            if (named[(int) index]) {
                throw new IllegalStateException("record " + index + " is named by two slots");
            }
            named[(int) index] = true;
            StoredObject o = t.objects[(int) index];
            if (o.placementIndex != index) {
                throw new IllegalStateException("object " + o.key + " at record " + index + " thinks it is at " + o.placementIndex);
            }
            if (slots[s] != o.key.high() || slots[s + 1] != o.key.low()) {
                throw new IllegalStateException("slot " + i + " holds the key bits of another object than " + o.key);
            }
            if (o.keyHash != o.key.hash64() || tag != tagOf(o.keyHash, (int) index)) {
                throw new IllegalStateException("object " + o.key + " has a wrong hash in its record or slot");
            }
            for (int j = t.homeOfTag(tag); j != i; j = (j + 1) & t.mask) {
                int sj = SLOT_LONGS * j;
                if (slots[sj + 2] == 0) {
                    throw new IllegalStateException("object " + o.key + " in slot " + i + " is cut off from its home slot by empty slot " + j);
                }
                if (slots[sj] == slots[s] && slots[sj + 1] == slots[s + 1]) {
                    throw new IllegalStateException("key " + o.key + " appears in slots " + j + " and " + i);
                }
            }
        }
        if (n != size) {
            throw new IllegalStateException("table holds " + n + " objects but counts " + size);
        }
        if (size > t.maxSize) {
            throw new IllegalStateException("table of " + (t.mask + 1) + " slots holds " + size + " objects, over its maximum " + t.maxSize);
        }
        int records = 0;
        for (StoredObject o : t.objects) {
            if (o != null) {
                records++;
            }
        }
        if (records != size || freeCount != t.objects.length - size) {
            throw new IllegalStateException(records + " records and " + freeCount + " free indices for " + size
                    + " objects in a record array of " + t.objects.length);
        }
        for (int k = 0; k < freeCount; k++) {
            if (t.objects[freeIndices[k]] != null) {
                throw new IllegalStateException("free record index " + freeIndices[k] + " holds an object");
            }
        }
        if (((long) VERSION.getOpaque(this) & 1) != 0) {
            throw new IllegalStateException("version is odd outside a mutation");
        }
    }

    private long beginWrite() {
        long v = (long) VERSION.getOpaque(this) + 1; // odd
        VERSION.setOpaque(this, v);
        VarHandle.storeStoreFence(); // the odd version is visible before any slot changes
        return v;
    }

    private void endWrite(long odd) {
        VERSION.setRelease(this, odd + 1); // slot changes are visible before the even version
    }
}
