package dev.strata.analysis.split;

import dev.strata.cache.split.Split;
import dev.strata.cache.split.SplitProblem;

/**
 * The fixed splits MV-WSA's choice is compared with offline ({@code strata plan-split}, the
 * experts benchmark): the even split and the KV-blind split proportional to the expert working set
 * (Flux-prop). Neither rule looks at the KV curve. The brute-force optimum they are measured
 * against is {@link dev.strata.cache.split.MvWsaSolver#oracle}.
 *
 * <p>Design note: baselines are clamped to the admission floor. The oracle and MV-WSA choose only
 * among admissible splits (caps {@link SplitProblem#lowestCap()}..{@link SplitProblem#highestCap()},
 * which leave the floor); a split below the floor is a configuration the engine refuses to start
 * (or that preempts every step), and its predicted latency charges KV misses but not the requests it
 * could not admit. Measured as if it ran, a rule that ignores the floor would be compared on a
 * different, easier problem. So {@link #fiftyFifty} and {@link #kvBlind} give each rule's split as
 * an operator could deploy it: the rule's cap, lowered until the KV pool holds the floor (a rule's
 * split that already clears the floor is returned unchanged). {@link #fiftyFiftyIgnoringFloor} and
 * {@link #kvBlindIgnoringFloor} give the rule's split as proposed, so a report can still say when
 * it would not have started and what it would have cost.
 *
 * <p>Stateless; any thread.
 */
public final class ComparisonSplits {
    private ComparisonSplits() {
    }

    /**
     * The even split as deployable: half of the pageable budget to experts (within the cap bounds),
     * the rest to KV, the cap lowered until KV holds the floor. Equals
     * {@link #fiftyFiftyIgnoringFloor} whenever that split is admissible; not admissible only when no
     * split of the problem is ({@link SplitProblem#feasible()} false).
     */
    public static Split fiftyFifty(SplitProblem p) {
        return deployable(p, fiftyFiftyIgnoringFloor(p));
    }

    /**
     * The even split as the rule proposes it: half of the pageable budget to experts (clamped to the
     * cap bounds), the rest to KV, with no regard for the floor; {@link Split#admissible()} says
     * whether it clears it.
     */
    public static Split fiftyFiftyIgnoringFloor(SplitProblem p) {
        return p.splitAt(clampCap(p, p.budgetBytes() / 2 / p.expertSlotBytes()));
    }

    /**
     * The KV-blind split (Flux-prop) as deployable: the cap of {@link #kvBlindIgnoringFloor}, lowered
     * until KV holds the floor. Equals that split whenever it is admissible; not admissible only when
     * no split of the problem is ({@link SplitProblem#feasible()} false).
     */
    public static Split kvBlind(SplitProblem p) {
        return deployable(p, kvBlindIgnoringFloor(p));
    }

    /**
     * The KV-blind split as the rule proposes it (Flux-prop): enough slots per layer for the cap that
     * keeps 99% of the expert stream's reuse, budget permitting, the rest to KV, with no regard for
     * the floor; {@link Split#admissible()} says whether it clears it.
     */
    public static Split kvBlindIgnoringFloor(SplitProblem p) {
        int ws = p.experts().workingSet(0.01);
        long byBudget = p.budgetBytes() / p.expertSlotBytes();
        return p.splitAt(clampCap(p, Math.min(ws, byBudget)));
    }

    /**
     * {@code proposed} with its cap lowered to the largest that leaves the floor (never below the
     * smallest cap); {@code proposed} itself when it is admissible or no cap is.
     */
    private static Split deployable(SplitProblem p, Split proposed) {
        if (proposed.admissible() || !p.feasible()) {
            return proposed;
        }
        return p.splitAt(Math.max(p.lowestCap(), Math.min(proposed.expertCap(), p.highestCap())));
    }

    /** {@code k} clamped to the problem's expert cap bounds. */
    private static int clampCap(SplitProblem p, long k) {
        return (int) Math.max(p.minExpertCap(), Math.min(p.maxExpertCap(), k));
    }
}
