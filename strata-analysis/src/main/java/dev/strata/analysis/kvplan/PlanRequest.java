package dev.strata.analysis.kvplan;

import dev.strata.cache.kv.KvDtype;
import dev.strata.cache.kv.KvGeometry;

/**
 * What a capacity plan is asked for: a model, how it is split over devices, and the memory and
 * links each rank has. Sizes of the HOST, POOL and DISK tiers are per rank, as an engine's swap
 * space is per device; 0 leaves a tier out. The CLUSTER tier is sized as a whole: one cluster's
 * memory for KV, shared by every machine that uses it ({@link Cluster}); null leaves it out.
 *
 * <p>Immutable; any thread.
 *
 * @param model                  the model
 * @param tp                     tensor-parallel degree: ranks the KV heads are split over
 * @param kvDtype                the KV element type
 * @param blockTokens            tokens per KV block
 * @param seqTokens              tokens of the sequence length sequences are counted in
 * @param deviceBytes            device memory per rank, bytes
 * @param weightsPerDevice       model weights held by each device, bytes
 * @param overheadBytes          device memory kept for activations, graphs and the runtime, bytes
 * @param hostBytes              host memory for KV per rank, bytes (0: none)
 * @param poolBytes              shared-pool memory for KV per rank, bytes (0: none)
 * @param diskBytes              disk for KV per rank, bytes (0: none)
 * @param decodeStepNanos        duration of one decode step, ns: the budget transfers must fit in
 * @param hostLinkBytesPerSecond host → device bandwidth per rank, bytes/s
 * @param poolLinkBytesPerSecond pool → device bandwidth per rank, bytes/s
 * @param diskLinkBytesPerSecond disk → device bandwidth per rank, bytes/s
 * @param cluster                the CLUSTER tier shared by the machines, or null for none
 */
