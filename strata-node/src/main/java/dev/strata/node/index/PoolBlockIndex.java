package dev.strata.node.index;

import static dev.strata.node.index.IndexRegion.EMPTY;
import static dev.strata.node.index.IndexRegion.EVICTING;
import static dev.strata.node.index.IndexRegion.E_CHECK;
import static dev.strata.node.index.IndexRegion.E_CHECKSUM;
import static dev.strata.node.index.IndexRegion.E_HANDLE;
import static dev.strata.node.index.IndexRegion.E_KEY_HIGH;
import static dev.strata.node.index.IndexRegion.E_KEY_LOW;
import static dev.strata.node.index.IndexRegion.E_LAST_ACCESS;
import static dev.strata.node.index.IndexRegion.E_LENGTH;
import static dev.strata.node.index.IndexRegion.E_POOL_GENERATION;
import static dev.strata.node.index.IndexRegion.E_PUBLISHER;
import static dev.strata.node.index.IndexRegion.E_STATE;
import static dev.strata.node.index.IndexRegion.PUBLISHED;
import static dev.strata.node.index.IndexRegion.QUARANTINED;
import static dev.strata.node.index.IndexRegion.TOMBSTONE;
import static dev.strata.node.index.IndexRegion.WRITING;
import static dev.strata.node.index.IndexRegion.cas;
import static dev.strata.node.index.IndexRegion.epoch;
import static dev.strata.node.index.IndexRegion.get;
import static dev.strata.node.index.IndexRegion.getAcquire;
import static dev.strata.node.index.IndexRegion.getVolatile;
import static dev.strata.node.index.IndexRegion.set;
import static dev.strata.node.index.IndexRegion.setOpaque;
import static dev.strata.node.index.IndexRegion.setRelease;
import static dev.strata.node.index.IndexRegion.state;
import static dev.strata.node.index.IndexRegion.word;

import dev.strata.cache.ObjectKey;
import dev.strata.memory.Allocator;
import dev.strata.memory.Sizes;
import dev.strata.memory.pool.PoolTier;
import dev.strata.memory.shm.ProcessLiveness;
import dev.strata.memory.shm.ShmFormatException;
import dev.strata.memory.shm.ShmHeader;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;

/**
 * The global KV block index kept in the pool's root region ({@link IndexRegion}), so that every
 * process attached to the pool shares it and it outlives any one of them: a process that attaches
 * later sees every block published before.
 *
 * <p>Design note.
 * <ul>
 *   <li><b>Table.</b> An open-addressing hash table of {@code entryCount} (a power of two) entries,
 *       linear probing from {@code hash64(key) & (entryCount - 1)}. Entries are never emptied again:
 *       an evicted or aborted entry becomes a TOMBSTONE that a later reserve may reuse, so a lookup
 *       stops at the first EMPTY entry or after {@code maxProbe} entries (the longest probe any
 *       insert made, kept in the header), whichever comes first.</li>
 *   <li><b>Reserve</b> (writers) takes a robust lock per group of {@link IndexRegion#LOCK_GROUP}
 *       home entries, for the only step that needs mutual exclusion: checking that the key is not
 *       there and claiming a free entry for it, a few microseconds. The lock word records the
 *       owner's process slot and incarnation; a waiter that finds the owner dead (the pool's
 *       process table: pid plus start time) takes the lock over. No lock is held while the
 *       block's room is allocated (which may evict) or while its bytes are copied. Lock-free CAS
 *       alone would need a second validation round against concurrent inserts of the same key,
 *       which can also only wait for the other inserter; a lock is simpler to reason about and
 *       costs one CAS on an uncontended line.</li>
 *   <li><b>Publish</b>: the writer copies the block into its pool allocation, computing its
 *       Checksum64 in the same pass; the pool allocation is published with that checksum
 *       ({@link PoolTier#publish(long, long, long)}), then the entry's length, checksum and entry
 *       check are stored and its state CASed WRITING -&gt; PUBLISHED (the CAS is the release; readers
 *       acquire-load the state and re-check it after reading the fields, seqlock style).</li>
 *   <li><b>Pins</b> are pin records in the reader's own pin range, not counts in the entry: a
 *       count cannot be repaired after its holder dies, records can (the records of a dead process,
 *       or expired ones, are simply cleared). Reader: CAS a record to {@code seq|entry}, then
 *       re-read the entry's state word (volatile). Evictor: CAS the entry PUBLISHED -&gt; EVICTING,
 *       then scan the pin records (volatile). These are the two halves of a Dekker handshake: in
 *       the total order of volatile accesses at least one side sees the other, so either the
 *       reader sees EVICTING and gives up its pin, or the evictor sees the pin and puts the
 *       entry back to PUBLISHED ({@link PinTable}). A pinned block is therefore never freed. A pin stops pinning
 *       when it expires or its process is dead; the copy of a reader whose pin expired is still
 *       safe, since the pool's own seqlock read detects a freed or reused allocation.</li>
 *   <li><b>Eviction</b> takes the unpinned published entries with the oldest last access first
 *       (one scan collects the oldest {@link #VICTIM_BATCH}), frees the block's pool allocation
 *       only if it is still the one the entry recorded (handle + allocation generation), then
 *       makes the entry a TOMBSTONE.</li>
 *   <li><b>Deaths.</b> {@link #reap} clears expired pins and a dead process's pins, turns a
 *       dead writer's reservation into a TOMBSTONE and frees its allocation (even if the writer
 *       had already published the allocation but not the entry), and finishes or undoes an
 *       eviction cut short. Every step is a CAS from the state it observed, so two reapers, or a
 *       reaper and the pool's own reclaim, never free anything twice.</li>
 *   <li><b>Corruption.</b> A reader that finds an entry whose check does not match its fields, or
 *       whose handle or length is impossible, or an impossible state, quarantines the entry (a
 *       terminal state no operation reads or reuses) and reports it; no other entry is touched.
 *       The quarantined entry's pool allocation is left alone, since its handle is not trusted.</li>
 * </ul>
 *
 * <p>Identity: the index header records the block-hash version and the model fingerprint; a
 * process opening the index with others is refused ({@link IndexIdentityException}). An index
 * formatted with {@link #NO_FINGERPRINT} (a node given no model) takes the identity of the first
 * process that attaches through the node ({@link #learnIdentity}), and keeps it in the header.
 *
 * <p>Threads: any thread of the process; several processes at once. {@link #close} must not race
 * with other calls. The hot paths ({@link #acquire}, {@link #release}, {@link #matchPrefix},
 * {@link #reserve} and {@link #publish} without eviction) allocate nothing.
 */
