package dev.strata.cache.split;

import dev.strata.memory.Allocator;
import dev.strata.memory.device.DeviceTier;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * A real resizable pool for tests: each unit is one slab of {@code bytesPerUnit} bytes allocated in
 * a shared DEVICE tier (CPU backend, off-heap arena) and filled with seeded random bytes. A shrink
 * frees the top slabs; a grow allocates new ones and, if the tier is full or a refusal was
 * injected part way, frees what it took and reports failure, leaving the pool as it was. Every
 * allocation and free is followed by a {@link BudgetWatch} check.
 */
final class ArenaSlabPool implements ResizablePool {
    private final String name;
    private final DeviceTier tier;
    private final long bytesPerUnit;
    private final int minUnits;
    private final int maxUnits;
    private final BudgetWatch watch;
    private final SplittableRandom random;
    private final List<long[]> slabs = new ArrayList<>(); // {handle, pattern seed}
    private int refuseNext; // resizes to refuse outright
    private int failGrowAfter = -1; // the next grow fails after this many new slabs; -1: off
    int resizes;
    int refusals;

    ArenaSlabPool(String name, DeviceTier tier, long bytesPerUnit, int minUnits, int maxUnits, int initial,
                  BudgetWatch watch, long seed) {
        this.name = name;
        this.tier = tier;
        this.bytesPerUnit = bytesPerUnit;
        this.minUnits = minUnits;
        this.maxUnits = maxUnits;
        this.watch = watch;
        this.random = new SplittableRandom(seed);
        if (!grow(initial)) {
            throw new IllegalStateException("initial " + initial + " units of pool '" + name + "' do not fit");
        }
    }

    void refuseNext(int n) {
        refuseNext = n;
    }

    void failNextGrowAfter(int slabsAllocated) {
        failGrowAfter = slabsAllocated;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public int units() {
        return slabs.size();
    }

    @Override
    public long bytesPerUnit() {
        return bytesPerUnit;
    }

    @Override
    public int minUnits() {
        return minUnits;
    }

    @Override
    public int maxUnits() {
        return maxUnits;
    }

    @Override
    public boolean resize(int units) {
        if (units < minUnits || units > maxUnits) {
            throw new IllegalArgumentException("pool '" + name + "': " + units + " units outside [" + minUnits + ", " + maxUnits + "]");
        }
        resizes++;
        if (refuseNext > 0) {
            refuseNext--;
            refusals++;
            return false;
        }
        if (units < slabs.size()) {
            while (slabs.size() > units) {
                long[] s = slabs.removeLast();
                tier.free(s[0]);
                watch.check(name + " freed a slab");
            }
            return true;
        }
        boolean ok = grow(units);
        if (!ok) {
            refusals++;
        }
        return ok;
    }

    private boolean grow(int units) {
        int before = slabs.size();
        int limit = failGrowAfter;
        failGrowAfter = -1;
        while (slabs.size() < units) {
            if (limit >= 0 && slabs.size() - before >= limit) {
                undo(before);
                return false;
            }
            long h = tier.allocate(bytesPerUnit);
            if (h == Allocator.FULL) {
                undo(before);
                return false;
            }
            long seed = random.nextLong();
            fill(tier.segment(h, 0, bytesPerUnit), seed);
            slabs.add(new long[] {h, seed});
            watch.check(name + " allocated a slab");
        }
        return true;
    }

    private void undo(int size) {
        while (slabs.size() > size) {
            tier.free(slabs.removeLast()[0]);
            watch.check(name + " undid a slab");
        }
    }

    /** True when every slab still holds its own bytes. */
    boolean contentsIntact() {
        for (long[] s : slabs) {
            MemorySegment seg = tier.segment(s[0], 0, bytesPerUnit);
            SplittableRandom r = new SplittableRandom(s[1]);
            for (long off = 0; off + 8 <= bytesPerUnit; off += 8) {
                if (seg.get(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, off) != r.nextLong()) {
                    return false;
                }
            }
        }
        return true;
    }

    void release() {
        undo(0);
    }

    private static void fill(MemorySegment seg, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        for (long off = 0; off + 8 <= seg.byteSize(); off += 8) {
            seg.set(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, off, r.nextLong());
        }
    }
}
