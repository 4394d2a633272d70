package dev.strata.cache;

import dev.strata.memory.Tier;
import dev.strata.memory.TierKind;
import dev.strata.memory.TierStats;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * Test fixture: a tier that passes every call to a real one, for fault injection that overrides
 * only the calls it changes (a checksum that fails, a write held back). A <em>framed</em> one
 * presents the real tier as a framed, non-addressable tier (like POOL or DISK), so every copy
 * goes through {@code write} and {@code read}.
 *
 * <p>Threads: as the wrapped tier.
 */
public abstract class ForwardingTier implements Tier {
    protected final Tier inner;
    private final boolean framed;

    protected ForwardingTier(Tier inner, boolean framed) {
        this.inner = inner;
        this.framed = framed;
    }

    @Override
    public String name() {
        return inner.name();
    }

    @Override
    public TierKind kind() {
        return framed ? TierKind.DISK : inner.kind();
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
        return inner.sharedAcrossProcesses();
    }

    @Override
    public boolean revocable() {
        return inner.revocable();
    }

    @Override
    public boolean isAddressable() {
        return !framed && inner.isAddressable();
    }

    @Override
    public boolean isPlainMemory() {
        return !framed && inner.isPlainMemory();
    }

    @Override
    public long allocate(long size) {
        return inner.allocate(size);
    }

    @Override
    public void free(long handle) {
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
        return inner.read(handle, dst);
    }

    @Override
    public boolean scatterRead(long handle, List<MemorySegment> parts) {
        return inner.scatterRead(handle, parts);
    }

    @Override
    public MemorySegment segment(long handle, long offset, long length) {
        if (framed) {
            throw new UnsupportedOperationException("tier '" + name() + "' is not addressable");
        }
        return inner.segment(handle, offset, length);
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
