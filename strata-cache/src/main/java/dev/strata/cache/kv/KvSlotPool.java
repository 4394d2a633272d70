package dev.strata.cache.kv;

import dev.strata.cache.split.ResizablePool;

/**
 * The DEVICE block slots of a {@link KvBlockManager} as one side of the expert/KV memory split:
 * units are slots, a unit's bytes are one slot's allocation in the layout's memory
 * ({@link ResizableKvLayout#bytesPerSlot()}). {@link #resize} is
 * {@link KvBlockManager#resizeSlots}: a grow allocates new slots (or fails leaving everything as it
 * was), a shrink is refused while a removed slot holds a block in use, and otherwise releases the
 * removed slots' memory before it returns.
 *
 * <p>Threads: {@link #resize} on the manager's scheduler thread at a drained barrier; the getters
 * on any thread.
 */
public final class KvSlotPool implements ResizablePool {
    private final KvBlockManager manager;
    private final ResizableKvLayout layout;
    private final int minSlots;
    private final int maxSlots;

    KvSlotPool(KvBlockManager manager, int minSlots, int maxSlots) {
        if (minSlots < 1 || maxSlots < minSlots) {
            throw new IllegalArgumentException("KV slot pool bounds must satisfy 1 <= min <= max, got min " + minSlots
                    + ", max " + maxSlots);
        }
        this.manager = manager;
        this.layout = (ResizableKvLayout) manager.layout();
        this.minSlots = minSlots;
        this.maxSlots = maxSlots;
    }

    @Override
    public String name() {
        return "kv";
    }

    @Override
    public int units() {
        return manager.slotCount();
    }

    @Override
    public long bytesPerUnit() {
        return layout.bytesPerSlot();
    }

    @Override
    public int minUnits() {
        return minSlots;
    }

    @Override
    public int maxUnits() {
        return maxSlots;
    }

    @Override
    public boolean resize(int units) {
        if (units < minSlots || units > maxSlots) {
            throw new IllegalArgumentException("KV slot pool cannot be resized to " + units + " slots: outside [" + minSlots
                    + ", " + maxSlots + "]");
        }
        return manager.resizeSlots(units);
    }
}
