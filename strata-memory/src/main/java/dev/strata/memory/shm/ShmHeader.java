package dev.strata.memory.shm;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;

/**
 * The prefix every shared-memory file Strata creates starts with: what the file is, whether it is
 * ready, and who owns it. Each kind of file lays out its own fields from {@link #PREFIX_SIZE} on.
 *
 * <pre>
 * Prefix (little-endian longs, one 64-byte cache line):
 * offset size field
 *      0    8 magic             8 ASCII letters naming the kind, read as a little-endian long
 *      8    8 version           major &lt;&lt; 32 | minor; 0 while initialising; WRITTEN LAST (release)
 *     16    8 kind              layout id of the kind ({@link Kind#id})
 *     24    8 ownerPid          the process that created the file (and keeps it, where the kind says so)
 *     32    8 ownerStartMillis  that process's start instant, epoch ms (0 unknown); see ProcessLiveness
 *     40    8 heartbeatMillis   epoch ms, refreshed while the file is kept alive (opaque; who
 *                               refreshes it is the kind's rule)
 *     48    8 createdAtMillis   epoch ms
 *     56    8 reserved (zero)
 *     64      the kind's own fields
 *
 * Kinds:  id  magic      file                      descriptor
 *          1  STRATAPL   pool file                 dev.strata.memory.pool.PoolHeader
 *          2  STRATRPC   rpc region                dev.strata.node.rpc.RpcRegionLayout
 *          3  STRATPER   lending file              dev.strata.node.peer.LendingFileLayout
 *          4  STRATAIX   block index (root region) dev.strata.node.index.IndexRegion
 * </pre>
 *
 * <p>Protocol: the creator writes every field, the prefix with {@link #writePrefix} and its own,
 * then publishes with {@link #publish}, a release store of the version; a reader that sees a
 * non-zero version with an acquire load (or reads the file after it) sees every field. Once the
 * version is non-zero the prefix is final except the heartbeat.
 *
 * <p>Stateless helpers; any thread.
 */
public final class ShmHeader {
    public static final long PREFIX_SIZE = 64;

    public static final long MAGIC_OFFSET = 0;
    public static final long VERSION_OFFSET = 8;
    public static final long KIND_OFFSET = 16;
    public static final long OWNER_PID_OFFSET = 24;
    public static final long OWNER_START_OFFSET = 32;
    public static final long HEARTBEAT_OFFSET = 40;
    public static final long CREATED_AT_OFFSET = 48;

    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    private ShmHeader() {
    }

    /**
     * One kind of shared file: its name for people, magic, layout id and the version this code
     * writes and reads.
     *
     * @param noun  what the file is called in messages ("pool file", "rpc region", ...)
     * @param magic 8 ASCII letters read as a little-endian long
     * @param id    the layout id stored in the {@code kind} field
     * @param major a reader refuses any other major version
     * @param minor written; not checked
     */
    public record Kind(String noun, long magic, int id, int major, int minor) {
        /** The version field of this code's files. */
        public long version() {
            return ((long) major << 32) | (minor & 0xFFFF_FFFFL);
        }
    }

    /**
     * Writes the prefix of a file of {@code kind} owned by {@code pid}, except the version
     * (the creator publishes with {@link #publish} after its own fields). Heartbeat and creation
     * time are both {@code nowMillis}.
     */
    public static void writePrefix(MemorySegment file, Kind kind, long pid, long startMillis, long nowMillis) {
        LONG.set(file, MAGIC_OFFSET, kind.magic());
        LONG.set(file, KIND_OFFSET, (long) kind.id());
        LONG.set(file, OWNER_PID_OFFSET, pid);
        LONG.set(file, OWNER_START_OFFSET, startMillis);
        LONG.set(file, HEARTBEAT_OFFSET, nowMillis);
        LONG.set(file, CREATED_AT_OFFSET, nowMillis);
    }

    /** Writes the prefix for the current process as owner. */
    public static void writePrefix(MemorySegment file, Kind kind, long nowMillis) {
        writePrefix(file, kind, ProcessLiveness.currentPid(), ProcessLiveness.currentStartMillis(), nowMillis);
    }