public record PlanRequest(ModelSpec model, int tp, KvDtype kvDtype, int blockTokens, int seqTokens, long deviceBytes,
        long weightsPerDevice, long overheadBytes, long hostBytes, long poolBytes, long diskBytes, long decodeStepNanos,
        long hostLinkBytesPerSecond, long poolLinkBytesPerSecond, long diskLinkBytesPerSecond, Cluster cluster) {

    /**
     * The CLUSTER tier: a Redis Cluster's memory for KV blocks, shared by {@code machines}
     * machines, each reaching it over the network.
     *
     * @param bytes              the cluster's memory for KV, all nodes together (its {@code maxmemory} summed over the
     *                           primaries), bytes
     * @param machines           machines sharing the cluster (at least 1)
     * @param linkBytesPerSecond cluster → device bandwidth per rank, bytes/s (the network share of one rank)
     */
    public record Cluster(long bytes, int machines, long linkBytesPerSecond) {
        /** Default cluster → device bandwidth: 10 Gbit/s (1.25 GB/s), one common data-centre network port. */
        public static final long DEFAULT_LINK = 1_250_000_000L;

        /** @throws IllegalArgumentException naming the option and the value when one is out of range */
        public Cluster {
            positive("cluster memory (--cluster-capacity)", bytes);
            positive("machines sharing the cluster (--machines)", machines);
            positive("cluster link (--cluster-link)", linkBytesPerSecond);
        }
    }

    /** A request without a CLUSTER tier. */
    public PlanRequest(ModelSpec model, int tp, KvDtype kvDtype, int blockTokens, int seqTokens, long deviceBytes, long weightsPerDevice,
                       long overheadBytes, long hostBytes, long poolBytes, long diskBytes, long decodeStepNanos, long hostLinkBytesPerSecond,
                       long poolLinkBytesPerSecond, long diskLinkBytesPerSecond) {
        this(model, tp, kvDtype, blockTokens, seqTokens, deviceBytes, weightsPerDevice, overheadBytes, hostBytes, poolBytes, diskBytes,
                decodeStepNanos, hostLinkBytesPerSecond, poolLinkBytesPerSecond, diskLinkBytesPerSecond, null);
    }

    /** This request with the CLUSTER tier {@code c} (null: none). */
    public PlanRequest withCluster(Cluster c) {
        return new PlanRequest(model, tp, kvDtype, blockTokens, seqTokens, deviceBytes, weightsPerDevice, overheadBytes, hostBytes,
                poolBytes, diskBytes, decodeStepNanos, hostLinkBytesPerSecond, poolLinkBytesPerSecond, diskLinkBytesPerSecond, c);
    }

    /** Default tokens per sequence counted. */
    public static final int DEFAULT_SEQ_TOKENS = 4096;
    /** Default decode step: 15 ms. */
    public static final long DEFAULT_DECODE_STEP_NANOS = 15_000_000L;
    /** Default host → device bandwidth: 24 GB/s, PCIe 4.0 x16 from pinned memory in practice. */
    public static final long DEFAULT_HOST_LINK = 24_000_000_000L;
    /** Default disk → device bandwidth: 7 GB/s, one NVMe drive's sequential read. */
    public static final long DEFAULT_DISK_LINK = 7_000_000_000L;

    /**
     * @throws IllegalArgumentException naming the field and value when one is out of range, or
     *                                  when weights and overhead leave the device no room for KV
     */
    public PlanRequest {
        if (model == null) {
            throw new IllegalArgumentException("a model must be given (--preset NAME, --model DIR or --model-config FILE)");
        }
        positive("tensor-parallel degree (--tp)", tp);
        positive("block tokens (--block-tokens)", blockTokens);
        positive("context tokens (--context-tokens)", seqTokens);
        positive("device memory (--device-capacity)", deviceBytes);
        notNegative("weights per device (--weights-per-device)", weightsPerDevice);
        notNegative("overhead (--overhead)", overheadBytes);
        notNegative("host memory (--host-kv)", hostBytes);
        notNegative("pool memory (--pool-capacity)", poolBytes);
        notNegative("disk (--disk-kv-size)", diskBytes);
        positive("decode step (--decode-step)", decodeStepNanos);
        positive("host link (--host-link)", hostLinkBytesPerSecond);
        positive("pool link (--pool-link)", poolLinkBytesPerSecond);
        positive("disk link (--disk-link)", diskLinkBytesPerSecond);
        if (kvDtype == null) {
            kvDtype = model.dtype();
        }
        if (model.attentionHeads() % tp != 0) {
            throw new IllegalArgumentException("tensor-parallel degree " + tp + " does not divide the " + model.attentionHeads()
                    + " attention heads of " + model.name());
        }
        if (weightsPerDevice + overheadBytes >= deviceBytes) {
            throw new IllegalArgumentException("weights (" + PlanReport.decimal(weightsPerDevice) + ") + overhead ("
                    + PlanReport.decimal(overheadBytes) + ") = " + PlanReport.decimal(weightsPerDevice + overheadBytes)
                    + " leave no room for KV on a device of " + PlanReport.decimal(deviceBytes));
        }
    }

    /** The KV geometry of the whole model (all ranks). */
    public KvGeometry geometry() {
        return model.kvGeometry(kvDtype, blockTokens);
    }

    /**
     * The KV geometry one rank holds.
     *
     * @throws IllegalArgumentException if {@link #tp} does not divide the KV heads (nor they it)
     */
    public KvGeometry rankGeometry() {
        try {
            return geometry().perRank(tp);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("tensor-parallel degree " + tp + " does not fit " + model.name() + ": "
                    + e.getMessage());
        }
    }

    private static void positive(String what, long value) {
        if (value <= 0) {
            throw new IllegalArgumentException(what + " must be positive, got " + value);
        }
    }

    private static void notNegative(String what, long value) {
        if (value < 0) {
            throw new IllegalArgumentException(what + " must not be negative, got " + value);
        }
    }
}
