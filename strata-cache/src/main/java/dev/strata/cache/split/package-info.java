/**
 * MV-WSA: one pageable memory budget split between expert slots and KV blocks where a byte buys the
 * same latency on either side, under an admission floor for KV. {@link dev.strata.cache.split.MvWsaSolver}
 * solves a {@link dev.strata.cache.split.SplitProblem} (the offline configurator, and the brute-force
 * oracle it is checked against; the fixed splits it is compared with are offline tools in strata-analysis); {@link dev.strata.cache.split.StepRule} is the closed form
 * for a step-shaped KV curve; {@link dev.strata.cache.split.SplitController} re-solves per burst from the
 * {@link dev.strata.cache.split.SplitEstimator}'s decayed curves and resizes two
 * {@link dev.strata.cache.split.ResizablePool}s at drained barriers, shrink before grow;
 * {@link dev.strata.cache.split.MissCostCalibrator} measures what a miss costs;
 * {@link dev.strata.cache.split.LiveSplit} runs all of it under served traffic over the expert pager
 * and a KV manager whose slots share one DEVICE tier.
 */
package dev.strata.cache.split;
