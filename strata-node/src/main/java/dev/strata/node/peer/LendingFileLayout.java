package dev.strata.node.peer;

import dev.strata.memory.shm.Doorbell;
import dev.strata.memory.shm.ShmFiles;
import dev.strata.memory.shm.ShmFormatException;
import dev.strata.memory.shm.ShmHeader;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;

/**
 * The descriptor of a lending file: the memory one {@code strata peer} agent lends to client
 * processes, with the table through which they borrow it and the agent takes it back. The file
 * lives under {@code /dev/shm} by default (the CPU backend: the agent's spare memory is a shared
 * mapping) and is mapped by the agent and every borrower.
 *
 * <pre>
 * File (little-endian longs; offsets 64-byte aligned):
 * +--------------------------+ 0
 * | header                   | HEADER_SIZE = 4 KiB
 * +--------------------------+ TABLE_OFFSET = 4 KiB
 * | region table             | regionCount * RECORD_SIZE (64 bytes, one cache line each)
 * +--------------------------+ dataOffset = alignUp(TABLE_OFFSET + table, 4 KiB)
 * | region 0 data            | regionSize bytes each
 * | region 1 data            |
 * | ...                      |
 * +--------------------------+ totalSize = dataOffset + regionCount * regionSize
 *
 * Header:
 * offset size field
 *      0   64 prefix             {@link ShmHeader}: magic "STRATPER" (0x5245505441525453), version
 *                                (major &lt;&lt; 32 | minor, 0 while initialising, WRITTEN LAST with
 *                                release), kind 3, owner = the agent (pid, start instant),
 *                                heartbeat = the agent's, refreshed by its every tick (opaque),
 *                                createdAt
 *     64    8 regionCount        regions lent out of the budget
 *     72    8 regionSize         bytes per region, a multiple of 64
 *     80    8 budget             regionCount * regionSize: the bytes the agent may lend
 *     88    8 tableOffset        TABLE_OFFSET
 *     96    8 dataOffset
 *    104    8 totalSize          bytes of the file
 *    128    8 agentState         STARTING 0, LENDING 1, STOPPED 2 (release/acquire); own cache line
 *    136    8 demandBytes        the agent's own demand as of its last tick (for inspection)
 *    144    8 revocations        revocations the agent has requested (agent only)
 *    152    8 acknowledged       revocations borrowers acknowledged in time (CAS by borrowers)
 *    160    8 fences             leases the agent fenced at their deadline (agent only)
 *    168    8 reaped             leases of dead borrowers the agent took back (agent only)
 *    192    4 agentBell          {@link Doorbell} the agent's tick sleeps on between ticks: a borrower rings it
 *                                after acknowledging a revocation (minor 1); own cache line
 *    256    4 lenderBell         {@link Doorbell} the borrowers' event threads sleep on between polls: the agent
 *                                rings it after revoking, fencing or reaping a lease and when it stops (minor 1);
 *                                own cache line
 *    512 3584 revocation stamps  (minor 2) {@value #STAMP_SLOTS} slots of 16 bytes, direct-mapped by lease:
 *                                key = head &lt;&lt; 36 | epoch (0: empty), then the agent's {@code CLOCK_MONOTONIC}
 *                                nanoseconds ({@link System#nanoTime} of any process on the host) at which it
 *                                revoked that lease; written by the agent only, a later lease mapped to the
 *                                same slot replaces the entry (see {@link #stampSlot})
 *
 * Region record r at TABLE_OFFSET + r * RECORD_SIZE:
 *      0    8 stateWord   bits 0-3 state, bits 4-27 pid of the borrower (0 when none),
 *                         bits 28-63 epoch (see below); every transition is one CAS of this word
 *      8    8 accessWord  bits 0-19 in-flight accesses, or CLOSED (all ones) once the gate is shut;
 *                         bits 20-55 the epoch these accesses belong to
 *     16    8 borrowerStartMillis  start instant of the borrower (head only; 0 unknown)
 *     24    8 runLength   regions in the lease (head only)
 *     32    8 head        the lease's head region (MEMBER: the head it belongs to; head: itself)
 *     40    8 leaseBytes  bytes the borrower asked for (head only)
 *     48    8 deadline    REVOKING: epoch ms by which the borrower must acknowledge (head only)
 *     56    8 lentAt      epoch ms of the lending (head only)
 *
 * Region data r at dataOffset + r * regionSize.
 * </pre>
 *
 * <p>States ({@code stateWord} bits 0-3) and who moves them:
 * <pre>
 *   FREE ──borrower CAS──▶ CLAIMING ──▶ LENT (the lease's head) or MEMBER (the rest of a run)
 *   LENT ──agent──▶ REVOKING ──borrower ack──▶ HELD          (drained in time)
 *                            ──agent at deadline──▶ FENCED ──gate shut or borrower dead──▶ HELD
 *   LENT ──borrower giveBack──▶ FREE        HELD ◀──agent──▶ FREE (the agent's own demand)
 *   any borrower state of a dead pid ──agent reaps──▶ FENCED ──▶ HELD (head), FREE (orphans)
 * </pre>
 * A lease is one region or a contiguous run of regions {@code [head, head + runLength)}: the head
 * record carries the lease's state, epoch, in-flight count, deadline and bytes; the other regions
 * of the run are MEMBERs naming the head. Only the head is ever entered, revoked or fenced; members
 * follow it (released after the head's gate is shut).
 *
 * <p>Epochs: every claim advances a region's epoch by one (FREE or HELD at {@code e} becomes
 * LENT at {@code e + 1}), and a fence advances it again, so the pair (region, epoch) names one
 * lending and is never reused (36 bits: 68 billion lendings per region). A lease is
 * {@code (head, epoch of the head when lent)}.
 *
 * <p>The access gate ({@code accessWord}): an access under lease epoch {@code E} increments the
 * count by a CAS that requires the word's epoch to be {@code E} and the count not CLOSED, then
 * re-reads {@code stateWord} and succeeds only if it is still LENT at {@code E} (otherwise it
 * decrements and fails). Whoever releases the lease's memory (the borrower giving back or
 * acknowledging, the agent finishing a fence) first shuts the gate: a CAS from {@code (E, 0)} to
 * {@code (E, CLOSED)}, which succeeds only when no access is under way and after which none can
 * begin. The claimer of the next lending stores {@code (E', 0)}. Only a dead borrower's gate is
 * shut by force. See {@link LendingTable} for the protocol and its JCStress test.
 *
 * <p>Invariants: once {@code version} is non-zero every header field before offset 128 is final.
 * A path is lent by at most one live agent (an OS lock on {@code <path>.lock}); a restarted agent
 * builds a new file ({@link ShmFiles}) and renames it over the path, so borrowers of the dead one
 * keep the old mapping and see their agent dead; each of them re-attaches by mapping the new file
 * (another file identity or owner at the path; {@link ShmPeerLender}). Bad magic, another kind, an unpublished header,
 * another major version, a geometry that disagrees or a truncated file are refused on open with a
 * {@link ShmFormatException} naming the file, the field and the value found. Major 2 (from 1)
 * starts the header with the {@link ShmHeader} prefix. Minor 1 (from 0) adds the two doorbells in
 * header space that minor 0 left zero and unused, so files of either minor are read by code of
 * either: a side that finds minor 0 ({@link #hasDoorbells}) neither rings nor sleeps on a bell and
 * polls at its interval, as minor-0 code does; minor-0 code never rings, and the other side's
 * waits, each bounded by the polling interval, degrade to that polling. Minor 2 (from 1) adds the
 * revocation stamps, also in header space older minors leave zero: a borrower that finds no stamp
 * for its lease (a minor-1 agent, or an entry replaced meanwhile) takes the moment the revocation
 * reached it instead, and code of minor 1 never reads them.
 *
 * <p>Stateless helpers; any thread.
 */
