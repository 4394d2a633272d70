package dev.strata.bench.engine;

import dev.strata.bench.Figure;
import dev.strata.bench.Paired;
import dev.strata.bench.Sample;
import dev.strata.bench.Trials;
import dev.strata.cache.expert.ExpertMasters;
import dev.strata.cache.expert.ExpertPager;
import dev.strata.cache.expert.SlotScope;
import dev.strata.engine.forward.ModelRunner;
import dev.strata.engine.kernel.KernelPool;
import dev.strata.engine.kernel.Kernels;
import dev.strata.engine.model.ModelConfig;
import dev.strata.engine.model.ModelDirectory;
import dev.strata.memory.Allocator;
import dev.strata.memory.Sizes;
import dev.strata.memory.device.DeviceTier;
import dev.strata.memory.disk.DiskTier;
import dev.strata.memory.disk.DiskTierOptions;
import dev.strata.memory.host.HostTier;
import dev.strata.memory.transfer.TransferEngine;
import dev.strata.memory.transfer.TransferResult;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.function.DoubleSupplier;

/**
 * Decoding a MoE model whose expert masters live on DISK, with a DRAM budget for expert weights
 * smaller than the model: the expert pager against static layer-by-layer streaming at the same
 * budget, and the pager against the disk-bandwidth bound.
 *
 * <p>Setup: every expert of the model is written once into a {@link DiskTier} (direct I/O) as an
 * {@link ExpertMasters} image; the budget is one layer's experts ({@code E} slots of one expert
 * image in a DEVICE tier), {@code L} times smaller than the experts of the model. Both sides run
 * the same {@link ModelRunner} on the same prompts and must produce the same tokens.
 * <ul>
 *   <li>Strata: an {@link ExpertPager} over the disk masters with {@code E / L} slots per layer
 *       (LRU), fetching only routed experts that are not resident, through the
 *       {@link TransferEngine} (its disk link's workers read them in parallel).</li>
 *   <li>Baseline, static layer-by-layer streaming: for every layer of every step, all {@code E}
 *       experts of that layer are read from disk into the budget, all requests in flight at once,
 *       before the layer's experts are computed; nothing is kept across steps. Implemented with the
 *       same pager over the same masters, but one shared pool of {@code E} slots (the budget) and a
 *       routing hook that pages the layer's whole expert set before the layer runs: each layer
 *       then evicts the previous layer's experts, so nothing survives to the next step (the model
 *       has at least two MoE layers).</li>
 * </ul>
 * Disk read bandwidth is measured in the same run through the same tier and engine: one
 * layer's expert images read from disk into HOST memory, all in flight at once. Figures:
 * {@code expert_disk_decode_vs_static_streaming} (goal ratio {@code >= 1.5}) and
 * {@code expert_disk_decode_vs_disk_bound}: the pager's tokens/s against the disk bound, disk
 * bandwidth over the bytes the pager read from disk per decoded token (informational).
 *
 * <p>Confined to the calling thread; transfers run on the engine's workers.
 */
public final class DiskExpertMeasure {
    static final String STREAMING_GOAL = ">= 1.5";
    static final String STREAMING_BASELINE = "static layer-by-layer streaming from disk at the same DRAM budget";
    static final String BOUND_FIGURE = "expert_disk_decode_vs_disk_bound";
    /** The routing turnover figure's name. */
    public static final String TURNOVER_FIGURE = "expert_routing_turnover";
    static final String BOUND_BASELINE = "disk-bandwidth bound: disk read GB/s / pager's disk bytes per token";
    private static final int BLOCK_TOKENS = 16;

    private DiskExpertMeasure() {
    }

    /**
     * Measures the model in {@code dir} (a MoE model with at least two MoE layers whose expert
     * count is a multiple of its MoE layer count, at least {@code topK} times it).
     *
     * @param diskDir a directory on the file system to measure (the DISK tier's files, deleted after)
     */
    public static List<Figure> figures(Path dir, Path diskDir, int threads, int promptTokens, int steps, int rounds,
            PrintStream log) {
        try (ModelDirectory model = ModelDirectory.open(dir)) {
            ModelConfig c = model.config();
            int layers = ModelRunner.moeLayerCount(c);
            int experts = c.numExperts();
            if (layers < 2 || experts % layers != 0 || experts / layers < c.numExpertsPerTok()) {
                throw new IllegalArgumentException("the disk expert benchmark needs >= 2 MoE layers and an expert count that is a"
                        + " multiple of them, at least top-k times; got " + layers + " layers, " + experts + " experts, top-"
                        + c.numExpertsPerTok());
            }
        }
        return figures(dir, diskDir, threads, promptTokens, steps, rounds, 0, false, -1, log);
    }

