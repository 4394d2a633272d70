package dev.strata.cache.kv;

import java.util.List;

/**
 * What a load brought into DEVICE slots: the sequence's valid prefix is its first
 * {@link #loadedBlocks()} blocks; every block after a failure is left for the engine to recompute.
 *
 * <p>Immutable; any thread.
 *
 * @param requestedBlocks blocks the load was asked for (the match's blocks)
 * @param loadedBlocks    leading blocks now valid in the sequence's slots
 * @param failures        blocks that could not be read, in block order
 * @param slotsShort      blocks not loaded because no DEVICE slot could be had (0 when none)
 */
public record LoadOutcome(int requestedBlocks, int loadedBlocks, List<BlockLoadFailure> failures, int slotsShort) {

    public LoadOutcome {
        failures = List.copyOf(failures);
    }

    /** True when every requested block is loaded. */
    public boolean complete() {
        return loadedBlocks == requestedBlocks;
    }
}
