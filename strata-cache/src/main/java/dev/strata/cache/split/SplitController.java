package dev.strata.cache.split;

import dev.strata.cache.curve.MissCurve;

/**
 * The online MV-WSA controller: once per burst it re-solves the split from the streams' live miss
 * curves and, at the next drained barrier, moves bytes between the expert slots and the KV pool.
 *
 * <p>Design note.
 * <ul>
 *   <li><b>Target.</b> {@link Mode#STEP_RULE} (the live default) takes the closed form of
 *       {@link StepRule}: KV at {@code max(floor, peak + headroom)}, the rest to experts.
 *       {@link Mode#ESTIMATOR} runs {@link MvWsaSolver} over the burst's curves (decayed
 *       reuse-distance histograms, warm misses only) with the floor raised to the burst's KV
 *       peak.</li>
 *   <li><b>Hysteresis.</b> A target closer than the dead zone ({@code deadZone} expert slots) is
 *       ignored unless its predicted gain is a cliff ({@code cliffGain} of the current latency: a
 *       working set that just stopped fitting, which the dead zone must not pin the split on) or
 *       it is confirmed: the targets of the last {@code confirmBursts} bursts all lay on its side
 *       of the split in force. The dead zone is there to ignore estimation noise, which points
 *       one way one burst and the other the next; a target that keeps pointing the same way is
 *       not noise, and without the confirmation a split that settled one slot short of a
 *       stationary optimum (a rate-limited approach ends wherever the last noisy target put it)
 *       stayed there for good. A move is made only when the predicted gain of the target over the current split
 *       is at least {@code gainGate} of the current split's predicted reuse-miss latency (on the
 *       burst's curves, first sights left out), except, in {@link Mode#STEP_RULE}, a move raising KV toward
 *       the rule's {@code peak + headroom} (warm curves cannot value headroom an admission-limited
 *       burst never used); a move goes at most {@code rateLimit} slots toward the target. A split whose KV
 *       pool is below the floor or the burst's peak is restored at once (no gate, no dead zone):
 *       the floor is an invariant, not a preference.</li>
 *   <li><b>Resize.</b> Moves are applied only in {@link #atDrainedBarrier}, which the caller invokes
 *       when no step holds a slot or block. The shrinking pool is resized first, then the growing
 *       one, so {@code experts·s_e + kv·s_kv ≤ budget} holds after every single resize. If the
 *       grow fails, the completed shrink is resized back; the previous split stays in force. If a
 *       shrink fails, nothing has changed.</li>
 * </ul>
 *
 * <p>Threads: {@link #onBurst} and {@link #atDrainedBarrier} must be called by the thread that
 * drives the engine's steps (the pools' resize contract); {@link #pending()},
 * {@link #lastDecision()}, {@link #moves()} and {@link #failures()} may be read from any thread.
 *
 * <p>Invariant: the bytes held by the two pools never exceed the budget after any resize the
 * controller makes (checked; a violation means a pool broke its contract and throws).
 */
public final class SplitController {

    /** How the target split is computed. */
    public enum Mode {
        /** Closed form for a step-shaped KV curve: KV at peak + headroom, the rest to experts. */
        STEP_RULE,
        /** The full equimarginal estimator over both streams' curves. */
        ESTIMATOR
    }