public final class PoolBlockIndex implements BlockIndex {
    /** The model fingerprint of an index whose model is not known yet: learned from the first attach ({@link #learnIdentity}). */
    public static final ObjectKey NO_FINGERPRINT = new ObjectKey(0, 0);

    private static final System.Logger LOG = System.getLogger(PoolBlockIndex.class.getName());
    /** Oldest entries collected by one eviction scan. */
    static final int VICTIM_BATCH = 64;
    private static final long FORMAT_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(10);

    private final PoolTier tier;
    private final MemorySegment region; // the pool's root region
    private final IndexRegion.Geometry geometry;
    private final long mask; // entryCount - 1
    private final long entries; // entryTableOffset
    private final long locks; // lockTableOffset
    private final PinTable pins;
    private final PinTable.Liveness liveness;
    private final int processSlots;
    private final long chunkSize; // bytes
    private final long capacity; // bytes of the pool's data area
    private final int mySlot;
    private final long myIncarnation;
    private final long myOwnerBits;
    private final long myLockWord;
    private final long pinMillis;
    private final LongSupplier clock;
    private final dev.strata.cache.EvictionSink evictionSink; // told of blocks this process evicts, with their verified bytes
    private final AtomicInteger pinSequence;
    private volatile int hashVersion; // set once more by learnIdentity when the index had no model yet
    private volatile ObjectKey modelFingerprint;
    private final ThreadLocal<Victims> victims = ThreadLocal.withInitial(Victims::new);
    private volatile boolean open = true;

    private PoolBlockIndex(PoolTier tier, MemorySegment region, IndexRegion.Geometry geometry, BlockIndexConfig config,
                           int hashVersion, ObjectKey modelFingerprint) {
        this.tier = tier;
        this.region = region;
        this.geometry = geometry;
        this.mask = geometry.entryCount() - 1;
        this.entries = geometry.entryTableOffset();
        this.locks = geometry.lockTableOffset();
        this.pins = new PinTable(region, geometry.pinTableOffset(), geometry.processSlots(), geometry.pinsPerProcess());
        this.liveness = tier::isProcessAlive;
        this.processSlots = geometry.processSlots();
        this.chunkSize = tier.layout().chunkSize();
        this.capacity = tier.layout().dataCapacity();
        this.mySlot = tier.processSlot();
        this.myIncarnation = tier.processIncarnation();
        this.myOwnerBits = IndexRegion.ownerBitsOf(mySlot, myIncarnation);
        this.myLockWord = ((long) (mySlot + 1) << 32) | (myIncarnation & 0xFFFF_FFFFL);
        this.pinMillis = config.pinDuration().toMillis();
        this.clock = config.clockMillis();
        this.evictionSink = config.evictionSink();
        // a random start keeps this process's pin tags apart from a dead predecessor's in the same range
        this.pinSequence = new AtomicInteger(new SplittableRandom(System.nanoTime() ^ ProcessHandle.current().pid())
                .nextInt(1, Integer.MAX_VALUE / 2));
        this.hashVersion = hashVersion;
        this.modelFingerprint = modelFingerprint;
        pins.takeOver(mySlot, myIncarnation);
    }

    /**
     * The root region size (bytes) an index of {@code entryCount} entries (a power of two) needs
     * in a pool of {@code processSlots} process slots, each holding up to {@code pinsPerProcess}
     * pins at once.
     */
    public static long regionSizeFor(long entryCount, int processSlots, int pinsPerProcess) {
        if (Long.bitCount(entryCount) != 1 || entryCount < IndexRegion.LOCK_GROUP) {
            throw new IllegalArgumentException("entry count " + entryCount + " must be a power of two >= "
                    + IndexRegion.LOCK_GROUP);
        }
        return Sizes.alignUp(IndexRegion.Geometry.of(entryCount, processSlots, pinsPerProcess).bytesUsed(), 4096);
    }

    /**
     * A root region size for a pool of {@code capacity} bytes in chunks of {@code chunkSize}: room
     * for twice as many entries as the pool has chunks (every block holds at least one chunk, so
     * the table is never more than half full of live entries) and the default pins per process.
     */
    public static long suggestedRegionSize(long capacity, long chunkSize, int processSlots) {
        long chunks = Math.max(1, capacity / chunkSize);
        long entryCount = Math.max(IndexRegion.LOCK_GROUP, Long.highestOneBit(Math.max(1, 2 * chunks - 1)) << 1);
        return regionSizeFor(entryCount, processSlots, BlockIndexConfig.DEFAULT_PINS_PER_PROCESS);
    }

