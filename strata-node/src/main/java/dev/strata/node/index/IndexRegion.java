package dev.strata.node.index;

import dev.strata.memory.shm.ShmHeader;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * The layout of the block index inside the pool's root region (see
 * {@code PoolConfig.rootRegionSize}): one header, the entry table (an open-addressing hash table
 * keyed by the 128-bit block hash), one lock word per group of {@link #LOCK_GROUP} home entries,
 * and one pin range per process slot of the pool.
 *
 * <pre>
 * Root region (offsets from its start; every offset 64-byte aligned):
 * +--------------------------+ 0
 * | index header             | HEADER_SIZE = 4 KiB
 * +--------------------------+ entryTableOffset
 * | entries                  | entryCount * ENTRY_SIZE (entryCount a power of two)
 * +--------------------------+ lockTableOffset
 * | reserve locks            | (entryCount / LOCK_GROUP) * 8
 * +--------------------------+ pinTableOffset
 * | pin ranges               | processSlots * (RANGE_HEADER_SIZE + pinsPerProcess * PIN_SIZE)
 * +--------------------------+ bytesUsed (&lt;= root region size)
 *
 * Header (little-endian longs):
 * offset size field
 *      0   64 prefix            {@link ShmHeader}: magic "STRATAIX" (0x5849415441525453), version
 *                               (major &lt;&lt; 32 | minor, 0 until formatted, WRITTEN LAST with
 *                               release), kind 4, owner = the formatter (the first process to open
 *                               the index: pid, start instant), heartbeat = the last reap, by any
 *                               process (opaque), createdAt = when it was formatted
 *     64    8 formatWord        0 untouched; pid &lt;&lt; 8 | 1 while that process formats
 *     72    8 hashVersion       block-hash version (an int) every attached process must use
 *     80    8 modelHigh         model fingerprint (an ObjectKey), upper half
 *     88    8 modelLow          model fingerprint, lower half
 *     96    8 entryCount
 *    104    8 processSlots      pin ranges (the pool's process slots)
 *    112    8 pinsPerProcess
 *    120    8 entryTableOffset
 *    128    8 lockTableOffset
 *    136    8 pinTableOffset
 *    144    8 bytesUsed
 *    152    8 maxProbe          longest probe distance + 1 of any insert so far; grows (CAS) at run time
 *    160 3936 reserved (zero)
 *
 * Entry e at entryTableOffset + e * ENTRY_SIZE (80 bytes):
 *      0    8 stateWord  bits 0-2 state (EMPTY 0, WRITING 1, PUBLISHED 2, EVICTING 3,
 *                        TOMBSTONE 4, QUARANTINED 5; 6 and 7 are impossible: corruption)
 *                        bits 3-15 owner process slot + 1 (WRITING, PUBLISHED: the writer;
 *                        EVICTING: the evictor), bits 16-31 the owner's incarnation (low 16 bits),
 *                        bits 32-63 epoch: grows whenever the entry is claimed, aborted or evicted
 *      8    8 keyHigh    block hash, upper half      (written before WRITING becomes visible
 *     16    8 keyLow     block hash, lower half       to the next reserver, under the lock)
 *     24    8 handle     pool handle of the block, -1 until allocated
 *     32    8 poolGeneration  generation of that pool allocation (PoolTier.allocationGeneration)
 *     40    8 length     bytes of the block              (set before PUBLISHED)
 *     48    8 checksum   Checksum64 of those bytes       (set before PUBLISHED)
 *     56    8 lastAccess epoch ms of the last publish or acquire (racy, opaque stores)
 *     64    8 publisher  the PUBLISHED state word's owner bits (3-31), to undo an eviction
 *     72    8 entryCheck mix of key, handle, poolGeneration, length, checksum and epoch (set before
 *                        PUBLISHED): a reader that finds it wrong quarantines the entry
 *
 * Reserve lock l at lockTableOffset + l * 8: 0 free, else (slot + 1) &lt;&lt; 32 | incarnation (low 32)
 *
 * Pin range of process slot s at pinTableOffset + s * rangeSize:
 *      0    8 incarnation  incarnation of the process that uses the range (set after clearing it)
 *      8    8 highWater    records [0, highWater) may be in use (grows by CAS; reset when cleared)
 *     16   48 reserved
 *     64      records, PIN_SIZE (16) bytes each:
 *               0  8 tag       0 free, else sequence &lt;&lt; 32 | (entry + 1)
 *               8  8 deadline  epoch ms after which the pin no longer holds (0: just claimed)
 * </pre>
 *
 * <p>The index lives in the pool file, not in a file of its own, but its header starts with the
 * same {@link ShmHeader} prefix as every shared file, so that one check refuses a foreign or
 * older index. Major 2 (from 1) added the prefix.
 *
 * <p>Stateless helpers over a segment; any thread.
 */
final class IndexRegion {
    static final long MAGIC = 0x5849415441525453L; // "STRATAIX" read as a little-endian long
    static final int MAJOR = 2; // 2: the ShmHeader prefix
    static final int MINOR = 0;
    /** The block index's kind: its magic, layout id and version. */
    static final ShmHeader.Kind KIND = new ShmHeader.Kind("block index in pool file", MAGIC, 4, MAJOR, MINOR);
    static final long HEADER_SIZE = 4096;

    static final long FORMAT_WORD_OFFSET = ShmHeader.PREFIX_SIZE;
    static final long HASH_VERSION_OFFSET = 72;
    static final long MODEL_HIGH_OFFSET = 80;
    static final long MODEL_LOW_OFFSET = 88;
    static final long ENTRY_COUNT_OFFSET = 96;
    static final long PROCESS_SLOTS_OFFSET = 104;
    static final long PINS_PER_PROCESS_OFFSET = 112;
    static final long ENTRY_TABLE_OFFSET_OFFSET = 120;
    static final long LOCK_TABLE_OFFSET_OFFSET = 128;
    static final long PIN_TABLE_OFFSET_OFFSET = 136;
    static final long BYTES_USED_OFFSET = 144;
    static final long MAX_PROBE_OFFSET = 152;

    static final long ENTRY_SIZE = 80;
    static final long E_STATE = 0;
    static final long E_KEY_HIGH = 8;
    static final long E_KEY_LOW = 16;
    static final long E_HANDLE = 24;
    static final long E_POOL_GENERATION = 32;
    static final long E_LENGTH = 40;
    static final long E_CHECKSUM = 48;
    static final long E_LAST_ACCESS = 56;
    static final long E_PUBLISHER = 64;
    static final long E_CHECK = 72;

    static final int EMPTY = 0;
    static final int WRITING = 1;
    static final int PUBLISHED = 2;
    static final int EVICTING = 3;
    static final int TOMBSTONE = 4;
    static final int QUARANTINED = 5;

    static final int LOCK_GROUP = 8;
    static final long RANGE_HEADER_SIZE = 64;
    static final long R_INCARNATION = 0;
    static final long R_HIGH_WATER = 8;
    static final long PIN_SIZE = 16;
    static final long L_TAG = 0;
    static final long L_DEADLINE = 8;

    static final long OWNER_MASK = 0xFFFF_FFF8L; // bits 3-31 of a state word: owner slot + 1, incarnation
    static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    private IndexRegion() {
    }

    /** Where the tables lie for a given geometry. */
    record Geometry(long entryCount, int processSlots, int pinsPerProcess, long entryTableOffset,
                    long lockTableOffset, long pinTableOffset, long bytesUsed) {

        static Geometry of(long entryCount, int processSlots, int pinsPerProcess) {
            long entries = HEADER_SIZE;
            long locks = align64(entries + entryCount * ENTRY_SIZE);
            long pins = align64(locks + (entryCount / LOCK_GROUP) * 8);
            long end = pins + processSlots * IndexRegion.rangeSize(pinsPerProcess);
            return new Geometry(entryCount, processSlots, pinsPerProcess, entries, locks, pins, end);
        }

        /** The largest geometry (entries a power of two, at least {@link #LOCK_GROUP}) fitting {@code bytes}, or null. */
        static Geometry fitting(long bytes, int processSlots, int pinsPerProcess) {
            Geometry best = null;
            for (long n = LOCK_GROUP; n <= (1L << 31); n <<= 1) {
                Geometry g = of(n, processSlots, pinsPerProcess);
                if (g.bytesUsed() > bytes) {
                    break;
                }
                best = g;
            }
            return best;
        }

        long rangeSize() {
            return IndexRegion.rangeSize(pinsPerProcess);
        }
    }

    static long rangeSize(int pinsPerProcess) {
        return RANGE_HEADER_SIZE + pinsPerProcess * PIN_SIZE;
    }

    static long align64(long v) {
        return (v + 63) & ~63L;
    }

    static long word(int state, long ownerBits, long epoch) {
        return (epoch << 32) | (ownerBits & OWNER_MASK) | state;
    }

    static int state(long w) {
        return (int) (w & 7);
    }

    static long ownerBits(long w) {
        return w & OWNER_MASK;
    }

    static long epoch(long w) {
        return w >>> 32;
    }

    /** Owner bits for process slot {@code slot} with incarnation {@code incarnation}. */
    static long ownerBitsOf(int slot, long incarnation) {
        return ((long) (slot + 1) << 3) | ((incarnation & 0xFFFF) << 16);
    }

    /** The owner's process slot, or -1 for none. */
    static int ownerSlot(long w) {
        return (int) ((w >>> 3) & 0x1FFF) - 1;
    }

    static long ownerIncarnation16(long w) {
        return (w >>> 16) & 0xFFFF;
    }

    static String stateName(int s) {
        return switch (s) {
            case EMPTY -> "EMPTY";
            case WRITING -> "WRITING";
            case PUBLISHED -> "PUBLISHED";
            case EVICTING -> "EVICTING";
            case TOMBSTONE -> "TOMBSTONE";
            case QUARANTINED -> "QUARANTINED";
            default -> "IMPOSSIBLE(" + s + ")";
        };
    }

    static String describe(long w) {
        return stateName(state(w)) + "(epoch " + epoch(w) + ", owner slot " + ownerSlot(w) + ")";
    }

    /** The per-entry check over the fields a reader trusts; never 0 for a published entry. */
    static long entryCheck(long keyHigh, long keyLow, long handle, long poolGeneration, long length, long checksum,
                           long epoch) {
        long h = 0x2545F4914F6CDD1DL;
        h = mix(h ^ keyHigh);
        h = mix(h ^ keyLow);
        h = mix(h ^ handle);
        h = mix(h ^ poolGeneration);
        h = mix(h ^ length);
        h = mix(h ^ checksum);
        h = mix(h ^ epoch);
        return h == 0 ? 1 : h;
    }

    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    static long get(MemorySegment s, long at) {
        return (long) LONG.get(s, at);
    }

    static long getAcquire(MemorySegment s, long at) {
        return (long) LONG.getAcquire(s, at);
    }

    static long getVolatile(MemorySegment s, long at) {
        return (long) LONG.getVolatile(s, at);
    }

    static void set(MemorySegment s, long at, long v) {
        LONG.set(s, at, v);
    }

    static void setRelease(MemorySegment s, long at, long v) {
        LONG.setRelease(s, at, v);
    }

    static void setOpaque(MemorySegment s, long at, long v) {
        LONG.setOpaque(s, at, v);
    }

    static long getOpaque(MemorySegment s, long at) {
        return (long) LONG.getOpaque(s, at);
    }

    static boolean cas(MemorySegment s, long at, long expected, long value) {
        return LONG.compareAndSet(s, at, expected, value);
    }
}
