package dev.strata.cache.split;

import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;

/**
 * MV-WSA (marginal-value working-set allocation): splits the pageable budget between expert slots
 * and KV blocks where moving a byte either way buys the same latency (the equimarginal point,
 * Eq. 5), subject to the admission floor (Eq. 6) and the expert cap bounds.
 *
 * <p>Design note. Miss curves of MoE and KV streams are bimodal (a tight within-burst mode and a
 * far cross-session mode) and have flat stretches between steps, so a point derivative read in a
 * gap is zero and says nothing. The solver therefore works on finite differences over a grid of
 * candidate splits:
 * <ol>
 *   <li>Candidates: {@code gridPoints} caps spread evenly over the feasible range, plus the knees
 *       of both curves (the caps just past the largest drops of the expert curve, and the caps at
 *       which the KV pool just still reaches the capacity past the largest drops of the KV
 *       curve), since an optimum of a sum of step curves sits at such a knee.</li>
 *   <li>Predicted latency at every candidate; the finite difference between neighbours, divided by
 *       the bytes moved, is the marginal latency per byte of moving budget from KV to experts.</li>
 *   <li>Every candidate where that marginal turns from negative to non-negative is an
 *       equimarginal point of the grid (a local minimum). Around each, the interval between its
 *       neighbouring candidates is searched again the same way, until an interval is no wider
 *       than the grid, where every cap is evaluated.</li>
 *   <li>The best refined point wins; ties go to the smaller cap (more KV: admission headroom).</li>
 * </ol>
 * The brute-force {@link #oracle} evaluates every feasible cap; with the same tie rule the two agree
 * whenever each local minimum of the cost lies in a grid interval bracketing a grid local minimum
 * (always for convex costs, and for step curves whose knees are among the candidates).
 *
 * <p>Stateless apart from its settings; any thread.
 */
public final class MvWsaSolver {
    /** Relative difference under which two predicted latencies count as equal. */
    static final double TIE = 1e-12;

    private final int gridPoints; // candidates per level of the search, >= 3
    private final int knees; // largest drops of each curve added as candidates

    /** A solver with a grid of 33 points and the 16 largest knees of each curve. */
    public MvWsaSolver() {
        this(33, 16);
    }

    public MvWsaSolver(int gridPoints, int knees) {
        if (gridPoints < 3) {
            throw new IllegalArgumentException("the grid needs at least 3 points, got " + gridPoints);
        }
        if (knees < 0) {
            throw new IllegalArgumentException("knees must not be negative, got " + knees);
        }
        this.gridPoints = gridPoints;
        this.knees = knees;
    }

    /**
     * Solves {@code p} by grid marginals and refinement.
     *
     * @throws IllegalArgumentException when no split satisfies the floor and the cap bounds, with the numbers
     */
    public SplitPlan solve(SplitProblem p) {
        requireFeasible(p);
        int lo = p.lowestCap();
        int hi = p.highestCap();
        int[] evaluations = {0};
        TreeSet<Integer> first = gridOver(lo, hi);
        addKnees(p, lo, hi, first);
        List<Split> grid = new ArrayList<>(first.size());
        for (int k : first) {
            grid.add(p.splitAt(k));
            evaluations[0]++;
        }
        double[] marginals = new double[Math.max(0, grid.size() - 1)];
        for (int i = 0; i + 1 < grid.size(); i++) {
            Split a = grid.get(i);
            Split b = grid.get(i + 1);
            marginals[i] = (b.predictedSeconds() - a.predictedSeconds())
                    / ((double) (b.expertCap() - a.expertCap()) * p.expertSlotBytes());
        }
        Split best = refineAround(p, grid, evaluations);
        return new SplitPlan(best, List.copyOf(grid), marginals, evaluations[0]);
    }

    /** The brute-force optimum: every feasible cap evaluated, same tie rule as {@link #solve}. */
    public static Split oracle(SplitProblem p) {
        requireFeasible(p);
        Split best = null;
        for (int k = p.lowestCap(); k <= p.highestCap(); k++) {
            best = better(best, p.splitAt(k));
        }
        return best;
    }

    private Split refineAround(SplitProblem p, List<Split> grid, int[] evaluations) {
        Split best = null;
        for (int i = 0; i < grid.size(); i++) {
            double here = grid.get(i).predictedSeconds();
            boolean leftHigherOrEdge = i == 0 || grid.get(i - 1).predictedSeconds() >= here;
            boolean rightHigherOrEdge = i == grid.size() - 1 || grid.get(i + 1).predictedSeconds() >= here;
            if (!leftHigherOrEdge || !rightHigherOrEdge) {
                continue;
            }
            int from = i == 0 ? grid.get(i).expertCap() : grid.get(i - 1).expertCap() + 1;
            int to = i == grid.size() - 1 ? grid.get(i).expertCap() : grid.get(i + 1).expertCap() - 1;
            best = better(best, grid.get(i));
            best = better(best, search(p, from, to, evaluations, 0));
        }
        return best;
    }

