package dev.strata.bench.route;

import dev.strata.analysis.kvsim.KvReplaySimulator;
import dev.strata.analysis.kvsim.PrefixTrace;
import dev.strata.node.route.InstanceLoads;
import dev.strata.node.route.RouteRequest;
import dev.strata.node.route.Router;
import java.util.PriorityQueue;

/**
 * Replays a prefix trace over several modelled engine instances: a real {@link Router} picks the
 * instance of each request, each instance has its own DEVICE KV cache, an optional POOL tier is
 * shared by all, and a FIFO time model per instance turns the cache outcome into busy time and
 * time to first token. Results are modelled, not measured.
 *
 * <p>Design note. Caches: each instance's DEVICE cache and the pool are each a one-tier
 * {@link KvReplaySimulator} stepped with the requests that reach them, so the real eviction
 * policies decide residency exactly as in the single-cache replay. A request's prompt is served
 * as: its leading blocks resident in its instance's cache (local hits), then the following blocks
 * resident in the pool (pool loads: the pool's cached prefix reaches further), then the rest
 * recomputed. Every request is stepped through the pool too (prefill writes its blocks through to
 * the pool; a hit refreshes their recency), so the pool holds what any instance computed. Cache
 * state changes at routing time, in arrival order.
 *
 * <p>Time: requests arrive at the trace's timestamps. The router sees the {@link InstanceLoads}
 * of that moment: each routed request's {@link RouteRequest#cost()} in tokens, returned when the
 * request finishes. An instance serves its requests first come first served: a request starts
 * when it arrived and the instance is free, prefills for
 * {@code recomputedTokens / recomputeRate + poolBytes / poolRate} and decodes for
 * {@code outputTokens / decodeRate}; TTFT is the wait plus the prefill. Tokens covered by the
 * cached blocks are counted up to the prompt length (a last partial block covers only its tokens).
 *
 * <p>Invariants (checked at the end always, after every request when asked): every request is
 * routed exactly once to an instance in range; the loads are the sum of the unfinished requests'
 * costs and all return to zero; no cache holds more than its capacity.
 *
 * <p>Threads: one replay per thread; {@link #run} may be called once.
 */
public final class RoutingReplay {
    private record Completion(double finishSeconds, int request, int instance, long cost) implements Comparable<Completion> {
        @Override
        public int compareTo(Completion o) {
            int c = Double.compare(finishSeconds, o.finishSeconds);
            return c != 0 ? c : Integer.compare(request, o.request);
        }
    }

    private final PrefixTrace trace;
    private final RoutingModel model;
    private final Router router;
    private final boolean checkInvariants;
    private boolean ran;

    /**
     * @param trace           the requests, in arrival order
     * @param model           instances, caches, rates
     * @param router          picks the instance of each request; built for {@code model.instances()}
     * @param checkInvariants check cache occupancy, prefix closure and loads after every request (tests)
     */
    public RoutingReplay(PrefixTrace trace, RoutingModel model, Router router, boolean checkInvariants) {
        this.trace = java.util.Objects.requireNonNull(trace, "trace");
        this.model = java.util.Objects.requireNonNull(model, "model");
        this.router = java.util.Objects.requireNonNull(router, "router");
        this.checkInvariants = checkInvariants;
    }

    /** Replays {@code trace} once; see the class description. */
    public static RoutingResult replay(PrefixTrace trace, RoutingModel model, Router router, boolean checkInvariants) {
        return new RoutingReplay(trace, model, router, checkInvariants).run();
    }