    /**
     * Opens the block index in {@code tier}'s root region: formats it if this is the first process
     * to open it (with {@code config}'s identity and pins per process), else waits for the
     * format and checks the identity. The index does not own the tier: close the index first.
     *
     * @throws IndexIdentityException   if the index holds another hash version or model fingerprint
     * @throws IllegalArgumentException if the pool has no root region large enough
     * @throws ShmFormatException       if the index header is invalid (names the pool file, field and value)
     * @throws IllegalStateException    if its format never finishes
     */
    public static PoolBlockIndex open(PoolTier tier, BlockIndexConfig config) {
        MemorySegment region = tier.rootRegion();
        int processSlots = tier.layout().processSlots();
        IndexRegion.Geometry minimum = IndexRegion.Geometry.of(IndexRegion.LOCK_GROUP, processSlots, 1);
        if (region.byteSize() < minimum.bytesUsed()) {
            throw new IllegalArgumentException("pool '" + tier.name() + "' at " + tier.paths().getFirst()
                    + " has a root region of " + region.byteSize() + " bytes; the block index needs at least "
                    + minimum.bytesUsed() + " (create the pool with PoolConfig rootRegionSize, e.g. "
                    + suggestedRegionSize(tier.layout().dataCapacity(), tier.layout().chunkSize(), processSlots) + ")");
        }
        awaitOrFormat(tier, region, config, processSlots);
        IndexRegion.Geometry geometry = validate(tier.paths().getFirst(), region, processSlots);
        int storedVersion = (int) get(region, IndexRegion.HASH_VERSION_OFFSET);
        ObjectKey storedModel = new ObjectKey(get(region, IndexRegion.MODEL_HIGH_OFFSET),
                get(region, IndexRegion.MODEL_LOW_OFFSET));
        if (storedVersion != config.hashVersion() || !storedModel.equals(config.modelFingerprint())) {
            throw new IndexIdentityException("block index of pool '" + tier.name() + "' at " + tier.paths().getFirst()
                    + " holds blocks of model fingerprint " + storedModel + " with block-hash version " + storedVersion
                    + ", but this process uses model fingerprint " + config.modelFingerprint()
                    + " with block-hash version " + config.hashVersion()
                    + ": refusing to attach (its block hashes would not name the same blocks)");
        }
        return new PoolBlockIndex(tier, region, geometry, config, storedVersion, storedModel);
    }

    private static void awaitOrFormat(PoolTier tier, MemorySegment region, BlockIndexConfig config, int processSlots) {
        long me = ProcessHandle.current().pid();
        long mine = (me << 8) | 1;
        long deadline = System.nanoTime() + FORMAT_TIMEOUT_NANOS;
        while (ShmHeader.versionAcquire(region) == 0) {
            long fw = getVolatile(region, IndexRegion.FORMAT_WORD_OFFSET);
            long formatter = fw >>> 8;
            boolean takeOver = fw == 0 || (formatter != me && !ProcessLiveness.isAlive(formatter, 0));
            if (takeOver && cas(region, IndexRegion.FORMAT_WORD_OFFSET, fw, mine)) {
                format(tier, region, config, processSlots, me);
                return;
            }
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException("block index of pool '" + tier.name() + "' was not formatted within "
                        + TimeUnit.NANOSECONDS.toSeconds(FORMAT_TIMEOUT_NANOS) + " s (formatting pid " + formatter + ")");
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
        }
    }

    private static void format(PoolTier tier, MemorySegment region, BlockIndexConfig config, int processSlots, long pid) {
        IndexRegion.Geometry g = IndexRegion.Geometry.fitting(region.byteSize(), processSlots, config.pinsPerProcess());
        if (g == null) {
            throw new IllegalArgumentException("pool '" + tier.name() + "': a root region of " + region.byteSize()
                    + " bytes cannot hold a block index with " + config.pinsPerProcess() + " pins for each of "
                    + processSlots + " process slots");
        }
        // a previous formatter may have died half-way: clear everything but the format word (the
        // version is 0 and stays 0 until published below)
        region.asSlice(0, IndexRegion.FORMAT_WORD_OFFSET).fill((byte) 0);
        region.asSlice(IndexRegion.HASH_VERSION_OFFSET, g.bytesUsed() - IndexRegion.HASH_VERSION_OFFSET).fill((byte) 0);
        long now = config.clockMillis().getAsLong();
        ShmHeader.writePrefix(region, IndexRegion.KIND, pid, ProcessLiveness.currentStartMillis(), now);
        set(region, IndexRegion.HASH_VERSION_OFFSET, config.hashVersion());
        set(region, IndexRegion.MODEL_HIGH_OFFSET, config.modelFingerprint().high());
        set(region, IndexRegion.MODEL_LOW_OFFSET, config.modelFingerprint().low());
        set(region, IndexRegion.ENTRY_COUNT_OFFSET, g.entryCount());
        set(region, IndexRegion.PROCESS_SLOTS_OFFSET, g.processSlots());
        set(region, IndexRegion.PINS_PER_PROCESS_OFFSET, g.pinsPerProcess());
        set(region, IndexRegion.ENTRY_TABLE_OFFSET_OFFSET, g.entryTableOffset());
        set(region, IndexRegion.LOCK_TABLE_OFFSET_OFFSET, g.lockTableOffset());
        set(region, IndexRegion.PIN_TABLE_OFFSET_OFFSET, g.pinTableOffset());
        set(region, IndexRegion.BYTES_USED_OFFSET, g.bytesUsed());
        ShmHeader.publish(region, IndexRegion.KIND);
    }