    /** Searches caps {@code [from, to]} by grid and refinement. */
    private Split search(SplitProblem p, int from, int to, int[] evaluations, int depth) {
        if (from > to) {
            return null;
        }
        if (to - from + 1 <= gridPoints || depth > 32) {
            Split best = null;
            for (int k = from; k <= to; k++) {
                best = better(best, p.splitAt(k));
                evaluations[0]++;
            }
            return best;
        }
        List<Split> grid = new ArrayList<>();
        for (int k : gridOver(from, to)) {
            grid.add(p.splitAt(k));
            evaluations[0]++;
        }
        Split best = null;
        for (int i = 0; i < grid.size(); i++) {
            double here = grid.get(i).predictedSeconds();
            boolean left = i == 0 || grid.get(i - 1).predictedSeconds() >= here;
            boolean right = i == grid.size() - 1 || grid.get(i + 1).predictedSeconds() >= here;
            if (left && right) {
                int a = i == 0 ? from : grid.get(i - 1).expertCap() + 1;
                int b = i == grid.size() - 1 ? to : grid.get(i + 1).expertCap() - 1;
                best = better(best, grid.get(i));
                best = better(best, search(p, a, b, evaluations, depth + 1));
            }
        }
        return best;
    }

    private TreeSet<Integer> gridOver(int lo, int hi) {
        TreeSet<Integer> caps = new TreeSet<>();
        int n = Math.min(gridPoints, hi - lo + 1);
        for (int i = 0; i < n; i++) {
            caps.add(n == 1 ? lo : (int) (lo + Math.round((double) (hi - lo) * i / (n - 1))));
        }
        return caps;
    }

    /** Adds the caps at the largest drops of both curves. */
    private void addKnees(SplitProblem p, int lo, int hi, TreeSet<Integer> caps) {
        if (knees == 0) {
            return;
        }
        // expert curve: a drop between cap c and c+1 makes c+1 a knee
        double[] expertDrops = new double[hi - lo];
        for (int c = lo; c < hi; c++) {
            expertDrops[c - lo] = p.experts().warmMisses(c) - p.experts().warmMisses(c + 1);
        }
        for (int idx : largest(expertDrops, knees)) {
            caps.add(lo + idx + 1);
        }
        // KV curve: a drop between b and b+1 blocks; the largest cap still leaving b+1 blocks is a knee
        long kvLo = p.kvBlocks(hi);
        long kvHi = Math.min(p.kvBlocks(lo), (long) p.kv().maxCapacity() + 1);
        if (kvHi > kvLo) {
            int span = (int) Math.min(Integer.MAX_VALUE - 8, kvHi - kvLo);
            double[] kvDrops = new double[span];
            for (int j = 0; j < span; j++) {
                long b = kvLo + j;
                kvDrops[j] = p.kv().warmMisses(SplitProblem.clampCapacity(b)) - p.kv().warmMisses(SplitProblem.clampCapacity(b + 1));
            }
            for (int idx : largest(kvDrops, knees)) {
                long need = kvLo + idx + 1;
                long k = (p.budgetBytes() - need * p.kvBlockBytes()) / p.expertSlotBytes();
                if (k >= lo && k <= hi) {
                    caps.add((int) k);
                    if (k + 1 <= hi) {
                        caps.add((int) k + 1);
                    }
                }
            }
        }
    }

    /** Indices of the {@code n} largest positive entries. */
    private static int[] largest(double[] v, int n) {
        List<Integer> idx = new ArrayList<>();
        for (int i = 0; i < v.length; i++) {
            if (v[i] > 0) {
                idx.add(i);
            }
        }
        idx.sort((a, b) -> Double.compare(v[b], v[a]));
        return idx.stream().limit(n).mapToInt(Integer::intValue).toArray();
    }

    /** The better of two splits: lower predicted latency; within {@link #TIE}, the smaller cap. */
    static Split better(Split a, Split b) {
        if (a == null) {
            return b;
        }
        if (b == null) {
            return a;
        }
        double x = a.predictedSeconds();
        double y = b.predictedSeconds();
        double scale = Math.max(Math.abs(x), Math.abs(y));
        if (Math.abs(x - y) <= TIE * scale) {
            return a.expertCap() <= b.expertCap() ? a : b;
        }
        return x < y ? a : b;
    }

    private static void requireFeasible(SplitProblem p) {
        if (!p.feasible()) {
            throw new IllegalArgumentException(p.infeasibility());
        }
    }
}