    /**
     * The controller's settings.
     *
     * @param budgetBytes    pageable bytes shared by the two pools
     * @param floorBlocks    admission floor in KV blocks
     * @param headroomBlocks KV blocks kept above the burst peak (step rule)
     * @param gainGate       least predicted gain, as a fraction of the current split's predicted
     *                       reuse-miss latency, for a move (0 moves on any gain)
     * @param rateLimit      most expert slots one move changes, &gt;= 1
     * @param deadZone       targets fewer than this many slots away are ignored, &gt;= 0
     * @param cliffGain      a target inside the dead zone is still taken when its predicted gain is
     *                       at least this fraction of the current reuse-miss latency (a step of a
     *                       curve, such as a KV working set that just no longer fits); use
     *                       {@code Double.POSITIVE_INFINITY} for a strict dead zone
     * @param confirmBursts  a target inside the dead zone is still taken once the targets of this
     *                       many consecutive bursts lay on its side of the split in force, &gt;= 1;
     *                       use {@code Integer.MAX_VALUE} for a dead zone without confirmation
     * @param mode           how the target is computed
     */
    public record Settings(long budgetBytes, long floorBlocks, long headroomBlocks, double gainGate, int rateLimit,
                           int deadZone, double cliffGain, int confirmBursts, Mode mode) {
        /** Bursts a target inside the dead zone must persist for by default. */
        public static final int DEFAULT_CONFIRM_BURSTS = 3;

        /** Settings with a cliff gain of 0.25 and {@link #DEFAULT_CONFIRM_BURSTS}. */
        public Settings(long budgetBytes, long floorBlocks, long headroomBlocks, double gainGate, int rateLimit, int deadZone,
                        Mode mode) {
            this(budgetBytes, floorBlocks, headroomBlocks, gainGate, rateLimit, deadZone, 0.25, mode);
        }

        /** Settings with {@link #DEFAULT_CONFIRM_BURSTS}. */
        public Settings(long budgetBytes, long floorBlocks, long headroomBlocks, double gainGate, int rateLimit, int deadZone,
                        double cliffGain, Mode mode) {
            this(budgetBytes, floorBlocks, headroomBlocks, gainGate, rateLimit, deadZone, cliffGain, DEFAULT_CONFIRM_BURSTS,
                    mode);
        }

        public Settings {
            if (budgetBytes <= 0 || floorBlocks < 0 || headroomBlocks < 0 || !(gainGate >= 0) || rateLimit < 1
                    || deadZone < 0 || !(cliffGain >= 0) || confirmBursts < 1 || mode == null) {
                throw new IllegalArgumentException("controller settings out of range: budget " + budgetBytes + ", floor "
                        + floorBlocks + ", headroom " + headroomBlocks + ", gain gate " + gainGate + ", rate limit "
                        + rateLimit + ", dead zone " + deadZone + ", cliff gain " + cliffGain + ", confirm bursts "
                        + confirmBursts + ", mode " + mode);
            }
        }
    }

    /**
     * What one burst showed.
     *
     * @param experts   expert misses by per-layer cap (estimated, e.g. from decayed histograms)
     * @param kv        KV misses by capacity (estimated)
     * @param peakKvBlocks KV blocks the burst held at its peak
     * @param costs     miss costs now (calibrated)
     */
    public record BurstView(ExpertDemand experts, MissCurve kv, long peakKvBlocks, MissCosts costs) {
    }

    /** Why a burst did or did not produce a move. */
    public enum Reason {
        /** A move toward the target was scheduled. */
        MOVE,
        /** The KV pool was below the floor or the peak: a move restoring it was scheduled. */
        RESTORE_FLOOR,
        /** The target is the current split. */
        AT_TARGET,
        /** The target is within the dead zone. */
        DEAD_ZONE,
        /** The predicted gain did not clear the gate. */
        GAIN_GATE,
        /** No split satisfies the floor: the current split is kept. */
        INFEASIBLE
    }

    /**
     * The decision of one burst.
     *
     * @param reason           why
     * @param target           the split the rule aims at
     * @param next             the split scheduled for the next barrier (the current one when holding)
     * @param currentSeconds   predicted reuse-miss seconds of the current split on the burst's curves
     * @param targetSeconds    predicted reuse-miss seconds of the target on the burst's curves
     */
    public record Decision(Reason reason, Split target, Split next, double currentSeconds, double targetSeconds) {
        /** Predicted seconds saved by the target over the current split. */
        public double predictedGain() {
            return currentSeconds - targetSeconds;
        }
    }

    /** What happened at a barrier. */
    public enum ResizeStatus {
        /** Nothing was pending. */
        NOTHING_PENDING,
        /** Both pools are at the new split. */
        APPLIED,
        /** A resize was refused; the previous split is in force (a completed shrink was undone). */
        FAILED_KEPT_PREVIOUS,
        /** A resize was refused and undoing the completed shrink was refused too: the shrunk split is in force (within budget). */
        FAILED_ROLLBACK_REFUSED
    }

    /**
     * The outcome of a barrier.
     *
     * @param status     what happened
     * @param expertCap  expert slots per layer now in force
     * @param kvBlocks   KV blocks now in force
     * @param detail     which pool refused, when one did; empty otherwise
     */
    public record ResizeOutcome(ResizeStatus status, int expertCap, long kvBlocks, String detail) {
    }