    /**
     * Checks magic, version, kind and geometry of a formatted index header.
     *
     * @param poolFile the pool's first file, named in errors
     * @throws ShmFormatException naming the pool file, the field and the value found
     */
    static IndexRegion.Geometry validate(Path poolFile, MemorySegment region, int processSlots) {
        ShmHeader.Prefix.of(region).check(poolFile, IndexRegion.KIND);
        long entryCount = get(region, IndexRegion.ENTRY_COUNT_OFFSET);
        long slots = get(region, IndexRegion.PROCESS_SLOTS_OFFSET);
        long pins = get(region, IndexRegion.PINS_PER_PROCESS_OFFSET);
        if (Long.bitCount(entryCount) != 1 || entryCount < IndexRegion.LOCK_GROUP || slots != processSlots
                || pins < 1 || pins > BlockIndexConfig.MAX_PINS_PER_PROCESS) {
            throw new ShmFormatException(IndexRegion.KIND.noun(), poolFile, "entryCount, processSlots, pinsPerProcess",
                    entryCount + ", " + slots + ", " + pins, "implausible geometry (the pool has " + processSlots
                    + " process slots; entries a power of two >= " + IndexRegion.LOCK_GROUP + ")");
        }
        IndexRegion.Geometry g = IndexRegion.Geometry.of(entryCount, processSlots, (int) pins);
        if (g.entryTableOffset() != get(region, IndexRegion.ENTRY_TABLE_OFFSET_OFFSET)
                || g.lockTableOffset() != get(region, IndexRegion.LOCK_TABLE_OFFSET_OFFSET)
                || g.pinTableOffset() != get(region, IndexRegion.PIN_TABLE_OFFSET_OFFSET)
                || g.bytesUsed() != get(region, IndexRegion.BYTES_USED_OFFSET) || g.bytesUsed() > region.byteSize()) {
            throw new ShmFormatException(IndexRegion.KIND.noun(), poolFile, "table offsets and bytesUsed",
                    get(region, IndexRegion.ENTRY_TABLE_OFFSET_OFFSET) + ", " + get(region, IndexRegion.LOCK_TABLE_OFFSET_OFFSET)
                            + ", " + get(region, IndexRegion.PIN_TABLE_OFFSET_OFFSET) + ", "
                            + get(region, IndexRegion.BYTES_USED_OFFSET), "they disagree with the geometry " + g
                            + " or exceed the root region of " + region.byteSize() + " bytes");
        }
        return g;
    }

    // ---------------------------------------------------------------- writers

    @Override
    public long reserve(long keyHigh, long keyLow, long length) {
        checkOpen();
        if (length <= 0) {
            throw new IllegalArgumentException("block length " + length + " must be positive (key "
                    + new ObjectKey(keyHigh, keyLow) + ")");
        }
        long home = ObjectKey.hash64(keyHigh, keyLow) & mask;
        long claimed;
        long lock = locks + (home / IndexRegion.LOCK_GROUP) * 8;
        lock(lock);
        try {
            claimed = claimEntry(keyHigh, keyLow, home);
        } finally {
            unlock(lock);
        }
        if (claimed < 0) {
            return claimed; // EXISTS, or FULL: no free entry in the whole table
        }
        long a = entry(claimed);
        long writing = getAcquire(region, a + E_STATE);
        long handle = allocateEvicting(length);
        if (handle == Allocator.FULL) {
            cas(region, a + E_STATE, writing, word(TOMBSTONE, 0, epoch(writing) + 1));
            return FULL;
        }
        set(region, a + E_POOL_GENERATION, tier.allocationGeneration(handle));
        setRelease(region, a + E_HANDLE, handle);
        return handle;
    }

    /** Under the key's reserve lock: EXISTS, FULL, or the entry claimed WRITING for this process. */
    private long claimEntry(long keyHigh, long keyLow, long home) {
        long maxProbe = getVolatile(region, IndexRegion.MAX_PROBE_OFFSET);
        long n = mask + 1;
        long candidate = -1;
        for (long d = 0; d < n; d++) {
            long e = (home + d) & mask;
            long a = entry(e);
            long w = getAcquire(region, a + E_STATE);
            int s = state(w);
            if (s == EMPTY) {
                if (candidate < 0) {
                    candidate = d;
                }
                break;
            }
            if (s == TOMBSTONE) {
                if (candidate < 0) {
                    candidate = d;
                }
            } else if (s == WRITING || s == PUBLISHED || s == EVICTING) {
                if (get(region, a + E_KEY_HIGH) == keyHigh && get(region, a + E_KEY_LOW) == keyLow) {
                    return EXISTS;
                }
            } else if (s != QUARANTINED) {
                quarantine(e, w, "impossible state " + s);
            }
            if (candidate >= 0 && d + 1 >= maxProbe) {
                break; // no entry of this key lies further than maxProbe from its home
            }
        }
        for (long d = Math.max(candidate, 0); candidate >= 0 && d < n; d++) {
            long e = (home + d) & mask;
            long a = entry(e);
            long w = getAcquire(region, a + E_STATE);
            int s = state(w);
            if (s != EMPTY && s != TOMBSTONE) {
                continue;
            }
            if (cas(region, a + E_STATE, w, word(WRITING, myOwnerBits, epoch(w) + 1))) {
                set(region, a + E_KEY_HIGH, keyHigh);
                set(region, a + E_KEY_LOW, keyLow);
                set(region, a + E_HANDLE, -1L);
                set(region, a + E_POOL_GENERATION, -1L);
                set(region, a + E_PUBLISHER, myOwnerBits);
                set(region, a + E_CHECK, 0L);
                raiseMaxProbe(d + 1);
                return e;
            }
        }
        return FULL;
    }