public final class LendingFileLayout {
    public static final long MAGIC = 0x5245505441525453L; // "STRATPER" read as a little-endian long
    public static final int MAJOR = 2; // 2: the ShmHeader prefix
    public static final int MINOR = 2; // 1: the doorbells; 2: the revocation stamps
    /** The first minor version with the doorbells ({@link #AGENT_BELL_OFFSET}, {@link #LENDER_BELL_OFFSET}). */
    public static final int DOORBELL_MINOR = 1;
    /** The first minor version with the revocation stamps ({@link #STAMPS_OFFSET}). */
    public static final int STAMPS_MINOR = 2;
    /** The lending file's kind: its magic, layout id and version. */
    public static final ShmHeader.Kind KIND = new ShmHeader.Kind("lending file", MAGIC, 3, MAJOR, MINOR);

    public static final long HEADER_SIZE = 4096;
    public static final long TABLE_OFFSET = HEADER_SIZE;
    public static final long RECORD_SIZE = 64;
    public static final long DATA_ALIGNMENT = 4096;
    public static final long MAX_REGIONS = 1L << 24;

    // header
    public static final long REGION_COUNT_OFFSET = ShmHeader.PREFIX_SIZE;
    public static final long REGION_SIZE_OFFSET = 72;
    public static final long BUDGET_OFFSET = 80;
    public static final long TABLE_OFFSET_OFFSET = 88;
    public static final long DATA_OFFSET_OFFSET = 96;
    public static final long TOTAL_SIZE_OFFSET = 104;
    public static final long AGENT_STATE_OFFSET = 128;
    public static final long DEMAND_OFFSET = 136;
    public static final long REVOCATIONS_OFFSET = 144;
    public static final long ACKNOWLEDGED_OFFSET = 152;
    public static final long FENCES_OFFSET = 160;
    public static final long REAPED_OFFSET = 168;
    /** The agent's doorbell (a 32-bit sequence word): borrowers ring, the agent's tick waits. */
    public static final long AGENT_BELL_OFFSET = 192;
    /** The borrowers' doorbell (a 32-bit sequence word): the agent rings, every borrower's event thread waits. */
    public static final long LENDER_BELL_OFFSET = 256;
    /** The revocation stamps: {@link #STAMP_SLOTS} slots of [key, nanos] to the end of the header. */
    public static final long STAMPS_OFFSET = 512;
    public static final long STAMP_SIZE = 16;
    public static final int STAMP_SLOTS = (int) ((HEADER_SIZE - STAMPS_OFFSET) / STAMP_SIZE); // 224

