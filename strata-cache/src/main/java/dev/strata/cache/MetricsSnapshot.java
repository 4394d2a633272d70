package dev.strata.cache;

import dev.strata.memory.TierStats;
import dev.strata.memory.host.MemoryAudit;
import dev.strata.memory.metrics.MemoryMetrics;
import dev.strata.memory.metrics.PrometheusText;
import dev.strata.memory.transfer.LinkStats;
import java.util.List;
import java.util.Locale;

/**
 * Everything Strata measures at one moment: each tier's occupancy and measured performance, each
 * link's traffic and latency, the object store's per-tier hits, misses, evictions, demotions and
 * bytes moved, and the process's off-heap regions with their huge pages. {@link #toPrometheus()}
 * renders it in the Prometheus text format.
 *
 * <p>Immutable; any thread.
 *
 * @param tiers the tiers, in the order they were opened
 * @param links the transfer engine's links
 * @param store the object store's counters, or null when no store runs
 * @param regions the process's off-heap regions and their huge pages when the snapshot was taken
 */
public record MetricsSnapshot(List<TierStats> tiers, List<LinkStats> links, StoreStats store, MemoryAudit.Usage regions) {

    public MetricsSnapshot {
        tiers = List.copyOf(tiers);
        links = List.copyOf(links);
        java.util.Objects.requireNonNull(regions, "regions");
    }

    /** The snapshot in Prometheus text exposition format. */
    public String toPrometheus() {
        PrometheusText out = new PrometheusText();
        writeTo(out);
        return out.toString();
    }

    /** Adds the tier, region, link and store families to {@code out}. */
    public void writeTo(PrometheusText out) {
        MemoryMetrics.write(out, tiers);
        MemoryMetrics.writeRegions(out, regions);
        MemoryMetrics.writeLinks(out, links);
        if (store != null) {
            writeStore(out, store);
        }
    }

    private static void writeStore(PrometheusText out, StoreStats s) {
        store(out, s, "strata_store_hits_total", PrometheusText.Type.COUNTER, "Gets served by this tier", StoreTierStats::hits);
        store(out, s, "strata_store_misses_total", PrometheusText.Type.COUNTER, "Gets this tier could not serve", StoreTierStats::misses);
        store(out, s, "strata_store_puts_total", PrometheusText.Type.COUNTER, "Objects stored into this tier", StoreTierStats::puts);
        store(out, s, "strata_store_refused_puts_total", PrometheusText.Type.COUNTER, "Puts this tier refused", StoreTierStats::refusedPuts);
        store(out, s, "strata_store_evictions_total", PrometheusText.Type.COUNTER, "Copies evicted from this tier", StoreTierStats::evictions);
        store(out, s, "strata_store_demotions_total", PrometheusText.Type.COUNTER, "Copies demoted to a lower tier", StoreTierStats::demotions);
        store(out, s, "strata_store_promotions_total", PrometheusText.Type.COUNTER, "Copies promoted into this tier", StoreTierStats::promotions);
        store(out, s, "strata_store_drops_total", PrometheusText.Type.COUNTER, "LOSSY objects dropped from this tier", StoreTierStats::drops);
        store(out, s, "strata_store_corrupt_copies_total", PrometheusText.Type.COUNTER, "Copies that failed their checksum",
                StoreTierStats::corruptCopies);
        store(out, s, "strata_store_bytes_in_total", PrometheusText.Type.COUNTER, "Payload bytes copied into this tier", StoreTierStats::bytesIn);
        store(out, s, "strata_store_bytes_out_total", PrometheusText.Type.COUNTER, "Payload bytes copied out of this tier", StoreTierStats::bytesOut);
        store(out, s, "strata_store_resident_objects", PrometheusText.Type.GAUGE, "Objects with a copy in this tier", StoreTierStats::residentObjects);
        store(out, s, "strata_store_resident_bytes", PrometheusText.Type.GAUGE, "Payload bytes of copies in this tier", StoreTierStats::residentBytes);
        store(out, s, "strata_store_reusable_bytes", PrometheusText.Type.GAUGE,
                "Bytes of evicted blocks kept for this tier's next allocations", StoreTierStats::reusableBytes);
        store(out, s, "strata_store_hit_ratio", PrometheusText.Type.GAUGE, "Hits over lookups that reached this tier", StoreTierStats::hitRate);
        out.family("strata_store_objects", PrometheusText.Type.GAUGE, "Live objects in the store").sample("strata_store_objects", s.objects());
        out.family("strata_store_pinned_objects", PrometheusText.Type.GAUGE, "Objects pinned by a reader")
                .sample("strata_store_pinned_objects", s.pinnedObjects());
        out.family("strata_store_dropped_total", PrometheusText.Type.COUNTER, "Drops reported to the owner")
                .sample("strata_store_dropped_total", s.dropsReported());
        out.family("strata_store_moved_bytes_total", PrometheusText.Type.COUNTER, "Payload bytes copied between tiers")
                .sample("strata_store_moved_bytes_total", s.bytesMoved());
    }

    private static void store(PrometheusText out, StoreStats s, String name, PrometheusText.Type type, String help,
                              java.util.function.ToDoubleFunction<StoreTierStats> f) {
        out.family(name, type, help);
        for (StoreTierStats t : s.tiers()) {
            out.sample(name, f.applyAsDouble(t), "tier", t.name(), "kind", t.kind().name().toLowerCase(Locale.ROOT));
        }
    }
}