    private void raiseMaxProbe(long probe) {
        while (true) {
            long m = getVolatile(region, IndexRegion.MAX_PROBE_OFFSET);
            if (m >= probe || cas(region, IndexRegion.MAX_PROBE_OFFSET, m, probe)) {
                return;
            }
        }
    }

    /** Allocates pool room, evicting unpinned blocks oldest first, reaping the dead once if all are pinned. */
    private long allocateEvicting(long length) {
        boolean reaped = false;
        while (true) {
            long handle = tier.allocate(length);
            if (handle != Allocator.FULL) {
                return handle;
            }
            Victims v = collectOldest();
            boolean progress = false;
            for (int k = 0; k < v.count; k++) {
                if (tryEvict(v.entries[k], v.words[k]) > 0) {
                    progress = true;
                    handle = tier.allocate(length);
                    if (handle != Allocator.FULL) {
                        return handle;
                    }
                }
            }
            if (!progress) {
                if (reaped) {
                    return Allocator.FULL;
                }
                reap();
                reaped = true;
            }
        }
    }

    @Override
    public long publish(long keyHigh, long keyLow, long length, long checksum) {
        checkOpen();
        long e = findMine(keyHigh, keyLow);
        if (e < 0) {
            return NOT_RESERVED;
        }
        long a = entry(e);
        long w = getAcquire(region, a + E_STATE);
        long handle = getAcquire(region, a + E_HANDLE);
        long room = tier.allocationSize(handle);
        if (length <= 0 || length > room) {
            throw new IllegalArgumentException("block " + new ObjectKey(keyHigh, keyLow) + ": length " + length
                    + " must be positive and at most the reserved " + room + " bytes");
        }
        tier.publish(handle, length, checksum);
        long poolGeneration = get(region, a + E_POOL_GENERATION);
        set(region, a + E_LENGTH, length);
        set(region, a + E_CHECKSUM, checksum);
        set(region, a + E_CHECK, IndexRegion.entryCheck(keyHigh, keyLow, handle, poolGeneration, length, checksum, epoch(w)));
        setOpaque(region, a + E_LAST_ACCESS, clock.getAsLong());
        if (!cas(region, a + E_STATE, w, word(PUBLISHED, myOwnerBits, epoch(w)))) {
            throw new IllegalStateException("block index of pool '" + tier.name() + "': entry " + e + " of block "
                    + new ObjectKey(keyHigh, keyLow) + " changed while reserved by this process (now "
                    + IndexRegion.describe(getAcquire(region, a + E_STATE)) + ")");
        }
        return OK;
    }

    @Override
    public long abort(long keyHigh, long keyLow) {
        checkOpen();
        long e = findMine(keyHigh, keyLow);
        if (e < 0) {
            return NOT_RESERVED;
        }
        abortEntry(e, getAcquire(region, entry(e) + E_STATE));
        return OK;
    }

    /** Frees a WRITING entry's allocation (if still its own) and makes it a TOMBSTONE. */
    private boolean abortEntry(long e, long w) {
        long a = entry(e);
        long handle = getAcquire(region, a + E_HANDLE);
        if (handle >= 0) {
            tier.freeIfGeneration(handle, get(region, a + E_POOL_GENERATION));
        }
        return cas(region, a + E_STATE, w, word(TOMBSTONE, 0, epoch(w) + 1));
    }

    /** The entry this process reserved for the key (WRITING, owned by this process), or -1. */
    private long findMine(long keyHigh, long keyLow) {
        long home = ObjectKey.hash64(keyHigh, keyLow) & mask;
        long maxProbe = Math.min(getVolatile(region, IndexRegion.MAX_PROBE_OFFSET), mask + 1);
        for (long d = 0; d < maxProbe; d++) {
            long e = (home + d) & mask;
            long a = entry(e);
            long w = getAcquire(region, a + E_STATE);
            int s = state(w);
            if (s == EMPTY) {
                return -1;
            }
            if (s == WRITING && IndexRegion.ownerBits(w) == myOwnerBits
                    && get(region, a + E_KEY_HIGH) == keyHigh && get(region, a + E_KEY_LOW) == keyLow) {
                return e;
            }
        }
        return -1;
    }

    // ---------------------------------------------------------------- readers

