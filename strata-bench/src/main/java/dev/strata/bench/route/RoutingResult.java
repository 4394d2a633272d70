package dev.strata.bench.route;

import java.util.Arrays;

/**
 * What a {@link RoutingReplay} of one arm produced: where each request went, where its prompt's
 * blocks came from, and its modelled time to first token. All times are modelled seconds.
 *
 * <p>Immutable (arrays copied in and out); any thread.
 *
 * @param router            the router's name
 * @param pool              whether the shared pool tier was on
 * @param instanceOf        [request] the instance that served it
 * @param ttftSeconds       [request] modelled time to first token: queueing + prefill, s
 * @param busySeconds       [instance] modelled busy time (prefill + pool loads + decode), s
 * @param localBlocks       prompt blocks served from the serving instance's DEVICE cache
 * @param poolBlocks        prompt blocks loaded from the shared pool
 * @param recomputedBlocks  prompt blocks recomputed
 * @param maxDeviceBlocks   the most blocks any instance's DEVICE cache held after a request
 * @param maxPoolBlocks     the most blocks the pool held after a request (0 without a pool)
 */
public record RoutingResult(String router, boolean pool, int[] instanceOf, double[] ttftSeconds, double[] busySeconds,
                            long localBlocks, long poolBlocks, long recomputedBlocks, long maxDeviceBlocks,
                            long maxPoolBlocks) {
    public RoutingResult {
        instanceOf = instanceOf.clone();
        ttftSeconds = ttftSeconds.clone();
        busySeconds = busySeconds.clone();
    }

    @Override
    public int[] instanceOf() {
        return instanceOf.clone();
    }

    @Override
    public double[] ttftSeconds() {
        return ttftSeconds.clone();
    }

    @Override
    public double[] busySeconds() {
        return busySeconds.clone();
    }

    /** Requests replayed. */
    public int requests() {
        return instanceOf.length;
    }

    /** Requests each instance served. */
    public int[] requestsPerInstance() {
        int[] out = new int[busySeconds.length];
        for (int i : instanceOf) {
            out[i]++;
        }
        return out;
    }

    /** Prompt blocks over all requests. */
    public long blocks() {
        return localBlocks + poolBlocks + recomputedBlocks;
    }

    /** Share of prompt blocks served from the serving instance's own cache. */
    public double localHitRatio() {
        return share(localBlocks);
    }

    /** Share of prompt blocks loaded from the pool. */
    public double poolHitRatio() {
        return share(poolBlocks);
    }

    /** Share of prompt blocks recomputed. */
    public double recomputeRatio() {
        return share(recomputedBlocks);
    }

    /** Share of prompt blocks not recomputed (local or pool). */
    public double hitRatio() {
        return share(localBlocks + poolBlocks);
    }

    /** Busiest instance's busy time over the mean busy time: 1 is perfect balance; NaN with no work. */
    public double loadImbalance() {
        double max = 0;
        double sum = 0;
        for (double b : busySeconds) {
            max = Math.max(max, b);
            sum += b;
        }
        return sum > 0 ? max / (sum / busySeconds.length) : Double.NaN;
    }

    /** Mean modelled TTFT, s; NaN for an empty trace. */
    public double meanTtft() {
        double sum = 0;
        for (double t : ttftSeconds) {
            sum += t;
        }
        return ttftSeconds.length == 0 ? Double.NaN : sum / ttftSeconds.length;
    }

    /** The 99th percentile of modelled TTFT (nearest rank), s; NaN for an empty trace. */
    public double p99Ttft() {
        return percentile(0.99);
    }

    /** The {@code q} quantile of modelled TTFT by nearest rank, s; NaN for an empty trace. */
    public double percentile(double q) {
        if (ttftSeconds.length == 0) {
            return Double.NaN;
        }
        double[] sorted = ttftSeconds.clone();
        Arrays.sort(sorted);
        int rank = (int) Math.ceil(q * sorted.length);
        return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
    }

    private double share(long part) {
        long all = blocks();
        return all == 0 ? Double.NaN : (double) part / all;
    }
}
