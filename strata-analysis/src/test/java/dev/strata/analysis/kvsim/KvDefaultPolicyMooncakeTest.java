package dev.strata.analysis.kvsim;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.analysis.kvtrace.MooncakeTraceReader;
import dev.strata.cache.policy.PolicyKind;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The default KV policy against plain LRU on the Mooncake traces committed in
 * {@code traces/mooncake} (512-token blocks), one KV tier, over a sweep of capacities up to each
 * trace's distinct blocks. Hit ratios are deterministic, so these are exact comparisons, not
 * timings.
 *
 * <p>The goals: never below LRU at any capacity, on every trace; and at least 1.2× LRU's hit ratio
 * at 1,000 and 5,000 blocks. The second holds on the conversation trace; on the synthetic trace the
 * default reaches 1.18× and 1.06× (docs/BENCHMARKS.md, trace replay), short of it, so it is checked
 * there only as "not below LRU".
 */
class KvDefaultPolicyMooncakeTest {
    private static final long[] SWEEP = {250, 500, 1_000, 2_000, 5_000, 10_000, 20_000};
    private static final String CONVERSATION = "conversation_trace.jsonl";
    private static final Map<String, PrefixTrace> TRACES = new ConcurrentHashMap<>();

    private static PrefixTrace trace(String file) {
        return TRACES.computeIfAbsent(file, f -> {
            Path dir = Path.of("").toAbsolutePath().getParent().resolve(MooncakeTraceReader.SHIPPED_TRACE).getParent();
            return PrefixTrace.read(dir.resolve(f), 512);
        });
    }

    private static double hitRatio(PrefixTrace trace, long capacity, PolicyKind kind) {
        return KvReplaySimulator.replay(trace, KvReplaySimulator.Config.single(capacity, kind, 1)).hitRatio();
    }

    @ParameterizedTest
    @ValueSource(strings = {"synthetic_trace.jsonl", CONVERSATION})
    void theDefaultKvPolicyIsNeverBelowLruUpToTheWorkingSet(String file) {
        PrefixTrace trace = trace(file);
        long distinct = trace.blockCount();
        for (long capacity : concat(SWEEP, distinct)) {
            double lru = hitRatio(trace, capacity, PolicyKind.LRU);
            double def = hitRatio(trace, capacity, PolicyKind.KV_DEFAULT);
            System.out.printf(Locale.ROOT, "%s capacity %6d: lru %.4f, %s %.4f (%.3fx)%n", file, capacity, lru,
                    PolicyKind.KV_DEFAULT.configName(), def, def / lru);
            assertThat(def).as("%s at %d blocks against LRU on %s", PolicyKind.KV_DEFAULT, capacity, file).isGreaterThanOrEqualTo(lru);
        }
    }

    @ParameterizedTest
    @ValueSource(longs = {1_000, 5_000})
    void theDefaultKvPolicyGainsAFifthOverLruOnTheConversationTrace(long capacity) {
        PrefixTrace trace = trace(CONVERSATION);
        double lru = hitRatio(trace, capacity, PolicyKind.LRU);
        double def = hitRatio(trace, capacity, PolicyKind.KV_DEFAULT);
        assertThat(lru).as("LRU hits something at %d blocks", capacity).isPositive();
        assertThat(def / lru).as("%s over LRU at %d blocks on %s", PolicyKind.KV_DEFAULT, capacity, CONVERSATION).isGreaterThanOrEqualTo(1.2);
    }

    private static long[] concat(long[] a, long last) {
        long[] out = java.util.Arrays.copyOf(a, a.length + 1);
        out[a.length] = last;
        return out;
    }
}