    private final ResizablePool experts;
    private final ResizablePool kv;
    private final Settings settings;
    private final MvWsaSolver solver;
    private volatile Split pending; // split to apply at the next barrier; null when none
    private int sameSide; // consecutive bursts whose target lay on one side of the split in force: + above, - below; driving thread only
    private volatile Decision lastDecision;
    private volatile long moves; // barriers that applied a split; written by the driving thread only
    private volatile long failures; // barriers whose resize was refused; written by the driving thread only

    /**
     * A controller over two pools sharing {@code settings.budgetBytes()}.
     *
     * @throws IllegalArgumentException if the pools already hold more than the budget
     */
    public SplitController(ResizablePool experts, ResizablePool kv, Settings settings, MvWsaSolver solver) {
        this.experts = experts;
        this.kv = kv;
        this.settings = settings;
        this.solver = solver;
        long held = heldBytes(experts.units(), kv.units());
        if (held > settings.budgetBytes()) {
            throw new IllegalArgumentException("pools '" + experts.name() + "' (" + experts.units() + " units) and '"
                    + kv.name() + "' (" + kv.units() + " units) hold " + held + " bytes, over the budget of "
                    + settings.budgetBytes());
        }
    }

    /** Re-solves the split for one burst and schedules a move for the next barrier (or holds). */
    public Decision onBurst(BurstView view) {
        int k = experts.units();
        long kvNow = kv.units();
        int minCap = experts.minUnits();
        int maxCap = experts.maxUnits();
        long floor = Math.max(settings.floorBlocks(), view.peakKvBlocks());
        SplitProblem problem = new SplitProblem(settings.budgetBytes(), experts.bytesPerUnit(), kv.bytesPerUnit(),
                view.experts(), view.kv(), view.costs(), floor, minCap, maxCap);
        Split current = new Split(k, kvNow, problem.predictedSeconds(k), kvNow >= floor);
        double currentWarm = problem.predictedWarmSeconds(k);
        Split target;
        if (settings.mode() == Mode.STEP_RULE) {
            Split rule = StepRule.target(settings.budgetBytes(), experts.bytesPerUnit(), kv.bytesPerUnit(),
                    view.peakKvBlocks(), settings.headroomBlocks(), settings.floorBlocks(), minCap, maxCap);
            if (!rule.admissible()) {
                return decide(Reason.INFEASIBLE, rule, null, current, currentWarm, currentWarm);
            }
            target = problem.splitAt(rule.expertCap());
        } else {
            if (!problem.feasible()) {
                return decide(Reason.INFEASIBLE, current, null, current, currentWarm, currentWarm);
            }
            target = solver.solve(problem).chosen();
        }
        double targetWarm = problem.predictedWarmSeconds(target.expertCap());
        if (kvNow < floor) {
            // restore the floor at once: the largest cap, no larger than now, that leaves the floor
            int restore = Math.max(minCap, Math.min(k, problem.highestCap()));
            return decide(Reason.RESTORE_FLOOR, target, problem.splitAt(restore), current, currentWarm, targetWarm);
        }
        int delta = target.expertCap() - k;
        int side = Integer.signum(delta);
        sameSide = side != 0 && Integer.signum(sameSide) == side ? sameSide + side : side;
        if (delta == 0) {
            return decide(Reason.AT_TARGET, target, null, current, currentWarm, targetWarm);
        }
        double gain = currentWarm - targetWarm;
        // The step rule's KV target is headroom above the burst's peak. When admission is limited by
        // the KV pool, the peak is the pool and the warm curves never see the headroom used, so they
        // predict no gain for it: gating that move would pin KV at its size for good. A move that
        // raises KV toward the rule's target is therefore not gated (it stays rate limited).
        boolean kvBelowRule = settings.mode() == Mode.STEP_RULE && delta < 0
                && kvNow < Math.max(settings.floorBlocks(), view.peakKvBlocks() + settings.headroomBlocks());
        boolean confirmed = Math.abs(sameSide) >= settings.confirmBursts();
        if (!kvBelowRule && Math.abs(delta) < settings.deadZone() && gain < settings.cliffGain() * currentWarm
                && !confirmed) {
            return decide(Reason.DEAD_ZONE, target, null, current, currentWarm, targetWarm);
        }
        if (!kvBelowRule && (gain <= 0 || gain < settings.gainGate() * currentWarm)) {
            return decide(Reason.GAIN_GATE, target, null, current, currentWarm, targetWarm);
        }
        int step = Integer.signum(delta) * Math.min(Math.abs(delta), settings.rateLimit());
        return decide(Reason.MOVE, target, problem.splitAt(k + step), current, currentWarm, targetWarm);
    }

