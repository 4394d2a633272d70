package dev.strata.engine.serve;

import dev.strata.cache.expert.ExpertPager;
import dev.strata.cache.kv.KvBlockManager;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.cache.kv.TierSlotKvLayout;
import dev.strata.cache.split.LiveSplit;
import dev.strata.engine.forward.ModelRunner;
import dev.strata.engine.model.ModelConfig;
import dev.strata.memory.Sizes;
import dev.strata.memory.device.CpuDeviceBackend;
import dev.strata.memory.device.DeviceTier;

/**
 * The DEVICE side of a {@link ServeEngine} that splits one budget between expert slots and KV
 * slots live: one DEVICE tier whose capacity is the budget, a {@link TierSlotKvLayout} in it
 * (created first, at the KV floor: {@code kvBlocks} slots, so that one sequence of the engine's
 * capacity always fits), the expert pager's slots in the same tier, and then the
 * {@link LiveSplit}, which gives the KV pool the rest of the budget and moves bytes between the
 * two at the generator's barriers.
 *
 * <p>Threads: made and closed by the engine's constructor and {@code close}; the live split is
 * driven by the generator's worker.
 */
final class ServeSplit {
    private final DeviceTier tier;
    private final TierSlotKvLayout layout;
    private final LiveSplit.Settings settings;
    private final long floorBlocks; // KV blocks the split never goes below: the engine's kvBlocks

    private ServeSplit(DeviceTier tier, TierSlotKvLayout layout, LiveSplit.Settings settings, long floorBlocks) {
        this.tier = tier;
        this.layout = layout;
        this.settings = settings;
        this.floorBlocks = floorBlocks;
    }

    /**
     * The tier and the KV layout at its floor.
     *
     * @throws IllegalArgumentException if the model is dense, no expert cap is given, or the budget
     *                                  cannot hold the floor of KV blocks beside {@code expertCap}
     *                                  slots per MoE layer
     */
    static ServeSplit open(ModelConfig c, KvGeometry g, int kvBlocks, int expertCap, LiveSplit.Settings settings) {
        if (!c.moe() || expertCap <= 0) {
            throw new IllegalArgumentException("the expert/KV split of " + settings.budgetBytes() + " bytes needs a MoE model"
                    + " with paged experts (expert cap > 0); the model has " + c.numExperts() + " experts, the expert cap is "
                    + expertCap);
        }
        long blockBytes = Sizes.alignUp(g.bytesPerBlock(), CpuDeviceBackend.ALIGNMENT);
        long slotBytes = Sizes.alignUp(ModelRunner.expertLayout(c).bytes(), blockBytes); // the pager's slots are whole KV slots
        long need = (long) expertCap * ModelRunner.moeLayerCount(c) * slotBytes + (long) kvBlocks * blockBytes;
        if (need > settings.budgetBytes()) {
            throw new IllegalArgumentException("split budget " + settings.budgetBytes() + " bytes is below the " + need
                    + " bytes of " + expertCap + " expert slots per MoE layer (" + slotBytes + " bytes each, "
                    + ModelRunner.moeLayerCount(c) + " layers) and the KV floor of " + kvBlocks + " blocks (" + blockBytes
                    + " bytes each)");
        }
        DeviceTier tier = DeviceTier.cpu("device", settings.budgetBytes());
        try {
            return new ServeSplit(tier, TierSlotKvLayout.allocate(tier, g, kvBlocks), settings, kvBlocks);
        } catch (RuntimeException | Error e) {
            tier.close();
            throw e;
        }
    }

    /** The DEVICE tier of the budget: the pager allocates its slots here. */
    DeviceTier tier() {
        return tier;
    }

    /** The KV manager's layout. */
    TierSlotKvLayout layout() {
        return layout;
    }

    /**
     * Starts the live split over the built pager and KV manager, lets it see the runner's routing
     * and has the runner's prefills calibrate what a KV miss costs.
     */
    LiveSplit start(ExpertPager pager, KvBlockManager kv, ModelRunner runner) {
        LiveSplit split = LiveSplit.start(tier, pager, kv, floorBlocks, settings);
        runner.routingObserver(split::routed);
        runner.recomputeMeter(split.calibrator()); // KV misses cost the prefill speed measured here
        return split;
    }

    /** Frees the KV slots and closes the tier, when the engine failed before anything else used them. */
    void closeAfterFailure() {
        layout.close();
        tier.close();
    }

    /** Frees the KV slots: after the KV manager is closed, before the pager and the tier. */
    void closeLayout() {
        layout.close();
    }
}
