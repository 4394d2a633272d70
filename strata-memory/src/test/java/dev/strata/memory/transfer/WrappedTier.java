package dev.strata.memory.transfer;

import dev.strata.memory.Tier;
import dev.strata.memory.TierKind;
import dev.strata.memory.TierStats;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A real {@link Tier} that stores its objects in another tier and changes how it presents itself:
 * its own name and kind, optionally not addressable (so the engine must use read/write,
 * gatherWrite/scatterRead or staging), and fault injection: handles listed in
 * {@link #failingHandles} make every data call on them throw, as a broken device would.
 *
 * <p>Threads: any, as the wrapped tier.
 */
final class WrappedTier implements Tier {

    final Tier inner;
    private final String name;
    private final TierKind kind;
    private final boolean plain;
    final Set<Long> failingHandles = ConcurrentHashMap.newKeySet();

    WrappedTier(String name, TierKind kind, boolean plain, Tier inner) {
        this.name = name;
        this.kind = kind;
        this.plain = plain;
        this.inner = inner;
    }

    private void maybeFail(String op, long handle) {
        if (failingHandles.contains(handle)) {
            throw new IllegalStateException("injected " + op + " failure at handle " + handle + " in tier '" + name + "'");
        }
    }

    @Override public String name() { return name; }
    @Override public TierKind kind() { return kind; }
    @Override public long capacity() { return inner.capacity(); }
    @Override public long used() { return inner.used(); }
    @Override public boolean sharedAcrossProcesses() { return false; }
    @Override public boolean revocable() { return false; }
    @Override public boolean isAddressable() { return plain; }
    @Override public boolean isPlainMemory() { return plain; }
    @Override public long allocate(long size) { return inner.allocate(size); }
    @Override public void free(long handle) { inner.free(handle); }
    @Override public long allocationSize(long handle) { return inner.allocationSize(handle); }

    @Override
    public void write(long handle, MemorySegment src) {
        maybeFail("write", handle);
        inner.write(handle, src);
    }

    @Override
    public void gatherWrite(long handle, List<MemorySegment> parts) {
        maybeFail("gather write", handle);
        inner.gatherWrite(handle, parts);
    }

    @Override
    public boolean read(long handle, MemorySegment dst) {
        maybeFail("read", handle);
        return inner.read(handle, dst);
    }

    @Override
    public boolean scatterRead(long handle, List<MemorySegment> parts) {
        maybeFail("scatter read", handle);
        return inner.scatterRead(handle, parts);
    }

    @Override
    public MemorySegment segment(long handle, long offset, long length) {
        if (!plain) {
            throw new UnsupportedOperationException("tier '" + name + "' is not addressable");
        }
        maybeFail("segment", handle);
        return inner.segment(handle, offset, length);
    }

    @Override public TierStats stats() { return inner.stats(); }
    @Override public void close() { inner.close(); }
}