    /**
     * As {@link #figures(Path, Path, int, int, int, int, PrintStream)} at a budget of
     * {@code slotsPerLayer} expert slots per MoE layer (0: one layer's experts spread over the
     * layers, as there), and, when {@code turnover} is set, a third figure: {@value #TURNOVER_FIGURE},
     * the share of a layer's routed experts that were not routed at the previous decode step,
     * measured on the pager's decode steps ({@link RoutingTurnover}).
     *
     * @param slotsPerLayer the pager's slots per MoE layer, at least top-k; the streaming baseline's
     *                      shared pool holds as many slots in all ({@code layers × slotsPerLayer}),
     *                      which must be at least one layer's experts
     * @param repeatInput   negative: each decode step's input is the previous step's greedy token;
     *                      in {@code [0, 1]}: the input is the previous step's input with this
     *                      probability, else a uniformly random token (seeded per round, the same on
     *                      both sides), which sets the routing turnover where greedy decoding of a
     *                      synthetic model would fall into a loop of a few tokens
     */
    public static List<Figure> figures(Path dir, Path diskDir, int threads, int promptTokens, int steps, int rounds,
            int slotsPerLayer, boolean turnover, double repeatInput, PrintStream log) {
        try (ModelDirectory model = ModelDirectory.open(dir); KernelPool pool = new KernelPool(threads)) {
            ModelConfig c = model.config();
            int layers = ModelRunner.moeLayerCount(c);
            int experts = c.numExperts();
            int topK = c.numExpertsPerTok();
            int perLayer = slotsPerLayer > 0 ? slotsPerLayer : experts / Math.max(1, layers); // Strata's slots per layer
            if (layers < 2 || perLayer < topK || (long) perLayer * layers < experts) {
                throw new IllegalArgumentException("the disk expert benchmark needs >= 2 MoE layers, at least top-k slots per layer"
                        + " and a budget of at least one layer's experts; got " + layers + " layers, " + experts + " experts, top-"
                        + topK + ", " + perLayer + " slots per layer");
            }
            if (repeatInput > 1 || Double.isNaN(repeatInput)) {
                throw new IllegalArgumentException("repeatInput must be negative (greedy) or a probability in [0, 1], got " + repeatInput);
            }
            long expertBytes = ModelRunner.expertLayout(c).bytes();
            int budgetSlots = perLayer * layers; // expert slots of the budget, for both sides
            long budget = budgetSlots * expertBytes; // DRAM for expert weights
            long modelExperts = (long) layers * experts * expertBytes;
            long diskCapacity = (long) layers * experts * Sizes.alignUp(expertBytes + 8192, 4096) + 16 * Sizes.MiB;
            long slack = Sizes.MiB; // the DEVICE tier's own rounding
            Kernels kernels = new Kernels(pool);
            int blocks = (promptTokens + steps) / BLOCK_TOKENS + 2;
            try (DiskTier disk = DiskTier.open(DiskTierOptions.in(diskDir, diskCapacity).name("expert-disk").deleteOnClose(true));
                 TransferEngine transfers = new TransferEngine();
                 DeviceTier pagedBudget = DeviceTier.cpu("paged-experts", budget + slack);
                 DeviceTier streamBudget = DeviceTier.cpu("streamed-experts", budget + slack);
                 HostTier probe = HostTier.create("disk-probe", experts * Sizes.alignUp(expertBytes, 4096) + slack)) {
                log.printf(Locale.ROOT, "      writing %d expert masters (%.0f MB) to %s%n", layers * experts, modelExperts / 1e6,
                        diskDir);
                try (ExpertMasters masters = ModelRunner.loadMasters(model.weights(), disk);
                     ExpertPager pager = ExpertPager.builder(masters, pagedBudget).name("paged").topK(topK)
                             .slotsPerLayer(perLayer).transferEngine(transfers).build();
                     ExpertPager streamer = ExpertPager.builder(masters, streamBudget).name("streamed").topK(topK)
                             .slotsPerLayer(perLayer).scope(SlotScope.SHARED).transferEngine(transfers).build();
                     EngineInstance paged = new EngineInstance(model, kernels, BLOCK_TOKENS, blocks, null, pager);
                     EngineInstance streamed = new EngineInstance(model, kernels, BLOCK_TOKENS, blocks, null, streamer)) {
                    int[] all = new int[experts];
                    for (int e = 0; e < experts; e++) {
                        all[e] = e;
                    }
                    streamed.runner().routingObserver((moeLayer, token, routed) -> {
                        if (token == 0) {
                            streamer.page(moeLayer, all); // the layer's whole expert set, from disk, before it runs
                        }
                    });
                    List<int[]> pagedTokens = new ArrayList<>();
                    List<int[]> streamedTokens = new ArrayList<>();
                    long[] pagedBytes = {0};
                    long[] pagedSteps = {0};
                    int[] roundOf = {0, 0};
                    DoubleSupplier streamRun = () -> decode(streamed.runner(), null, c, promptTokens, steps,
                            7000 + roundOf[0]++, streamedTokens, null, null, repeatInput);
                    RoutingTurnover turnovers = new RoutingTurnover(layers); // counts the paged side's decode steps
                    List<Double> turnoverPerRound = new ArrayList<>();
                    if (turnover) {
                        paged.runner().routingObserver(turnovers);
                    }
                    DoubleSupplier pagedRun = () -> {
                        turnovers.reset();
                        double tps = decode(paged.runner(), pager, c, promptTokens, steps, 7000 + roundOf[1]++, pagedTokens,
                                pagedBytes, turnovers, repeatInput);
                        pagedSteps[0] += steps;
                        turnoverPerRound.add(turnovers.turnover());
                        return tps;
                    };
                    Paired streamVsPaged = Trials.paired(rounds, streamRun, pagedRun);
                    for (int i = 0; i < pagedTokens.size(); i++) {
                        if (!java.util.Arrays.equals(pagedTokens.get(i), streamedTokens.get(i))) {
                            throw new IllegalStateException("round " + i + ": the paged and the streamed runs decoded different"
                                    + " tokens: " + java.util.Arrays.toString(pagedTokens.get(i)) + " vs "
                                    + java.util.Arrays.toString(streamedTokens.get(i)));
                        }
                    }
                    double diskGBps = diskReadGBps(transfers, masters, probe, expertBytes, rounds);
                    double bytesPerToken = pagedBytes[0] / (double) pagedSteps[0]; // decode steps only
                    double bound = diskGBps * 1e9 / bytesPerToken;
                    String setup = String.format(Locale.ROOT, "%s; experts %.0f MB on DISK (direct I/O), DRAM budget %.1f MB"
                                    + " (%d expert slots of %.2f MB: %d per layer for the pager, one shared pool for streaming)",
                            ComputeMeasure.describe(c), modelExperts / 1e6, budget / 1e6, budgetSlots, expertBytes / 1e6, perLayer);
                    List<Figure> figures = new ArrayList<>();
                    figures.add(Figure.paired("expert_disk_decode_vs_static_streaming", "tokens/s", STREAMING_BASELINE,
                            streamVsPaged, STREAMING_GOAL).withNote(setup + String.format(Locale.ROOT, "; %d decode steps after a"
                                    + " %d-token prompt per round, %d paired rounds; pager hit ratio %.2f", steps, promptTokens,
                            rounds, pager.stats().hitRatio())));
                    if (bytesPerToken > 0) {
                        figures.add(Figure.sampled(BOUND_FIGURE, "tokens/s", BOUND_BASELINE, streamVsPaged.subjectSample(), bound,
                                ">= 0")
                                .withNote(String.format(Locale.ROOT, "disk read %.2f GB/s (%d expert images, all in flight,"
                                                + " DISK -> HOST through the transfer engine); the pager read %.2f MB from disk"
                                                + " per decoded token (hit ratio %.2f over the run)", diskGBps, experts,
                                        bytesPerToken / 1e6, pager.stats().hitRatio())));
                    } else {
                        figures.add(Figure.missing(BOUND_FIGURE, "tokens/s", BOUND_BASELINE, ">= 0", "the pager read nothing"
                                + " from disk while decoding (every routed expert was resident): no disk bound to compare with"));
                    }
                    if (turnover) {
                        // the first paged run warmed up; the measured rounds follow it
                        double[] measured = turnoverPerRound.subList(1, turnoverPerRound.size()).stream()
                                .mapToDouble(Double::doubleValue).toArray();
                        figures.add(Figure.sampled(TURNOVER_FIGURE, "share", "none (a property of the routing)",
                                new Sample(measured), Double.NaN, ">= 0").withNote(String.format(Locale.ROOT, "share of a layer's"
                                        + " top-%d experts not routed at the previous decode step, over %d MoE layers and %d decode"
                                        + " steps per round (%s), %d rounds", topK, layers, steps, repeatInput < 0
                                        ? "each step's input the previous greedy token" : String.format(Locale.ROOT, "each step's"
                                        + " input the previous input with probability %.2f, else a random token", repeatInput),
                                measured.length)));
                    }
                    return figures;
                }
            }
        }
    }

