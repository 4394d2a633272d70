package dev.strata.cache.kv;

import dev.strata.cache.ObjectKey;

/**
 * One block a load could not bring into its DEVICE slot: it is treated as missing (the engine
 * recomputes it), and the sequence's prefix ends before it.
 *
 * <p>Immutable; any thread.
 *
 * @param blockIndex the block's index in the sequence
 * @param key        its chained key
 * @param source     where it was read from
 * @param reason     what went wrong, naming the block and the tier
 * @param cause      the underlying exception, or null when the block was simply gone
 */
public record BlockLoadFailure(int blockIndex, ObjectKey key, BlockLocation source, String reason, Throwable cause) {
}
