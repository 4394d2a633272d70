package dev.strata.cache;

import dev.strata.memory.CorruptObjectException;
import dev.strata.memory.Tier;

import java.lang.foreign.MemorySegment;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Fault injection: wraps a real tier, presents it as a framed, non-addressable tier (like POOL or
 * DISK), and fails the checksum of chosen handles on read.
 */
final class CorruptingTier extends ForwardingTier {
    private final Set<Long> corrupt = new HashSet<>();

    CorruptingTier(Tier inner) {
        super(inner, true);
    }

    synchronized void corrupt(long handle) {
        corrupt.add(handle);
    }

    private synchronized boolean isCorrupt(long handle) {
        return corrupt.contains(handle);
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
    public synchronized void free(long handle) {
        corrupt.remove(handle);
        inner.free(handle);
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
}
