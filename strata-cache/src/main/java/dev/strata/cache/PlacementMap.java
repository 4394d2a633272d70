package dev.strata.cache;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.function.Consumer;

/**
 * The unified block table: object key to the object's record (and through it its resident
 * copies), as an open-addressing hash table owned by the store.
 *
 * <p>Design: linear probing over a power-of-two number of slots. The two longs of a key lie side
 * by side in {@link Table#keys} (slot {@code i} at {@code [2i, 2i+1]}), so one probe step reads one
 * cache line of keys; the records lie in the parallel {@link Table#values} ({@code null}: empty
 * slot). A key's home slot is taken from the top bits of {@link ObjectKey#hash64()}. Deletion
 * shifts the following entries of the cluster back (no tombstones), so a probe for a missing key
 * stops at the first empty slot. The table doubles when it would pass {@value #MAX_LOAD_PERCENT}%
 * full, so the load stays between a quarter and a half and probes stay short.
 *
 * <p>Threads and the lock-free readers: every mutation ({@link #insert}, {@link #remove},
 * {@link #clear}) and {@link #get}/{@link #findForInsert} run under the store's lock. The readers
 * {@link #contains}, {@link #tierMask} and {@link #size} never take the lock: they read the table
 * under a sequence counter ({@link #version}). A writer makes the counter odd before it changes
 * slots and even again after (release store); a reader reads the counter (acquire), probes with
 * plain reads that tolerate races (indices are masked, a probe is bounded by the table length),
 * and retries if the counter was odd or has changed. So a reader never blocks on the lock and sees
 * the table as of a completed insert or remove; it spins only while a single table mutation is in
 * progress (a few stores, or the copy of a resize), never for the rest of a store operation such
 * as an eviction or a copy between tiers.
 *
 * <p>Invariants (under the lock, checked by {@link #checkInvariants}): {@link #size} non-null
 * slots; every key sits in the probe run from its home slot with no empty slot between; no key
 * appears twice; a key maps to a {@link StoredObject.State#LIVE} object, and only while it has at
 * least one copy (the store keeps that one).
 */
public final class PlacementMap {

    /** The table grows (doubles) when an insert would make it fuller than this. */
    static final int MAX_LOAD_PERCENT = 50;
    static final int MIN_SLOTS = 1024;

    /** One generation of the table; replaced whole on resize so a reader sees matching arrays. */
    private static final class Table {
        final long[] keys; // [2 * slots]: key.high at 2i, key.low at 2i + 1
        final StoredObject[] values; // [slots]: the record in slot i, null if empty
        final int mask; // slots - 1
        final int shift; // 64 - log2(slots): home slot = hash >>> shift
        final int maxSize; // entries allowed before doubling

        Table(int slots) {
            keys = new long[2 * slots];
            values = new StoredObject[slots];
            mask = slots - 1;
            shift = 64 - Integer.numberOfTrailingZeros(slots);
            maxSize = (int) ((long) slots * MAX_LOAD_PERCENT / 100);
        }