    @Override
    public long acquire(long keyHigh, long keyLow, long[] location) {
        checkOpen();
        long home = ObjectKey.hash64(keyHigh, keyLow) & mask;
        for (int attempt = 0; attempt < 16; attempt++) {
            long e = findPublished(keyHigh, keyLow, home);
            if (e < 0) {
                return NOT_FOUND;
            }
            long a = entry(e);
            long w = getAcquire(region, a + E_STATE);
            if (state(w) != PUBLISHED) {
                continue;
            }
            long handle = get(region, a + E_HANDLE);
            long poolGeneration = get(region, a + E_POOL_GENERATION);
            long length = get(region, a + E_LENGTH);
            long checksum = get(region, a + E_CHECKSUM);
            long check = get(region, a + E_CHECK);
            boolean sameKey = get(region, a + E_KEY_HIGH) == keyHigh && get(region, a + E_KEY_LOW) == keyLow;
            VarHandle.loadLoadFence();
            if (getAcquire(region, a + E_STATE) != w || !sameKey) {
                continue; // changed while read: look again
            }
            if (check != IndexRegion.entryCheck(keyHigh, keyLow, handle, poolGeneration, length, checksum, epoch(w))
                    || handle < 0 || (handle & (chunkSize - 1)) != 0 || length <= 0 || handle + length > capacity
                    || handle + length < handle) {
                String problem = describeCorruption(check, keyHigh, keyLow, handle, poolGeneration, length, checksum, w);
                if (quarantine(e, w, problem)) {
                    throw new CorruptIndexEntryException(tier.name(), e, problem);
                }
                continue;
            }
            int seq = nextSequence();
            long record = pins.pin(a + E_STATE, w, e, mySlot, seq);
            if (record == PinTable.NO_RECORD) {
                return NO_PIN;
            }
            if (record == PinTable.CHANGED) {
                continue; // an evictor got there first
            }
            long now = clock.getAsLong();
            pins.arm(mySlot, record, now + pinMillis);
            setOpaque(region, a + E_LAST_ACCESS, now);
            location[HANDLE] = handle;
            location[LENGTH] = length;
            location[CHECKSUM] = checksum;
            location[EPOCH] = epoch(w);
            return (record << 32) | seq;
        }
        return NOT_FOUND;
    }

    private static String describeCorruption(long check, long keyHigh, long keyLow, long handle, long poolGeneration,
                                             long length, long checksum, long w) {
        return "block " + new ObjectKey(keyHigh, keyLow) + ", " + IndexRegion.describe(w) + ", handle " + handle
                + ", pool generation " + poolGeneration + ", length " + length + ", checksum 0x" + Long.toHexString(checksum)
                + ": entry check 0x" + Long.toHexString(check) + " expected 0x" + Long.toHexString(
                IndexRegion.entryCheck(keyHigh, keyLow, handle, poolGeneration, length, checksum, epoch(w)));
    }

    /** The entry holding the key PUBLISHED, or -1 (a hint: the caller re-checks the state). */
    private long findPublished(long keyHigh, long keyLow, long home) {
        long maxProbe = Math.min(getVolatile(region, IndexRegion.MAX_PROBE_OFFSET), mask + 1);
        for (long d = 0; d < maxProbe; d++) {
            long e = (home + d) & mask;
            long a = entry(e);
            long w = getAcquire(region, a + E_STATE);
            int s = state(w);
            if (s == EMPTY) {
                return -1;
            }
            if (s == PUBLISHED) {
                if (get(region, a + E_KEY_HIGH) == keyHigh && get(region, a + E_KEY_LOW) == keyLow) {
                    return e;
                }
            } else if (s > QUARANTINED) {
                quarantine(e, w, "impossible state " + s);
            }
        }
        return -1;
    }

    /** A pin sequence number in [1, 2^31). */
    private int nextSequence() {
        while (true) {
            int seq = pinSequence.getAndIncrement() & Integer.MAX_VALUE;
            if (seq != 0) {
                return seq;
            }
        }
    }

    @Override
    public long release(long pin) {
        checkOpen();
        long record = pin >>> 32;
        if (pin <= 0 || record >= pins.pinsPerProcess()) {
            throw new IllegalArgumentException("pin " + pin + " is not a pin of this process (block index of pool '"
                    + tier.name() + "', " + pins.pinsPerProcess() + " pin records per process)");
        }
        long tag = pins.tag(mySlot, record);
        if (tag == 0 || (tag >>> 32) != (pin & 0xFFFF_FFFFL)) {
            return EXPIRED; // reaped after it expired; the record may serve another pin now
        }
        long deadline = pins.deadline(mySlot, record);
        if (!pins.free(mySlot, record, tag)) {
            return EXPIRED;
        }
        return deadline != 0 && deadline <= clock.getAsLong() ? EXPIRED : OK;
    }

    @Override
    public int matchPrefix(long[] keys, int from, int count) {
        checkOpen();
        for (int i = 0; i < count; i++) {
            if (!isPublished(keys[2 * (from + i)], keys[2 * (from + i) + 1])) {
                return i;
            }
        }
        return count;
    }

    /** True if a block is published under the key now. */
    public boolean isPublished(long keyHigh, long keyLow) {
        checkOpen();
        long home = ObjectKey.hash64(keyHigh, keyLow) & mask;
        for (int attempt = 0; attempt < 16; attempt++) {
            long e = findPublished(keyHigh, keyLow, home);
            if (e < 0) {
                return false;
            }
            long a = entry(e);
            long w = getAcquire(region, a + E_STATE);
            boolean same = get(region, a + E_KEY_HIGH) == keyHigh && get(region, a + E_KEY_LOW) == keyLow;
            VarHandle.loadLoadFence();
            if (state(w) == PUBLISHED && same && getAcquire(region, a + E_STATE) == w) {
                return true;
            }
        }
        return false;
    }

    // ---------------------------------------------------------------- eviction

    @Override
    public long evict(long bytes) {
        checkOpen();
        long freed = 0;
        while (freed < bytes) {
            Victims v = collectOldest();
            boolean progress = false;
            for (int k = 0; k < v.count && freed < bytes; k++) {
                long f = tryEvict(v.entries[k], v.words[k]);
                if (f > 0) {
                    freed += f;
                    progress = true;
                }
            }
            if (!progress) {
                break;
            }
        }
        return freed;
    }