    /** Makes the file valid: release-stores the version after every other field. */
    public static void publish(MemorySegment file, Kind kind) {
        LONG.setRelease(file, VERSION_OFFSET, kind.version());
    }

    /** The version field, acquire: once non-zero, every field written before {@link #publish} is visible. */
    public static long versionAcquire(MemorySegment file) {
        return (long) LONG.getAcquire(file, VERSION_OFFSET);
    }

    /** Refreshes the heartbeat (opaque store). */
    public static void beat(MemorySegment file, long nowMillis) {
        LONG.setOpaque(file, HEARTBEAT_OFFSET, nowMillis);
    }

    /** The heartbeat, epoch ms (opaque load). */
    public static long heartbeat(MemorySegment file) {
        return (long) LONG.getOpaque(file, HEARTBEAT_OFFSET);
    }

    /** The prefix fields as found in a file or segment. */
    public record Prefix(long magic, long version, long kind, long ownerPid, long ownerStartMillis,
                         long heartbeatMillis, long createdAtMillis) {

        /** Reads the prefix from the first {@link #PREFIX_SIZE} bytes of {@code buffer} (little-endian, absolute). */
        public static Prefix of(ByteBuffer buffer) {
            ByteBuffer b = buffer.duplicate().order(ByteOrder.LITTLE_ENDIAN);
            return new Prefix(b.getLong((int) MAGIC_OFFSET), b.getLong((int) VERSION_OFFSET),
                    b.getLong((int) KIND_OFFSET), b.getLong((int) OWNER_PID_OFFSET),
                    b.getLong((int) OWNER_START_OFFSET), b.getLong((int) HEARTBEAT_OFFSET),
                    b.getLong((int) CREATED_AT_OFFSET));
        }

        /** Reads the prefix of a mapped file: the version with acquire first, then the rest. */
        public static Prefix of(MemorySegment file) {
            long version = versionAcquire(file);
            return new Prefix((long) LONG.get(file, MAGIC_OFFSET), version, (long) LONG.get(file, KIND_OFFSET),
                    (long) LONG.get(file, OWNER_PID_OFFSET), (long) LONG.get(file, OWNER_START_OFFSET),
                    heartbeat(file), (long) LONG.get(file, CREATED_AT_OFFSET));
        }

        public int major() {
            return (int) (version >>> 32);
        }

        public int minor() {
            return (int) version;
        }

        /** True once the creator has published the file (version non-zero). */
        public boolean published() {
            return version != 0;
        }

        /** True if the magic is {@code kind}'s or still zero (a file being created). */
        public boolean mayBecome(Kind kind) {
            return magic == 0 || magic == kind.magic();
        }

        /** True if the owner recorded here is still the same running process. */
        public boolean ownerAlive() {
            return ProcessLiveness.isAlive(ownerPid, ownerStartMillis);
        }

        /**
         * Checks that this is a published file of {@code kind} that this code reads: magic,
         * version non-zero, major version, kind id, in that order; an all-zero prefix (a file never
         * initialised) is reported as version 0 rather than as bad magic.
         *
         * @param file named in the error
         * @throws ShmFormatException naming the file, the field and the value found
         */
        public void check(Path file, Kind kind) {
            if (magic != kind.magic() && !(magic == 0 && version == 0)) {
                throw new ShmFormatException(kind.noun(), file, "magic", hex(magic), "not a Strata " + kind.noun()
                        + " (expected " + hex(kind.magic()) + ")");
            }
            if (version == 0) {
                throw new ShmFormatException(kind.noun(), file, "version", "0",
                        "never published: being created now, or its creator died while initialising it (owner pid "
                                + (ownerPid == 0 ? "unknown" : Long.toString(ownerPid)) + ")");
            }
            if (major() != kind.major()) {
                throw new ShmFormatException(kind.noun(), file, "version", major() + "." + minor(),
                        "major version " + major() + " is not supported (this code reads major version "
                                + kind.major() + ")");
            }
            if (this.kind != kind.id()) {
                throw new ShmFormatException(kind.noun(), file, "kind", Long.toString(this.kind),
                        "expected layout id " + kind.id());
            }
        }
    }

    /** {@code value} as 0x followed by 16 hex digits, as magic numbers are printed in messages. */
    public static String hex(long value) {
        return String.format("0x%016x", value);
    }
}
