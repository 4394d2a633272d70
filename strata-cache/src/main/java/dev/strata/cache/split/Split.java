package dev.strata.cache.split;

/**
 * One split of the pageable budget and its predicted latency. Immutable; any thread.
 *
 * @param expertCap        expert slots per layer
 * @param kvBlocks         KV blocks
 * @param predictedSeconds seconds spent on misses over the stream the curves describe
 * @param admissible       true when {@code kvBlocks} is at least the admission floor (a split below
 *                         it would not start or would preempt every step)
 */
public record Split(int expertCap, long kvBlocks, double predictedSeconds, boolean admissible) {
}