    /** The oldest (by last access) published entries, oldest first, at most {@link #VICTIM_BATCH}. */
    private Victims collectOldest() {
        Victims v = victims.get();
        v.count = 0;
        for (long e = 0; e <= mask; e++) {
            long a = entry(e);
            long w = getAcquire(region, a + E_STATE);
            if (state(w) == PUBLISHED) {
                v.offer(e, w, IndexRegion.getOpaque(region, a + E_LAST_ACCESS));
            }
        }
        return v;
    }

    /**
     * Evicts entry {@code e} if it still holds {@code w} and no live pin holds it.
     *
     * @return bytes of pool room freed (0 if not evicted)
     */
    private long tryEvict(long e, long w) {
        long evicting = word(EVICTING, myOwnerBits, epoch(w));
        if (!pins.beginEviction(entry(e) + E_STATE, w, evicting, e, clock.getAsLong(), mySlot, liveness)) {
            return 0;
        }
        return finishEviction(e, evicting);
    }

    private long finishEviction(long e, long evicting) {
        long a = entry(e);
        long handle = get(region, a + E_HANDLE);
        long poolGeneration = get(region, a + E_POOL_GENERATION);
        long size = 0;
        if (handle >= 0 && tier.allocationGeneration(handle) == poolGeneration) {
            writeBehind(a, handle); // the entry is EVICTING: no reader pins it, its bytes are still in place
            long room = tier.allocationSize(handle);
            if (tier.freeIfGeneration(handle, poolGeneration)) {
                size = room;
            }
        }
        cas(region, a + E_STATE, evicting, word(TOMBSTONE, 0, epoch(evicting) + 1));
        return size;
    }