    /**
     * Applies the scheduled split; call only when no step holds a slot or block. Shrinks first, grows
     * second, and undoes the shrink if the grow is refused.
     */
    public ResizeOutcome atDrainedBarrier() {
        Split next = pending;
        pending = null;
        int k0 = experts.units();
        long kv0 = kv.units();
        if (next == null) {
            return new ResizeOutcome(ResizeStatus.NOTHING_PENDING, k0, kv0, "");
        }
        int k1 = clamp(next.expertCap(), experts.minUnits(), experts.maxUnits());
        int kv1 = (int) Math.max(kv.minUnits(), Math.min(kv.maxUnits(), next.kvBlocks()));
        if (heldBytes(k1, kv1) > settings.budgetBytes()) {
            // the KV pool's minimum may not fit beside k1: keep the previous split
            failures++;
            return new ResizeOutcome(ResizeStatus.FAILED_KEPT_PREVIOUS, k0, kv0, "split (" + k1 + " slots, " + kv1
                    + " blocks) needs " + heldBytes(k1, kv1) + " bytes, over the budget of " + settings.budgetBytes());
        }
        boolean expertsShrink = k1 < k0;
        ResizablePool first = expertsShrink ? experts : kv;
        ResizablePool second = expertsShrink ? kv : experts;
        int firstFrom = expertsShrink ? k0 : (int) kv0;
        int firstTo = expertsShrink ? k1 : kv1;
        int secondTo = expertsShrink ? kv1 : k1;
        if (firstTo != firstFrom && !first.resize(firstTo)) {
            checkBudget();
            failures++;
            return new ResizeOutcome(ResizeStatus.FAILED_KEPT_PREVIOUS, experts.units(), kv.units(),
                    "'" + first.name() + "' refused " + firstFrom + " -> " + firstTo + " units");
        }
        checkBudget();
        if (second.units() != secondTo && !second.resize(secondTo)) {
            checkBudget();
            failures++;
            String refused = "'" + second.name() + "' refused " + second.units() + " -> " + secondTo + " units";
            if (firstTo != firstFrom && !first.resize(firstFrom)) {
                checkBudget();
                return new ResizeOutcome(ResizeStatus.FAILED_ROLLBACK_REFUSED, experts.units(), kv.units(),
                        refused + "; undoing '" + first.name() + "' " + firstTo + " -> " + firstFrom + " was refused too");
            }
            checkBudget();
            return new ResizeOutcome(ResizeStatus.FAILED_KEPT_PREVIOUS, experts.units(), kv.units(), refused);
        }
        checkBudget();
        moves++;
        return new ResizeOutcome(ResizeStatus.APPLIED, experts.units(), kv.units(), "");
    }

    /** The split scheduled for the next barrier, or null. */
    public Split pending() {
        return pending;
    }

    /** The last burst's decision, or null before the first burst. */
    public Decision lastDecision() {
        return lastDecision;
    }

    /** Barriers that applied a split. */
    public long moves() {
        return moves;
    }

    /** Barriers whose resize was refused. */
    public long failures() {
        return failures;
    }

    /** The settings. */
    public Settings settings() {
        return settings;
    }

    /** Records a decision; {@code next} null holds the current split. */
    private Decision decide(Reason reason, Split target, Split next, Split current, double currentWarm, double targetWarm) {
        pending = next;
        if (next != null) {
            sameSide = 0; // the split in force changes: targets are counted afresh against the new one
        }
        Decision d = new Decision(reason, target, next == null ? current : next, currentWarm, targetWarm);
        lastDecision = d;
        return d;
    }

    private long heldBytes(long expertUnits, long kvUnits) {
        return expertUnits * experts.bytesPerUnit() + kvUnits * kv.bytesPerUnit();
    }

    private void checkBudget() {
        long held = heldBytes(experts.units(), kv.units());
        if (held > settings.budgetBytes()) {
            throw new IllegalStateException("pools '" + experts.name() + "' (" + experts.units() + ") and '" + kv.name()
                    + "' (" + kv.units() + ") hold " + held + " bytes, over the budget of " + settings.budgetBytes()
                    + ": a pool broke the resize contract");
        }
    }

    private static int clamp(int v, int lo, int hi) {
        return Math.max(lo, Math.min(hi, v));
    }
}
