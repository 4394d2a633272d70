package dev.strata.memory.pool;

import dev.strata.memory.TierIoException;
import dev.strata.memory.shm.ProcessLiveness;
import dev.strata.memory.shm.ShmFiles;
import dev.strata.memory.shm.ShmHeader;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiFunction;
import java.util.function.Function;

/**
 * Reads a pool's state for people and tools, without taking part in it: the files are opened and
 * mapped read-only, no process slot is claimed, no heartbeat is started, nothing is written (the
 * segment is read-only, so a write would fail rather than happen).
 *
 * <p>The header is validated exactly as {@link PoolTier#open} validates it (bad magic, another
 * major version, a layout that disagrees with itself, a file too small, a missing file), with the
 * same exceptions and messages. An uninitialised pool (version 0) is refused at once rather than
 * awaited. Liveness of the creator and of the process table's members is {@link ProcessLiveness}'s,
 * as the pool itself judges it.
 *
 * <p>The report is a snapshot taken by a scan while other processes may be changing the pool: each
 * word is read atomically, the whole is not; counts can disagree by the operations in flight.
 *
 * <p>Stateless; any thread.
 */
public final class PoolInspector {
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    /** Liveness by heartbeat is used only where a process's start time is unknown; as PoolConfig's default. */
    private static final long HEARTBEAT_TIMEOUT_MILLIS = 30_000;

    private PoolInspector() {
    }

    /** One occupied slot of the process table. */
    public record ProcessEntry(
            int slot,
            String state,            // CLAIMING, ACTIVE or RECLAIMING
            long pid,                // the slot's process (for RECLAIMING: the pid recorded before)
            boolean alive,           // ACTIVE/CLAIMING: that process is alive; RECLAIMING: its reclaimer is
            long heartbeatAgeMillis, // now - last heartbeat
            long incarnation) {      // claims of this slot so far
    }

    /** Chunks by the state of the allocation they belong to, and what that adds up to. */
    public record Occupancy(
            long freeChunks,
            long writingChunks,        // allocations not yet published (or being rewritten)
            long publishedChunks,
            long freeingChunks,        // frees in progress
            long claimingChunks,       // claimed but the allocation's descriptor not yet WRITING
            long usedBytes,            // non-free chunks * chunk size, by scan
            long countedUsedBytes,     // the shared counter PoolTier.used() reads
            long objectsPublished,
            long allocationsWriting) {
    }

    /** What {@link #inspect} found. */
    public record Report(
            List<Path> paths,
            long magic,
            int major,
            int minor,
            String name,
            PoolHeader.Layout layout,
            long createdAtMillis,
            long creatorPid,
            boolean creatorAlive,
            long creatorHeartbeatAgeMillis,
            List<ProcessEntry> processes,
            Occupancy occupancy) {
    }

    /** Inspects a pool held in one file or device. */
    public static Report inspect(Path firstPath) {
        return inspect(List.of(firstPath));
    }

    /**
     * Inspects the pool striped over {@code paths} (in stripe order; one path for an unstriped pool).
     *
     * @throws dev.strata.memory.shm.ShmFormatException if the header is not valid for this code (as {@link PoolTier#open})
     * @throws TierIoException     if a file is missing or cannot be read or mapped
     */
    public static Report inspect(List<Path> paths) {
        return withReadOnlyPool(paths, (pool, layout) -> read(paths, pool, layout));
    }

    /**
     * Maps the pool striped over {@code paths} read-only, as {@link #inspect} does, and applies
     * {@code reader} to its root region (zero bytes long if the pool has none), for tools that
     * inspect a structure built on the pool. The segment is valid only during the call.
     *
     * @throws dev.strata.memory.shm.ShmFormatException if the header is not valid for this code (as {@link PoolTier#open})
     * @throws TierIoException     if a file is missing or cannot be read or mapped
     */
    public static <T> T readRootRegion(List<Path> paths, Function<MemorySegment, T> reader) {
        return withReadOnlyPool(paths, (pool, layout) ->
                reader.apply(pool.asSlice(layout.rootRegionOffset(), layout.rootRegionSize())));
    }

