package dev.strata.cache.kv;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A hit taken only when it beats recompute: two managers share a pool as two serving processes
 * would, and the second reads it through injected latency (30 ms a read, a store behind a slow
 * network) while its engine prefills a block in 40 µs.
 */
class KvRecomputeWhenFasterTest {
    private static final int BT = KvRig.GEOMETRY.blockTokens();
    private static final long READ_DELAY_MS = 30;

    /** {@code one} computes, commits and publishes {@code tokens}, then releases them. */
    private static void publish(KvRig one, int[] tokens) {
        KvSequence s = one.manager.newSequence();
        one.extend(s, tokens, tokens.length);
        one.idle();
        one.manager.release(s);
    }

    /** The engine's path: match, keep what is worth loading, load it; returns the loaded match. */
    private static PrefixMatch serve(KvRig rig, int[] tokens) throws Exception {
        PrefixMatch match = rig.manager.worthLoading(rig.manager.match(tokens, tokens.length));
        KvSequence s = rig.manager.newSequence();
        if (match.blocks() > 0) {
            assertThat(rig.manager.load(match, s).get(30, TimeUnit.SECONDS).complete()).isTrue();
        }
        rig.idle();
        rig.assertCommittedBytes(s);
        rig.manager.release(s);
        return match;
    }

    /**
     * What users of a slow shared tier hit: every request whose prefix another instance published
     * waited for each block's slow read, though recomputing the prefix was faster. Now the first
     * load measures the tier; after it the tier's blocks are left to recompute (and counted), while
     * blocks already on DEVICE before them are still shared.
     */
    @Test
    void blocksOnASlowTierAreRecomputedOnceItsLoadsAreMeasuredSlowerThanThePrefill() throws Exception {
        InMemorySharedBlockStore pool = new InMemorySharedBlockStore(64);
        try (KvRig one = new KvRig(KvRig.Spec.of(16, 0, 0, 0).shared(pool));
             KvRig two = new KvRig(KvRig.Spec.of(16, 0, 0, 0).shared(pool))) {
            int[] a = KvRig.tokens(21, 3 * BT + 1);
            int[] b = KvRig.tokens(22, 3 * BT + 1);
            int[] c = Arrays.copyOf(a, 5 * BT + 1); // a's three blocks, then two of its own
            System.arraycopy(KvRig.tokens(23, 2 * BT + 1), 0, c, 3 * BT, 2 * BT + 1);
            publish(one, a);
            publish(one, b);
            publish(one, c);
            pool.readDelayMillis = READ_DELAY_MS;
            two.manager.recordPrefill(64, 64 * 10_000L); // the engine's prefill: 10 µs a token

            PrefixMatch first = serve(two, a);
            assertThat(first.count(BlockLocation.SHARED)).as("not measured yet: loaded").isEqualTo(3);
            KvManagerStats stats = two.manager.stats();
            assertThat(stats.loadSecondsPerBlock(BlockLocation.SHARED)).as("three reads of 30 ms, at most all at once")
                    .isGreaterThanOrEqualTo(READ_DELAY_MS / 3 / 1e3);
            assertThat(stats.recomputeSecondsPerBlock()).isCloseTo(BT * 10e-6, org.assertj.core.data.Offset.offset(1e-12));

            assertThat(two.manager.match(b, b.length).count(BlockLocation.SHARED)).isEqualTo(3);
            assertThat(serve(two, b).blocks()).as("slower to load than to recompute").isZero();
            PrefixMatch third = serve(two, c);
            assertThat(third.blocks()).as("a's blocks on DEVICE, not c's own in the pool").isEqualTo(3);
            assertThat(third.count(BlockLocation.DEVICE)).isEqualTo(3);

            stats = two.manager.stats();
            assertThat(stats.blocks(KvLink.SHARED_READ)).as("only the first request's reads").isEqualTo(3);
            assertThat(stats.recomputedInstead(BlockLocation.SHARED)).isEqualTo(3 + 2);
            assertThat(stats.toPrometheus()).contains("strata_kv_recomputed_instead_total{location=\"shared\"} 5")
                    .contains("strata_kv_load_seconds_per_block{location=\"shared\"}")
                    .contains("strata_kv_recompute_seconds_per_block ");
        }
    }

    /** With {@code recomputeWhenFaster} off every matched block is loaded, however slow its tier. */
    @Test
    void withTheSettingOffEveryMatchedBlockIsLoaded() throws Exception {
        InMemorySharedBlockStore pool = new InMemorySharedBlockStore(64);
        try (KvRig one = new KvRig(KvRig.Spec.of(16, 0, 0, 0).shared(pool));
             KvRig two = new KvRig(KvRig.Spec.of(16, 0, 0, 0).shared(pool)
                     .config(KvManagerConfig.defaults().recomputeWhenFaster(false)))) {
            int[] a = KvRig.tokens(31, 2 * BT + 1);
            int[] b = KvRig.tokens(32, 2 * BT + 1);
            publish(one, a);
            publish(one, b);
            pool.readDelayMillis = READ_DELAY_MS;
            two.manager.recordPrefill(64, 64 * 10_000L);
            serve(two, a);
            assertThat(serve(two, b).count(BlockLocation.SHARED)).isEqualTo(2);
            assertThat(two.manager.stats().blocks(KvLink.SHARED_READ)).isEqualTo(4);
            assertThat(two.manager.stats().recomputedInstead(BlockLocation.SHARED)).isZero();
        }
    }
}
