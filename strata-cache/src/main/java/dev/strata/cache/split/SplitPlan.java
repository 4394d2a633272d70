package dev.strata.cache.split;

import java.util.List;

/**
 * A solved split: the chosen split, the grid the solver evaluated and how many cost evaluations it
 * spent. Immutable apart from the marginals array, which callers must not change; any thread.
 *
 * @param chosen      the split chosen
 * @param grid        the first-level grid of candidate splits, ascending by expert cap, with their
 *                    predicted latencies
 * @param marginals   for each grid interval {@code i}: the change in predicted seconds per byte
 *                    moved from KV to experts between {@code grid[i]} and {@code grid[i+1]}
 *                    (negative: experts buy more than KV loses)
 * @param evaluations cost evaluations spent
 */
public record SplitPlan(Split chosen, List<Split> grid, double[] marginals, int evaluations) {
}