    /**
     * Prefills a seeded prompt, decodes {@code steps} tokens (timed; inputs as {@code repeatInput}
     * says) and records each step's greedy token;
     * tokens/s. With a pager, adds the bytes it fetched during the decode steps to {@code fetched[0]}.
     */
    private static double decode(ModelRunner runner, ExpertPager pager, ModelConfig c, int promptTokens, int steps, long seed,
            List<int[]> record, long[] fetched, RoutingTurnover turnover, double repeatInput) {
        int[] prompt = ComputeMeasure.prompt(c.vocabSize(), promptTokens, seed);
        int[] out = new int[steps]; // the greedy token of each step: both sides must agree
        java.util.SplittableRandom inputs = new java.util.SplittableRandom(~seed); // forced inputs, when repeatInput >= 0
        try (ModelRunner.Sequence seq = runner.newSequence()) {
            if (turnover != null) {
                turnover.counting(false);
            }
            int token = EngineInstance.argmax(seq.prefill(prompt, false)[0]);
            if (turnover != null) {
                turnover.newSequence();
                turnover.counting(true);
            }
            long before = pager == null ? 0 : pager.stats().bytesFetched();
            long start = System.nanoTime();
            for (int i = 0; i < steps; i++) {
                int greedy = EngineInstance.argmax(seq.decode(token));
                out[i] = greedy;
                token = repeatInput < 0 ? greedy : inputs.nextDouble() < repeatInput ? token : inputs.nextInt(c.vocabSize());
            }
            double tps = steps * 1e9 / (System.nanoTime() - start);
            if (pager != null) {
                fetched[0] += pager.stats().bytesFetched() - before;
            }
            if (turnover != null) {
                turnover.counting(false);
            }
            record.add(out);
            return tps;
        }
    }

