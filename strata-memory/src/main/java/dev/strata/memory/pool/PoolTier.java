package dev.strata.memory.pool;

import dev.strata.memory.Allocator;
import dev.strata.memory.Tier;
import dev.strata.memory.TierIoException;
import dev.strata.memory.TierKind;
import dev.strata.memory.TierMeter;
import dev.strata.memory.TierStats;
import dev.strata.memory.posix.Libc;
import dev.strata.memory.shm.ProcessLiveness;
import dev.strata.memory.shm.ShmFiles;
import dev.strata.memory.shm.ShmFormatException;
import dev.strata.memory.shm.ShmHeader;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;

/**
 * The POOL tier: a file (or several, interleaved) mapped shared by several processes, holding
 * objects under a publish protocol so that any process may read what another published.
 *
 * <p>Opening: {@link #open(PoolConfig)} creates the pool or attaches to it (see
 * {@link PoolConfig.Mode}). The creator sizes the files (mode 0600, set at creation) and reserves
 * their space ({@link PoolFileSpace}: a file system without room is refused at once, naming the
 * path, the size and the free space), zeroes the
 * tables, writes the {@link PoolHeader} and publishes its version last (a creation that fails
 * removes the files it created); attachers wait for the
 * version and validate magic, major version and layout. Each process then claims a slot in the
 * {@link ProcessTable} and runs a daemon heartbeat thread that also sweeps dead processes'
 * unpublished allocations ({@link PoolAllocator}). One file is mapped with
 * {@link FileChannel#map}; several are mapped into one contiguous range in 2 MiB stripes by
 * {@link PosixMemoryMap}, so every object is one contiguous {@link MemorySegment} either way.
 *
 * <p>Objects: {@link #allocate} claims chunks (the allocation is WRITING, owned by this process);
 * {@link #write}/{@link #gatherWrite} (or {@link #segment} followed by {@link #publish}) publish it;
 * any process may {@link #read} it and any process may {@link #free} it. {@link #isPlainMemory()}
 * is false: bytes written through {@link #segment} are not readable until published.
 *
 * <p>Invariants: allocations never overlap; a reader never sees a torn or unpublished object
 * ({@link PublishProtocol}); published objects outlive their writer; a dead process's unpublished
 * allocations return to the free state.
 *
 * <p>Faults: an access to a page the file no longer backs (the file was truncated, or its file
 * system ran out of space for a page not reserved) raises SIGBUS, which the JDK reports as an
 * {@link InternalError} ({@link #isMappingFault}). The data path ({@link #gatherWrite},
 * {@link #scatterRead}, {@link #publish}), {@link #used}, {@link #stats} and the heartbeat turn it
 * into a {@link TierIoException} and mark the tier {@link #fault() faulted}; so does
 * {@link #recordFault} for callers that copy
 * through {@link #dataArea} or {@link #rootRegion} themselves. The JDK throws a fault that
 * compiled code meets at the thread's next safepoint poll, which can come after the access's
 * method has returned; each of those try blocks therefore ends with
 * {@link Libc#deliverPendingFaults}, so that the fault is thrown inside it. A faulted tier never touches its
 * mapping again: every later call fails at once with the fault's {@link TierIoException}, and
 * {@link #close} only unmaps (the process slot is left to the other processes' reclaim).
 *
 * <p>Threads: every method may be called from any thread of the process; {@link #close} must not
 * race with other calls (they fail once it has run). The mapping lives in one shared arena,
 * closed once.
 */
public final class PoolTier implements Tier {
    private final PoolConfig config;
    private final PoolHeader.Layout layout;
    private final Arena arena;
    private final MemorySegment pool; // the whole logical space, layout.totalSize() bytes
    private final MemorySegment data; // the data area
    private final MemorySegment root; // the root region, layout.rootRegionSize() bytes (possibly 0)
    private final ProcessTable processes;
    private final PoolAllocator allocator;
    private final PublishProtocol protocol;
    private final TierMeter meter = new TierMeter();
    private final boolean creator;
    private final long pid;
    private final int slot;
    private final LongSupplier clockMillis;
    private final Thread heartbeat;
    private final List<Object> fileKeys; // identity of each regular file at open (null for a device), for destroy
    private volatile boolean open = true;
    private volatile String fault; // why the mapping faulted (null: it never did); set once, never cleared