        int home(long hash) {
            return (int) (hash >>> shift);
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

    private Table table = new Table(MIN_SLOTS); // written under the lock inside a version window
    private int size; // entries; written under the lock inside a version window
    @SuppressWarnings("unused") // accessed through VERSION
    private long version; // even: table stable; odd: a mutation is in progress
    private int insertHint = -1; // empty slot found by findForInsert for hintHigh/hintLow; -1 after any change
    private long hintHigh;
    private long hintLow;

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
                long[] keys = t.keys;
                StoredObject[] values = t.values;
                int mask = t.mask;
                int i = t.home(hash);
                for (int n = 0; n <= mask; n++) { // bounded: a racy view may have no empty slot
                    StoredObject o = values[i];
                    if (o == null) {
                        complete = true;
                        break;
                    }
                    if (keys[2 * i] == high && keys[2 * i + 1] == low) {
                        found = o;
                        complete = true;
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
        long[] keys = t.keys;
        StoredObject[] values = t.values;
        int mask = t.mask;
        for (int i = t.home(key.hash64()); ; i = (i + 1) & mask) {
            StoredObject o = values[i];
            if (o == null || keys[2 * i] == high && keys[2 * i + 1] == low) {
                return o;
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
        long[] keys = t.keys;
        StoredObject[] values = t.values;
        int mask = t.mask;
        for (int i = t.home(hash); ; i = (i + 1) & mask) {
            StoredObject o = values[i];
            if (o == null) {
                insertHint = i;
                hintHigh = high;
                hintLow = low;
                return null;
            }
            if (keys[2 * i] == high && keys[2 * i + 1] == low) {
                return o;
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
            resize(table.values.length * 2);
        }
        Table t = table;
        long[] keys = t.keys;
        StoredObject[] values = t.values;
        int slot = insertHint;
        if (slot < 0 || hintHigh != high || hintLow != low) {
            int mask = t.mask;
            slot = t.home(o.keyHash);
            while (values[slot] != null) {
                if (keys[2 * slot] == high && keys[2 * slot + 1] == low) {
                    throw new IllegalStateException("object " + o.key + " is already in the placement map");
                }
                slot = (slot + 1) & mask;
            }
        }
        insertHint = -1;
        long v = beginWrite();
        keys[2 * slot] = high;
        keys[2 * slot + 1] = low;
        values[slot] = o;
        size++;
        endWrite(v);
    }

    /** Removes {@code o} (found by identity). False if it is not in the table. Under the lock. */
    boolean remove(StoredObject o) {
        Table t = table;
        StoredObject[] values = t.values;
        int mask = t.mask;
        int i = t.home(o.keyHash);
        while (true) {
            StoredObject at = values[i];
            if (at == null) {
                return false;
            }
            if (at == o) {
                break;
            }
            i = (i + 1) & mask;
        }
        insertHint = -1;
        long v = beginWrite();
        deleteAt(t, i);
        size--;
        endWrite(v);
        return true;
    }

    /**
     * Empties slot {@code hole} and shifts back each following entry of the cluster that may move
     * there (its home is not cyclically within (hole, its slot]).
     */
    private static void deleteAt(Table t, int hole) {
        long[] keys = t.keys;
        StoredObject[] values = t.values;
        int mask = t.mask;
        int j = hole;
        while (true) {
            j = (j + 1) & mask;
            StoredObject o = values[j];
            if (o == null) {
                break;
            }
            int home = t.home(hashOf(keys[2 * j], keys[2 * j + 1]));
            // distance from home to j versus from hole to j: the entry may move back to hole
            // only if its home is at or before hole in probe order
            if (((j - home) & mask) >= ((j - hole) & mask)) {
                keys[2 * hole] = keys[2 * j];
                keys[2 * hole + 1] = keys[2 * j + 1];
                values[hole] = o;
                hole = j;
            }
        }
        values[hole] = null;
        keys[2 * hole] = 0;
        keys[2 * hole + 1] = 0;
    }

    private static long hashOf(long high, long low) {
        return ObjectKey.hash64(high, low);
    }

    private void resize(int slots) {
        Table old = table;
        Table t = new Table(slots);
        long[] oldKeys = old.keys;
        StoredObject[] oldValues = old.values;
        for (int i = 0; i < oldValues.length; i++) {
            StoredObject o = oldValues[i];
            if (o == null) {
                continue;
            }
            int j = t.home(o.keyHash);
            while (t.values[j] != null) {
                j = (j + 1) & t.mask;
            }
            t.keys[2 * j] = oldKeys[2 * i];
            t.keys[2 * j + 1] = oldKeys[2 * i + 1];
            t.values[j] = o;
        }
        insertHint = -1;
        long v = beginWrite();
        table = t;
        endWrite(v);
    }

    /** Empties the table (back to its initial size). Under the lock. */
    void clear() {
        insertHint = -1;
        Table t = new Table(MIN_SLOTS);
        long v = beginWrite();
        table = t;
        size = 0;
        endWrite(v);
    }

    /** Calls {@code action} for every stored object, in slot order. Under the lock; do not mutate meanwhile. */
    void forEach(Consumer<StoredObject> action) {
        for (StoredObject o : table.values) {
            if (o != null) {
                action.accept(o);
            }
        }
    }

    /** Slots of the current table (for tests). */
    int capacity() {
        return table.values.length;
    }

    /**
     * Checks every invariant of the table; throws {@link IllegalStateException} naming the first
     * broken one. Under the lock; for tests.
     */
    void checkInvariants() {
        Table t = table;
        int n = 0;
        for (int i = 0; i < t.values.length; i++) {
            StoredObject o = t.values[i];
            if (o == null) {
                if (t.keys[2 * i] != 0 || t.keys[2 * i + 1] != 0) {
                    throw new IllegalStateException("empty slot " + i + " holds key bits");
                }
                continue;
            }
            n++;
            if (t.keys[2 * i] != o.key.high() || t.keys[2 * i + 1] != o.key.low()) {
                throw new IllegalStateException("slot " + i + " holds the key bits of another object than " + o.key);
            }
            if (o.keyHash != o.key.hash64()) {
                throw new IllegalStateException("object " + o.key + " caches a wrong hash");
            }
            for (int j = t.home(o.keyHash); j != i; j = (j + 1) & t.mask) {
                if (t.values[j] == null) {
                    throw new IllegalStateException("object " + o.key + " in slot " + i + " is cut off from its home slot by empty slot " + j);
                }
                if (t.values[j].key.equals(o.key)) {
                    throw new IllegalStateException("key " + o.key + " appears in slots " + j + " and " + i);
                }
            }
        }
        if (n != size) {
            throw new IllegalStateException("table holds " + n + " objects but counts " + size);
        }
        if (size > t.maxSize) {
            throw new IllegalStateException("table of " + t.values.length + " slots holds " + size + " objects, over its maximum " + t.maxSize);
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