    /**
     * Disk read bandwidth through the tier and engine the pager uses: one layer's expert images
     * (a different layer each round) read into HOST memory, all requests in flight; the median GB/s.
     */
    @SuppressWarnings("unchecked")
    private static double diskReadGBps(TransferEngine transfers, ExpertMasters masters, HostTier host, long expertBytes,
            int rounds) {
        int experts = masters.experts();
        long[] slots = new long[experts];
        for (int e = 0; e < experts; e++) {
            slots[e] = host.allocate(expertBytes);
            if (slots[e] == Allocator.FULL) {
                throw new IllegalStateException("disk probe tier of " + host.capacity() + " bytes cannot hold " + experts
                        + " expert images of " + expertBytes + " bytes");
            }
        }
        try {
            double[] gbps = new double[rounds + 1];
            CompletableFuture<TransferResult>[] pending = new CompletableFuture[experts];
            for (int r = 0; r <= rounds; r++) {
                int layer = r % masters.layers();
                long start = System.nanoTime();
                for (int e = 0; e < experts; e++) {
                    pending[e] = transfers.copy(masters.tier(), masters.handle(layer, e), host, slots[e], expertBytes);
                }
                for (CompletableFuture<TransferResult> f : pending) {
                    TransferResult result = f.join();
                    if (!result.completed()) {
                        throw new IllegalStateException("disk probe read failed: " + result);
                    }
                }
                gbps[r] = experts * expertBytes / (double) (System.nanoTime() - start);
            }
            return Trials.median(java.util.Arrays.copyOfRange(gbps, 1, gbps.length)); // round 0 warms up
        } finally {
            for (long s : slots) {
                host.free(s);
            }
        }
    }
}