    private PoolTier(PoolConfig config, PoolHeader.Layout layout, Arena arena, MemorySegment pool, boolean creator,
                     LongSupplier clockMillis) {
        this.config = config;
        this.fileKeys = fileKeys(config);
        this.layout = layout;
        this.arena = arena;
        this.pool = pool;
        this.creator = creator;
        this.clockMillis = clockMillis;
        this.data = pool.asSlice(layout.dataOffset(), layout.dataCapacity());
        this.root = pool.asSlice(layout.rootRegionOffset(), layout.rootRegionSize());
        this.processes = new ProcessTable(pool, layout.processTableOffset(), layout.processSlots(), clockMillis,
                config.heartbeatTimeout().toMillis());
        this.pid = ProcessLiveness.currentPid();
        int claimed = processes.claim(pid, ProcessLiveness.currentStartMillis());
        if (claimed < 0) {
            throw new IllegalStateException("pool '" + config.name() + "' at " + config.paths().getFirst()
                    + ": all " + layout.processSlots() + " process slots are taken");
        }
        this.slot = claimed;
        ChunkTable chunks = new ChunkTable(pool, layout.chunkTableOffset(), layout.chunkCount());
        ObjectDescriptorTable descriptors =
                new ObjectDescriptorTable(pool, layout.descriptorTableOffset(), layout.chunkCount());
        this.allocator = new PoolAllocator(config.name(), chunks, descriptors,
                new AllocationCounters(pool, PoolHeader.ALLOCATED_CHUNKS_OFFSET), layout.chunkSize(), slot);
        this.protocol = new PublishProtocol(config.name(), descriptors, data, allocator);
        this.heartbeat = Thread.ofPlatform().daemon().name("strata-pool-heartbeat-" + config.name())
                .unstarted(this::heartbeatLoop);
        heartbeat.start();
    }

    /**
     * Reads the state of the pool in {@code firstPath} without attaching to it (read-only, no
     * process slot): see {@link PoolInspector}.
     */
    public static PoolInspector.Report inspect(Path firstPath) {
        return PoolInspector.inspect(firstPath);
    }

    /** Creates or attaches to the pool described by {@code config}, with the system clock. */
    public static PoolTier open(PoolConfig config) {
        return open(config, System::currentTimeMillis);
    }

    /**
     * Creates or attaches to the pool described by {@code config}.
     *
     * @param clockMillis epoch milliseconds, for heartbeats (shared by all processes of the pool)
     * @throws ShmFormatException  if an existing pool is not valid for this code and config
     * @throws TierIoException     if a file cannot be created, sized, read or mapped
     */
    public static PoolTier open(PoolConfig config, LongSupplier clockMillis) {
        List<Path> paths = config.paths();
        Path first = paths.getFirst();
        boolean create = decideCreator(config, first);
        List<Path> created = new ArrayList<>(); // regular files this call created, removed again if it fails
        if (create && Files.isRegularFile(first)) {
            created.add(first);
        }
        Arena arena = Arena.ofShared();
        try {
            PoolHeader.Layout layout;
            MemorySegment pool;
            if (create) {
                layout = PoolHeader.Layout.of(config.chunkSize(), config.capacity() / config.chunkSize(),
                        config.processSlots(), paths.size(), config.rootRegionSize());
                for (Path p : paths.subList(1, paths.size())) {
                    if (createIfAbsent(config, p)) {
                        created.add(p);
                    }
                }
                for (Path p : paths) {
                    sizeDevice(config, p, layout.perDeviceSize());
                }
                pool = map(config, paths, layout.totalSize(), arena);
                pool.asSlice(0, layout.dataOffset()).fill((byte) 0);
                long now = clockMillis.getAsLong();
                PoolHeader.writeFields(pool, layout, config.name(), ProcessLiveness.currentPid(),
                        ProcessLiveness.currentStartMillis(), now);
                PoolHeader.publishVersion(pool);
            } else {
                layout = awaitHeader(config, first);
                for (Path p : paths.subList(1, paths.size())) {
                    long size = regularSize(p);
                    if (size >= 0 && size < layout.perDeviceSize()) {
                        throw PoolHeader.tooSmall(p, size, layout.perDeviceSize());
                    }
                }
                pool = map(config, paths, layout.totalSize(), arena);
            }
            return new PoolTier(config, layout, arena, pool, create, clockMillis);
        } catch (RuntimeException | Error e) {
            arena.close();
            for (Path p : created) {
                ShmFiles.deleteQuietly(p); // a pool that never initialised would only hold up later attachers
            }
            throw e;
        }
    }

