package dev.strata.cache.split;

import dev.strata.cache.expert.ExpertPager;
import dev.strata.cache.kv.KvBlockManager;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.cache.kv.TierSlotKvLayout;
import dev.strata.memory.Sizes;
import dev.strata.memory.device.CpuDeviceBackend;
import dev.strata.memory.device.DeviceTier;

/**
 * The DEVICE side of a serving process that splits one budget between expert slots and KV slots
 * live: one DEVICE tier whose capacity is the budget, a {@link TierSlotKvLayout} in it (created
 * first, at the KV floor: {@code kvBlocks} slots, so that one sequence of the engine's capacity
 * always fits), the expert pager's slots in the same tier (allocated in whole KV slots, see
 * {@link #slotGranule()}), and then the {@link LiveSplit}, which gives the KV pool the rest of the
 * budget and moves bytes between the two at the serving loop's barriers.
 *
 * <p>Threads: opened and closed by the thread that assembles the serving memory; the live split
 * is driven by the serving loop's worker.
 */
public final class SplitDevice {
    private final DeviceTier tier;
    private final TierSlotKvLayout layout;
    private final LiveSplit.Settings settings;
    private final long floorBlocks; // KV blocks the split never goes below

    private SplitDevice(DeviceTier tier, TierSlotKvLayout layout, LiveSplit.Settings settings, long floorBlocks) {
        this.tier = tier;
        this.layout = layout;
        this.settings = settings;
        this.floorBlocks = floorBlocks;
    }

    /**
     * The tier and the KV layout at its floor.
     *
     * @param g           the KV geometry
     * @param kvBlocks    the KV floor, in blocks
     * @param expertBytes bytes of one expert image
     * @param moeLayers   MoE layers of the model
     * @param expertCap   expert slots per MoE layer at the start
     * @throws IllegalArgumentException if the budget cannot hold the floor of KV blocks beside
     *                                  {@code expertCap} slots per MoE layer
     */
    public static SplitDevice open(KvGeometry g, int kvBlocks, long expertBytes, int moeLayers, int expertCap, LiveSplit.Settings settings) {
        long blockBytes = Sizes.alignUp(g.bytesPerBlock(), CpuDeviceBackend.ALIGNMENT);
        long slotBytes = Sizes.alignUp(expertBytes, blockBytes); // the pager's slots are whole KV slots
        long need = (long) expertCap * moeLayers * slotBytes + (long) kvBlocks * blockBytes;
        if (need > settings.budgetBytes()) {
            throw new IllegalArgumentException("split budget " + settings.budgetBytes() + " bytes is below the " + need
                    + " bytes of " + expertCap + " expert slots per MoE layer (" + slotBytes + " bytes each, "
                    + moeLayers + " layers) and the KV floor of " + kvBlocks + " blocks (" + blockBytes + " bytes each)");
        }
        DeviceTier tier = DeviceTier.cpu("device", settings.budgetBytes());
        try {
            return new SplitDevice(tier, TierSlotKvLayout.allocate(tier, g, kvBlocks), settings, kvBlocks);
        } catch (RuntimeException | Error e) {
            tier.close();
            throw e;
        }
    }

    /** The DEVICE tier of the budget: the pager allocates its slots here. */
    public DeviceTier tier() {
        return tier;
    }

    /** The KV manager's layout. */
    public TierSlotKvLayout layout() {
        return layout;
    }

    /** The pager's slot granule: a freed expert slot holds whole KV slots, so the split's resizes find their bytes. */
    public long slotGranule() {
        return layout.bytesPerSlot();
    }

    /** Starts the live split over the built pager and KV manager. */
    public LiveSplit start(ExpertPager pager, KvBlockManager kv) {
        return LiveSplit.start(tier, pager, kv, floorBlocks, settings);
    }

    /** Frees the KV slots: after the KV manager is closed, before the pager and the tier. */
    public void closeLayout() {
        layout.close();
    }

    /** Closes the tier: after the pager, whose slots are in it. */
    public void closeTier() {
        tier.close();
    }
}
