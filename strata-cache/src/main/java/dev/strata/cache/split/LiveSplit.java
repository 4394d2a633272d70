package dev.strata.cache.split;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.curve.MissCurve;
import dev.strata.cache.expert.ExpertPager;
import dev.strata.cache.kv.KvBlockManager;
import dev.strata.cache.kv.KvSlotPool;
import dev.strata.cache.kv.TierSlotKvLayout;
import dev.strata.cache.split.SplitController.Mode;
import dev.strata.cache.split.SplitController.Reason;
import dev.strata.cache.split.SplitController.ResizeOutcome;
import dev.strata.memory.Tier;
import dev.strata.memory.metrics.PrometheusText;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * The expert/KV split of one DEVICE budget, run live under served traffic: the
 * {@link ExpertPager}'s slots and a {@link KvBlockManager}'s {@link TierSlotKvLayout} slots are
 * allocations in one DEVICE tier, and this class measures both streams' miss curves from what the
 * engine serves, asks the {@link SplitController} for a split once per burst of steps, and has it
 * move bytes between the two pools at the engine's drained barriers.
 *
 * <p>Design note.
 * <ul>
 *   <li><b>Where it lives.</b> In {@code strata-cache}, beside the controller, the estimator and
 *       both pools, and not in the engine: it needs nothing of a forward pass, only three calls
 *       from whoever drives the steps ({@link #routed} for every token's routed experts,
 *       {@link #requestStarted} for every request's prompt, {@link #atBarrier} between steps), so
 *       the server, a benchmark or another engine drive the same mechanism.</li>
 *   <li><b>What is measured.</b> The expert stream is each MoE layer's distinct routed experts of
 *       each forward call (what the pager must hold at once); the KV stream is the full blocks of
 *       each request's prompt, by prefix key (what the block manager finds cached or recomputes).
 *       Both go into the {@link SplitEstimator}'s decayed reuse histograms, aged every
 *       {@link Settings#burstSteps} steps; the KV peak of a burst is the most blocks the running
 *       sequences held after any of its steps, which raises the admission floor the split must
 *       leave. Miss costs come from a {@link MissCostCalibrator} (priors until the engine feeds it
 *       measurements through {@link #calibrator}).</li>
 *   <li><b>Resizes.</b> Only in {@link #atBarrier}/{@link #atIdleBarrier}, which the driver calls
 *       when no forward pass runs: the controller shrinks the losing pool before growing the other
 *       and undoes the shrink when the grow is refused; it moves at most {@code rateLimit} expert
 *       slots per burst, ignores targets within the dead zone until they persist, and moves gated by
 *       the predicted gain.
 *       A KV shrink is refused while a slot to be removed holds a block a running sequence uses; it
 *       is retried at a later barrier (an idle one always succeeds).</li>
 *   <li><b>Budget.</b> The pools never hold more than {@link Settings#budgetBytes} together: the
 *       controller checks it after every resize, and a tier whose capacity is the budget (as the
 *       server makes it) refuses any allocation beyond it. The tier's used bytes are sampled after
 *       every resize and at every barrier ({@link Snapshot#tierPeakBytes}).</li>
 * </ul>
 *
 * <p>Threads: {@link #routed}, {@link #requestStarted}, {@link #atBarrier}, {@link #atIdleBarrier}
 * only on the thread that drives the engine's steps (the pager's and the KV manager's driving
 * thread); {@link #snapshot}, {@link #writeTo} and the getters from any thread (they read a
 * snapshot published after every barrier).
 *
 * <p>Invariants: after every barrier, expert bytes + KV bytes ≤ budget, the KV pool holds at least
 * the floor, and the expert pool at least top-k slots per layer.
 */
public final class LiveSplit {

    /**
     * How the live split runs. Immutable; any thread.
     *
     * @param budgetBytes    DEVICE bytes the expert slots and the KV slots share
     * @param burstSteps     engine steps per burst (one decision per burst), &gt;= 1
     * @param decay          weight a burst keeps in the curves per later burst, in (0, 1]
     * @param mode           how the controller computes its target
     * @param gainGate       least predicted gain of a move, as a fraction of the current
     *                       split's predicted reuse-miss latency
     * @param rateLimit      most expert slots per layer one move changes, &gt;= 1
     * @param deadZone       targets fewer than this many expert slots away are ignored (unless a
     *                       cliff, or on the same side of the split for
     *                       {@link SplitController.Settings#DEFAULT_CONFIRM_BURSTS} bursts in a row),
     *                       &gt;= 0
     * @param headroomBlocks KV blocks kept above the burst peak by the step rule, &gt;= 0
     * @param priors         miss-cost figures used until measured
     */
    public record Settings(long budgetBytes, int burstSteps, double decay, Mode mode, double gainGate, int rateLimit,
                           int deadZone, long headroomBlocks, MissCostCalibrator.Priors priors) {
        /** Expert fetch bandwidth assumed until measured: a PCIe 4 x16 link, bytes/s. */
        public static final double DEFAULT_LINK_BYTES_PER_SECOND = 25e9;
        /** Prefill seconds per token assumed until measured. */
        public static final double DEFAULT_RECOMPUTE_SECONDS_PER_TOKEN = 30e-6;

        /** @throws IllegalArgumentException naming every value out of range */
        public Settings {
            if (budgetBytes <= 0 || burstSteps < 1 || !(decay > 0 && decay <= 1) || mode == null || !(gainGate >= 0)
                    || rateLimit < 1 || deadZone < 0 || headroomBlocks < 0 || priors == null) {
                throw new IllegalArgumentException("live split settings out of range: budget " + budgetBytes + " bytes, burst "
                        + burstSteps + " steps, decay " + decay + ", mode " + mode + ", gain gate " + gainGate + ", rate limit "
                        + rateLimit + ", dead zone " + deadZone + ", headroom " + headroomBlocks + " blocks, priors " + priors);
            }
        }

        /**
         * The serving defaults for {@code budgetBytes}: bursts of 32 steps, decay 0.9, the estimator,
         * a 5% gain gate, 2 slots per move, a dead zone of 1 slot, 4 blocks of headroom, and the
         * default priors (no lower KV tier assumed).
         */
        public static Settings defaults(long budgetBytes) {
            return new Settings(budgetBytes, 32, 0.9, Mode.ESTIMATOR, 0.05, 2, 1, 4,
                    new MissCostCalibrator.Priors(DEFAULT_LINK_BYTES_PER_SECOND, DEFAULT_RECOMPUTE_SECONDS_PER_TOKEN, Double.NaN));
        }

        /** These settings with bursts of {@code steps} steps and curves decayed by {@code decayPerBurst}. */
        public Settings withBursts(int steps, double decayPerBurst) {
            return new Settings(budgetBytes, steps, decayPerBurst, mode, gainGate, rateLimit, deadZone, headroomBlocks, priors);
        }

        /** These settings with another control law: mode, gain gate, rate limit and dead zone. */
        public Settings withControl(Mode m, double gate, int rate, int dead) {
            return new Settings(budgetBytes, burstSteps, decay, m, gate, rate, dead, headroomBlocks, priors);
        }
    }

    /**
     * The split as of the last barrier. Immutable; any thread.
     *
     * @param budgetBytes          the budget
     * @param expertSlotsPerLayer  expert slots per layer now
     * @param expertBytes          DEVICE bytes of the expert slots now
     * @param kvBlocks             KV block slots now
     * @param kvBytes              DEVICE bytes of the KV slots now
     * @param expertMarginal       predicted seconds of expert misses one more byte of expert slots
     *                             saves per burst-weighted stream, at the current split (0 before
     *                             the first burst and at the most slots)
     * @param kvMarginal           the same for one more byte of KV slots
     * @param bursts               bursts decided
     * @param applied              resizes applied
     * @param failedKept           resizes refused with the previous split kept (a completed shrink undone)
     * @param failedRollbackRefused resizes refused whose undo was refused too (the shrunk split is in force)
     * @param lastResizeEpochMillis wall-clock time of the last applied resize, 0 before any
     * @param lastReason           the last burst's decision, null before the first
     * @param costs                the miss costs of the last decision
     * @param tierUsedBytes        the DEVICE tier's used bytes at the last barrier
     * @param tierPeakBytes        the most used bytes seen after any resize or barrier
     */
    public record Snapshot(long budgetBytes, int expertSlotsPerLayer, long expertBytes, int kvBlocks, long kvBytes,
                           double expertMarginal, double kvMarginal, long bursts, long applied, long failedKept,
                           long failedRollbackRefused, long lastResizeEpochMillis, Reason lastReason, MissCosts costs,
                           long tierUsedBytes, long tierPeakBytes) {
        /** Resizes refused, undone or not. */
        public long failed() {
            return failedKept + failedRollbackRefused;
        }
    }

    /**
     * What one barrier saw, for an observer (tests, logs). Immutable.
     *
     * @param step              steps counted so far (idle barriers do not count)
     * @param outcome           what the controller did
     * @param expertBytes       expert slot bytes after the barrier
     * @param kvBytes           KV slot bytes after the barrier
     * @param tierUsedBytes     the tier's used bytes after the barrier
     * @param tierCapacityBytes the tier's capacity
     */
    public record Barrier(long step, ResizeOutcome outcome, long expertBytes, long kvBytes, long tierUsedBytes,
                          long tierCapacityBytes) {
    }

    private final Settings settings;
    private final Tier tier;
    private final ExpertPager pager;
    private final KvBlockManager kv;
    private final Watched experts; // the pager, sampling the tier after each resize
    private final Watched kvSlots; // the KV slot pool, likewise
    private final SplitController controller;
    private final SplitEstimator estimator;
    private final MissCostCalibrator calibrator;
    private final long floorBlocks; // the KV pool never goes below this
    private final int blockTokens;
    private final int[][] seen; // [layers][experts] stamp of the (call, layer) that last recorded the expert
    private final int[] stamp; // [layers] current (call, layer) stamp
    private Consumer<Barrier> observer; // driving thread; null: none
    private long steps;
    private long bursts;
    private long applied;
    private long failedKept;
    private long failedRollbackRefused;
    private long lastResizeMillis;
    private long tierPeak;
    private SplitController.BurstView lastView; // null before the first burst
    private volatile Snapshot snapshot;

    private LiveSplit(Tier tier, ExpertPager pager, KvBlockManager kv, long floorBlocks, Settings settings) {
        this.settings = settings;
        this.tier = tier;
        this.pager = pager;
        this.kv = kv;
        this.floorBlocks = floorBlocks;
        this.blockTokens = kv.layout().geometry().blockTokens();
        long kvBytesPerSlot = ((TierSlotKvLayout) kv.layout()).bytesPerSlot();
        int maxKv = (int) Math.min(Integer.MAX_VALUE - 8, settings.budgetBytes() / kvBytesPerSlot);
        if (floorBlocks > maxKv) {
            throw new IllegalArgumentException("a KV floor of " + floorBlocks + " blocks of " + kvBytesPerSlot
                    + " bytes does not fit the split budget of " + settings.budgetBytes() + " bytes");
        }
        KvSlotPool pool = kv.slotPool((int) Math.max(1, floorBlocks), maxKv);
        this.experts = new Watched(pager);
        this.kvSlots = new Watched(pool);
        this.controller = new SplitController(experts, kvSlots, new SplitController.Settings(settings.budgetBytes(),
                floorBlocks, settings.headroomBlocks(), settings.gainGate(), settings.rateLimit(), settings.deadZone(),
                settings.mode()), new MvWsaSolver());
        this.estimator = new SplitEstimator(pager.layers(), pager.experts(), maxKv, settings.decay());
        this.calibrator = new MissCostCalibrator(pager.layout().bytes(), kv.layout().geometry().bytesPerBlock(), blockTokens,
                0.2, settings.priors());
        this.seen = new int[pager.layers()][pager.experts()];
        this.stamp = new int[pager.layers()];
    }

    /**
     * Starts the live split over a pager and a KV manager whose slots are both in {@code tier}, and
     * gives the KV pool every whole slot of the budget the expert slots leave.
     *
     * @param tier        the DEVICE tier holding both pools (its capacity should be the budget)
     * @param pager       the expert pager allocating its slots in {@code tier}
     * @param kv          the KV manager over a {@link TierSlotKvLayout} in {@code tier}
     * @param floorBlocks the fewest KV blocks the split may leave (one sequence's longest context)
     * @param settings    how it runs
     * @throws IllegalArgumentException if the KV layout is not a {@link TierSlotKvLayout} in
     *                                  {@code tier}, the floor is negative, or the pools already
     *                                  hold more than the budget or the floor does not fit
     */
    public static LiveSplit start(Tier tier, ExpertPager pager, KvBlockManager kv, long floorBlocks, Settings settings) {
        Objects.requireNonNull(tier, "tier");
        Objects.requireNonNull(pager, "pager");
        Objects.requireNonNull(kv, "kv manager");
        Objects.requireNonNull(settings, "settings");
        if (!(kv.layout() instanceof TierSlotKvLayout layout) || layout.tier() != tier) {
            throw new IllegalArgumentException("the live split needs the KV manager's slots in tier '" + tier.name()
                    + "', but its layout is " + kv.layout());
        }
        if (floorBlocks < 0) {
            throw new IllegalArgumentException("KV floor must be at least 0 blocks, got " + floorBlocks);
        }
        LiveSplit split = new LiveSplit(tier, pager, kv, floorBlocks, settings);
        split.fillKv();
        split.publish();
        return split;
    }

    /** Grows the KV pool into whatever the budget holds beside the expert slots. */
    private void fillKv() {
        long room = settings.budgetBytes() - (long) experts.units() * experts.bytesPerUnit();
        int target = (int) Math.min(kvSlots.maxUnits(), room / kvSlots.bytesPerUnit());
        if (target > kvSlots.units() && !kvSlots.resize(target)) {
            throw new IllegalStateException("tier '" + tier.name() + "' refused growing the KV slots from " + kvSlots.units()
                    + " to " + target + " within the split budget of " + settings.budgetBytes() + " bytes ("
                    + tier.used() + " of " + tier.capacity() + " bytes used)");
        }
    }

    /**
     * One token's routed experts at one MoE layer of a forward call (the shape of the engine's
     * routing observer): the layer's distinct experts of the call are recorded once each. Calls of
     * one forward pass come layer by layer, token 0 first. Driving thread.
     */
    public void routed(int moeLayer, int token, int[] topK) {
        int[] marks = seen[moeLayer];
        if (token == 0) {
            stamp[moeLayer]++;
        }
        int s = stamp[moeLayer];
        for (int e : topK) {
            if (marks[e] != s) {
                marks[e] = s;
                estimator.expertAccess(moeLayer, e);
            }
        }
    }

    /** A request starts with {@code prompt}: each of its full blocks is a KV reference. Driving thread. */
    public void requestStarted(int[] prompt) {
        for (ObjectKey key : kv.hasher().chain(prompt, prompt.length)) {
            estimator.kvAccess(key.hash64());
        }
    }

    /**
     * A step has ended and no forward pass runs: records the running sequences' KV blocks
     * ({@code heldBlocks}, for the burst's peak), decides at the end of a burst, and applies a
     * pending move. Driving thread.
     */
    public ResizeOutcome atBarrier(long heldBlocks) {
        steps++;
        estimator.kvOccupancy(heldBlocks);
        if (steps % settings.burstSteps() == 0) {
            estimator.endBurst();
            SplitController.BurstView view = estimator.view(calibrator.costs());
            controller.onBurst(view);
            lastView = view;
            bursts++;
        }
        return apply();
    }

    /** Nothing runs (the engine is idle): applies a pending move without counting a step. Driving thread. */
    public ResizeOutcome atIdleBarrier() {
        return apply();
    }

    private ResizeOutcome apply() {
        ResizeOutcome o = controller.atDrainedBarrier();
        switch (o.status()) {
            case APPLIED -> {
                applied++;
                lastResizeMillis = System.currentTimeMillis();
            }
            case FAILED_KEPT_PREVIOUS -> failedKept++;
            case FAILED_ROLLBACK_REFUSED -> failedRollbackRefused++;
            case NOTHING_PENDING -> { }
        }
        sampleTier();
        publish();
        if (observer != null) {
            Snapshot s = snapshot;
            observer.accept(new Barrier(steps, o, s.expertBytes(), s.kvBytes(), s.tierUsedBytes(), tier.capacity()));
        }
        return o;
    }

    /** Sets the observer told every barrier (null for none). Driving thread, before the first barrier. */
    public void observer(Consumer<Barrier> o) {
        observer = o;
    }

    /** The calibrator the miss costs come from; the engine may feed it measurements (any thread). */
    public MissCostCalibrator calibrator() {
        return calibrator;
    }

    /** The controller (its counters may be read from any thread). */
    public SplitController controller() {
        return controller;
    }

    /** The DEVICE tier both pools allocate in. */
    public Tier tier() {
        return tier;
    }

    /** The settings. */
    public Settings settings() {
        return settings;
    }

    /** The KV floor in blocks. */
    public long floorBlocks() {
        return floorBlocks;
    }

    /** The split as of the last barrier (any thread). */
    public Snapshot snapshot() {
        return snapshot;
    }

    /**
     * Writes the {@code strata_split_*} families: bytes and units of each side, the budget, the
     * predicted marginal values, resizes by outcome, bursts, the last resize's time and the tier's
     * used and peak bytes. Any thread.
     */
    public void writeTo(PrometheusText out) {
        Snapshot s = snapshot;
        gauge(out, "strata_split_budget_bytes", "DEVICE bytes the expert slots and KV slots share", s.budgetBytes());
        out.family("strata_split_bytes", PrometheusText.Type.GAUGE, "DEVICE bytes each side of the expert/KV split holds now");
        out.sample("strata_split_bytes", s.expertBytes(), "side", "experts");
        out.sample("strata_split_bytes", s.kvBytes(), "side", "kv");
        gauge(out, "strata_split_expert_slots_per_layer", "Expert slots per MoE layer now", s.expertSlotsPerLayer());
        gauge(out, "strata_split_kv_blocks", "KV block slots now", s.kvBlocks());
        out.family("strata_split_marginal_seconds_per_byte", PrometheusText.Type.GAUGE,
                "Predicted miss seconds one more byte on each side saves at the current split (decayed curves)");
        out.sample("strata_split_marginal_seconds_per_byte", s.expertMarginal(), "side", "experts");
        out.sample("strata_split_marginal_seconds_per_byte", s.kvMarginal(), "side", "kv");
        out.family("strata_split_resizes_total", PrometheusText.Type.COUNTER,
                "Barriers that moved bytes between the sides (applied) or whose resize was refused (failed: kept the previous split, or the undo was refused)");
        out.sample("strata_split_resizes_total", s.applied(), "outcome", "applied");
        out.sample("strata_split_resizes_total", s.failedKept(), "outcome", "failed_kept_previous");
        out.sample("strata_split_resizes_total", s.failedRollbackRefused(), "outcome", "failed_rollback_refused");
        out.family("strata_split_bursts_total", PrometheusText.Type.COUNTER, "Bursts the controller decided on");
        out.sample("strata_split_bursts_total", s.bursts());
        gauge(out, "strata_split_last_resize_timestamp_seconds", "Unix time of the last applied resize (0: none yet)",
                s.lastResizeEpochMillis() / 1000.0);
        out.family("strata_split_miss_seconds", PrometheusText.Type.GAUGE, "Seconds one miss costs on each side, as last used");
        out.sample("strata_split_miss_seconds", s.costs().expertMissSeconds(), "side", "experts");
        out.sample("strata_split_miss_seconds", s.costs().kvMissSeconds(), "side", "kv");
        gauge(out, "strata_split_tier_used_bytes", "Bytes used in the split's DEVICE tier at the last barrier", s.tierUsedBytes());
        gauge(out, "strata_split_tier_peak_bytes", "Most bytes seen used in the split's DEVICE tier (after any resize or barrier)",
                s.tierPeakBytes());
    }

    private static void gauge(PrometheusText out, String name, String help, double value) {
        out.family(name, PrometheusText.Type.GAUGE, help);
        out.sample(name, value);
    }

    private void sampleTier() {
        tierPeak = Math.max(tierPeak, tier.used());
    }

    /** Publishes the split as of now. Driving thread. */
    private void publish() {
        sampleTier();
        int k = experts.units();
        int blocks = kvSlots.units();
        double expertMarginal = 0;
        double kvMarginal = 0;
        SplitController.BurstView v = lastView;
        MissCosts costs = v != null ? v.costs() : calibrator.costs();
        if (v != null) {
            if (k < experts.maxUnits()) {
                expertMarginal = Math.max(0, v.experts().warmMisses(k) - v.experts().warmMisses(k + 1))
                        * costs.expertMissSeconds() / experts.bytesPerUnit();
            }
            MissCurve c = v.kv();
            kvMarginal = Math.max(0, c.warmMisses(blocks) - c.warmMisses(blocks + 1)) * costs.kvMissSeconds()
                    / kvSlots.bytesPerUnit();
        }
        SplitController.Decision d = controller.lastDecision();
        snapshot = new Snapshot(settings.budgetBytes(), k, (long) k * experts.bytesPerUnit(), blocks,
                (long) blocks * kvSlots.bytesPerUnit(), expertMarginal, kvMarginal, bursts, applied, failedKept,
                failedRollbackRefused, lastResizeMillis, d == null ? null : d.reason(), costs, tier.used(), tierPeak);
    }

    /** One pool, sampling the tier's used bytes after each of its resizes. */
    private final class Watched implements ResizablePool {
        private final ResizablePool pool;

        Watched(ResizablePool pool) {
            this.pool = pool;
        }

        @Override
        public String name() {
            return pool.name();
        }

        @Override
        public int units() {
            return pool.units();
        }

        @Override
        public long bytesPerUnit() {
            return pool.bytesPerUnit();
        }

        @Override
        public int minUnits() {
            return pool.minUnits();
        }

        @Override
        public int maxUnits() {
            return pool.maxUnits();
        }

        @Override
        public boolean resize(int units) {
            boolean done = pool.resize(units);
            sampleTier();
            return done;
        }
    }

    @Override
    public String toString() {
        Snapshot s = snapshot;
        return "LiveSplit[" + s.expertSlotsPerLayer() + " expert slots per layer (" + s.expertBytes() + " B), " + s.kvBlocks()
                + " KV blocks (" + s.kvBytes() + " B) of " + s.budgetBytes() + " B, " + s.applied() + " resizes]";
    }
}