    /**
     * Hands the block of entry {@code a} (being evicted) to the eviction sink: a verified copy of
     * its bytes, so that a write-behind tier below the pool (the cluster) receives only blocks
     * that passed their checksum. A copy that faults or fails its checksum is not handed on; the
     * eviction goes on either way.
     */
    private void writeBehind(long a, long handle) {
        if (evictionSink == dev.strata.cache.EvictionSink.NONE) {
            return;
        }
        long length = get(region, a + E_LENGTH);
        if (length <= 0) {
            return;
        }
        ObjectKey key = new ObjectKey(get(region, a + E_KEY_HIGH), get(region, a + E_KEY_LOW));
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
            java.lang.foreign.MemorySegment copy = arena.allocate(length, 64);
            if (tier.scatterRead(handle, java.util.List.of(copy))) {
                evictionSink.evicting(key, dev.strata.cache.ObjectKind.KV_BLOCK, copy);
            }
        } catch (RuntimeException e) {
            // not written behind: the tier below is a cache, and this eviction must finish
        }
    }

    // ---------------------------------------------------------------- reaping

    @Override
    public long reap() {
        checkOpen();
        tier.reclaimDead();
        long now = clock.getAsLong();
        long cleared = 0;
        for (int s = 0; s < processSlots; s++) {
            long hw = pins.highWater(s);
            if (hw == 0) {
                continue;
            }
            long incarnation = pins.incarnation(s);
            boolean dead = s != mySlot && !tier.isProcessAlive(s, incarnation);
            for (long i = 0; i < hw; i++) {
                long tag = pins.tag(s, i);
                if (tag == 0) {
                    continue;
                }
                long deadline = pins.deadline(s, i);
                boolean expired = deadline != 0 && deadline <= now;
                if (!dead && !expired) {
                    continue;
                }
                if (dead && pins.incarnation(s) != incarnation) {
                    break; // a new process took the range over and clears it itself
                }
                if (pins.clear(s, i, tag, deadline, dead)) {
                    cleared++;
                }
            }
        }
        byte[] known = new byte[processSlots]; // 0 unknown, 1 alive, 2 dead; per (slot, incarnation) seen first
        long[] incarnations = new long[processSlots];
        for (long e = 0; e <= mask; e++) {
            long a = entry(e);
            long w = getAcquire(region, a + E_STATE);
            int s = state(w);
            if (s != WRITING && s != EVICTING) {
                continue;
            }
            if (ownerAlive(w, known, incarnations)) {
                continue;
            }
            if (s == WRITING) {
                if (abortEntry(e, w)) {
                    cleared++;
                }
            } else if (pins.pinned(e, now, mySlot, liveness)) {
                long published = word(PUBLISHED, get(region, a + E_PUBLISHER), epoch(w));
                if (cas(region, a + E_STATE, w, published)) {
                    cleared++;
                }
            } else {
                finishEviction(e, w);
                cleared++;
            }
        }
        ShmHeader.beat(region, now);
        return cleared;
    }

    private boolean ownerAlive(long w, byte[] known, long[] incarnations) {
        int slot = IndexRegion.ownerSlot(w);
        if (slot < 0 || slot >= processSlots) {
            return false;
        }
        if (slot == mySlot) {
            return IndexRegion.ownerBits(w) == myOwnerBits;
        }
        if (known[slot] == 0) {
            long incarnation = tier.processIncarnation(slot);
            incarnations[slot] = incarnation;
            known[slot] = (byte) (incarnation >= 0 && tier.isProcessAlive(slot, incarnation) ? 1 : 2);
        }
        return known[slot] == 1 && (incarnations[slot] & 0xFFFF) == IndexRegion.ownerIncarnation16(w);
    }

    // ---------------------------------------------------------------- corruption, stats, identity

    /** Moves entry {@code e} from {@code w} to QUARANTINED; true if this call did. */
    private boolean quarantine(long e, long w, String problem) {
        if (!cas(region, entry(e) + E_STATE, w, word(QUARANTINED, IndexRegion.ownerBits(w), epoch(w)))) {
            return false;
        }
        LOG.log(System.Logger.Level.WARNING, "block index of pool ''{0}'': entry {1} quarantined: {2}",
                tier.name(), e, problem);
        return true;
    }

    @Override
    public IndexStats stats() {
        checkOpen();
        return IndexScan.stats(region, geometry, clock.getAsLong(),
                (slot, incarnation) -> slot == mySlot ? incarnation == myIncarnation : tier.isProcessAlive(slot, incarnation));
    }

    @Override
    public int hashVersion() {
        return hashVersion;
    }

    /**
     * Takes {@code model} (and {@code version}, if {@code learnVersion}) as this index's identity
     * when it has none yet ({@link #NO_FINGERPRINT}), writing it into the header so that it
     * outlives this process and every later attach is checked against it. Called by the node
     * daemon (its RPC polling thread) for the first engine process that attaches; a process that
     * opened the index embedded before keeps the identity it read.
     *
     * @return true if the identity was taken now; false if the index already had a model, or
     *         {@code version} differs from the index's and may not be learned
     * @throws IllegalArgumentException if {@code model} is {@link #NO_FINGERPRINT} or {@code version} is not positive
     */
    public synchronized boolean learnIdentity(int version, ObjectKey model, boolean learnVersion) {
        checkOpen();
        if (model.equals(NO_FINGERPRINT) || version <= 0) {
            throw new IllegalArgumentException("cannot learn model fingerprint " + model + " with block-hash version " + version
                    + ": the fingerprint must not be all zero and the version must be positive");
        }
        if (!modelFingerprint.equals(NO_FINGERPRINT) || (!learnVersion && version != hashVersion)) {
            return false; // a model already, or a process whose block hashes could never match: nothing learned
        }
        if (learnVersion) {
            setRelease(region, IndexRegion.HASH_VERSION_OFFSET, version);
            hashVersion = version;
        }
        setRelease(region, IndexRegion.MODEL_LOW_OFFSET, model.low());
        setRelease(region, IndexRegion.MODEL_HIGH_OFFSET, model.high());
        modelFingerprint = model;
        return true;
    }

    @Override
    public ObjectKey modelFingerprint() {
        return modelFingerprint;
    }

    /** The pool this index lives in. */
    public PoolTier tier() {
        return tier;
    }

    /** Entries the table can hold. */
    public long entryCount() {
        return mask + 1;
    }

    /** Releases this process's pins and aborts its reservations; the tier stays open. */
    @Override
    public void close() {
        if (!open) {
            return;
        }
        synchronized (this) {
            if (!open) {
                return;
            }
            for (long e = 0; e <= mask; e++) {
                long w = getAcquire(region, entry(e) + E_STATE);
                if (state(w) == WRITING && IndexRegion.ownerBits(w) == myOwnerBits) {
                    abortEntry(e, w);
                }
            }
            for (long i = 0; i < pins.pinsPerProcess(); i++) {
                long tag = pins.tag(mySlot, i);
                if (tag != 0) {
                    pins.free(mySlot, i, tag);
                }
            }
            open = false;
        }
    }

    // ---------------------------------------------------------------- locks and addressing

    private void lock(long at) {
        int spins = 0;
        while (true) {
            long held = getVolatile(region, at);
            if (held == 0) {
                if (cas(region, at, 0L, myLockWord)) {
                    return;
                }
                continue;
            }
            if (++spins % 1024 == 0 && lockOwnerDead(held) && cas(region, at, held, myLockWord)) {
                LOG.log(System.Logger.Level.WARNING, "block index of pool ''{0}'': took over a reserve lock held by "
                        + "dead process slot {1}", tier.name(), (held >>> 32) - 1);
                return;
            }
            if (spins < 256) {
                Thread.onSpinWait();
            } else {
                Thread.yield();
            }
        }
    }

    private boolean lockOwnerDead(long held) {
        int slot = (int) (held >>> 32) - 1;
        if (slot < 0 || slot >= processSlots) {
            return true;
        }
        long incarnation = tier.processIncarnation(slot);
        return incarnation < 0 || (incarnation & 0xFFFF_FFFFL) != (held & 0xFFFF_FFFFL)
                || !tier.isProcessAlive(slot, incarnation);
    }

    private void unlock(long at) {
        if (!cas(region, at, myLockWord, 0L)) {
            throw new IllegalStateException("block index of pool '" + tier.name() + "': reserve lock at " + at
                    + " is not held by this process (word 0x" + Long.toHexString(getVolatile(region, at)) + ")");
        }
    }

    private long entry(long e) {
        return entries + e * IndexRegion.ENTRY_SIZE;
    }

    private void checkOpen() {
        if (!open) {
            throw new IllegalStateException("block index of pool '" + tier.name() + "' is closed");
        }
    }

    /** The oldest published entries of one scan, sorted by last access; one per thread, reused. */
    private static final class Victims {
        final long[] entries = new long[VICTIM_BATCH];
        final long[] words = new long[VICTIM_BATCH];
        final long[] times = new long[VICTIM_BATCH];
        int count;

        void offer(long e, long w, long time) {
            if (count == VICTIM_BATCH && time >= times[count - 1]) {
                return;
            }
            int at = count == VICTIM_BATCH ? count - 1 : count++;
            while (at > 0 && times[at - 1] > time) {
                entries[at] = entries[at - 1];
                words[at] = words[at - 1];
                times[at] = times[at - 1];
                at--;
            }
            entries[at] = e;
            words[at] = w;
            times[at] = time;
        }

        @Override
        public String toString() {
            return Arrays.toString(Arrays.copyOf(entries, count));
        }
    }
}