    /** Replays the whole trace. */
    public RoutingResult run() {
        if (ran) {
            throw new IllegalStateException("a routing replay runs once");
        }
        ran = true;
        int n = model.instances();
        long blockBytes = model.blockTokens() * model.kvBytesPerToken();
        KvReplaySimulator[] devices = new KvReplaySimulator[n];
        for (int i = 0; i < n; i++) {
            devices[i] = new KvReplaySimulator(trace, config(model.deviceBlocks(), blockBytes));
        }
        KvReplaySimulator pool = model.hasPool() ? new KvReplaySimulator(trace, config(model.poolBlocks(), blockBytes)) : null;

        InstanceLoads loads = new InstanceLoads(n);
        PriorityQueue<Completion> running = new PriorityQueue<>();
        int requests = trace.requestCount();
        int[] instanceOf = new int[requests];
        double[] ttft = new double[requests];
        double[] busy = new double[n];
        double[] freeAt = new double[n];
        long local = 0;
        long pooled = 0;
        long recomputed = 0;
        long maxDevice = 0;
        long maxPool = 0;
        long outstanding = 0; // tokens booked and not completed, for the invariant

        for (int r = 0; r < requests; r++) {
            double arrival = trace.timestamp(r) / 1000.0;
            while (!running.isEmpty() && running.peek().finishSeconds() <= arrival) {
                Completion c = running.poll();
                loads.complete(c.instance(), c.cost());
                outstanding -= c.cost();
            }
            int[] blocks = trace.blocks(r);
            long[] hashes = new long[blocks.length];
            for (int k = 0; k < blocks.length; k++) {
                hashes[k] = blocks[k]; // a block index names a prefix-tree node: a chained prefix hash
            }
            int input = trace.inputLength(r);
            int output = trace.outputLength(r);
            RouteRequest request = new RouteRequest(hashes, input, output);
            int instance = router.route(request, loads);
            if (instance < 0 || instance >= n) {
                throw new IllegalStateException("router '" + router.name() + "' chose instance " + instance + " of " + n
                        + " for request " + r);
            }
            outstanding += request.cost();
            instanceOf[r] = instance;

            int localPrefix = devices[instance].step(r);
            int poolPrefix = pool == null ? 0 : pool.step(r);
            int fromPool = Math.max(0, poolPrefix - localPrefix);
            int reached = localPrefix + fromPool;
            local += localPrefix;
            pooled += fromPool;
            recomputed += blocks.length - reached;
            long localTokens = covered(localPrefix, input);
            long poolTokens = covered(reached, input) - localTokens;
            long recomputeTokens = input - covered(reached, input);

            double prefill = recomputeTokens / model.recomputeTokensPerSecond()
                    + poolTokens * (double) model.kvBytesPerToken() / model.poolBytesPerSecond();
            double decode = output / model.decodeTokensPerSecond();
            double start = Math.max(arrival, freeAt[instance]);
            ttft[r] = start - arrival + prefill;
            freeAt[instance] = start + prefill + decode;
            busy[instance] += prefill + decode;
            running.add(new Completion(freeAt[instance], r, instance, request.cost()));

            maxDevice = Math.max(maxDevice, devices[instance].occupancy(KvReplaySimulator.DEVICE));
            if (pool != null) {
                maxPool = Math.max(maxPool, pool.occupancy(KvReplaySimulator.DEVICE));
            }
            if (checkInvariants) {
                check(r, devices, pool, loads, outstanding);
            }
        }
        while (!running.isEmpty()) {
            Completion c = running.poll();
            loads.complete(c.instance(), c.cost());
            outstanding -= c.cost();
        }
        if (outstanding != 0 || loads.total() != 0) {
            throw new IllegalStateException("after the replay " + loads.total() + " tokens are still booked on the instances ("
                    + outstanding + " by count); every request must return its cost");
        }
        return new RoutingResult(router.name(), pool != null, instanceOf, ttft, busy, local, pooled, recomputed, maxDevice, maxPool);
    }

    /** Tokens of a prompt of {@code input} tokens covered by its first {@code blocks} blocks. */
    private long covered(int blocks, int input) {
        return Math.min(input, (long) blocks * model.blockTokens());
    }

    private KvReplaySimulator.Config config(long capacity, long blockBytes) {
        KvReplaySimulator.Config c = KvReplaySimulator.Config.single(capacity, model.policy(), blockBytes);
        return checkInvariants ? c.withInvariantChecks() : c;
    }

    private void check(int r, KvReplaySimulator[] devices, KvReplaySimulator pool, InstanceLoads loads, long outstanding) {
        for (int i = 0; i < devices.length; i++) {
            long held = devices[i].occupancy(KvReplaySimulator.DEVICE);
            if (held > model.deviceBlocks()) {
                throw new IllegalStateException("instance " + i + " holds " + held + " blocks after request " + r + ", capacity "
                        + model.deviceBlocks());
            }
        }
        if (pool != null && pool.occupancy(KvReplaySimulator.DEVICE) > model.poolBlocks()) {
            throw new IllegalStateException("the pool holds " + pool.occupancy(KvReplaySimulator.DEVICE) + " blocks after request "
                    + r + ", capacity " + model.poolBlocks());
        }
        if (loads.total() != outstanding) {
            throw new IllegalStateException("instances carry " + loads.total() + " tokens after request " + r + ", unfinished requests "
                    + outstanding);
        }
    }
}
