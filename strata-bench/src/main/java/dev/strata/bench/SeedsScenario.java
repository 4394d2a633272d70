package dev.strata.bench;

import dev.strata.analysis.kvplan.KvCapacityPlan;
import dev.strata.analysis.kvplan.KvCapacityPlanner;
import dev.strata.analysis.kvplan.ModelSpec;
import dev.strata.analysis.kvplan.PlanRequest;
import dev.strata.bench.engine.ClusterTtftMeasure;
import dev.strata.bench.engine.DiskExpertMeasure;
import dev.strata.bench.engine.KvOffloadDecodeMeasure;
import dev.strata.bench.engine.PrefixTtftMeasure;
import dev.strata.bench.engine.SyntheticModels;
import dev.strata.bench.peer.LinkCostModel;
import dev.strata.cache.kv.KvDtype;
import dev.strata.cluster.ClusterSettings;
import dev.strata.cluster.LocalRedisCluster;
import dev.strata.engine.model.DType;
import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.synth.SynthSpec;
import dev.strata.memory.log.Log;
import java.io.File;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * {@code strata bench seeds}: each published system Strata's design draws on, its headline result
 * beside Strata's figure for the same quantity. Every row is either <em>measured</em> on this
 * machine in this run (paired rounds against the baseline the published figure compares with), or
 * <em>modelled</em>: computed from a stated model whose inputs the figure's note gives. The note of
 * each figure starts with {@value #MEASURED} or {@value #MODELLED} and names the published figure.
 *
 * <ul>
 *   <li>vLLM's tiered KV offload: the KV capacity of GPU, CPU and SSD for Llama-2-70B at TP = 4
 *       ({@link KvCapacityPlanner}; modelled), the KV each link moves in one decode step (modelled),
 *       and decode with KV swapped out to HOST/DISK tiers and back against all KV resident
 *       ({@link KvOffloadDecodeMeasure}; measured).</li>
 *   <li>Beluga: a prefix another instance published in the shared pool against a recompute
 *       ({@link PrefixTtftMeasure}; measured), and the pool against a network store, a local Redis
 *       Cluster ({@link ClusterTtftMeasure}; measured, not judged when {@code redis-server} is
 *       missing).</li>
 *   <li>WiSP: decode with disk-resident experts paged by Strata against static layer-by-layer
 *       offload at the same budget, on a model of Qwen3-30B-A3B's shape scaled down in width, with
 *       the routing turnover it ran at ({@link DiskExpertMeasure}; measured); and MV-WSA's split on a
 *       Qwen3-30B-A3B-shaped trace against the oracle, 50-50 and KV-blind splits
 *       ({@link MvWsaMeasure}; simulated with modelled costs).</li>
 *   <li>Harvest: expert and KV fetch time from peer memory against host offload as the offloaded
 *       share grows ({@link LinkCostModel}; modelled), a plot and figures at a few shares.</li>
 * </ul>
 *
 * <p>The synthetic models go to {@code <work dir>/models/} and are reused by later runs; the DISK
 * tiers' files and a Redis Cluster's directory go under the work directory and are deleted after.
 *
 * <p>Runs on the calling thread; the measures start their own workers. A scenario instance serves one run.
 */
public final class SeedsScenario implements Scenario {
    /** How a measured figure's note starts. */
    public static final String MEASURED = "MEASURED";
    /** How a modelled figure's note starts. */
    public static final String MODELLED = "MODELLED";

    /** Llama-2-70B served at TP = 4 on 80 GB GPUs (vLLM's offload setting): per-rank sizes. */
    static final int TP = 4;
    static final long GPU_BYTES = 80_000_000_000L;
    static final long WEIGHTS_PER_GPU = 35_000_000_000L; // 140 GB of FP16 weights over 4 GPUs
    static final long GPU_OVERHEAD = 4_000_000_000L; // activations, CUDA graphs, the runtime
    static final long HOST_BYTES = 512_000_000_000L; // one machine's CPU memory, shared by its 4 ranks
    static final long SSD_BYTES = 2_000_000_000_000L; // one machine's SSD, shared by its 4 ranks
    static final long PCIE_GEN4 = 25_000_000_000L; // PCIe Gen4 x16, per rank
    static final long NVME = 7_000_000_000L; // one NVMe drive's sequential read
    static final long DECODE_STEP_NANOS = 20_000_000L; // a 70B decode step at TP = 4
    static final int SEQ_TOKENS = 4096;
    static final int BLOCK_TOKENS = 16;

    /** Harvest's links: NVLink per direction against PCIe Gen4. */
    static final double NVLINK = 300e9;
    /** Qwen3-30B-A3B: 48 layers, top-8 experts of 3 × 2048 × 768 BF16; 4 KV heads of 128 BF16 per layer. */
    static final int QWEN_LAYERS = 48;
    static final int QWEN_TOP_K = 8;
    static final long QWEN_EXPERT_BYTES = 3L * 2048 * 768 * 2;
    static final long QWEN_KV_BYTES_PER_TOKEN = QWEN_LAYERS * 4L * 128 * 2 * 2;
    static final int HARVEST_CONTEXT = 4096;
    static final double[] HARVEST_FRACTIONS = {0.25, 0.5, 1.0};

    /**
     * The WiSP model: Qwen3-30B-A3B's 48 layers, 128 experts, top-8 and 32/4 attention heads,
     * hidden 2048 and expert width 768 scaled down 32 and 24 times to 64 and 32 (12 KiB an expert),
     * with an unstructured router: a new input token routes to nearly independent experts.
     */
    static final SynthSpec WISP_MODEL = new SynthSpec(ModelFamily.QWEN3_MOE, 48, 128, 8, 64, 64, 32, 8, 1, 8, 512, DType.BF16, 21, 1,
            0, false);
    static final int WISP_SLOTS_PER_LAYER = 16; // the matched budget: 16 of 128 experts per layer, 12.5%
    /**
     * The probability that a decode step's input repeats the previous step's (else a random token):
     * a random token changes about {@code 1 - 8/128} of a layer's top-8 experts, a repeated one
     * almost none, so the expected turnover is {@code (1 - 0.47) × 0.94 ≈ 0.5}, WiSP's. Greedy
     * decoding of a synthetic model falls into loops of a few tokens, whose turnover is near 0.
     */
    static final double WISP_REPEAT_INPUT = 0.47;

    private final List<Series> series = new ArrayList<>();

    /** One row of the side-by-side table: a published figure and Strata's figure for it. */
    record Row(String system, String published, Figure figure) {
    }

    @Override
    public String name() {
        return "seeds";
    }

    @Override
    public String description() {
        return "published results of vLLM offload, Beluga, WiSP, Harvest beside Strata's measured or modelled figure";
    }

    @Override
    public List<Series> series() {
        return List.copyOf(series);
    }

    @Override
    public List<Figure> run(Options options, List<String> notes) throws Exception {
        boolean quick = options.quick();
        int threads = Runtime.getRuntime().availableProcessors();
        Path work = options.workDir();
        Files.createDirectories(work);
        PrintStream log = Log.stream("bench");
        Progress progress = new Progress(log, 8);
        series.clear();
        List<Row> rows = new ArrayList<>();

        progress.step("vLLM tiered KV offload: capacity and transfer budget per tier (modelled)");
        rows.addAll(vllmPlan());

        progress.step("vLLM tiered KV offload: decode with KV swapped through HOST/DISK against all resident (measured)");
        EngineScenario.Models models = EngineScenario.Models.of(quick);
        Path dense = SyntheticModels.prepare(models.ttftDense(), "ttft-dense", work, log);
        String vllmDecode = "vLLM's KV offload to CPU/SSD with lookahead prefetch: decode throughput offloaded against all KV resident";
        rows.add(new Row("vLLM", vllmDecode, measured(() -> KvOffloadDecodeMeasure.measure(dense, work.resolve("seeds-kv-disk"), threads,
                quick ? 128 : 512, quick ? 32 : 384, quick ? 16 : 32, quick ? 2 : Trials.FULL_ROUNDS), KvOffloadDecodeMeasure.NAME, "tokens/s",
                KvOffloadDecodeMeasure.BASELINE, KvOffloadDecodeMeasure.GOAL, vllmDecode)));

        progress.step("Beluga: cross-instance prefix hit in the pool against recompute (measured)");
        int promptTokens = quick ? 1024 : 8192;
        String beluga = "Beluga: TTFT -89.6% with a CXL memory pool against an RDMA store (vLLM)";
        rows.add(new Row("Beluga", beluga, measured(() -> PrefixTtftMeasure.measure(dense, threads, promptTokens, BLOCK_TOKENS,
                quick ? 2 : 3, log), PrefixTtftMeasure.figureName(promptTokens), "s", PrefixTtftMeasure.BASELINE, PrefixTtftMeasure.GOAL,
                beluga)));

        progress.step("Beluga: the pool against a network store, a local Redis Cluster (measured)");
        rows.add(new Row("Beluga", beluga, poolVsNetwork(dense, work, threads, promptTokens, quick, beluga)));

        progress.step("WiSP: paged disk experts against static offload, Qwen3-30B-A3B shape scaled in width (measured)");
        Path wisp = SyntheticModels.prepare(WISP_MODEL, "wisp-moe", work, log);
        rows.addAll(wisp(wisp, work, threads, quick));

        progress.step("WiSP: MV-WSA's split against the oracle, 50-50 and KV-blind splits (simulated)");
        String split = "WiSP: one memory budget split between expert slots and KV blocks, against fixed splits";
        for (Figure f : MvWsaMeasure.figures(MvWsaMeasure.workloads().stream().filter(w -> w.name().equals("qwen3_like")).toList(),
                quick, null)) {
            rows.add(new Row("WiSP", split, labelled(f, MODELLED, split + "; trace-driven simulation, costs modelled: expert of"
                    + " 9 MiB over 25 GB/s, KV block of 16 tokens recomputed at 30 us/token")));
        }

        progress.step("Harvest: expert and KV fetch time from a peer against the host as the offloaded share grows (modelled)");
        rows.addAll(harvest());

        progress.step("done");
        log.print(table(rows));
        notes.add("rows labelled " + MEASURED + " ran on this machine in this run; rows labelled " + MODELLED
                + " are computed from the model their note states (the GPU machine would measure the link rows)");
        return rows.stream().map(Row::figure).toList();
    }

    // ---------------------------------------------------------------- vLLM

    /** The plan of Llama-2-70B at TP = 4 with the sizes and links above. */
    static KvCapacityPlan vllmPlanOf() {
        return KvCapacityPlanner.plan(new PlanRequest(ModelSpec.preset("llama-2-70b"), TP, KvDtype.FP16, BLOCK_TOKENS, SEQ_TOKENS,
                GPU_BYTES, WEIGHTS_PER_GPU, GPU_OVERHEAD, HOST_BYTES / TP, 0, SSD_BYTES / TP, DECODE_STEP_NANOS, PCIE_GEN4, PCIE_GEN4,
                NVME));
    }

    private static List<Row> vllmPlan() {
        KvCapacityPlan plan = vllmPlanOf();
        String model = String.format(Locale.ROOT, "KvCapacityPlanner: Llama-2-70B (80 layers, 8 KV heads of 128, FP16) at TP = %d, %d-token"
                        + " blocks of %d bytes per GPU, %d-token sequences (%d blocks); per GPU: %d GB of which %d GB weights and %d GB"
                        + " overhead, CPU %d GB and SSD %d GB per machine shared by its %d GPUs", TP, BLOCK_TOKENS, plan.blockBytes(),
                SEQ_TOKENS, plan.blocksPerSequence(), GPU_BYTES / 1_000_000_000L, WEIGHTS_PER_GPU / 1_000_000_000L,
                GPU_OVERHEAD / 1_000_000_000L, HOST_BYTES / 1_000_000_000L, SSD_BYTES / 1_000_000_000L, TP);
        String published = "vLLM's tiered KV offload: KV blocks and sequences per tier (GPU, CPU, SSD) and what each link moves per decode step";
        List<Row> rows = new ArrayList<>();
        rows.add(new Row("vLLM", published, labelled(Figure.exact("vllm_kv_bytes_per_block_per_gpu", plan.blockBytes(), "bytes",
                "none", Double.NaN, ">= 0"), MODELLED, published + "; " + model)));
        String deviceName = plan.device().tier();
        for (KvCapacityPlan.TierCapacity t : plan.tiers()) {
            String tier = t.tier().equals("device") ? "gpu" : t.tier().equals("host") ? "cpu" : t.tier().equals("disk") ? "ssd" : t.tier();
            rows.add(new Row("vLLM", published, labelled(Figure.exact("vllm_kv_blocks_" + tier, t.blocks(), "blocks", "the GPU tier's blocks",
                    plan.device().blocks(), ">= 0"), MODELLED, String.format(Locale.ROOT, "%s; %.1f GB of KV per GPU on this tier, %d"
                    + " sequences of %d tokens (the %s tier holds %d)", published, t.kvBytes() / 1e9, t.sequences(), SEQ_TOKENS, deviceName,
                    plan.device().sequences()) + "; " + model)));
            rows.add(new Row("vLLM", published, labelled(Figure.exact("vllm_kv_sequences_" + tier, t.sequences(), "sequences",
                    "the GPU tier's sequences", plan.device().sequences(), ">= 0"), MODELLED, published + "; " + model)));
        }
        for (KvCapacityPlan.LinkBudget l : plan.links()) {
            String link = l.link().startsWith("host") ? "cpu" : l.link().startsWith("disk") ? "ssd" : l.link().split("-")[0];
            double bytesPerStep = l.bytesPerSecond() * (DECODE_STEP_NANOS / 1e9);
            rows.add(new Row("vLLM", published, labelled(Figure.exact("vllm_transfer_budget_per_decode_step_" + link, bytesPerStep / 1e6,
                    "MB", "none", Double.NaN, ">= 0"), MODELLED, String.format(Locale.ROOT, "%s; %s at %.0f GB/s for a decode step of %d"
                            + " ms: %d blocks (%d tokens of KV) per step, %.2f ms a block, %.0f ms a whole %d-token sequence",
                    published, l.link(), l.bytesPerSecond() / 1e9, DECODE_STEP_NANOS / 1_000_000, l.blocksPerStep(), l.tokensPerStep(),
                    l.nanosPerBlock() / 1e6, l.nanosPerSequence() / 1e6, SEQ_TOKENS) + "; " + model)));
        }
        return rows;
    }

    // ---------------------------------------------------------------- Beluga

    private Figure poolVsNetwork(Path model, Path work, int threads, int promptTokens, boolean quick, String published) {
        String name = ClusterTtftMeasure.poolFigureName(promptTokens);
        String redis = onPath("redis-server");
        if (redis == null || onPath("redis-cli") == null) {
            return labelled(Figure.missing(name, "s", ClusterTtftMeasure.POOL_BASELINE, ClusterTtftMeasure.POOL_GOAL,
                    "not measured: redis-server or redis-cli is not on the PATH (install Redis to start a local cluster)"), MEASURED,
                    published);
        }
        Path dir = work.resolve("seeds-cluster-" + ProcessHandle.current().pid());
        try {
            ClusterScenario.deleteTree(dir);
            LocalRedisCluster cluster = ClusterScenario.create(dir);
            LocalRedisCluster.StopOnExit running = cluster.stopOnExit(); // stops it at the end, or if the run is interrupted
            try {
                cluster.start(Duration.ofSeconds(60));
                ClusterSettings settings = ClusterSettings.of(cluster, Duration.ofSeconds(2));
                List<Figure> both = ClusterTtftMeasure.measure(model, settings, threads, promptTokens, BLOCK_TOKENS, quick ? 1 : 3,
                        Log.stream("bench"));
                Figure poolVsCluster = both.stream().filter(f -> f.name().equals(name)).findFirst().orElseThrow();
                return labelled(poolVsCluster, MEASURED, published + "; the network store is a Redis Cluster on this machine's"
                        + " loopback (3 primaries, 1 replica each), not RDMA");
            } finally {
                running.close();
                ClusterScenario.deleteTree(dir);
            }
        } catch (Exception e) {
            return labelled(Figure.missing(name, "s", ClusterTtftMeasure.POOL_BASELINE, ClusterTtftMeasure.POOL_GOAL,
                    "not measured: " + e), MEASURED, published);
        }
    }

    // ---------------------------------------------------------------- WiSP

    private static List<Row> wisp(Path model, Path work, int threads, boolean quick) {
        String published = "WiSP (Table 2): decode tokens/s with expert paging against static offload at matched memory budgets";
        String turnoverPublished = "WiSP: about half of a layer's top-8 experts change between adjacent decode steps";
        String scaling = String.format(Locale.ROOT, "Qwen3-30B-A3B's shape (48 layers, 128 experts, top-8, 32/4 heads) scaled in width:"
                + " hidden 2048 -> %d, expert width 768 -> %d, heads 8/1 of %d; unstructured router, each decode step's input the"
                + " previous one with probability %.2f else a random token (expected turnover 0.5); budget %d of 128 experts per layer",
                WISP_MODEL.hidden(), WISP_MODEL.expertIntermediate(), WISP_MODEL.headDim(), WISP_REPEAT_INPUT, WISP_SLOTS_PER_LAYER);
        List<Row> rows = new ArrayList<>();
        try {
            List<Figure> figures = DiskExpertMeasure.figures(model, work.resolve("seeds-expert-disk"), threads, quick ? 8 : 16,
                    quick ? 4 : 16, quick ? 2 : 5, WISP_SLOTS_PER_LAYER, true, WISP_REPEAT_INPUT, Log.stream("bench"));
            for (Figure f : figures) {
                String pub = f.name().equals(DiskExpertMeasure.TURNOVER_FIGURE) ? turnoverPublished : published;
                rows.add(new Row("WiSP", pub, labelled(rename(f, "wisp_" + f.name()), MEASURED, pub + "; " + scaling)));
            }
        } catch (RuntimeException e) {
            rows.add(new Row("WiSP", published, labelled(Figure.missing("wisp_expert_disk_decode_vs_static_streaming", "tokens/s",
                    "static layer-by-layer streaming from disk at the same DRAM budget", ">= 1.5", "not measured: " + e), MEASURED,
                    published + "; " + scaling)));
            rows.add(new Row("WiSP", turnoverPublished, labelled(Figure.missing("wisp_" + DiskExpertMeasure.TURNOVER_FIGURE, "share",
                    "none (a property of the routing)", ">= 0", "not measured: " + e), MEASURED, turnoverPublished + "; " + scaling)));
        }
        return rows;
    }

    // ---------------------------------------------------------------- Harvest

    /** Harvest's link model: PCIe Gen4 for the host, NVLink for a peer (speed-up NVLink / PCIe for both kinds). */
    static LinkCostModel harvestLinks() {
        double speedup = NVLINK / PCIE_GEN4;
        return new LinkCostModel(PCIE_GEN4, speedup, speedup);
    }

    private List<Row> harvest() {
        LinkCostModel links = harvestLinks();
        long expertBytesPerStep = QWEN_LAYERS * QWEN_TOP_K * QWEN_EXPERT_BYTES;
        long kvBytesPerStep = HARVEST_CONTEXT * QWEN_KV_BYTES_PER_TOKEN;
        String model = String.format(Locale.ROOT, "LinkCostModel: host fetch over PCIe Gen4 at %.0f GB/s, peer fetch over NVLink at %.0f GB/s"
                        + " per direction (%.0fx); per decode step of Qwen3-30B-A3B: %d routed experts of %.1f MB (%.2f GB) and the KV of"
                        + " a %d-token context (%.0f MB), of which the offloaded share is fetched; the GPU machine would measure it",
                PCIE_GEN4 / 1e9, NVLINK / 1e9, NVLINK / PCIE_GEN4, QWEN_LAYERS * QWEN_TOP_K, QWEN_EXPERT_BYTES / 1e6, expertBytesPerStep / 1e9,
                HARVEST_CONTEXT, kvBytesPerStep / 1e6);
        String published = "Harvest (Figures 5-6): fetch time of offloaded experts and KV from a peer GPU's memory against host memory"
                + " as the offloaded share grows; its measured peer speed-ups 7.5-9.5x for experts, 3-5.65x for KV (Figures 3 and 7)";
        int points = 21;
        double[] x = new double[points];
        double[][] y = new double[4][points]; // expert host, expert peer, KV host, KV peer; ms
        for (int i = 0; i < points; i++) {
            double f = i / (double) (points - 1);
            x[i] = f;
            y[0][i] = links.hostSeconds((long) (f * expertBytesPerStep)) * 1e3;
            y[1][i] = links.expertPeerSeconds((long) (f * expertBytesPerStep)) * 1e3;
            y[2][i] = links.hostSeconds((long) (f * kvBytesPerStep)) * 1e3;
            y[3][i] = links.kvPeerSeconds((long) (f * kvBytesPerStep)) * 1e3;
        }
        String plot = "Harvest: fetch time per decode step vs offloaded share (modelled)";
        String[] labels = {"experts from host (PCIe)", "experts from peer (NVLink)", "KV from host (PCIe)", "KV from peer (NVLink)"};
        for (int k = 0; k < 4; k++) {
            series.add(new Series(plot, labels[k], "offloaded share", "ms per decode step", false, x, y[k]));
        }
        List<Row> rows = new ArrayList<>();
        for (double f : HARVEST_FRACTIONS) {
            String pct = Integer.toString((int) Math.round(f * 100));
            long e = (long) (f * expertBytesPerStep);
            long kv = (long) (f * kvBytesPerStep);
            rows.add(new Row("Harvest", published, labelled(Figure.exact("harvest_expert_fetch_peer_vs_host_" + pct + "pct",
                    links.expertPeerSeconds(e) * 1e3, "ms", "the same experts fetched from host memory over PCIe", links.hostSeconds(e) * 1e3,
                    "<= 0.2"), MODELLED, published + "; " + pct + "% of the routed experts offloaded; " + model)));
            rows.add(new Row("Harvest", published, labelled(Figure.exact("harvest_kv_fetch_peer_vs_host_" + pct + "pct",
                    links.kvPeerSeconds(kv) * 1e3, "ms", "the same KV fetched from host memory over PCIe", links.hostSeconds(kv) * 1e3,
                    "<= 0.2"), MODELLED, published + "; " + pct + "% of the context's KV offloaded; " + model)));
        }
        return rows;
    }

    // ---------------------------------------------------------------- rows

    /** Runs {@code measure}; a failure becomes a missing figure with the reason. Labels the figure measured. */
    private static Figure measured(Measure<Figure> measure, String name, String unit, String baseline, String goal, String published) {
        try {
            return labelled(measure.get(), MEASURED, published);
        } catch (Exception e) {
            return labelled(Figure.missing(name, unit, baseline, goal, "not measured: " + e), MEASURED, published);
        }
    }

    /** A functional interface for measures that throw checked exceptions. */
    @FunctionalInterface
    private interface Measure<T> {
        T get() throws Exception;
    }

    /** {@code f} with its note prefixed by the label and the published figure it stands beside. */
    static Figure labelled(Figure f, String label, String context) {
        String how = label.equals(MEASURED) ? MEASURED + " on this machine in this run" : MODELLED;
        return f.withNote(how + " | published: " + context + (f.note().isEmpty() ? "" : " | " + f.note()));
    }

    /** {@code f} under another name. */
    static Figure rename(Figure f, String name) {
        return new Figure(name, f.value(), f.unit(), f.baseline(), f.baselineValue(), f.ratio(), f.goal(), f.met(), f.note(), f.valueLow(),
                f.valueHigh(), f.ratioLow(), f.ratioHigh(), f.rounds(), f.verdict());
    }

    /** The side-by-side table: system, published figure, Strata's figure, measured or modelled. */
    static String table(List<Row> rows) {
        StringBuilder b = new StringBuilder("\nSeeds side by side\n");
        b.append(String.format(Locale.ROOT, "%-8s | %-48s | %-32s | %s%n", "system", "Strata's figure", "value (ratio)", "how"));
        for (Row r : rows) {
            Figure f = r.figure();
            String value = Double.isNaN(f.value()) ? "not measured"
                    : String.format(Locale.ROOT, "%.4g %s", f.value(), f.unit()) + (Double.isNaN(f.ratio()) ? ""
                    : String.format(Locale.ROOT, " (%.3fx)", f.ratio()));
            b.append(String.format(Locale.ROOT, "%-8s | %-48s | %-32s | %s%n", r.system(), f.name(), value,
                    f.note().startsWith(MEASURED) ? MEASURED : MODELLED));
        }
        return b.toString();
    }

    /** The first {@code program} on the PATH, or null. */
    private static String onPath(String program) {
        String path = System.getenv("PATH");
        if (path == null) {
            return null;
        }
        for (String d : path.split(File.pathSeparator)) {
            Path p = Path.of(d, program);
            if (Files.isExecutable(p)) {
                return p.toString();
            }
        }
        return null;
    }
}
