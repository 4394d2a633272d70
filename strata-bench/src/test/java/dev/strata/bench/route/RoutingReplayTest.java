package dev.strata.bench.route;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.strata.analysis.kvsim.PrefixTrace;
import dev.strata.analysis.kvsim.SyntheticPrefixTraceGenerator;
import dev.strata.analysis.kvtrace.TraceRequest;
import dev.strata.bench.route.RoutingReplayMeasure.Arm;
import dev.strata.cache.policy.PolicyKind;
import dev.strata.node.route.InstanceLoads;
import dev.strata.node.route.LeastLoadedRouter;
import dev.strata.node.route.RouteRequest;
import dev.strata.node.route.Router;
import dev.strata.testing.Property;
import java.util.List;
import org.junit.jupiter.api.Test;

class RoutingReplayTest {
    private static final double EPS = 1e-9;

    /**
     * Two instances, 16-token blocks, 1,000 KV bytes per token; recompute 16 tokens/s (a block a
     * second), pool loads 160,000 bytes/s (a block in 0.1 s), decode 10 tokens/s; caches far larger
     * than the trace; no load cap on affinity.
     */
    private static RoutingModel handModel(long poolBlocks) {
        return new RoutingModel(2, 100, poolBlocks, PolicyKind.LRU, 16, 1000, 16, 160_000, 10, Double.POSITIVE_INFINITY, 0);
    }

    /** A: 3 blocks (48 tokens, 10 out) at 0 ms; B: A's 3 blocks and one more (64 tokens, 10 out) at 0 ms. */
    private static PrefixTrace sharedPrefix() {
        return PrefixTrace.of(List.of(
                new TraceRequest(0, 48, 10, new long[] {1, 2, 3}),
                new TraceRequest(0, 64, 10, new long[] {1, 2, 3, 4})));
    }

    private static RoutingResult replay(Arm arm, RoutingModel base, PrefixTrace trace) {
        RoutingModel m = arm.model(base);
        return RoutingReplay.replay(trace, m, arm.router(m), true);
    }

    @Test
    void affinityRoutesTheSharedPrefixToOneInstanceWhichHitsLocallyButQueues() {
        RoutingResult r = replay(Arm.CACHE_AWARE_NO_POOL, handModel(100), sharedPrefix());
        // A: no match anywhere, least loaded (instance 0); B: 3 leading blocks cached at instance 0.
        assertThat(r.instanceOf()).containsExactly(0, 0);
        assertThat(r.localBlocks()).isEqualTo(3);
        assertThat(r.poolBlocks()).isZero();
        assertThat(r.recomputedBlocks()).isEqualTo(4);
        assertThat(r.pool()).isFalse();
        // A: recompute 48 tokens = 3 s, decode 1 s. B waits 4 s, recomputes 16 tokens = 1 s, decodes 1 s.
        assertThat(r.ttftSeconds()[0]).isCloseTo(3.0, within(EPS));
        assertThat(r.ttftSeconds()[1]).isCloseTo(5.0, within(EPS));
        assertThat(r.busySeconds()).containsExactly(new double[] {6.0, 0.0}, within(EPS));
        assertThat(r.loadImbalance()).isCloseTo(2.0, within(EPS));
        assertThat(r.meanTtft()).isCloseTo(4.0, within(EPS));
        assertThat(r.p99Ttft()).isCloseTo(5.0, within(EPS));
        assertThat(r.hitRatio()).isCloseTo(3.0 / 7, within(EPS));
    }

    @Test
    void loadOnlySplitsTheSharedPrefixAndRecomputesItWithoutAPool() {
        RoutingResult r = replay(Arm.LOAD_ONLY_NO_POOL, handModel(100), sharedPrefix());
        int a = r.instanceOf()[0];
        assertThat(r.instanceOf()[1]).isEqualTo(1 - a); // A's 58 tokens are still booked when B arrives
        assertThat(r.localBlocks()).isZero();
        assertThat(r.recomputedBlocks()).isEqualTo(7);
        assertThat(r.ttftSeconds()).containsExactly(new double[] {3.0, 4.0}, within(EPS));
        assertThat(r.busySeconds()[a]).isCloseTo(4.0, within(EPS));
        assertThat(r.busySeconds()[1 - a]).isCloseTo(5.0, within(EPS));
        assertThat(r.loadImbalance()).isCloseTo(5.0 / 4.5, within(EPS));
    }

    @Test
    void loadOnlyWithThePoolSplitsThemAndTheSecondInstanceHitsInThePool() {
        RoutingResult r = replay(Arm.LOAD_ONLY_WITH_POOL, handModel(100), sharedPrefix());
        int a = r.instanceOf()[0];
        assertThat(r.instanceOf()[1]).isEqualTo(1 - a);
        assertThat(r.pool()).isTrue();
        assertThat(r.localBlocks()).isZero();
        assertThat(r.poolBlocks()).isEqualTo(3);
        assertThat(r.recomputedBlocks()).isEqualTo(4);
        // B: loads 48 tokens × 1,000 bytes at 160,000 bytes/s = 0.3 s, recomputes 16 tokens = 1 s, no wait.
        assertThat(r.ttftSeconds()).containsExactly(new double[] {3.0, 1.3}, within(EPS));
        assertThat(r.busySeconds()[1 - a]).isCloseTo(2.3, within(EPS));
        assertThat(r.poolHitRatio()).isCloseTo(3.0 / 7, within(EPS));
        assertThat(r.maxPoolBlocks()).isEqualTo(4);
    }

