package dev.strata.memory.disk;

import dev.strata.memory.Sizes;

import java.nio.file.Path;
import java.util.Objects;

/**
 * Configuration of a {@link DiskTier}: where its files go, how much it may hold, how that is split
 * into data files, and how it does I/O. Built fluently, then checked by {@link #conclude()}, which
 * fails fast naming the offending value.
 *
 * <p>Defaults: one data file, direct I/O requested, files kept on close, 8 staging buffers of
 * 1 MiB, a warning when the capacity exceeds the usable space.
 *
 * <p>Threads: a builder confined to the thread configuring it; {@link DiskTier} copies what it
 * needs at open.
 */
public final class DiskTierOptions {

    /** What to do when the capacity exceeds the file system's usable space at open. */
    public enum CapacityCheck {
        /** Log a warning naming both numbers and open anyway (files are sparse; writes may hit ENOSPC). */
        WARN,
        /** Refuse to open, naming both numbers. */
        FAIL
    }

    private String name = "disk";
    private Path directory;
    private long capacity;                 // bytes the tier may hold
    private int dataFiles = 1;             // files the capacity is split over (ignored if fileSize is set)
    private long fileSize;                 // bytes per data file; 0 = capacity / dataFiles
    private boolean directIo = true;       // request O_DIRECT (falls back loudly where refused)
    private boolean deleteOnClose;         // delete the data files on close
    private int stagingBuffers = 8;        // staging buffers, bounds staged transfers in flight
    private long stagingBufferSize = Sizes.MiB; // bytes per staging buffer (rounded up to the block size)
    private CapacityCheck capacityCheck = CapacityCheck.WARN;

    private DiskTierOptions() {
    }

    /** Options for a tier in {@code directory} (created if missing) holding {@code capacity} bytes. */
    public static DiskTierOptions in(Path directory, long capacity) {
        DiskTierOptions o = new DiskTierOptions();
        o.directory = directory;
        o.capacity = capacity;
        return o;
    }

    public DiskTierOptions name(String value) {
        this.name = value;
        return this;
    }

    public DiskTierOptions dataFiles(int value) {
        this.dataFiles = value;
        return this;
    }

    /** Bytes per data file; the number of files becomes {@code ceil(capacity / fileSize)}. */
    public DiskTierOptions fileSize(long value) {
        this.fileSize = value;
        return this;
    }

    public DiskTierOptions directIo(boolean value) {
        this.directIo = value;
        return this;
    }

    public DiskTierOptions deleteOnClose(boolean value) {
        this.deleteOnClose = value;
        return this;
    }

    public DiskTierOptions stagingBuffers(int value) {
        this.stagingBuffers = value;
        return this;
    }

    public DiskTierOptions stagingBufferSize(long value) {
        this.stagingBufferSize = value;
        return this;
    }

    public DiskTierOptions capacityCheck(CapacityCheck value) {
        this.capacityCheck = value;
        return this;
    }

    /**
     * Checks every value.
     *
     * @return this
     * @throws IllegalArgumentException naming the first value that is not valid
     */
    public DiskTierOptions conclude() {
        if (name == null || name.isBlank()) {
            throw new IllegalArgumentException("disk tier name must not be blank, got '" + name + "'");
        }
        Objects.requireNonNull(directory, "disk tier '" + name + "': directory is missing");
        if (capacity <= 0) {
            throw new IllegalArgumentException("disk tier '" + name + "': capacity must be positive, got " + capacity);
        }
        if (dataFiles < 1) {
            throw new IllegalArgumentException("disk tier '" + name + "': dataFiles must be >= 1, got " + dataFiles);
        }
        if (fileSize < 0) {
            throw new IllegalArgumentException("disk tier '" + name + "': fileSize must be >= 0 (0 = derived), got " + fileSize);
        }
        if (fileSize > 0 && dataFiles != 1) {
            throw new IllegalArgumentException("disk tier '" + name + "': give either dataFiles (" + dataFiles
                    + ") or fileSize (" + fileSize + "), not both");
        }
        if (stagingBuffers < 1) {
            throw new IllegalArgumentException("disk tier '" + name + "': stagingBuffers must be >= 1, got " + stagingBuffers);
        }
        if (stagingBufferSize <= 0) {
            throw new IllegalArgumentException("disk tier '" + name + "': stagingBufferSize must be positive, got "
                    + stagingBufferSize);
        }
        Objects.requireNonNull(capacityCheck, "disk tier '" + name + "': capacityCheck is missing");
        return this;
    }

    public String name() {
        return name;
    }

    public Path directory() {
        return directory;
    }

    public long capacity() {
        return capacity;
    }

    public int dataFiles() {
        return dataFiles;
    }

    public long fileSize() {
        return fileSize;
    }

    public boolean directIo() {
        return directIo;
    }

    public boolean deleteOnClose() {
        return deleteOnClose;
    }

    public int stagingBuffers() {
        return stagingBuffers;
    }

    public long stagingBufferSize() {
        return stagingBufferSize;
    }

    public CapacityCheck capacityCheck() {
        return capacityCheck;
    }
}
