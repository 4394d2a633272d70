package dev.strata.memory.pool;

import dev.strata.memory.Sizes;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * How to open a {@link PoolTier}: the file(s) or device(s), the capacity of the data area, chunk
 * size, process-table size, and the timing of heartbeats, liveness and sweeps.
 *
 * <p>Build with {@link #builder(String)}; {@link Builder#conclude()} validates everything at once
 * and fails fast naming the offending value. With one path the pool is one file; with several,
 * the pool's logical space is interleaved over them in {@link PoolHeader#STRIPE_SIZE} stripes
 * (stripe {@code i} lives in path {@code i mod n} at offset {@code (i div n) * stripe}).
 *
 * <p>Immutable; any thread.
 *
 * @param name              the tier's name, also the default file name
 * @param paths             the files or devices, in stripe order
 * @param capacity          bytes of the data area (objects), rounded up to whole chunks; used only
 *                          when the pool is created, attachers read it from the header
 * @param chunkSize         allocation unit in bytes, a power of two, at least 4 KiB
 * @param processSlots      how many processes may have the pool open at once
 * @param mode              create the files, attach to existing ones, or whichever applies
 * @param heartbeatInterval how often a process refreshes its heartbeat
 * @param heartbeatTimeout  a heartbeat older than this marks a process dead, but only where its
 *                          start time cannot be checked; {@link Duration#ZERO} disables it
 * @param sweepInterval     how often the heartbeat thread reclaims dead processes' allocations;
 *                          {@link Duration#ZERO} disables the periodic sweep (allocation failures
 *                          still trigger one)
 * @param attachTimeout     how long an attacher waits for a creator to finish initialising
 * @param rootRegionSize    bytes reserved between the pool's tables and its data area for a
 *                          structure built on the pool (the KV block index), a multiple of 4 KiB,
 *                          0 for none; used only when the pool is created, attachers read it from
 *                          the header
 */
public record PoolConfig(
        String name,
        List<Path> paths,
        long capacity,
        long chunkSize,
        int processSlots,
        Mode mode,
        Duration heartbeatInterval,
        Duration heartbeatTimeout,
        Duration sweepInterval,
        Duration attachTimeout,
        long rootRegionSize) {

    /** Whether {@link PoolTier#open} may create the pool. */
    public enum Mode {
        /** Create the pool; fails if a regular file already exists (a device is formatted in place). */
        CREATE,
        /** Attach to an existing pool; fails if it does not exist. */
        ATTACH,
        /** Create the pool if its first file does not exist, else attach (atomic: one creator wins). */
        CREATE_OR_ATTACH
    }

    public static final long DEFAULT_CHUNK_SIZE = 64 * Sizes.KiB;
    public static final int DEFAULT_PROCESS_SLOTS = 64;
    public static final int MAX_PROCESS_SLOTS = ObjectDescriptorTable.MAX_SLOTS;

    public PoolConfig {
        paths = List.copyOf(paths);
    }

    /** The default file of a pool named {@code name}: {@code /dev/shm/strata-<name>.pool}. */
    public static Path defaultPath(String name) {
        return dev.strata.memory.shm.ShmFiles.userDefault(name + ".pool");
    }

    public static Builder builder(String name) {
        return new Builder(name);
    }

    /** Collects settings; {@link #conclude()} checks them. Not thread-safe. */
    public static final class Builder {
        private final String name;
        private final List<Path> paths = new ArrayList<>();
        private long capacity = 64 * Sizes.MiB;
        private long chunkSize = DEFAULT_CHUNK_SIZE;
        private int processSlots = DEFAULT_PROCESS_SLOTS;
        private Mode mode = Mode.CREATE_OR_ATTACH;
        private Duration heartbeatInterval = Duration.ofSeconds(1);
        private Duration heartbeatTimeout = Duration.ofSeconds(30);
        private Duration sweepInterval = Duration.ofSeconds(5);
        private Duration attachTimeout = Duration.ofSeconds(10);
        private long rootRegionSize;

        private Builder(String name) {
            this.name = name;
        }

        /** Adds a file or device; the first one holds the header. Without any, the default path is used. */
        public Builder path(Path path) {
            paths.add(Objects.requireNonNull(path, "path"));
            return this;
        }

        public Builder paths(List<Path> all) {
            all.forEach(this::path);
            return this;
        }

        public Builder capacity(long bytes) {
            this.capacity = bytes;
            return this;
        }

        public Builder chunkSize(long bytes) {
            this.chunkSize = bytes;
            return this;
        }

        public Builder processSlots(int slots) {
            this.processSlots = slots;
            return this;
        }

        public Builder mode(Mode m) {
            this.mode = Objects.requireNonNull(m, "mode");
            return this;
        }

        public Builder heartbeatInterval(Duration d) {
            this.heartbeatInterval = d;
            return this;
        }

        public Builder heartbeatTimeout(Duration d) {
            this.heartbeatTimeout = d;
            return this;
        }

        public Builder sweepInterval(Duration d) {
            this.sweepInterval = d;
            return this;
        }

        public Builder attachTimeout(Duration d) {
            this.attachTimeout = d;
            return this;
        }

        /** Reserves a root region of {@code bytes} (rounded up to 4 KiB; 0 for none) when the pool is created. */
        public Builder rootRegionSize(long bytes) {
            this.rootRegionSize = bytes;
            return this;
        }

        /** Validates the settings and builds the config; throws {@link IllegalArgumentException} naming the bad value. */
        public PoolConfig conclude() {
            List<String> problems = new ArrayList<>();
            if (name == null || !name.matches("[A-Za-z0-9._-]{1,63}")) {
                problems.add("name '" + name + "' must be 1 to 63 characters of [A-Za-z0-9._-]");
            }
            if (!Sizes.isPowerOfTwo(chunkSize) || chunkSize < 4 * Sizes.KiB || chunkSize > PoolHeader.STRIPE_SIZE) {
                problems.add("chunk size " + chunkSize + " must be a power of two between 4096 and "
                        + PoolHeader.STRIPE_SIZE);
            }
            if (capacity <= 0) {
                problems.add("capacity " + capacity + " must be positive");
            }
            if (processSlots < 1 || processSlots > MAX_PROCESS_SLOTS) {
                problems.add("process slots " + processSlots + " must be between 1 and " + MAX_PROCESS_SLOTS);
            }
            if (rootRegionSize < 0) {
                problems.add("root region size " + rootRegionSize + " must be zero or positive");
            }
            if (paths.stream().distinct().count() != paths.size()) {
                problems.add("paths " + paths + " name the same file twice");
            }
            checkDuration(problems, "heartbeat interval", heartbeatInterval, false);
            checkDuration(problems, "heartbeat timeout", heartbeatTimeout, true);
            checkDuration(problems, "sweep interval", sweepInterval, true);
            checkDuration(problems, "attach timeout", attachTimeout, true);
            if (!problems.isEmpty()) {
                throw new IllegalArgumentException("invalid pool config '" + name + "': " + String.join("; ", problems));
            }
            List<Path> chosen = paths.isEmpty() ? List.of(defaultPath(name)) : paths;
            return new PoolConfig(name, chosen, Sizes.alignUp(capacity, chunkSize), chunkSize, processSlots, mode,
                    heartbeatInterval, heartbeatTimeout, sweepInterval, attachTimeout,
                    Sizes.alignUp(Math.max(0, rootRegionSize), PoolHeader.ROOT_REGION_ALIGNMENT));
        }

        private static void checkDuration(List<String> problems, String what, Duration d, boolean zeroAllowed) {
            if (d == null || d.isNegative() || (!zeroAllowed && d.isZero())) {
                problems.add(what + " " + d + " must be " + (zeroAllowed ? "zero or positive" : "positive"));
            }
        }
    }
}