    private static boolean decideCreator(PoolConfig config, Path first) {
        boolean exists = Files.exists(first);
        boolean device = exists && !Files.isRegularFile(first);
        switch (config.mode()) {
            case ATTACH -> {
                if (!exists) {
                    throw new TierIoException(config.name(), "attaching to pool " + first,
                            new NoSuchFileException(first.toString(), null, "no pool file to attach to"));
                }
                return false;
            }
            case CREATE -> {
                if (device) {
                    return true;
                }
                try {
                    ShmFiles.createExclusive(first);
                    return true;
                } catch (IOException e) {
                    throw new TierIoException(config.name(), "creating pool file " + first, e);
                }
            }
            default -> {
                if (exists) {
                    return false;
                }
                return createIfAbsent(config, first);
            }
        }
    }

    /** Creates {@code p} with mode 0600; false if it already existed. */
    private static boolean createIfAbsent(PoolConfig config, Path p) {
        try {
            ShmFiles.createExclusive(p);
            return true;
        } catch (FileAlreadyExistsException e) {
            return false;
        } catch (IOException e) {
            throw new TierIoException(config.name(), "creating pool file " + p, e);
        }
    }

    /**
     * Sets a regular file's length and reserves its space ({@link PoolFileSpace}); checks that a
     * device is large enough where its size is known.
     */
    private static void sizeDevice(PoolConfig config, Path p, long bytes) {
        try {
            if (Files.isRegularFile(p)) {
                PoolFileSpace.reserve(config.name(), p, bytes);
                try (RandomAccessFile f = new RandomAccessFile(p.toFile(), "rw")) {
                    f.setLength(bytes);
                }
            } else {
                long size;
                try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ)) {
                    size = ch.size();
                }
                if (size > 0 && size < bytes) {
                    throw PoolHeader.formatError(p, "device size", size, "the pool needs " + bytes
                            + " bytes: lower the capacity to fit the device");
                }
            }
        } catch (IOException e) {
            throw new TierIoException(config.name(), "sizing pool file " + p + " to " + bytes + " bytes", e);
        }
    }

    /** Size of a regular file, -1 for a device. */
    private static long regularSize(Path p) {
        try {
            return Files.isRegularFile(p) ? Files.size(p) : -1;
        } catch (IOException e) {
            throw new TierIoException("pool", "reading the size of " + p, e);
        }
    }

    private static PoolHeader.Layout awaitHeader(PoolConfig config, Path first) {
        long deadline = System.nanoTime() + config.attachTimeout().toNanos();
        while (true) {
            ShmFiles.Found found;
            try {
                found = readHeader(first);
            } catch (IOException e) {
                throw new TierIoException(config.name(), "reading the header of " + first, e);
            }
            PoolHeader.Snapshot snapshot = PoolHeader.Snapshot.of(found.header());
            if (!snapshot.prefix().mayBecome(PoolHeader.KIND) || snapshot.prefix().published()) {
                return snapshot.validate(first, config.paths().size(), found.fileSize()); // throws if invalid
            }
            if (System.nanoTime() - deadline > 0) {
                throw notInitialised(first, found, "after " + config.attachTimeout());
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
        }
    }

    /** The error for a pool file whose header was never published (version 0). */
    static ShmFormatException notInitialised(Path first, ShmFiles.Found found, String when) {
        long creator = ShmHeader.Prefix.of(found.header()).ownerPid();
        return PoolHeader.formatError(first, "version", 0, "no initialised pool " + when + " (file holds "
                + found.fileSize() + " bytes, creator pid " + (creator == 0 ? "unknown" : Long.toString(creator))
                + "): being created now, or its creator died while initialising or this is not a pool; remove the file");
    }

    /**
     * Reads the first {@link PoolHeader#HEADER_SIZE} bytes of {@code first} (zero beyond the end of
     * a shorter file). A device (e.g. {@code /dev/dax0.0}) may support only {@code mmap}, so its
     * first stripe is mapped briefly instead; its size reads as 0.
     */
    static ShmFiles.Found readHeader(Path first) throws IOException {
        ShmFiles.requireFileOrDevice(first); // a FIFO would block the open below
        if (Files.isRegularFile(first)) {
            return ShmFiles.readHeader(first, (int) PoolHeader.HEADER_SIZE);
        }
        try (Arena scratch = Arena.ofConfined()) {
            MemorySegment stripe = PosixMemoryMap.mapStriped(List.of(first), PoolHeader.STRIPE_SIZE,
                    PoolHeader.STRIPE_SIZE, scratch, true);
            ByteBuffer buffer = ByteBuffer.allocate((int) PoolHeader.HEADER_SIZE)
                    .order(ByteOrder.LITTLE_ENDIAN);
            buffer.put(stripe.asSlice(0, PoolHeader.HEADER_SIZE).asByteBuffer()).clear();
            return new ShmFiles.Found(buffer, 0);
        }
    }

    private static MemorySegment map(PoolConfig config, List<Path> paths, long totalSize, Arena arena) {
        try {
            for (Path p : paths) {
                ShmFiles.requireAttachable(p); // mapped read-write: ours and not writable by others
            }
            if (paths.size() == 1 && Files.isRegularFile(paths.getFirst())) {
                try (FileChannel ch = FileChannel.open(paths.getFirst(), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                    return ch.map(FileChannel.MapMode.READ_WRITE, 0, totalSize, arena);
                }
            }
            return PosixMemoryMap.mapStriped(paths, totalSize, PoolHeader.STRIPE_SIZE, arena);
        } catch (IOException e) {
            throw new TierIoException(config.name(), "mapping " + totalSize + " bytes of " + paths, e);
        }
    }

    private void heartbeatLoop() {
        long intervalNanos = config.heartbeatInterval().toNanos();
        long sweepMillis = config.sweepInterval().toMillis();
        long lastSweep = clockMillis.getAsLong();
        while (open) {
            LockSupport.parkNanos(intervalNanos);
            if (!open || fault != null) {
                return;
            }
            try {
                processes.beat(slot);
                long now = clockMillis.getAsLong();
                if (creator) {
                    ShmHeader.beat(pool, now);
                }
                if (sweepMillis > 0 && now - lastSweep >= sweepMillis) {
                    lastSweep = now;
                    reclaimDead();
                }
                Libc.deliverPendingFaults();
            } catch (IllegalStateException closed) {
                if (!open) {
                    return; // the mapping was closed under us
                }
                throw closed;
            } catch (TierIoException faulted) {
                return; // the mapping faulted: nothing more to beat or sweep
            } catch (InternalError e) {
                if (!isMappingFault(e)) {
                    throw e;
                }
                recordFault(e);
                return;
            }
        }
    }

    /**
     * Finds processes that died with the pool open, returns their unpublished allocations to the
     * free state and frees their process slots. Published objects stay. If any process was
     * reclaimed, the allocation counters are recounted from the tables (see {@link PoolAllocator}).
     *
     * @return bytes returned to the free state
     */
    public long reclaimDead() {
        checkUsable();
        long reclaimed = 0;
        boolean any = false;
        for (int s = 0; s < processes.slots(); s++) {
            if (processes.tryStartReclaim(s, slot)) {
                reclaimed += allocator.reclaimSlot(s);
                processes.finishReclaim(s, slot);
                any = true;
            }
        }
        if (any) {
            allocator.recount();
        }
        return reclaimed;
    }

    @Override
    public String name() {
        return config.name();
    }

    @Override
    public TierKind kind() {
        return TierKind.POOL;
    }

    @Override
    public long capacity() {
        return allocator.capacity();
    }

    /**
     * Bytes held by allocations, from the pool's shared counter (one load; exact when no
     * operation is in flight and no process died mid-operation since the last reclaim, see
     * {@link PoolAllocator}). {@link #usedByScan()} counts the chunk table instead.
     */
    @Override
    public long used() {
        checkUsable();
        try {
            long used = allocator.used();
            Libc.deliverPendingFaults();
            return used;
        } catch (InternalError e) {
            throw faultOf(e);
        }
    }

    /**
     * Bytes held by allocations, counted by a scan of the chunk table (O(chunks)); {@link #used()}
     * reads the shared counter instead. For tests and inspection.
     */
    public long usedByScan() {
        checkUsable();
        return allocator.usedByScan();
    }

    /** Allocations WRITING or PUBLISHED, counted by a scan of the descriptors (O(chunks)). */
    public long allocationCountByScan() {
        checkUsable();
        return allocator.allocationCountByScan();
    }

    @Override
    public boolean sharedAcrossProcesses() {
        return true;
    }

    @Override
    public boolean revocable() {
        return false;
    }

    @Override
    public boolean isAddressable() {
        return true;
    }

    @Override
    public boolean isPlainMemory() {
        return false;
    }

    /** Allocates; if the pool is full, reclaims dead processes' allocations once and retries. */
    @Override
    public long allocate(long size) {
        checkUsable();
        long handle = allocator.allocate(size);
        if (handle == Allocator.FULL && reclaimDead() > 0) {
            handle = allocator.allocate(size);
        }
        return handle;
    }

    @Override
    public void free(long handle) {
        checkUsable();
        allocator.free(handle);
    }

    @Override
    public long allocationSize(long handle) {
        checkUsable();
        return allocator.sizeOf(handle);
    }

    @Override
    public void write(long handle, MemorySegment src) {
        gatherWrite(handle, List.of(src));
    }

    @Override
    public void gatherWrite(long handle, List<MemorySegment> parts) {
        checkUsable();
        long start = meter.startWrite();
        try {
            protocol.write(handle, parts);
            Libc.deliverPendingFaults();
        } catch (InternalError e) {
            throw faultOf(e);
        }
        long bytes = 0;
        for (MemorySegment p : parts) {
            bytes += p.byteSize();
        }
        meter.writeDone(bytes, start);
    }

    /**
     * Publishes {@code length} bytes that the caller placed in allocation {@code handle} through
     * {@link #segment}: computes the checksum and makes the object readable.
     */
    public void publish(long handle, long length) {
        checkUsable();
        long start = System.nanoTime();
        try {
            protocol.publishInPlace(handle, length);
            Libc.deliverPendingFaults();
        } catch (InternalError e) {
            throw faultOf(e);
        }
        meter.recordWrite(length, System.nanoTime() - start);
    }

    /**
     * Writes {@code count} objects as {@link #write} writes each, object {@code i} the bytes of
     * {@code sources[i]} (private native memory) into allocation {@code handles[i]}, their bytes in
     * one pass of the streaming loop where it takes them: a run of small objects (16 KiB KV
     * blocks) pays one downcall and one wait for its streaming stores instead of one per object.
     * Sets {@code failures[i]} to what object {@code i} met, else null; the others are written and
     * readable all the same.
     *
     * @throws TierIoException if the pool's file no longer backs a page (the objects begun stay unpublished)
     */
    public void writeRun(long[] handles, MemorySegment[] sources, int count, Throwable[] failures) {
        checkUsable();
        long start = System.nanoTime();
        try {
            protocol.writeRun(handles, sources, count, failures);
            Libc.deliverPendingFaults();
        } catch (InternalError e) {
            throw faultOf(e);
        }
        meterRun(false, sources, null, failures, count, start);
    }

    /**
     * Reads {@code count} objects as {@link #read} reads each, object {@code i} at
     * {@code handles[i]} into {@code destinations[i]} (private native memory), their bytes in one
     * pass of the streaming loop where it takes them. Sets {@code found[i]} to whether object
     * {@code i} was read (false: no published object there, or it changed during the copy), and
     * {@code failures[i]} to what it met (a destination of another length, a failed checksum),
     * else null.
     *
     * @throws TierIoException if the pool's file no longer backs a page
     */
    public void readRun(long[] handles, MemorySegment[] destinations, int count, boolean[] found, Throwable[] failures) {
        checkUsable();
        long start = System.nanoTime();
        try {
            protocol.readRun(handles, destinations, count, found, failures);
            Libc.deliverPendingFaults();
        } catch (InternalError e) {
            throw faultOf(e);
        }
        meterRun(true, destinations, found, failures, count, start);
    }

    /**
     * Records the objects of a run that were written (no failure) or, for {@code reads}, read
     * ({@code found} and no failure), the sizes of their {@code segments}, as one run begun at
     * {@code start}.
     */
    private void meterRun(boolean reads, MemorySegment[] segments, boolean[] found, Throwable[] failures, int count,
                          long start) {
        long ops = 0;
        long bytes = 0;
        for (int i = 0; i < count; i++) {
            if (failures[i] == null && (!reads || found[i])) {
                ops++;
                bytes += segments[i].byteSize();
            }
        }
        if (ops > 0 && reads) {
            meter.recordReads(ops, bytes, System.nanoTime() - start);
        } else if (ops > 0) {
            meter.recordWrites(ops, bytes, System.nanoTime() - start);
        }
    }

    @Override
    public boolean read(long handle, MemorySegment dst) {
        return scatterRead(handle, List.of(dst));
    }

    @Override
    public boolean scatterRead(long handle, List<MemorySegment> parts) {
        checkUsable();
        long start = meter.startRead();
        boolean ok;
        try {
            ok = protocol.read(handle, parts);
            Libc.deliverPendingFaults();
        } catch (InternalError e) {
            throw faultOf(e);
        }
        if (ok) {
            long bytes = 0;
            for (MemorySegment p : parts) {
                bytes += p.byteSize();
            }
            meter.readDone(bytes, start);
        }
        return ok;
    }

    /**
     * Publishes {@code length} bytes placed in allocation {@code handle} through {@link #segment}
     * whose {@link dev.strata.memory.Checksum64} the caller computed while placing them (e.g. with
     * {@link dev.strata.memory.Checksum64#copyToMappedAndUpdate}, never the fused vector copy, whose
     * fault on a truncated mapping would end the JVM), so the bytes are not read again. A wrong
     * checksum makes every later read fail with a {@link dev.strata.memory.CorruptObjectException}.
     */
    public void publish(long handle, long length, long checksum) {
        checkUsable();
        long start = System.nanoTime();
        try {
            protocol.publishInPlace(handle, length, checksum);
            Libc.deliverPendingFaults();
        } catch (InternalError e) {
            throw faultOf(e);
        }
        meter.recordWrite(length, System.nanoTime() - start);
    }

    /**
     * The generation of the allocation at {@code handle} (being written or published), or -1 if
     * nothing is allocated there. A later allocation at the same handle has another generation,
     * so a structure that records handle and generation can tell whether the allocation it
     * recorded is still there (see {@link #freeIfGeneration}).
     */
    public long allocationGeneration(long handle) {
        checkUsable();
        return allocator.generationIfAllocated(handle);
    }

    /**
     * Frees the allocation at {@code handle} only if it is still the one of {@code generation};
     * a later allocation at that handle, or none, is left alone. Safe against a concurrent free
     * or reclaim of the same allocation: exactly one of them frees it.
     *
     * @return true if this call freed it
     */
    public boolean freeIfGeneration(long handle, long generation) {
        checkUsable();
        return allocator.freeIfGeneration(handle, generation);
    }

    /**
     * The root region reserved in the pool for a structure built on it (see
     * {@link PoolConfig#rootRegionSize()}); zero bytes long if the pool has none. Zeroed when the
     * pool was created; its layout belongs to that structure.
     */
    public MemorySegment rootRegion() {
        checkUsable();
        return root;
    }

    /** The data area: handle {@code h} is at offset {@code h} of this segment. */
    public MemorySegment dataArea() {
        checkUsable();
        return data;
    }

    /** The incarnation of this process's slot: bumped at every claim of a slot. */
    public long processIncarnation() {
        return processes.incarnation(slot);
    }

    /**
     * The incarnation of the process holding {@code processSlot} if that slot is held (ACTIVE),
     * else -1. With {@link #isProcessAlive} it tells whether a recorded (slot, incarnation) owner
     * is still the same, living process.
     */
    public long processIncarnation(int processSlot) {
        checkUsable();
        long w = processes.stateWord(processSlot);
        long incarnation = processes.incarnation(processSlot);
        return ProcessTable.state(w) == ProcessTable.ACTIVE && processes.stateWord(processSlot) == w ? incarnation : -1;
    }

    /**
     * True if the process holding {@code processSlot} with incarnation {@code incarnation} is
     * alive (its pid exists with the recorded start time; see {@link ProcessTable}). A slot held
     * by another incarnation, free, or being reclaimed means that process is gone.
     */
    public boolean isProcessAlive(int processSlot, long incarnation) {
        checkUsable();
        long w = processes.stateWord(processSlot);
        if (ProcessTable.state(w) != ProcessTable.ACTIVE || processes.incarnation(processSlot) != incarnation) {
            return false;
        }
        boolean alive = processSlot == slot || processes.isAlive(processSlot, ProcessTable.payload(w));
        return alive && processes.stateWord(processSlot) == w && processes.incarnation(processSlot) == incarnation;
    }

    /** The length of the object published at {@code handle}, or -1 if none is readable now. */
    public long publishedLength(long handle) {
        checkUsable();
        return protocol.publishedLength(handle);
    }

    /**
     * A view of allocation bytes {@code [offset, offset+length)}. Writes through it become readable
     * only by {@link #publish}; reads through it are not checked against the publish state.
     */
    @Override
    public MemorySegment segment(long handle, long offset, long length) {
        long room = allocationSize(handle);
        if (offset < 0 || length < 0 || offset + length > room) {
            throw new IndexOutOfBoundsException("range [" + offset + ", " + (offset + length) + ") is outside allocation "
                    + handle + " of " + room + " bytes in tier '" + name() + "'");
        }
        return data.asSlice(handle + offset, length);
    }

    @Override
    public TierStats stats() {
        checkUsable();
        try { // read by metrics threads, which may be the first to meet a truncated header
            TierStats stats = meter.snapshot(name(), kind(), capacity(), allocator.used(), allocator.allocationCount());
            Libc.deliverPendingFaults();
            return stats;
        } catch (InternalError e) {
            throw faultOf(e);
        }
    }

    /** The pool's layout as read from (or written to) its header. */
    public PoolHeader.Layout layout() {
        return layout;
    }

    /** The files or devices, in stripe order. */
    public List<Path> paths() {
        return config.paths();
    }

    /** True if this process created (and initialised) the pool. */
    public boolean isCreator() {
        return creator;
    }

    /** This process's slot in the process table. */
    public int processSlot() {
        return slot;
    }

    /** Processes that currently hold a slot (this one included). */
    public int attachedProcesses() {
        checkUsable();
        return processes.occupied();
    }

    /**
     * Unmaps the pool and frees this process's slot. Allocations this process still holds
     * unpublished are freed first (nobody else can publish them); published objects stay.
     */
    @Override
    public void close() {
        if (!open) {
            return;
        }
        synchronized (this) {
            if (!open) {
                return;
            }
            open = false;
        }
        LockSupport.unpark(heartbeat);
        try {
            heartbeat.join(TimeUnit.SECONDS.toMillis(5));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try {
            if (fault == null) { // a faulted mapping is left alone: the others reclaim this slot once the process is gone
                allocator.reclaimSlot(slot);
                processes.release(slot, pid);
            }
            Libc.deliverPendingFaults();
        } catch (InternalError e) {
            if (!isMappingFault(e)) {
                throw e;
            }
            recordFault(e);
        } finally {
            arena.close();
        }
    }

    /**
     * Closes this process's mapping and removes the pool's files (regular files only; a device is
     * left as it is). Processes that still have the pool mapped keep their mapping until they
     * close. Meant for the creator when the pool is no longer wanted.
     */
    public void destroy() {
        close();
        List<Path> paths = config.paths();
        for (int d = 0; d < paths.size(); d++) {
            Path p = paths.get(d);
            Object key = fileKeys.get(d);
            try {
                if (key != null) {
                    ShmFiles.removeIfSame(p, key); // only the file this pool was opened on
                }
            } catch (IOException e) {
                throw new TierIoException(name(), "removing pool file " + p, e);
            }
        }
    }

    /**
     * True if every regular file of the pool is still, at its path, the file this tier mapped
     * (by file identity): false once one was removed or replaced (a pool created again by another
     * process), whose blocks this mapping no longer sees. Devices count as the same. Any thread.
     */
    public boolean filesUnchanged() {
        List<Path> paths = config.paths();
        for (int d = 0; d < paths.size(); d++) {
            Object key = fileKeys.get(d);
            if (key == null) {
                continue;
            }
            try {
                if (!key.equals(ShmFiles.fileKey(paths.get(d)))) {
                    return false;
                }
            } catch (IOException e) {
                return false; // gone, or unreadable: not the file mapped
            }
        }
        return true;
    }

    /** The identity of each of the pool's regular files (null for a device or where the file system has none). */
    private static List<Object> fileKeys(PoolConfig config) {
        List<Object> keys = new ArrayList<>();
        for (Path p : config.paths()) {
            try {
                keys.add(Files.isRegularFile(p) ? ShmFiles.fileKey(p) : null);
            } catch (IOException e) {
                throw new TierIoException(config.name(), "reading the identity of pool file " + p, e);
            }
        }
        return Collections.unmodifiableList(keys);
    }

    private void checkOpen() {
        if (!open) {
            throw new IllegalStateException("pool tier '" + name() + "' is closed");
        }
    }

    /** As {@link #checkOpen}, and refuses a faulted tier without touching its mapping. */
    private void checkUsable() {
        checkOpen();
        String why = fault;
        if (why != null) {
            throw faultException(why, null);
        }
    }

    /**
     * True if {@code t} is the JDK's report of a fault on a mapped page ({@code SIGBUS}: the file
     * behind the page was truncated, or its file system had no space for it).
     */
    public static boolean isMappingFault(Throwable t) {
        return t instanceof InternalError && t.getMessage() != null
                && t.getMessage().contains("fault occurred in an unsafe memory access");
    }

    /**
     * Marks this tier faulted because an access to its mapping raised {@code cause} (see
     * {@link #isMappingFault}): from now on no call touches the mapping. For callers that copy
     * through {@link #dataArea} or {@link #rootRegion} themselves; the tier's own data path
     * records its faults. The first fault is kept; any thread.
     *
     * @return the exception that reports the fault, naming the pool's files, to throw in its place
     */
    public TierIoException recordFault(Throwable cause) {
        String why = "an access to the mapping faulted (" + cause + "): the file was truncated or its file system"
                + " ran out of space; the pool is no longer used by this process";
        synchronized (this) {
            if (fault == null) {
                fault = why;
            } else {
                why = fault;
            }
        }
        return faultException(why, cause);
    }

    /** Why this tier's mapping faulted, or null if it never did (see {@link #recordFault}). */
    public String fault() {
        return fault;
    }

    /** The fault's exception if {@code e} is a mapping fault; {@code e} itself otherwise (rethrown). */
    private TierIoException faultOf(InternalError e) {
        if (!isMappingFault(e)) {
            throw e;
        }
        return recordFault(e);
    }

    private TierIoException faultException(String why, Throwable cause) {
        IOException io = new IOException(why);
        if (cause != null) {
            io.initCause(cause);
        }
        return new TierIoException(name(), "using pool file " + config.paths(), io);
    }
}
