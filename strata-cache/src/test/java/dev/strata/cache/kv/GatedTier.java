package dev.strata.cache.kv;

import dev.strata.memory.Tier;
import dev.strata.memory.TierKind;
import dev.strata.memory.TierStats;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Fault injection: wraps a real tier and holds every write until {@link #open} is called, so that
 * copies into it stay in flight for as long as a test needs (a slow store tier: a busy disk, a
 * peer across a congested link). A write waits at most a minute, then fails.
 *
 * <p>Threads: any; {@link #open} releases every waiting and later write.
 */
final class GatedTier implements Tier {
    private final Tier inner;
    private final CountDownLatch gate = new CountDownLatch(1);

    GatedTier(Tier inner) {
        this.inner = inner;
    }

    /** Lets every held and later write through. */
    void open() {
        gate.countDown();
    }

    private void pass() {
        try {
            if (!gate.await(1, TimeUnit.MINUTES)) {
                throw new IllegalStateException("gated tier '" + name() + "': the test never opened the gate");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("gated tier '" + name() + "': interrupted while held", e);
        }
    }

    @Override
    public String name() {
        return inner.name();
    }

    @Override
    public TierKind kind() {
        return TierKind.DISK; // framed and not addressable, so every copy goes through write and read
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
    public void free(long handle) {
        inner.free(handle);
    }

    @Override
    public long allocationSize(long handle) {
        return inner.allocationSize(handle);
    }

    @Override
    public void write(long handle, MemorySegment src) {
        pass();
        inner.write(handle, src);
    }

    @Override
    public void gatherWrite(long handle, List<MemorySegment> parts) {
        pass();
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
