package dev.strata.cache.expert;

import java.util.ArrayList;
import java.util.List;

/**
 * The running counters of an {@link ExpertPager}: per layer hits, misses, evictions, bytes fetched
 * from the masters and residents; per expert the calls that routed it; pager-wide the resizes done
 * and refused. {@link #snapshot} turns them into an {@link ExpertPagerStats}.
 *
 * <p>Counting rules: a paged call counts each distinct routed expert once, as a hit or a miss, and
 * once in its route count; an eviction is counted for the layer of the expert that gave up its
 * slot (to a miss or to a shrink), not for a failed fetch, which only releases the slot; bytes
 * fetched count the copies from masters that completed (peer copies are the peer source's).
 *
 * <p>Threads: every update by the pager's driving thread; the getters and {@link #snapshot} by any
 * thread. Counters are plain {@code long} array elements and fields with one writer (64-bit stores,
 * which the 64-bit JVMs Strata runs on never split), so another thread reads each counter whole but
 * possibly some calls behind, and the counters of one snapshot may come from different moments.
 * Plain rather than opaque stores keep the all-hit hot path (a route count per routed expert) at a
 * single store each.
 *
 * <p>Invariant (checked by the slot table): {@link #resident(int)} equals the experts of the layer
 * mapped now, until the pager closes (close leaves the last counts).
 */
final class ExpertPagerCounters {

    private static final int HITS = 0;        // offsets within a layer's stride
    private static final int MISSES = 1;
    private static final int EVICTIONS = 2;
    private static final int BYTES = 3;
    private static final int RESIDENT = 4;
    private static final int STRIDE = 5;

    private final int layers;
    private final long[] perLayer;             // [layers × STRIDE] counts, offsets above
    private final long[] routes;               // [layers × experts] calls that routed each key
    private long resizes;                      // resizes completed
    private long failedResizes;                // resizes refused

    ExpertPagerCounters(int layers, int experts) {
        this.layers = layers;
        this.perLayer = new long[layers * STRIDE];
        this.routes = new long[layers * experts];
    }

    /** {@code n} routed experts of {@code layer} were found resident. */
    void hits(int layer, int n) {
        perLayer[layer * STRIDE + HITS] += n;
    }

    /** {@code n} routed experts of {@code layer} were not resident. */
    void misses(int layer, int n) {
        perLayer[layer * STRIDE + MISSES] += n;
    }

    /** A resident expert of {@code layer} gave up its slot. */
    void eviction(int layer) {
        perLayer[layer * STRIDE + EVICTIONS]++;
    }

    /** {@code bytes} were copied from masters into slots for {@code layer}. */
    void fetched(int layer, long bytes) {
        perLayer[layer * STRIDE + BYTES] += bytes;
    }

    /** The residents of {@code layer} changed by {@code delta}. */
    void resident(int layer, int delta) {
        perLayer[layer * STRIDE + RESIDENT] += delta;
    }

    /** A call routed key {@code key} ({@code layer × experts + expert}). */
    void routed(int key) {
        routes[key]++;
    }

    /** A resize completed ({@code done}) or was refused. */
    void resized(boolean done) {
        if (done) {
            resizes++;
        } else {
            failedResizes++;
        }
    }

    /** Residents of {@code layer} as counted. */
    long resident(int layer) {
        return perLayer[layer * STRIDE + RESIDENT];
    }

    /** Calls that routed key {@code key}. */
    long routeCount(int key) {
        return routes[key];
    }

    /** The counts as stats, with the pager's configuration as given. */
    ExpertPagerStats snapshot(String pager, String policy, SlotScope scope, int slotsPerLayer, int slots, long slotBytes) {
        List<ExpertPagerStats.Layer> list = new ArrayList<>(layers);
        for (int l = 0; l < layers; l++) {
            int at = l * STRIDE;
            list.add(new ExpertPagerStats.Layer(l, perLayer[at + HITS], perLayer[at + MISSES], perLayer[at + EVICTIONS],
                    perLayer[at + BYTES], perLayer[at + RESIDENT]));
        }
        return new ExpertPagerStats(pager, policy, scope, slotsPerLayer, slots, slotBytes, slots * slotBytes, resizes,
                failedResizes, list);
    }
}
