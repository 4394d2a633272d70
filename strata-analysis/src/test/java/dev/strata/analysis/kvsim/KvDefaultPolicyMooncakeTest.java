package dev.strata.analysis.kvsim;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.analysis.kvtrace.MooncakeTraceReader;
import dev.strata.cache.policy.PolicyKind;
import java.nio.file.Path;
import java.util.Locale;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The default KV policy against plain LRU on the shipped Mooncake trace (3,993 requests, 512-token
 * blocks), one KV tier, over a sweep of capacities up to the trace's distinct blocks. Hit ratios
 * are deterministic, so these are exact comparisons, not timings.
 */
class KvDefaultPolicyMooncakeTest {
    private static final long[] SWEEP = {250, 500, 1_000, 2_000, 5_000, 10_000, 20_000};
    private static PrefixTrace trace;

    @BeforeAll
    static void read() {
        Path mooncake = Path.of("").toAbsolutePath().getParent().resolve(MooncakeTraceReader.SHIPPED_TRACE);
        trace = PrefixTrace.read(mooncake, 512);
    }

    private static double hitRatio(long capacity, PolicyKind kind) {
        return KvReplaySimulator.replay(trace, KvReplaySimulator.Config.single(capacity, kind, 1)).hitRatio();
    }

    @Test
    void theDefaultKvPolicyIsNeverBelowLruUpToTheWorkingSet() {
        long distinct = trace.blockCount();
        for (long capacity : concat(SWEEP, distinct)) {
            double lru = hitRatio(capacity, PolicyKind.LRU);
            double def = hitRatio(capacity, PolicyKind.KV_DEFAULT);
            System.out.printf(Locale.ROOT, "capacity %6d: lru %.4f, %s %.4f (%.3fx)%n", capacity, lru,
                    PolicyKind.KV_DEFAULT.configName(), def, def / lru);
            assertThat(def).as("%s at %d blocks against LRU", PolicyKind.KV_DEFAULT, capacity).isGreaterThanOrEqualTo(lru);
        }
    }

    private static long[] concat(long[] a, long last) {
        long[] out = java.util.Arrays.copyOf(a, a.length + 1);
        out[a.length] = last;
        return out;
    }
}
