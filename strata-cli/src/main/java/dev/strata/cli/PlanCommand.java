package dev.strata.cli;

import dev.strata.analysis.kvplan.KvCapacityPlan;
import dev.strata.analysis.kvplan.KvCapacityPlanner;
import dev.strata.analysis.kvplan.ModelSpec;
import dev.strata.analysis.kvplan.PlanReport;
import dev.strata.analysis.kvplan.PlanRequest;
import dev.strata.analysis.kvplan.PlanUnits;
import dev.strata.cache.kv.KvDtype;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code strata plan}: how many KV blocks and sequences each tier of one rank holds for a model,
 * and how many blocks each link can bring to the device per decode step. The arithmetic lives in
 * {@link KvCapacityPlanner}; this class only reads the options. Runs on the main thread.
 */
@Command(name = "plan", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Plans KV-cache capacity per tier and the transfer budget per decode step.",
                "Sizes of --host-kv, --pool-capacity and --disk-kv-size are per rank (per device), like an engine's swap space;",
                "--cluster-capacity is the whole Redis Cluster's, shared by --machines machines and split over each machine's ranks;",
                "they are named like the keys of the configuration (tiers.*.capacity) and the flags of strata serve.",
                "Sizes: KB, MB, GB, TB are decimal (GB = 10^9 bytes); KiB, MiB, GiB, TiB binary."})
final class PlanCommand implements Callable<Integer> {

    @Option(names = "--preset", paramLabel = "NAME", description = "a known model: llama-2-7b, llama-2-70b, llama-3-8b, "
            + "llama-3-70b, mixtral-8x7b, qwen3-30b-a3b, qwen3-32b")
    String preset;

    @Option(names = "--model", paramLabel = "DIR", description = "a Hugging Face model directory: its config.json")
    Path modelDir;

    @Option(names = "--model-config", paramLabel = "FILE", description = "the model's Hugging Face config.json")
    Path modelConfig;

    @Option(names = "--tp", paramLabel = "N", defaultValue = "1", description = "tensor-parallel degree (default: ${DEFAULT-VALUE})")
    int tp;

    @Option(names = "--device-capacity", paramLabel = "SIZE", required = true, description = "device memory per rank, e.g. 80GB "
            + "[tiers.device.capacity]")
    String device;

    @Option(names = "--weights-per-device", paramLabel = "SIZE", required = true,
            description = "model weights on each device, e.g. 32.5GB")
    String weights;

    @Option(names = "--overhead", paramLabel = "SIZE", defaultValue = "0",
            description = "device memory for activations and runtime (default: ${DEFAULT-VALUE})")
    String overhead;

    @Option(names = "--host-kv", paramLabel = "SIZE", defaultValue = "0", description = "host memory for KV per rank (default: none) "
            + "[tiers.host.capacity]")
    String host;

    @Option(names = "--pool-capacity", paramLabel = "SIZE", defaultValue = "0",
            description = "shared-pool memory for KV per rank (default: none) [tiers.pool.capacity]")
    String pool;

    @Option(names = "--disk-kv-size", paramLabel = "SIZE", defaultValue = "0", description = "disk for KV per rank (default: none) "
            + "[tiers.disk.capacity]")
    String disk;

    @Option(names = "--block-tokens", paramLabel = "N", defaultValue = "16", description = "tokens per KV block (default: ${DEFAULT-VALUE}) [kv.block-tokens]")
    int blockTokens;

    @Option(names = "--context-tokens", paramLabel = "N", defaultValue = "4096",
            description = "context per sequence, to count sequences in (default: ${DEFAULT-VALUE})")
    int seqTokens;

    @Option(names = "--kv-dtype", paramLabel = "DTYPE", description = "KV element type: fp32, fp16, bf16, fp8_e4m3, fp8_e5m2, "
            + "int8 (default: the model's dtype)")
    String kvDtype;

    @Option(names = "--decode-step", paramLabel = "TIME", defaultValue = "15ms",
            description = "duration of one decode step (default: ${DEFAULT-VALUE})")
    String decodeStep;

    @Option(names = "--host-link", paramLabel = "RATE", defaultValue = "24GB/s",
            description = "host to device bandwidth per rank (default: ${DEFAULT-VALUE})")
    String hostLink;

    @Option(names = "--pool-link", paramLabel = "RATE", description = "pool to device bandwidth per rank (default: --host-link)")
    String poolLink;

    @Option(names = "--disk-link", paramLabel = "RATE", defaultValue = "7GB/s",
            description = "disk to device bandwidth per rank (default: ${DEFAULT-VALUE})")
    String diskLink;

    @Option(names = "--cluster-capacity", paramLabel = "SIZE", defaultValue = "0",
            description = "the Redis Cluster's memory for KV, all its primaries together, shared by --machines machines (default: none) "
                    + "[tiers.cluster; the cluster's maxmemory]")
    String cluster;

    @Option(names = "--machines", paramLabel = "M", defaultValue = "1",
            description = "machines sharing the cluster, to give each one's share (default: ${DEFAULT-VALUE})")
    int machines;

    @Option(names = {"--cluster-link", "--cluster-bandwidth"}, paramLabel = "RATE", defaultValue = "10Gbit/s",
            description = "cluster to device bandwidth per rank: the network (default: ${DEFAULT-VALUE}, one common data-centre port)")
    String clusterLink;

    @Option(names = "--json", description = "print the plan as JSON")
    boolean json;

    @Override
    public Integer call() {
        KvDtype dtype = kvDtype == null ? null : KvDtype.parse(kvDtype);
        ModelSpec model;
        int given = (preset != null ? 1 : 0) + (modelDir != null ? 1 : 0) + (modelConfig != null ? 1 : 0);
        if (given != 1) {
            throw new IllegalArgumentException("give the model with exactly one of --preset NAME, --model DIR or --model-config FILE");
        }
        if (modelDir != null && !Files.isDirectory(modelDir)) {
            throw new IllegalArgumentException("--model " + modelDir + " is not a directory");
        }
        model = preset != null ? ModelSpec.preset(preset)
                : ModelSpec.fromConfigJson(modelConfig != null ? modelConfig : modelDir.resolve("config.json"), dtype);
        long hostLinkRate = PlanUnits.bytesPerSecond("--host-link", hostLink);
        PlanRequest request = new PlanRequest(model, tp, dtype, blockTokens, seqTokens,
                PlanUnits.size("--device-capacity", device), PlanUnits.size("--weights-per-device", weights),
                PlanUnits.size("--overhead", overhead), PlanUnits.size("--host-kv", host), PlanUnits.size("--pool-capacity", pool),
                PlanUnits.size("--disk-kv-size", disk), PlanUnits.durationNanos("--decode-step", decodeStep), hostLinkRate,
                poolLink == null ? hostLinkRate : PlanUnits.bytesPerSecond("--pool-link", poolLink),
                PlanUnits.bytesPerSecond("--disk-link", diskLink));
        long clusterBytes = PlanUnits.size("--cluster-capacity", cluster);
        if (clusterBytes > 0) {
            request = request.withCluster(new PlanRequest.Cluster(clusterBytes, machines, PlanUnits.bytesPerSecond("--cluster-link", clusterLink)));
        } else if (machines != 1) {
            throw new IllegalArgumentException("--machines " + machines + " shares a cluster: give its memory with --cluster-capacity SIZE");
        }
        KvCapacityPlan plan = KvCapacityPlanner.plan(request);
        System.out.print(json ? PlanReport.json(plan) : PlanReport.text(plan));
        return 0;
    }
}
