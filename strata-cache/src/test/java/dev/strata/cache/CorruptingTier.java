package dev.strata.cache;

import dev.strata.memory.CorruptObjectException;
import dev.strata.memory.Tier;
import dev.strata.memory.TierKind;
import dev.strata.memory.TierStats;

import java.lang.foreign.MemorySegment;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Fault injection: wraps a real tier, presents it as a framed, non-addressable tier (like POOL or
 * DISK), and fails the checksum of chosen handles on read.
 */
final class CorruptingTier implements Tier {
    private final Tier inner;
    private final Set<Long> corrupt = new HashSet<>();

    CorruptingTier(Tier inner) {
        this.inner = inner;
    }

    synchronized void corrupt(long handle) {
        corrupt.add(handle);
    }

    private synchronized boolean isCorrupt(long handle) {
        return corrupt.contains(handle);
    }

    @Override
    public String name() {
        return inner.name();
    }

    @Override
    public TierKind kind() {
        return TierKind.DISK;
    }

    @Override
    public long capacity() {
        return inner.capacity();
    }

    @Override
    public long used() {
        return inner.used();
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

    @Override
    public long allocate(long size) {
        return inner.allocate(size);
    }

    @Override
    public synchronized void free(long handle) {
        corrupt.remove(handle);
        inner.free(handle);
    }

    @Override
    public long allocationSize(long handle) {
        return inner.allocationSize(handle);
    }

    @Override
    public void write(long handle, MemorySegment src) {
        inner.write(handle, src);
    }

    @Override
    public void gatherWrite(long handle, List<MemorySegment> parts) {
        inner.gatherWrite(handle, parts);
    }

    @Override
    public boolean read(long handle, MemorySegment dst) {
        if (isCorrupt(handle)) {
            throw new CorruptObjectException(name(), handle, dst.byteSize(), 0x1234, 0x4321);
        }
        return inner.read(handle, dst);
    }

    @Override
    public boolean scatterRead(long handle, List<MemorySegment> parts) {
        if (isCorrupt(handle)) {
            throw new CorruptObjectException(name(), handle, "injected");
        }
        return inner.scatterRead(handle, parts);
    }

    @Override
    public MemorySegment segment(long handle, long offset, long length) {
        throw new UnsupportedOperationException("tier '" + name() + "' is not addressable");
    }

    @Override
    public TierStats stats() {
        return inner.stats();
    }

    @Override
    public void close() {
        inner.close();
    }
}