    private static <T> T withReadOnlyPool(List<Path> paths, BiFunction<MemorySegment, PoolHeader.Layout, T> reader) {
        if (paths.isEmpty()) {
            throw new IllegalArgumentException("no pool path given");
        }
        Path first = paths.getFirst();
        if (!Files.exists(first)) {
            throw new TierIoException("pool", "inspecting pool " + first,
                    new NoSuchFileException(first.toString(), null, "no pool file to inspect"));
        }
        ShmFiles.Found found;
        try {
            found = PoolTier.readHeader(first);
        } catch (IOException e) {
            throw new TierIoException("pool", "reading the header of " + first, e);
        }
        PoolHeader.Snapshot snapshot = PoolHeader.Snapshot.of(found.header());
        if (snapshot.prefix().mayBecome(PoolHeader.KIND) && !snapshot.prefix().published()) {
            throw PoolTier.notInitialised(first, found, "now");
        }
        PoolHeader.Layout layout = snapshot.validate(first, paths.size(), found.fileSize());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment pool = mapReadOnly(paths, layout.totalSize(), arena);
            return reader.apply(pool, layout);
        }
    }

    private static MemorySegment mapReadOnly(List<Path> paths, long totalSize, Arena arena) {
        try {
            if (paths.size() == 1 && Files.isRegularFile(paths.getFirst())) {
                try (FileChannel ch = FileChannel.open(paths.getFirst(), StandardOpenOption.READ)) {
                    return ch.map(FileChannel.MapMode.READ_ONLY, 0, totalSize, arena);
                }
            }
            return PosixMemoryMap.mapStriped(paths, totalSize, PoolHeader.STRIPE_SIZE, arena, true);
        } catch (IOException e) {
            throw new TierIoException("pool", "mapping " + totalSize + " bytes of " + paths + " read-only", e);
        }
    }

    private static Report read(List<Path> paths, MemorySegment pool, PoolHeader.Layout layout) {
        long now = System.currentTimeMillis();
        ShmHeader.Prefix prefix = ShmHeader.Prefix.of(pool);
        String name = PoolHeader.name(pool);

        ProcessTable table = new ProcessTable(pool, layout.processTableOffset(), layout.processSlots(),
                System::currentTimeMillis, HEARTBEAT_TIMEOUT_MILLIS);
        List<ProcessEntry> processes = new ArrayList<>();
        for (int s = 0; s < layout.processSlots(); s++) {
            long w = table.stateWord(s);
            int state = ProcessTable.state(w);
            if (state == ProcessTable.FREE) {
                continue;
            }
            long base = layout.processTableOffset() + s * ProcessTable.SLOT_SIZE;
            long pid = (long) LONG.get(pool, base + ProcessTable.PID_OFFSET);
            long incarnation = (long) LONG.get(pool, base + ProcessTable.INCARNATION_OFFSET);
            boolean alive = switch (state) {
                case ProcessTable.ACTIVE -> table.isAlive(s, ProcessTable.payload(w));
                case ProcessTable.CLAIMING -> ProcessLiveness.isAlive(ProcessTable.payload(w), 0);
                default -> { // RECLAIMING: alive means its reclaimer is
                    int reclaimer = (int) ProcessTable.payload(w);
                    long rw = table.stateWord(reclaimer);
                    yield ProcessTable.state(rw) == ProcessTable.ACTIVE && table.isAlive(reclaimer, ProcessTable.payload(rw));
                }
            };
            String stateName = switch (state) {
                case ProcessTable.CLAIMING -> "CLAIMING";
                case ProcessTable.ACTIVE -> "ACTIVE";
                default -> "RECLAIMING by slot " + ProcessTable.payload(w);
            };
            processes.add(new ProcessEntry(s, stateName, pid, alive, now - table.heartbeat(s), incarnation));
        }

        ChunkTable chunks = new ChunkTable(pool, layout.chunkTableOffset(), layout.chunkCount());
        ObjectDescriptorTable descriptors = new ObjectDescriptorTable(pool, layout.descriptorTableOffset(),
                layout.chunkCount());
        long free = 0;
        long writing = 0;
        long published = 0;
        long freeing = 0;
        long claiming = 0;
        for (long c = 0; c < layout.chunkCount(); c++) {
            long w = chunks.get(c);
            if (!ChunkTable.inUse(w)) {
                free++;
                continue;
            }
            long head = ChunkTable.head(w);
            switch (ObjectDescriptorTable.state(descriptors.stateAcquire(head < layout.chunkCount() ? head : c))) {
                case ObjectDescriptorTable.WRITING -> writing++;
                case ObjectDescriptorTable.PUBLISHED -> published++;
                case ObjectDescriptorTable.FREEING -> freeing++;
                default -> claiming++;
            }
        }
        long objects = 0;
        long writers = 0;
        for (long h = 0; h < layout.chunkCount(); h++) {
            int s = ObjectDescriptorTable.state(descriptors.stateAcquire(h));
            if (s == ObjectDescriptorTable.PUBLISHED) {
                objects++;
            } else if (s == ObjectDescriptorTable.WRITING) {
                writers++;
            }
        }
        AllocationCounters counters = new AllocationCounters(pool, PoolHeader.ALLOCATED_CHUNKS_OFFSET);
        Occupancy occupancy = new Occupancy(free, writing, published, freeing, claiming,
                (layout.chunkCount() - free) * layout.chunkSize(), counters.allocatedChunks() * layout.chunkSize(),
                objects, writers);
        return new Report(List.copyOf(paths), prefix.magic(), prefix.major(), prefix.minor(), name, layout,
                prefix.createdAtMillis(), prefix.ownerPid(), prefix.ownerAlive(), now - prefix.heartbeatMillis(),
                List.copyOf(processes), occupancy);
    }
}
