package dev.strata.bench;

import dev.strata.cache.expert.ExpertLayout;
import dev.strata.cache.expert.ExpertMasters;
import dev.strata.cache.expert.ExpertPager;
import dev.strata.cache.expert.LruExpertPolicy;
import dev.strata.memory.Sizes;
import dev.strata.memory.device.DeviceTier;
import dev.strata.memory.host.HostTier;
import dev.strata.memory.log.Log;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * Figures of the expert pager's step, each against a baseline measured in the same run, for the
 * {@code bench experts} scenario.
 *
 * <ul>
 *   <li>{@code expert_pager_step_all_hits_top8_of_128}: one {@code page} call of a layer routing 8
 *       resident experts of 128 (48 layers, k = 32 per layer, LRU, routings drawn from each layer's
 *       resident set so the policy reorders on every call), in ns per call; baseline: a plain
 *       {@code int[]} lookup of the same 8 ids in the same maps. Goal: at most 100 ns.</li>
 *   <li>{@code expert_pager_step_one_miss_9MiB}: a step of 8 routed experts of which exactly one
 *       misses (7 hot experts and one that rotates, k = 8, so LRU evicts the previous one), HOST
 *       masters to DEVICE slots on the CPU backend, a Qwen3-30B-A3B-sized expert of 9 MiB; baseline:
 *       a raw {@link MemorySegment#copy} of one expert image from another HOST master into the same
 *       DEVICE slot. Each pager step and each raw copy are timed one by one, interleaved, the order
 *       alternating step by step; medians. Goal: at most the raw copy + 1 µs.</li>
 *   <li>{@code expert_pager_step_one_miss_4KiB}: the same with a 4 KiB expert, where the pager's own
 *       work on a miss (victim, maps, policy, meters) is not buried under the copy's run-to-run
 *       noise; run first, with enough steps that the miss path is compiled before the 9 MiB figure.
 *       Goal: at most the raw copy + 1 µs.</li>
 * </ul>
 *
 * <p>Runs on the calling thread; progress lines go to standard error.
 */
public final class ExpertPagerMeasure {

    private static final int LAYERS = 48;
    private static final int EXPERTS = 128;
    private static final int TOP_K = 8;
    private static volatile long sink; // keeps results observable

    private ExpertPagerMeasure() {
    }

    /** Measures every figure; {@code quick} uses fewer calls and steps, and 24 masters instead of 128 for the 9 MiB figure. */
    public static List<Figure> measure(boolean quick) {
        return measure(quick, Log.stream("bench"));
    }

    /** As {@link #measure(boolean)}, progress to {@code progressOut}. */
    public static List<Figure> measure(boolean quick, PrintStream progressOut) {
        Progress progress = new Progress(progressOut, 3);
        List<Figure> figures = new ArrayList<>();
        progress.step("expert pager: all-hit steps, top-8 of 128, 48 layers");
        figures.add(allHits(quick));
        progress.step("expert pager: one-miss steps, 4 KiB experts (the pager's own cost; also compiles the miss path)");
        figures.add(oneMiss("expert_pager_step_one_miss_4KiB", ExpertLayout.single(4 * Sizes.KiB), EXPERTS,
                quick ? 2_000 : 20_000, quick ? 20_000 : 40_000));
        progress.step("expert pager: one-miss steps, 9 MiB experts, HOST -> DEVICE");
        ExpertLayout qwen = ExpertLayout.of("gate_up", 6 * Sizes.MiB, "down", 3 * Sizes.MiB); // Qwen3-30B-A3B, BF16
        figures.add(oneMiss("expert_pager_step_one_miss_9MiB", qwen, quick ? 24 : EXPERTS, quick ? 40 : 600, quick ? 10 : 60));
        return figures;
    }

    static Figure allHits(boolean quick) {
        int k = 32;
        ExpertLayout layout = ExpertLayout.single(256);
        long hostBytes = (long) LAYERS * EXPERTS * 4096 + Sizes.MiB;
        try (HostTier host = HostTier.create("host", hostBytes);
             DeviceTier device = DeviceTier.cpu("device", (long) LAYERS * k * 4096);
             ExpertMasters masters = ExpertMasters.allocate(host, layout, LAYERS, EXPERTS)) {
            for (int l = 0; l < LAYERS; l++) {
                for (int e = 0; e < EXPERTS; e++) {
                    TiersScenario.fillRandom(masters.view(l, e), l * 1000L + e);
                }
            }
            try (ExpertPager pager = ExpertPager.builder(masters, device).topK(TOP_K).slotsPerLayer(k)
                    .policy(new LruExpertPolicy()).build()) {
                SplittableRandom random = new SplittableRandom(42);
                int steps = 64;
                int[][][] routes = new int[steps][LAYERS][]; // [step][layer][8]: resident ids
                int[][] residentSet = new int[LAYERS][k];
                for (int l = 0; l < LAYERS; l++) {
                    int[] perm = random.ints(0, EXPERTS).distinct().limit(k).toArray();
                    residentSet[l] = perm;
                    for (int s = 0; s < steps; s++) {
                        int[] ids = random.ints(0, k).distinct().limit(TOP_K).toArray();
                        for (int i = 0; i < TOP_K; i++) {
                            ids[i] = perm[ids[i]];
                        }
                        routes[s][l] = ids;
                    }
                    for (int c = 0; c < k; c += TOP_K) {
                        pager.page(l, java.util.Arrays.copyOfRange(perm, c, c + TOP_K));
                    }
                }
                int[][] maps = new int[LAYERS][];
                for (int l = 0; l < LAYERS; l++) {
                    maps[l] = pager.expertMap(l);
                }
                long missesBefore = pager.stats().misses();
                int layers = pager.layers(); // a run-time bound, as in an engine's layer loop (a constant bound gets unrolled 48 times)
                int calls = quick ? 300_000 : 3_000_000;
                int rounds = quick ? 5 : 11;
                java.util.function.DoubleSupplier lookup = () -> {
                    long start = System.nanoTime();
                    long sum = 0;
                    for (int c = 0; c < calls; ) {
                        for (int s = 0; s < steps && c < calls; s++) {
                            int[][] step = routes[s];
                            for (int l = 0; l < layers && c < calls; l++, c++) {
                                int[] ids = step[l];
                                int[] map = maps[l];
                                for (int i = 0; i < TOP_K; i++) {
                                    sum += map[ids[i]];
                                }
                            }
                        }
                    }
                    sink += sum;
                    return (System.nanoTime() - start) / (double) calls;
                };
                java.util.function.DoubleSupplier paging = () -> {
                    long start = System.nanoTime();
                    long sum = 0;
                    for (int c = 0; c < calls; ) {
                        for (int s = 0; s < steps && c < calls; s++) {
                            int[][] step = routes[s];
                            for (int l = 0; l < layers && c < calls; l++, c++) {
                                int[] ids = step[l];
                                sum += pager.page(l, ids)[ids[0]];
                            }
                        }
                    }
                    sink += sum;
                    return (System.nanoTime() - start) / (double) calls;
                };
                for (int i = 0; i < (quick ? 3 : 10); i++) { // let the JIT settle (slow on a loaded machine)
                    lookup.getAsDouble();
                    paging.getAsDouble();
                }
                Paired ns = Trials.paired(rounds, lookup, paging);
                if (pager.stats().misses() != missesBefore) {
                    throw new IllegalStateException("all-hit benchmark missed " + (pager.stats().misses() - missesBefore) + " times");
                }
                return Figure.paired("expert_pager_step_all_hits_top8_of_128", "ns",
                        "plain int[] lookup of the same 8 ids", ns, "<= 100 ns")
                        .withNote(String.format(Locale.ROOT, "%d layers, k = %d, LRU, %d paired rounds of %d calls",
                                LAYERS, k, rounds, calls));
            }
        }
    }

    /**
     * One-miss steps against raw copies of the same size.
     *
     * @param name    the figure's name
     * @param layout  the expert's tensors
     * @param experts experts in the layer (masters)
     * @param steps   measured steps
     * @param warm    unmeasured steps first
     */
    static Figure oneMiss(String name, ExpertLayout layout, int experts, int steps, int warm) {
        int k = TOP_K;
        long bytes = layout.bytes();
        try (HostTier host = HostTier.create("host", experts * bytes + Sizes.MiB);
             DeviceTier device = DeviceTier.cpu("device", k * bytes + Sizes.MiB);
             ExpertMasters masters = ExpertMasters.allocate(host, layout, 1, experts)) {
            for (int e = 0; e < experts; e++) {
                TiersScenario.fillRandom(masters.view(0, e), 7000L + e);
            }
            try (ExpertPager pager = ExpertPager.builder(masters, device).topK(TOP_K).slotsPerLayer(k)
                    .policy(new LruExpertPolicy()).build()) {
                int hot = TOP_K - 1;
                int rotating = experts - hot;
                int[] routed = new int[TOP_K];
                for (int i = 0; i < hot; i++) {
                    routed[i] = i;
                }
                routed[hot] = hot;
                pager.page(0, routed);
                double[] pagerNs = new double[steps];
                double[] rawNs = new double[steps];
                long missesBefore = pager.stats().misses();
                int slot = pager.slotOf(0, hot); // every rotating expert lands in this slot: the victim's
                MemorySegment slotView = pager.slot(0, slot);
                int step = 0;
                for (int i = -warm; i < steps; i++) {
                    step++;
                    routed[hot] = hot + step % rotating;
                    int rawSource = hot + (step + rotating / 2) % rotating; // another cold master
                    // The raw copy writes the same slot the step refills; its contents are replaced
                    // before anything reads them. The order alternates so neither side always finds
                    // the slot warm.
                    long raw;
                    long paged;
                    if ((i & 1) == 0) {
                        long t0 = System.nanoTime();
                        MemorySegment.copy(masters.view(0, rawSource), 0, slotView, 0, bytes);
                        long t1 = System.nanoTime();
                        sink += pager.page(0, routed)[routed[hot]];
                        long t2 = System.nanoTime();
                        raw = t1 - t0;
                        paged = t2 - t1;
                    } else {
                        long t0 = System.nanoTime();
                        sink += pager.page(0, routed)[routed[hot]];
                        long t1 = System.nanoTime();
                        MemorySegment.copy(masters.view(0, rawSource), 0, slotView, 0, bytes);
                        long t2 = System.nanoTime();
                        paged = t1 - t0;
                        raw = t2 - t1;
                    }
                    if (pager.slotOf(0, routed[hot]) != slot) {
                        throw new IllegalStateException("one-miss benchmark: expert " + routed[hot] + " landed in slot "
                                + pager.slotOf(0, routed[hot]) + ", not the victim's slot " + slot);
                    }
                    if (i >= 0) {
                        rawNs[i] = raw;
                        pagerNs[i] = paged;
                    }
                }
                routed[hot] = hot + (step + 1) % rotating; // one more step replaces the image the last raw copy wrote
                pager.page(0, routed);
                long misses = pager.stats().misses() - missesBefore;
                if (misses != steps + warm + 1) {
                    throw new IllegalStateException("one-miss benchmark took " + misses + " misses in " + (steps + warm + 1) + " steps");
                }
                pager.verifyResidentBytes();
                Paired timed = Paired.of(rawNs, pagerNs); // each step timed both, in alternating order
                double raw = timed.baselineSample().median();
                double paged = timed.subjectSample().median();
                return Figure.paired(name, "ns",
                        "raw MemorySegment.copy of one " + Sizes.format(bytes) + " expert, HOST to DEVICE", timed,
                        String.format(Locale.ROOT, "<= %.0f ns", raw + 1000))
                        .withNote(String.format(Locale.ROOT, "overhead %+.0f ns over the raw copy (%.2f GB/s raw); top-8 of %d, "
                                + "k = %d, LRU, %d paired steps (alternating order)", paged - raw, bytes / raw, experts, k, steps));
            }
        }
    }
}
