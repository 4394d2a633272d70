package dev.strata.analysis.split;

import dev.strata.cache.split.Split;
import dev.strata.cache.split.SplitProblem;

/**
 * The fixed splits MV-WSA's choice is compared with offline ({@code strata plan-split}, the
 * experts benchmark): the even split and the KV-blind split proportional to the expert working set.
 * Neither looks at the KV curve, and either may fall below the admission floor;
 * {@link Split#admissible()} says whether it clears it. The brute-force optimum they are measured
 * against is {@link dev.strata.cache.split.MvWsaSolver#oracle}.
 *
 * <p>Stateless; any thread.
 */
public final class ComparisonSplits {
    private ComparisonSplits() {
    }

    /**
     * The even split: half of the pageable budget to experts (clamped to the cap bounds), the rest to
     * KV. May fall below the floor; {@link Split#admissible()} says so.
     */
    public static Split fiftyFifty(SplitProblem p) {
        int k = clampCap(p, p.budgetBytes() / 2 / p.expertSlotBytes());
        return p.splitAt(k);
    }

    /**
     * The KV-blind split proportional to the expert working set (Flux-prop): enough slots per layer
     * for the cap that keeps 99% of the expert stream's reuse, budget permitting, the rest to KV,
     * with no regard for the floor; {@link Split#admissible()} says whether it clears it.
     */
    public static Split kvBlind(SplitProblem p) {
        int ws = p.experts().workingSet(0.01);
        long byBudget = p.budgetBytes() / p.expertSlotBytes();
        return p.splitAt(clampCap(p, Math.min(ws, byBudget)));
    }

    /** {@code k} clamped to the problem's expert cap bounds. */
    private static int clampCap(SplitProblem p, long k) {
        return (int) Math.max(p.minExpertCap(), Math.min(p.maxExpertCap(), k));
    }
}
