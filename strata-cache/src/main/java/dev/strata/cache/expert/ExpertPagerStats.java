package dev.strata.cache.expert;

import dev.strata.memory.metrics.PrometheusText;
import java.util.List;
import java.util.Locale;
import java.util.function.ToDoubleFunction;

/**
 * What an {@link ExpertPager} did, per layer: hits, misses, evictions and bytes fetched from the
 * masters, with its configuration (policy, scope, slots) and resize history. Rendered in the
 * Prometheus text format by {@link #toPrometheus()} or appended to a larger exposition (for
 * example after {@code MetricsSnapshot.toPrometheus()}) by {@link #writeTo}.
 *
 * <p>Counting: a call of {@code page} counts each distinct routed expert once (a hit if resident,
 * else a miss), however many tokens routed to it.
 *
 * <p>Immutable; any thread.
 *
 * @param pager         the pager's name (metrics label {@code pager})
 * @param policy        the policy's name (label {@code policy})
 * @param scope         per-layer slots or one shared pool
 * @param slotsPerLayer {@code k}: slots per layer, or the shared pool's size divided by the layers
 * @param slots         slots held now, all layers
 * @param slotBytes     DEVICE bytes of one slot (alignment included)
 * @param deviceBytes   DEVICE bytes the slots take now
 * @param resizes       resizes that completed
 * @param failedResizes resizes refused (the pager was left as it was)
 * @param layers        one entry per layer, in layer order
 */
public record ExpertPagerStats(String pager, String policy, SlotScope scope, int slotsPerLayer, int slots, long slotBytes,
                               long deviceBytes, long resizes, long failedResizes, List<Layer> layers) {

    /**
     * One layer's counts since the pager opened.
     *
     * @param layer        layer index
     * @param hits         routed experts found resident
     * @param misses       routed experts that were not resident (fetched from a peer copy or their masters)
     * @param evictions    residents of this layer that gave up their slot (to a miss or a shrink)
     * @param bytesFetched bytes copied from masters into slots for this layer (fetches served from peer
     *                     copies are counted by the {@link ExpertRebalancer})
     * @param resident     experts of this layer resident now
     */
    public record Layer(int layer, long hits, long misses, long evictions, long bytesFetched, long resident) {
        /** Hits over lookups, 0 when none. */
        public double hitRatio() {
            long lookups = hits + misses;
            return lookups == 0 ? 0 : (double) hits / lookups;
        }
    }

    public ExpertPagerStats {
        layers = List.copyOf(layers);
    }

    /** Hits of all layers. */
    public long hits() {
        return layers.stream().mapToLong(Layer::hits).sum();
    }

    /** Misses of all layers. */
    public long misses() {
        return layers.stream().mapToLong(Layer::misses).sum();
    }

    /** Bytes fetched for all layers. */
    public long bytesFetched() {
        return layers.stream().mapToLong(Layer::bytesFetched).sum();
    }

    /** Hits over lookups of all layers, 0 when none. */
    public double hitRatio() {
        long h = hits();
        long lookups = h + misses();
        return lookups == 0 ? 0 : (double) h / lookups;
    }

    /** The stats in Prometheus text exposition format. */
    public String toPrometheus() {
        PrometheusText out = new PrometheusText();
        writeTo(out);
        return out.toString();
    }

    /**
     * Appends the families {@code strata_expert_*} to {@code out}: per-layer counters labelled
     * {@code pager}, {@code policy}, {@code scope} and {@code layer}, and pager-wide gauges.
     */
    public void writeTo(PrometheusText out) {
        layer(out, "strata_expert_hits_total", PrometheusText.Type.COUNTER, "Routed experts found resident", Layer::hits);
        layer(out, "strata_expert_misses_total", PrometheusText.Type.COUNTER, "Routed experts not resident, fetched from a peer copy or their masters",
                Layer::misses);
        layer(out, "strata_expert_evictions_total", PrometheusText.Type.COUNTER, "Resident experts that gave up their slot",
                Layer::evictions);
        layer(out, "strata_expert_fetched_bytes_total", PrometheusText.Type.COUNTER, "Bytes copied from masters into slots",
                Layer::bytesFetched);
        layer(out, "strata_expert_resident", PrometheusText.Type.GAUGE, "Experts of the layer resident now", Layer::resident);
        layer(out, "strata_expert_hit_ratio", PrometheusText.Type.GAUGE, "Hits over lookups of the layer", Layer::hitRatio);
        String scopeLabel = scope.name().toLowerCase(Locale.ROOT);
        pagerGauge(out, "strata_expert_slots", PrometheusText.Type.GAUGE, "Slots held, all layers", slots, scopeLabel);
        pagerGauge(out, "strata_expert_slots_per_layer", PrometheusText.Type.GAUGE, "Slots per layer (k)", slotsPerLayer, scopeLabel);
        pagerGauge(out, "strata_expert_device_bytes", PrometheusText.Type.GAUGE, "DEVICE bytes held by slots", deviceBytes, scopeLabel);
        pagerGauge(out, "strata_expert_resizes_total", PrometheusText.Type.COUNTER, "Resizes completed", resizes, scopeLabel);
        pagerGauge(out, "strata_expert_failed_resizes_total", PrometheusText.Type.COUNTER, "Resizes refused", failedResizes,
                scopeLabel);
    }

    private void layer(PrometheusText out, String name, PrometheusText.Type type, String help, ToDoubleFunction<Layer> f) {
        out.family(name, type, help);
        String scopeLabel = scope.name().toLowerCase(Locale.ROOT);
        for (Layer l : layers) {
            out.sample(name, f.applyAsDouble(l), "pager", pager, "policy", policy, "scope", scopeLabel, "layer",
                    Integer.toString(l.layer()));
        }
    }

    private void pagerGauge(PrometheusText out, String name, PrometheusText.Type type, String help, double value, String scopeLabel) {
        out.family(name, type, help);
        out.sample(name, value, "pager", pager, "policy", policy, "scope", scopeLabel);
    }
}
