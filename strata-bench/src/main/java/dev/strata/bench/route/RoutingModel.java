package dev.strata.bench.route;

import dev.strata.cache.policy.PolicyKind;
import java.util.Objects;

/**
 * The parameters of the modelled cluster a routing replay runs against. Every result computed
 * with them is <em>modelled</em>, not measured: the constants stand for a typical deployment and
 * are stated here so that a reader can change them.
 *
 * <p>Defaults ({@link #defaults()}), for an 8B-class model with grouped-query attention
 * (32 layers × 8 KV heads × 128 dims × K and V × 2 bytes = 128 KiB of KV per token) served by
 * instances of one H100 each:
 * <ul>
 *   <li>4 instances, each with a DEVICE KV cache of 1,000 blocks of 512 tokens (64 MiB each:
 *       about 62 GiB, what an 80 GB GPU holds beside the weights);</li>
 *   <li>a shared POOL of 20,000 blocks (1.25 TiB; the CXL pool of the Beluga paper holds 8 TB);</li>
 *   <li>prefill (recompute) at 20,000 tokens/s per instance;</li>
 *   <li>pool loads at 26 GB/s per instance: the GPU-to-CXL-pool read bandwidth the Beluga paper
 *       measured through one PCIe/CXL adapter (§5.3); a 64 MiB block loads in 2.6 ms where its
 *       recompute takes 25.6 ms;</li>
 *   <li>decode at 2,000 tokens/s per instance (the batch's aggregate output rate), so that a
 *       request's answer occupies its instance as well as its prompt.</li>
 * </ul>
 *
 * <p>Immutable; any thread.
 *
 * @param instances                engine instances, at least 1
 * @param deviceBlocks             blocks of each instance's local (DEVICE) KV cache, at least 1
 * @param poolBlocks               blocks of the shared POOL tier; 0 for no pool
 * @param policy                   eviction policy of every cache (device and pool)
 * @param blockTokens              tokens per KV block (the trace's block size)
 * @param kvBytesPerToken          KV bytes of one token, all layers, bytes
 * @param recomputeTokensPerSecond prefill rate of one instance for tokens not served from a cache, tokens/s
 * @param poolBytesPerSecond       rate at which one instance loads blocks from the pool, bytes/s
 * @param decodeTokensPerSecond    output rate of one instance, tokens/s
 * @param affinityCapFactor        the cache-aware router's load cap: an instance above this × the mean load does not compete for affinity
 * @param affinityCapSlackTokens   tokens of slack on top of that cap
 */
public record RoutingModel(int instances, long deviceBlocks, long poolBlocks, PolicyKind policy, int blockTokens,
                           long kvBytesPerToken, double recomputeTokensPerSecond, double poolBytesPerSecond,
                           double decodeTokensPerSecond, double affinityCapFactor, long affinityCapSlackTokens) {
    /** Default instances. */
    public static final int INSTANCES = 4;
    /** Default DEVICE cache of each instance, blocks. */
    public static final long DEVICE_BLOCKS = 1_000;
    /** Default shared POOL, blocks. */
    public static final long POOL_BLOCKS = 20_000;
    /** Default block size, tokens (Mooncake's). */
    public static final int BLOCK_TOKENS = 512;
    /** Default KV bytes per token: 32 layers × 8 KV heads × 128 dims × 2 (K, V) × 2 bytes. */
    public static final long KV_BYTES_PER_TOKEN = 32L * 8 * 128 * 2 * 2;
    /** Default prefill rate per instance, tokens/s. */
    public static final double RECOMPUTE_TOKENS_PER_SECOND = 20_000;
    /** Default pool load rate per instance, bytes/s (Beluga §5.3: GPU reads from the CXL pool at 26 GB/s). */
    public static final double POOL_BYTES_PER_SECOND = 26e9;
    /** Default decode rate per instance, tokens/s. */
    public static final double DECODE_TOKENS_PER_SECOND = 2_000;
    /** Default load cap of the cache-aware router: 1.5 × the mean load. */
    public static final double AFFINITY_CAP_FACTOR = 1.5;
    /** Default slack of that cap, tokens (about one long prompt). */
    public static final long AFFINITY_CAP_SLACK_TOKENS = 16_384;

    public RoutingModel {
        Objects.requireNonNull(policy, "policy");
        if (instances < 1 || deviceBlocks < 1 || poolBlocks < 0 || blockTokens < 1 || kvBytesPerToken < 1
                || !(recomputeTokensPerSecond > 0) || !(poolBytesPerSecond > 0) || !(decodeTokensPerSecond > 0)
                || !(affinityCapFactor >= 1.0) || affinityCapSlackTokens < 0) {
            throw new IllegalArgumentException("inconsistent routing model: " + instances + " instances, " + deviceBlocks
                    + " device blocks, " + poolBlocks + " pool blocks, " + blockTokens + " tokens per block, " + kvBytesPerToken
                    + " bytes per token, recompute " + recomputeTokensPerSecond + " tokens/s, pool " + poolBytesPerSecond
                    + " bytes/s, decode " + decodeTokensPerSecond + " tokens/s, cap factor " + affinityCapFactor + ", slack "
                    + affinityCapSlackTokens + " (need positive counts and rates, pool >= 0, cap factor >= 1)");
        }
    }

    /** The defaults listed above, with the prefix-aware policy and the pool. */
    public static RoutingModel defaults() {
        return new RoutingModel(INSTANCES, DEVICE_BLOCKS, POOL_BLOCKS, PolicyKind.PREFIX_AWARE, BLOCK_TOKENS,
                KV_BYTES_PER_TOKEN, RECOMPUTE_TOKENS_PER_SECOND, POOL_BYTES_PER_SECOND, DECODE_TOKENS_PER_SECOND,
                AFFINITY_CAP_FACTOR, AFFINITY_CAP_SLACK_TOKENS);
    }

    /** This model with a pool of {@code blocks} blocks (0: none). */
    public RoutingModel withPool(long blocks) {
        return new RoutingModel(instances, deviceBlocks, blocks, policy, blockTokens, kvBytesPerToken,
                recomputeTokensPerSecond, poolBytesPerSecond, decodeTokensPerSecond, affinityCapFactor, affinityCapSlackTokens);
    }

    /** Whether there is a shared pool. */
    public boolean hasPool() {
        return poolBlocks > 0;
    }
}