    @Test
    void withThePoolAffinityStillHitsLocallyAndTheLocalPrefixIsNotLoadedAgain() {
        RoutingResult r = replay(Arm.CACHE_AWARE_WITH_POOL, handModel(100), sharedPrefix());
        assertThat(r.instanceOf()).containsExactly(0, 0);
        assertThat(r.localBlocks()).isEqualTo(3);
        assertThat(r.poolBlocks()).isZero();
        assertThat(r.ttftSeconds()).containsExactly(new double[] {3.0, 5.0}, within(EPS));
    }

    @Test
    void aPartialLastBlockCostsOnlyItsTokensAndAFinishedRequestFreesItsInstance() {
        // A: 40 tokens (3 blocks, the last 8 tokens) at 0; B: the same prompt at 10 s, after A finished.
        PrefixTrace t = PrefixTrace.of(List.of(
                new TraceRequest(0, 40, 20, new long[] {7, 8, 9}),
                new TraceRequest(10_000, 40, 20, new long[] {7, 8, 9})));
        RoutingResult r = replay(Arm.LOAD_ONLY_WITH_POOL, handModel(100), t);
        // A: 40 tokens recomputed = 2.5 s. B: everything cached (locally if it landed on A's instance, else in the pool).
        assertThat(r.ttftSeconds()[0]).isCloseTo(2.5, within(EPS));
        boolean same = r.instanceOf()[1] == r.instanceOf()[0];
        assertThat(r.ttftSeconds()[1]).isCloseTo(same ? 0.0 : 40 * 1000 / 160_000.0, within(EPS));
        assertThat(r.recomputedBlocks()).isEqualTo(3);
        assertThat(same ? r.localBlocks() : r.poolBlocks()).isEqualTo(3);
    }

    @Test
    void aRouterThatPicksAnInstanceOutOfRangeIsRefused() {
        Router bad = new Router() {
            @Override
            public int route(RouteRequest request, InstanceLoads loads) {
                loads.book(0, request.cost());
                return 2;
            }

            @Override
            public String name() {
                return "bad";
            }
        };
        assertThatThrownBy(() -> RoutingReplay.replay(sharedPrefix(), handModel(0), bad, false))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("chose instance 2 of 2");
    }

    @Test
    void everyArmAndPolicyKeepsTheInvariantsOnGeneratedTraces() {
        Property.forAll("routing replay invariants", 6, random -> {
            int instances = 2 + random.nextInt(3);
            long device = 5 + random.nextInt(40);
            long pool = device + random.nextInt(200);
            PolicyKind policy = PolicyKind.values()[random.nextInt(PolicyKind.values().length)];
            PrefixTrace t = PrefixTrace.of(SyntheticPrefixTraceGenerator.generate(
                    SyntheticPrefixTraceGenerator.Knobs.chat(150 + random.nextInt(100)), random.nextLong()));
            RoutingModel base = new RoutingModel(instances, device, pool, policy, 512, 131_072, 20_000, 26e9, 2_000,
                    1.0 + random.nextDouble(), random.nextInt(20_000));
            for (Arm arm : Arm.values()) {
                RoutingResult r = replay(arm, base, t); // checks occupancy, prefix closure and loads after every request
                assertThat(r.requests()).isEqualTo(t.requestCount());
                assertThat(java.util.Arrays.stream(r.instanceOf()).boxed().toList()).allSatisfy(i -> assertThat(i).isBetween(0, instances - 1));
                assertThat(java.util.Arrays.stream(r.requestsPerInstance()).sum()).isEqualTo(t.requestCount());
                assertThat(r.blocks()).isEqualTo(t.accessCount());
                assertThat(r.maxDeviceBlocks()).isBetween(1L, device);
                assertThat(r.maxPoolBlocks()).isLessThanOrEqualTo(arm.model(base).poolBlocks());
                if (arm.model(base).hasPool()) {
                    assertThat(r.maxPoolBlocks()).isPositive();
                } else {
                    assertThat(r.poolBlocks()).isZero();
                }
                assertThat(java.util.Arrays.stream(r.ttftSeconds()).min().orElse(0)).isGreaterThanOrEqualTo(0.0);
                double work = 0;
                for (int q = 0; q < t.requestCount(); q++) {
                    work += t.outputLength(q) / base.decodeTokensPerSecond();
                }
                // busy time is at least every answer's decode, at most that plus recomputing every prompt
                double busy = java.util.Arrays.stream(r.busySeconds()).sum();
                double prompts = 0;
                for (int q = 0; q < t.requestCount(); q++) {
                    prompts += t.inputLength(q) / base.recomputeTokensPerSecond();
                }
                assertThat(busy).isGreaterThanOrEqualTo(work - EPS).isLessThanOrEqualTo(work + prompts + EPS);
            }
        });
    }

    @Test
    void loadOnlyRoutingWithOneInstanceMatchesAStraightReplayOfThatCache() {
        PrefixTrace t = PrefixTrace.of(SyntheticPrefixTraceGenerator.generate(SyntheticPrefixTraceGenerator.Knobs.chat(300), 5));
        RoutingModel m = new RoutingModel(1, 40, 0, PolicyKind.LRU, 512, 131_072, 20_000, 26e9, 2_000, 1.5, 0);
        RoutingResult r = RoutingReplay.replay(t, m, new LeastLoadedRouter(LeastLoadedRouter.Mode.EXACT), true);
        var straight = dev.strata.analysis.kvsim.KvReplaySimulator.replay(t,
                dev.strata.analysis.kvsim.KvReplaySimulator.Config.single(40, PolicyKind.LRU, 512L * 131_072));
        assertThat(r.localBlocks()).isEqualTo(straight.hits());
        assertThat(r.loadImbalance()).isCloseTo(1.0, within(EPS));
    }
}
