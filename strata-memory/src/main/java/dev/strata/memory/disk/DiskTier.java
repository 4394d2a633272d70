package dev.strata.memory.disk;

import dev.strata.memory.posix.Libc;
import dev.strata.memory.Allocator;
import dev.strata.memory.Checksum64;
import dev.strata.memory.CorruptObjectException;
import dev.strata.memory.Sizes;
import dev.strata.memory.Tier;
import dev.strata.memory.TierIoException;
import dev.strata.memory.TierKind;
import dev.strata.memory.TierMeter;
import dev.strata.memory.TierStats;
import dev.strata.memory.transfer.StagingPool;
import dev.strata.memory.alloc.BestFitAllocator;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * The DISK tier: objects in data files under one directory, moved with direct I/O
 * ({@code O_DIRECT}) where the file system supports it and with buffered I/O, loudly, where not.
 *
 * <p>Design. The tier's address space {@code [0, capacity)} is split into equal data files; a
 * handle is {@code fileIndex * fileSize + offsetInFile}. Each file's space is managed in memory
 * by its own {@link BestFitAllocator} aligned to the I/O block (the file store's block size, at
 * least 4096), so an object never spans two files. An allocation for {@code n} payload bytes reserves one header
 * block plus {@code n} rounded up to the block size: the {@link DiskObjectHeader} (magic, length,
 * {@link Checksum64}, write generation) sits in the first block and the payload starts at the second.
 * A write checksums the payload as it moves it (in the same pass as the copy into a staging buffer,
 * {@link Checksum64#copyAndUpdate}; a caller segment written in place is checksummed over the
 * source), encodes the header into a staging block and moves header and payload with ONE
 * positional vectored write ({@code pwritev(2)} on a raw descriptor, see {@link DataFile}):
 * [header block from staging | payload straight from the caller's segment | staged tail block];
 * only then is the object marked readable. A read is likewise ONE {@code preadv(2)} of
 * [header block into staging | payload straight into the caller's segment | tail block into
 * staging], after which the header is checked against what the tier remembers (handle, length,
 * generation, checksum, kept in memory) and the payload against its checksum (summed over the
 * bytes read, or fused with the copy out of staging), throwing {@link CorruptObjectException} on
 * any mismatch. Direct I/O needs aligned buffers, offsets and lengths: a caller's native segment
 * whose address is block-aligned moves in place except for a tail shorter than a block;
 * everything else is copied through a staging buffer from a small pool reserved at open (a
 * block-aligned {@link StagingPool}, each buffer followed by the scratch of the vectored I/O
 * call), header and payload still in one I/O when they fit one buffer
 * (an object larger than a staging buffer goes chunk by chunk: writes put the header last, reads
 * take it with the first chunk). Data files are sparse, so a full file system shows up as ENOSPC
 * during a write: the write fails with {@link TierIoException}, that object stays unreadable,
 * every other object stays readable, and later writes succeed once space frees. Nothing is synced
 * to stable storage and a tier starts empty at open (its files are truncated): DISK holds a cache
 * that does not outlive the process; the headers make the files self-describing for inspection.
 *
 * <p>Crash and ordering. One vectored write gives no order between its blocks: a crash (or a
 * failed write) mid-way can leave the new header over an old or partial payload, or the old header
 * over a new payload. While the tier is open the in-memory record is the source of truth: an
 * object is readable only after its write returned in full, and every read checks the header's
 * generation and the payload's checksum against that record, so a torn object is reported as
 * {@link CorruptObjectException}, never returned. On disk, a header vouches for a payload only
 * if the payload's {@link Checksum64} matches the one it records: a torn object is detectable by
 * anyone inspecting the files. A read that throws leaves the destination's bytes unspecified (an
 * in-place payload lands there before the checks run).
 *
 * <p>Threads: every method may be called from any thread. Reads and writes of different objects
 * run fully in parallel: the data path takes no exclusive lock (positional vectored I/O on a raw
 * descriptor, a concurrent map of object records, per-file allocators with their own short
 * locks); it holds the shared side of a read-write lock whose exclusive side only {@link #close}
 * takes, so that close waits for transfers in flight. Transfers in flight are bounded by the
 * number of staging buffers (every transfer borrows one for its header block; at least as many as
 * I/O threads is the sensible setting). As the {@link Tier} contract says, a write of one
 * allocation must not race with a read, write or free of the same allocation. A read or write
 * started by a thread whose interrupt flag is set fails with {@link TierIoException} (cause
 * {@link java.io.InterruptedIOException}, flag kept; a failed write leaves its object
 * unreadable); an I/O call already in the kernel completes. Interrupts never disturb the data
 * files or other threads' transfers (a raw descriptor is not closed by an interrupt).
 *
 * <p>Invariants: an object is readable only after its payload and header are both on disk and its
 * record is published (a volatile store after the record's fields); a failed write leaves the
 * object unreadable; allocations never overlap and never span files; every allocation is freed
 * at most once; the staging pool and the files are released exactly once, by {@link #close}.
 */
public final class DiskTier implements Tier {

    private static final System.Logger LOG = System.getLogger(DiskTier.class.getName());

    /**
     * Where an allocation lives on disk, for diagnostics and tools.
     *
     * @param file          the data file
     * @param headerOffset  bytes, file offset of the {@link DiskObjectHeader} block
     * @param payloadOffset bytes, file offset of the first payload byte (one block after the header)
     */
    public record Location(Path file, long headerOffset, long payloadOffset) {
    }

    /** What the tier remembers about one allocation. */
    private static final class ObjectRecord {
        final long handle;         // the allocation's handle in the tier's address space
        final int file;            // index of the data file
        final long fileOffset;     // bytes, start of the allocation (the header block) in the file
        final long payloadRoom;    // bytes of payload that fit
        long length;               // payload bytes of the last complete write
        long checksum;             // Checksum64 of that payload
        long generation;           // write generation of that write
        volatile boolean readable; // published after the three fields above; false during a write

        ObjectRecord(long handle, int file, long fileOffset, long payloadRoom) {
            this.handle = handle;
            this.file = file;
            this.fileOffset = fileOffset;
            this.payloadRoom = payloadRoom;
        }
    }

    /** One checksum state per thread, reset per object: transfers allocate none. */
    private static final ThreadLocal<Checksum64> CHECKSUM = ThreadLocal.withInitial(Checksum64::new);

    private final String name;
    private final Path directory;
    private final FileStoreInfo store;
    private final long blockSize;                 // bytes; I/O block: alignment of every offset, length and direct buffer
    private final long fileSize;                  // bytes of address space per data file
    private final DataFile[] files;
    private final BestFitAllocator[] allocators;  // one per data file; thread-safe
    private final IoMode mode;
    private final String modeReason;              // why the mode was chosen (the fallback reason when BUFFERED)
    private final boolean deleteOnClose;
    private final StagingPool staging;            // each buffer: [stagingBytes staging | PosixFileIo.SCRATCH_BYTES scratch]
    private final long stagingBytes;              // bytes of one staging buffer, a block multiple
    private final ConcurrentHashMap<Long, ObjectRecord> records = new ConcurrentHashMap<>(); // handle -> record
    private final TierMeter meter = new TierMeter();
    private final AtomicLong generations = new AtomicLong();   // last write generation handed out
    private final AtomicInteger nextFile = new AtomicInteger(); // round-robin start for allocation
    private final ReentrantReadWriteLock lifecycle = new ReentrantReadWriteLock();
    private final int pid = (int) ProcessHandle.current().pid();
    private volatile boolean closed;

    private DiskTier(String name, Path directory, FileStoreInfo store, long fileSize, DataFile[] files, IoMode mode,
                     String modeReason, boolean deleteOnClose, StagingPool staging, long stagingBytes) {
        this.name = name;
        this.directory = directory;
        this.store = store;
        this.blockSize = store.directIoAlignment();
        this.fileSize = fileSize;
        this.files = files;
        this.mode = mode;
        this.modeReason = modeReason;
        this.deleteOnClose = deleteOnClose;
        this.staging = staging;
        this.stagingBytes = stagingBytes;
        this.allocators = new BestFitAllocator[files.length];
        for (int i = 0; i < files.length; i++) {
            allocators[i] = new BestFitAllocator(fileSize, blockSize);
        }
    }

    /**
     * Opens a tier as {@code options} say: creates the directory if missing, probes its file
     * store, creates (or truncates) and locks the data files with mode 0600, and allocates the
     * staging pool. The tier starts empty.
     *
     * @throws IllegalArgumentException if the options are not valid, or the capacity exceeds the
     *                                  usable space and {@link DiskTierOptions.CapacityCheck#FAIL} is set
     * @throws TierIoException          if the directory or files cannot be set up
     */
    public static DiskTier open(DiskTierOptions options) {
        options.conclude();
        String name = options.name();
        Path dir = options.directory().toAbsolutePath();
        FileStoreInfo store;
        try {
            Files.createDirectories(dir);
            store = FileStoreInfo.probe(dir);
        } catch (IOException e) {
            throw new TierIoException(name, "open of directory " + dir, e);
        }
        long block = store.directIoAlignment();
        if (!Sizes.isPowerOfTwo(block)) {
            throw new IllegalArgumentException("disk tier '" + name + "': block size " + store.blockSize() + " of " + dir
                    + " is not a power of two");
        }
        long fileSize;
        int fileCount;
        if (options.fileSize() > 0) {
            fileSize = BlockAlignment.alignUp(options.fileSize(), block);
            long count = (options.capacity() + fileSize - 1) / fileSize;
            if (count > Integer.MAX_VALUE) {
                throw new IllegalArgumentException("disk tier '" + name + "': capacity " + options.capacity()
                        + " in files of " + fileSize + " bytes needs " + count + " files");
            }
            fileCount = (int) count;
        } else {
            fileCount = options.dataFiles();
            fileSize = BlockAlignment.alignUp((options.capacity() + fileCount - 1) / fileCount, block);
        }
        if (fileSize < 2 * block) {
            throw new IllegalArgumentException("disk tier '" + name + "': data files of " + fileSize
                    + " bytes cannot hold a header block and a payload block of " + block + " bytes");
        }
        long capacity = fileSize * fileCount;
        if (capacity > store.usableSpace()) {
            String msg = "disk tier '" + name + "': capacity " + capacity + " bytes (" + Sizes.format(capacity)
                    + ") exceeds the usable space " + store.usableSpace() + " bytes (" + Sizes.format(store.usableSpace())
                    + ") of " + dir + " (" + store.type() + "); writes may fail with ENOSPC";
            if (options.capacityCheck() == DiskTierOptions.CapacityCheck.FAIL) {
                throw new IllegalArgumentException(msg);
            }
            LOG.log(System.Logger.Level.WARNING, msg);
        }

        IoMode mode;
        String reason;
        if (!options.directIo()) {
            mode = IoMode.BUFFERED;
            reason = "direct I/O switched off by configuration";
            LOG.log(System.Logger.Level.INFO, "disk tier '" + name + "' in " + dir + ": " + reason);
        } else if (!store.directIoAccepted()) {
            mode = IoMode.BUFFERED;
            reason = "O_DIRECT refused in " + dir + " (" + store.type() + "): " + store.directIoProblem();
            LOG.log(System.Logger.Level.WARNING, "disk tier '" + name + "' falls back to BUFFERED I/O: " + reason);
        } else if (store.memoryBacked()) {
            mode = IoMode.BUFFERED;
            reason = "file system '" + store.type() + "' at " + dir
                    + " is memory-backed: O_DIRECT is accepted there but bypasses nothing";
            LOG.log(System.Logger.Level.WARNING, "disk tier '" + name + "' falls back to BUFFERED I/O: " + reason);
        } else {
            mode = IoMode.DIRECT;
            reason = "O_DIRECT works in " + dir + " (" + store.type() + ", block " + block + " B)";
        }

        DataFile[] files;
        try {
            files = openFiles(name, dir, fileCount, mode == IoMode.DIRECT);
        } catch (IOException e) {
            if (mode != IoMode.DIRECT || e instanceof DataFile.LockedException) {
                throw new TierIoException(name, "open of data files in " + dir, e);
            }
            mode = IoMode.BUFFERED;
            reason = "opening a data file with O_DIRECT in " + dir + " failed: " + e;
            LOG.log(System.Logger.Level.WARNING, "disk tier '" + name + "' falls back to BUFFERED I/O: " + reason);
            try {
                files = openFiles(name, dir, fileCount, false);
            } catch (IOException again) {
                throw new TierIoException(name, "open of data files in " + dir, again);
            }
        }
        long stagingSize = Math.max(2 * block, BlockAlignment.alignUp(options.stagingBufferSize(), block));
        StagingPool staging;
        try {
            staging = new StagingPool("disk-staging:" + name, options.stagingBuffers(), stagingSize + PosixFileIo.SCRATCH_BYTES,
                    block, StagingPool.Reserve.AT_CREATION);
        } catch (RuntimeException e) {
            closeQuietly(files);
            throw e;
        }
        DiskTier tier = new DiskTier(name, dir, store, fileSize, files, mode, reason, options.deleteOnClose(), staging,
                stagingSize);
        LOG.log(System.Logger.Level.INFO, tier.description());
        return tier;
    }

    private static DataFile[] openFiles(String name, Path dir, int count, boolean direct) throws IOException {
        DataFile[] files = new DataFile[count];
        try {
            for (int i = 0; i < count; i++) {
                files[i] = DataFile.open(dir.resolve(name + "-" + i + ".data"), direct);
            }
            return files;
        } catch (IOException | RuntimeException e) {
            closeQuietly(files);
            throw e;
        }
    }

    private static void closeQuietly(DataFile[] files) {
        for (DataFile f : files) {
            if (f != null) {
                try {
                    f.close();
                } catch (IOException ignored) {
                    // already failing; the first error is the one reported
                }
            }
        }
    }

    // ---- identity and occupancy -------------------------------------------------------------

    @Override
    public String name() {
        return name;
    }

    @Override
    public TierKind kind() {
        return TierKind.DISK;
    }

    @Override
    public long capacity() {
        return fileSize * files.length;
    }

    @Override
    public long used() {
        long sum = 0;
        for (BestFitAllocator a : allocators) {
            sum += a.used();
        }
        return sum;
    }

    @Override
    public boolean sharedAcrossProcesses() {
        return false;
    }

    @Override
    public boolean revocable() {
        return false;
    }

    @Override
    public boolean isAddressable() {
        return false;
    }

    @Override
    public boolean isPlainMemory() {
        return false;
    }

    /** How this tier does I/O. */
    public IoMode ioMode() {
        return mode;
    }

    /** Why {@link #ioMode()} is what it is; for BUFFERED, the reason direct I/O is not used. */
    public String ioModeReason() {
        return modeReason;
    }

    /** The file store probed at open. */
    public FileStoreInfo fileStore() {
        return store;
    }

    /**
     * Bytes; the I/O block: the alignment of allocations, header blocks and direct transfers (the
     * file store's block size, at least 4096; see {@link FileStoreInfo#directIoAlignment()}).
     */
    public long blockSize() {
        return blockSize;
    }

    /** The data files, in handle order. */
    public List<Path> dataFiles() {
        List<Path> paths = new ArrayList<>(files.length);
        for (DataFile f : files) {
            paths.add(f.path());
        }
        return paths;
    }

    /** Vectored I/O calls made on the data files so far (normally one per object read or written). */
    long ioCalls() {
        long sum = 0;
        for (DataFile f : files) {
            sum += f.ioCalls();
        }
        return sum;
    }

    /** Where allocation {@code handle}'s header and payload are. */
    public Location location(long handle) {
        ObjectRecord r = requireRecord(handle);
        return new Location(files[r.file].path(), r.fileOffset, r.fileOffset + blockSize);
    }

    /** One line: name, files, directory, file system, block size and I/O mode with its reason. */
    public String description() {
        return "disk tier '" + name + "': " + files.length + " data file(s) of " + Sizes.format(fileSize) + " ("
                + Sizes.format(capacity()) + ") in " + directory + " on " + store.type() + " (" + store.storeName()
                + "), block " + blockSize + " B, " + mode + " I/O: " + modeReason;
    }

    @Override
    public String toString() {
        return description();
    }

    @Override
    public TierStats stats() {
        return meter.snapshot(name, TierKind.DISK, capacity(), used(), records.size());
    }

    // ---- allocation --------------------------------------------------------------------------

    @Override
    public long allocate(long size) {
        if (size <= 0) {
            throw new IllegalArgumentException("allocation size must be positive in tier '" + name + "', got " + size);
        }
        lifecycle.readLock().lock();
        try {
            ensureOpen();
            if (size > fileSize - blockSize) {
                return Allocator.FULL; // larger than one file can ever hold
            }
            long reserve = blockSize + BlockAlignment.alignUp(size, blockSize);
            int start = Math.floorMod(nextFile.getAndIncrement(), files.length);
            for (int k = 0; k < files.length; k++) {
                int f = (start + k) % files.length;
                long offset = allocators[f].allocate(reserve);
                if (offset != Allocator.FULL) {
                    long handle = f * fileSize + offset;
                    long room = allocators[f].sizeOf(offset) - blockSize;
                    records.put(handle, new ObjectRecord(handle, f, offset, room));
                    return handle;
                }
            }
            return Allocator.FULL;
        } finally {
            lifecycle.readLock().unlock();
        }
    }

    @Override
    public void free(long handle) {
        lifecycle.readLock().lock();
        try {
            ensureOpen();
            ObjectRecord r = records.remove(handle);
            if (r == null) {
                throw new IllegalArgumentException("handle " + handle + " is not allocated in tier '" + name + "'");
            }
            r.readable = false;
            allocators[r.file].free(r.fileOffset);
        } finally {
            lifecycle.readLock().unlock();
        }
    }

    @Override
    public long allocationSize(long handle) {
        return requireRecord(handle).payloadRoom;
    }

    @Override
    public MemorySegment segment(long handle, long offset, long length) {
        throw new UnsupportedOperationException("tier '" + name + "' (DISK) is not addressable: use read/write");
    }

    // ---- writes ------------------------------------------------------------------------------

    @Override
    public void write(long handle, MemorySegment src) {
        writeChain(handle, new SegmentChain(List.of(src)));
    }

    @Override
    public void gatherWrite(long handle, List<MemorySegment> parts) {
        writeChain(handle, new SegmentChain(parts));
    }

    private void writeChain(long handle, SegmentChain src) {
        lifecycle.readLock().lock();
        try {
            ensureOpen();
            ObjectRecord r = requireRecord(handle);
            long length = src.length();
            if (length > r.payloadRoom) {
                throw new IllegalArgumentException("object of " + length + " bytes does not fit allocation " + handle
                        + " of " + r.payloadRoom + " payload bytes in tier '" + name + "'");
            }
            r.readable = false;
            long start = System.nanoTime();
            DiskObjectHeader header;
            try {
                header = writeObject(r, src);
            } catch (IOException e) {
                String full = e instanceof PosixFileIo.ErrnoException errno && errno.errno() == Libc.ENOSPC
                        ? " [file system full]" : "";
                throw new TierIoException(name, "write of handle " + handle + " (" + length + " payload bytes, "
                        + (blockSize + BlockAlignment.alignUp(length, blockSize)) + " bytes on disk) to "
                        + files[r.file].path() + " at " + r.fileOffset + full, e);
            }
            r.length = length;
            r.checksum = header.payloadChecksum();
            r.generation = header.generation();
            r.readable = true; // publish (volatile store after the fields)
            meter.recordWrite(length, System.nanoTime() - start);
        } finally {
            lifecycle.readLock().unlock();
        }
    }

    /**
     * Writes header and payload, in one vectored call unless the object must be staged and is
     * larger than a staging buffer; returns the header written.
     */
    private DiskObjectHeader writeObject(ObjectRecord r, SegmentChain src) throws IOException {
        DataFile file = files[r.file];
        long length = src.length();
        long headerAt = r.fileOffset;
        long payloadAt = headerAt + blockSize;
        long generation = generations.incrementAndGet();
        Checksum64 checksum = CHECKSUM.get().reset();
        DiskObjectHeader header;
        MemorySegment borrowed = borrowStaging();
        MemorySegment buf = borrowed.asSlice(0, stagingBytes);
        MemorySegment scratch = borrowed.asSlice(stagingBytes, PosixFileIo.SCRATCH_BYTES);
        try {
            MemorySegment single = src.parts().size() == 1 ? src.parts().getFirst() : null;
            long inPlace = single == null ? 0 : inPlaceLength(single);
            if (inPlace > 0) {
                // [header block | payload straight from the caller | staged tail], one pwritev
                checksum.update(single, 0, inPlace); // written straight from the source: summed over it
                long tail = length - inPlace;        // < one block (direct); 0 (buffered)
                MemorySegment tailBlock = null;
                if (tail > 0) {
                    long io = ioLength(tail);
                    checksum.copyAndUpdate(single, inPlace, buf, blockSize, tail);
                    buf.asSlice(blockSize + tail, io - tail).fill((byte) 0);
                    tailBlock = buf.asSlice(blockSize, io);
                }
                header = header(r, length, generation, checksum);
                MemorySegment block = buf.asSlice(0, blockSize);
                header.encodeTo(block);
                MemorySegment payload = single.asSlice(0, inPlace);
                if (tailBlock == null) {
                    file.transfer(true, scratch, headerAt, block, payload);
                } else {
                    file.transfer(true, scratch, headerAt, block, payload, tailBlock);
                }
            } else if (blockSize + ioLength(length) <= buf.byteSize()) {
                // [header block | staged payload] contiguous in one buffer, one pwritev
                long io = ioLength(length);
                src.copyOut(0, buf, blockSize, length, checksum);
                buf.asSlice(blockSize + length, io - length).fill((byte) 0);
                header = header(r, length, generation, checksum);
                header.encodeTo(buf.asSlice(0, blockSize));
                file.transfer(true, scratch, headerAt, buf.asSlice(0, blockSize + io));
            } else {
                // larger than a staging buffer: payload chunk by chunk, then the header
                long chunk = buf.byteSize(); // a block multiple, so every chunk but the last is aligned
                for (long done = 0; done < length; ) {
                    long n = Math.min(chunk, length - done);
                    long io = ioLength(n);
                    src.copyOut(done, buf, 0, n, checksum);
                    buf.asSlice(n, io - n).fill((byte) 0);
                    file.transfer(true, scratch, payloadAt + done, buf.asSlice(0, io));
                    done += n;
                }
                header = header(r, length, generation, checksum);
                MemorySegment block = buf.asSlice(0, blockSize);
                header.encodeTo(block);
                file.transfer(true, scratch, headerAt, block);
            }
        } finally {
            staging.giveBack(borrowed);
        }
        return header;
    }

    private DiskObjectHeader header(ObjectRecord r, long length, long generation, Checksum64 checksum) {
        return new DiskObjectHeader(r.handle, length, generation, checksum.value(), pid, System.currentTimeMillis());
    }

    // ---- reads -------------------------------------------------------------------------------

    @Override
    public boolean read(long handle, MemorySegment dst) {
        return readChain(handle, new SegmentChain(List.of(dst)));
    }

    @Override
    public boolean scatterRead(long handle, List<MemorySegment> parts) {
        return readChain(handle, new SegmentChain(parts));
    }

    private boolean readChain(long handle, SegmentChain dst) {
        lifecycle.readLock().lock();
        try {
            ensureOpen();
            ObjectRecord r = records.get(handle);
            if (r == null || !r.readable) {
                return false;
            }
            long length = r.length;
            if (dst.length() != length) {
                throw new IllegalArgumentException("read of handle " + handle + " in tier '" + name + "': destination of "
                        + dst.length() + " bytes, object of " + length + " bytes");
            }
            long start = System.nanoTime();
            try {
                readObject(r, dst, length, r.generation, r.checksum);
            } catch (IOException e) {
                throw new TierIoException(name, "read of handle " + handle + " (" + length + " payload bytes) from "
                        + files[r.file].path() + " at " + r.fileOffset, e);
            }
            meter.recordRead(length, System.nanoTime() - start);
            return true;
        } finally {
            lifecycle.readLock().unlock();
        }
    }

    private void readObject(ObjectRecord r, SegmentChain dst, long length, long generation, long checksum)
            throws IOException {
        DataFile file = files[r.file];
        long headerAt = r.fileOffset;
        long payloadAt = headerAt + blockSize;
        Checksum64 sum = CHECKSUM.get().reset();
        MemorySegment borrowed = borrowStaging();
        MemorySegment buf = borrowed.asSlice(0, stagingBytes);
        MemorySegment scratch = borrowed.asSlice(stagingBytes, PosixFileIo.SCRATCH_BYTES);
        try {
            MemorySegment single = dst.parts().size() == 1 ? dst.parts().getFirst() : null;
            long inPlace = single == null ? 0 : inPlaceLength(single);
            if (inPlace > 0) {
                // [header block | payload straight into the caller | staged tail], one preadv
                long tail = length - inPlace;
                MemorySegment block = buf.asSlice(0, blockSize);
                MemorySegment payload = single.asSlice(0, inPlace);
                if (tail > 0) {
                    file.transfer(false, scratch, headerAt, block, payload, buf.asSlice(blockSize, ioLength(tail)));
                } else {
                    file.transfer(false, scratch, headerAt, block, payload);
                }
                checkHeader(buf, r, length, generation, checksum);
                sum.update(single, 0, inPlace); // read straight into the destination: summed over it
                if (tail > 0) {
                    sum.copyAndUpdate(buf, blockSize, single, inPlace, tail);
                }
            } else if (blockSize + ioLength(length) <= buf.byteSize()) {
                file.transfer(false, scratch, headerAt, buf.asSlice(0, blockSize + ioLength(length)));
                checkHeader(buf, r, length, generation, checksum);
                dst.copyIn(0, buf, blockSize, length, sum);
            } else {
                // larger than a staging buffer: the header with the first chunk, then the rest
                long first = buf.byteSize() - blockSize; // a block multiple
                file.transfer(false, scratch, headerAt, buf);
                checkHeader(buf, r, length, generation, checksum);
                dst.copyIn(0, buf, blockSize, first, sum);
                long chunk = buf.byteSize();
                for (long done = first; done < length; ) {
                    long n = Math.min(chunk, length - done);
                    file.transfer(false, scratch, payloadAt + done, buf.asSlice(0, ioLength(n)));
                    dst.copyIn(done, buf, 0, n, sum);
                    done += n;
                }
            }
        } finally {
            staging.giveBack(borrowed);
        }
        long actual = sum.value();
        if (actual != checksum) {
            throw new CorruptObjectException(name, r.handle, length, checksum, actual);
        }
    }

    private void checkHeader(MemorySegment buf, ObjectRecord r, long length, long generation, long checksum) {
        DiskObjectHeader h = DiskObjectHeader.decode(buf.asSlice(0, blockSize), name, r.handle);
        if (h.handle() != r.handle || h.payloadLength() != length || h.generation() != generation
                || h.payloadChecksum() != checksum) {
            throw new CorruptObjectException(name, r.handle, String.format(
                    "header on disk (handle %d, %d bytes, generation %d, checksum 0x%016x) does not match the object"
                            + " written (handle %d, %d bytes, generation %d, checksum 0x%016x): stale or misplaced header",
                    h.handle(), h.payloadLength(), h.generation(), h.payloadChecksum(),
                    r.handle, length, generation, checksum));
        }
    }

    // ---- helpers -----------------------------------------------------------------------------

    /**
     * Borrows a staging buffer with its scratch, waiting while all are lent (only the wait is
     * interruptible), which bounds the transfers in flight.
     */
    private MemorySegment borrowStaging() throws InterruptedIOException {
        try {
            return staging.borrow();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while waiting for one of " + staging.buffers() + " staging buffers");
        }
    }

    /** Leading bytes of {@code segment} that can move without staging (0 if none). */
    private long inPlaceLength(MemorySegment segment) {
        if (!segment.isNative()) {
            return 0;
        }
        return mode == IoMode.DIRECT ? BlockAlignment.directPrefix(segment, blockSize) : segment.byteSize();
    }

    /** Bytes to transfer for {@code n} payload bytes: rounded up to the block size under direct I/O. */
    private long ioLength(long n) {
        return mode == IoMode.DIRECT ? BlockAlignment.alignUp(n, blockSize) : n;
    }

    private ObjectRecord requireRecord(long handle) {
        ObjectRecord r = records.get(handle);
        if (r == null) {
            throw new IllegalArgumentException("handle " + handle + " is not allocated in tier '" + name + "'");
        }
        return r;
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("tier '" + name + "' is closed");
        }
    }

    /**
     * Waits for transfers in flight, then closes the data files (deleting them if configured) and
     * frees the staging pool. Later calls do nothing; every other method then fails.
     *
     * @throws TierIoException if a file cannot be closed or deleted (after trying all of them)
     */
    @Override
    public void close() {
        lifecycle.writeLock().lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
        } finally {
            lifecycle.writeLock().unlock();
        }
        IOException first = null;
        for (DataFile f : files) {
            try {
                f.close();
                if (deleteOnClose) {
                    Files.deleteIfExists(f.path());
                }
            } catch (IOException e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        staging.close();
        records.clear();
        if (first != null) {
            throw new TierIoException(name, "close of data files in " + directory, first);
        }
    }
}