    public static final long AGENT_STARTING = 0;
    public static final long AGENT_LENDING = 1;
    public static final long AGENT_STOPPED = 2;

    // region record
    public static final long R_STATE = 0;
    public static final long R_ACCESS = 8;
    public static final long R_BORROWER_START = 16;
    public static final long R_RUN_LENGTH = 24;
    public static final long R_HEAD = 32;
    public static final long R_LEASE_BYTES = 40;
    public static final long R_DEADLINE = 48;
    public static final long R_LENT_AT = 56;

    // states
    public static final int FREE = 0;
    public static final int CLAIMING = 1;
    public static final int LENT = 2;
    public static final int MEMBER = 3;
    public static final int REVOKING = 4;
    public static final int FENCED = 5;
    public static final int HELD = 6;

    public static final long MAX_PID = (1L << 24) - 1;
    public static final long EPOCH_MASK = (1L << 36) - 1;
    public static final long COUNT_MASK = (1L << 20) - 1;
    /** The count field of a shut gate. */
    public static final long CLOSED = COUNT_MASK;

    static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    private LendingFileLayout() {
    }

    /** True if a file of {@code prefix}'s version has the doorbells (minor {@link #DOORBELL_MINOR} or later). */
    public static boolean hasDoorbells(ShmHeader.Prefix prefix) {
        return prefix.major() == MAJOR && prefix.minor() >= DOORBELL_MINOR;
    }

    /** The state word of {@code state} for {@code pid} at {@code epoch}. */
    public static long word(int state, long pid, long epoch) {
        return ((epoch & EPOCH_MASK) << 28) | ((pid & MAX_PID) << 4) | state;
    }

    public static int state(long word) {
        return (int) (word & 0xF);
    }

    public static long pid(long word) {
        return (word >>> 4) & MAX_PID;
    }

    public static long epoch(long word) {
        return word >>> 28;
    }

    /** The revocation stamp key of the lending {@code (head, epoch)}: never 0, as lent epochs start at 1. */
    public static long stampKey(long head, long epoch) {
        return head << 36 | (epoch & EPOCH_MASK);
    }

    /** Offset of the stamp slot of {@code key}: a multiplicative hash, so that neighbouring heads spread. */
    public static long stampSlot(long key) {
        long slot = ((key * 0x9E3779B97F4A7C15L) >>> 32) % STAMP_SLOTS;
        return STAMPS_OFFSET + slot * STAMP_SIZE;
    }

    /** The access word of {@code count} accesses under {@code epoch}. */
    public static long access(long epoch, long count) {
        return ((epoch & EPOCH_MASK) << 20) | count;
    }

    public static long accessEpoch(long accessWord) {
        return accessWord >>> 20;
    }

    public static long accessCount(long accessWord) {
        return accessWord & COUNT_MASK;
    }

    public static String stateName(int state) {
        return switch (state) {
            case FREE -> "FREE";
            case CLAIMING -> "CLAIMING";
            case LENT -> "LENT";
            case MEMBER -> "MEMBER";
            case REVOKING -> "REVOKING";
            case FENCED -> "FENCED";
            case HELD -> "HELD";
            default -> "CORRUPT(" + state + ")";
        };
    }

    /** Where the parts of a file lie for {@code regionCount} regions of {@code regionSize} bytes. */
    public record Geometry(long regionCount, long regionSize) {
        public Geometry {
            if (regionCount < 1 || regionCount > MAX_REGIONS || regionSize < 64 || regionSize % 64 != 0) {
                throw new IllegalArgumentException("lending geometry: " + regionCount + " regions of " + regionSize
                        + " bytes; need 1 to " + MAX_REGIONS + " regions of a positive multiple of 64 bytes");
            }
        }

        public long budget() {
            return regionCount * regionSize;
        }

        public long dataOffset() {
            long table = TABLE_OFFSET + regionCount * RECORD_SIZE;
            return (table + DATA_ALIGNMENT - 1) & -DATA_ALIGNMENT;
        }

        public long totalSize() {
            return dataOffset() + budget();
        }

        /** Offset of region {@code r}'s record. */
        public long record(long r) {
            return TABLE_OFFSET + r * RECORD_SIZE;
        }

        /** Offset of region {@code r}'s data. */
        public long data(long r) {
            return dataOffset() + r * regionSize;
        }
    }

    /**
     * Writes every header field of a file lent by the current process except the version
     * (the caller publishes with {@link ShmHeader#publish}).
     */
    static void writeHeader(MemorySegment file, Geometry g, long nowMillis) {
        ShmHeader.writePrefix(file, KIND, nowMillis);
        LONG.set(file, REGION_COUNT_OFFSET, g.regionCount());
        LONG.set(file, REGION_SIZE_OFFSET, g.regionSize());
        LONG.set(file, BUDGET_OFFSET, g.budget());
        LONG.set(file, TABLE_OFFSET_OFFSET, TABLE_OFFSET);
        LONG.set(file, DATA_OFFSET_OFFSET, g.dataOffset());
        LONG.set(file, TOTAL_SIZE_OFFSET, g.totalSize());
        LONG.set(file, AGENT_STATE_OFFSET, AGENT_STARTING);
        file.asSlice(STAMPS_OFFSET, HEADER_SIZE - STAMPS_OFFSET).fill((byte) 0); // no stamp of an earlier agent survives
    }

    /**
     * The header fields as found in a file.
     *
     * @param prefix   the common prefix: magic, version, kind, the agent as owner, its heartbeat
     * @param fileSize bytes of the file when the header was read
     */
    public record Header(ShmHeader.Prefix prefix, long regionCount, long regionSize, long budget, long tableOffset,
                         long dataOffset, long totalSize, long agentState, long fileSize) {

        /** Reads the header from the first {@link #HEADER_SIZE} bytes of a file (little-endian). */
        public static Header of(ShmFiles.Found found) {
            ByteBuffer b = found.header().duplicate().order(ByteOrder.LITTLE_ENDIAN);
            return new Header(ShmHeader.Prefix.of(b), b.getLong((int) REGION_COUNT_OFFSET),
                    b.getLong((int) REGION_SIZE_OFFSET), b.getLong((int) BUDGET_OFFSET),
                    b.getLong((int) TABLE_OFFSET_OFFSET), b.getLong((int) DATA_OFFSET_OFFSET),
                    b.getLong((int) TOTAL_SIZE_OFFSET), b.getLong((int) AGENT_STATE_OFFSET), found.fileSize());
        }

        /**
         * Checks magic, version, kind and geometry.
         *
         * @return the geometry
         * @throws ShmFormatException naming the file, the field and the value found
         */
        public Geometry validate(Path file) {
            prefix.check(file, KIND);
            Geometry g;
            try {
                g = new Geometry(regionCount, regionSize);
            } catch (IllegalArgumentException e) {
                throw error(file, "regionCount, regionSize", regionCount + ", " + regionSize,
                        "implausible geometry: " + e.getMessage());
            }
            if (g.budget() != budget || tableOffset != TABLE_OFFSET || g.dataOffset() != dataOffset
                    || g.totalSize() != totalSize) {
                throw error(file, "budget, tableOffset, dataOffset, totalSize", budget + ", " + tableOffset + ", "
                        + dataOffset + ", " + totalSize, "the geometry fields disagree: expected " + g.budget() + ", "
                        + TABLE_OFFSET + ", " + g.dataOffset() + ", " + g.totalSize());
            }
            if (fileSize < totalSize) {
                throw error(file, "file size", Long.toString(fileSize), "the lending file needs " + totalSize
                        + " bytes: truncated");
            }
            return g;
        }

        private static ShmFormatException error(Path file, String field, String value, String problem) {
            return new ShmFormatException(KIND.noun(), file, field, value, problem);
        }
    }
}
