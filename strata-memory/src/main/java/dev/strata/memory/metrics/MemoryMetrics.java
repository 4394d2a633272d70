package dev.strata.memory.metrics;

import dev.strata.memory.TierStats;
import dev.strata.memory.host.MemoryAudit;
import dev.strata.memory.transfer.LinkStats;
import java.util.Collection;
import java.util.Locale;

/**
 * Exports tier and link snapshots as Prometheus families: {@code strata_tier_*}, one sample per
 * tier labelled {@code tier} (its name) and {@code kind}; {@code strata_link_*}, one sample per
 * link labelled {@code source} and {@code destination}.
 *
 * <p>Stateless; any thread.
 */
public final class MemoryMetrics {
    private static final double[] LINK_QUANTILES = {0.5, 0.99, 0.999};

    private MemoryMetrics() {
    }

    /** Appends the families of every tier in {@code tiers} to {@code out}. */
    public static void write(PrometheusText out, Collection<TierStats> tiers) {
        gauge(out, tiers, "strata_tier_capacity_bytes", "Bytes the tier may hold", TierStats::capacityBytes);
        gauge(out, tiers, "strata_tier_used_bytes", "Bytes allocated in the tier, framing and rounding included", TierStats::usedBytes);
        gauge(out, tiers, "strata_tier_free_bytes", "Bytes not allocated in the tier", TierStats::freeBytes);
        gauge(out, tiers, "strata_tier_occupancy_ratio", "Fraction of the tier's capacity allocated", TierStats::occupancy);
        gauge(out, tiers, "strata_tier_allocations", "Live allocations in the tier", TierStats::allocations);
        counter(out, tiers, "strata_tier_reads_total", "Reads completed", TierStats::readOps);
        counter(out, tiers, "strata_tier_writes_total", "Writes completed", TierStats::writeOps);
        counter(out, tiers, "strata_tier_read_bytes_total", "Payload bytes read", TierStats::bytesRead);
        counter(out, tiers, "strata_tier_written_bytes_total", "Payload bytes written", TierStats::bytesWritten);
        gauge(out, tiers, "strata_tier_read_bandwidth_bytes_per_second", "Measured read bandwidth (decayed average)", TierStats::readBytesPerSec);
        gauge(out, tiers, "strata_tier_write_bandwidth_bytes_per_second", "Measured write bandwidth (decayed average)", TierStats::writeBytesPerSec);
        gauge(out, tiers, "strata_tier_read_latency_seconds", "Measured latency of one read (decayed average)", s -> s.readLatencyNanos() / 1e9);
        gauge(out, tiers, "strata_tier_write_latency_seconds", "Measured latency of one write (decayed average)", s -> s.writeLatencyNanos() / 1e9);
    }

    /**
     * Appends the families of the process's off-heap regions, as {@code regions} saw them:
     * {@code strata_memory_region_bytes} (live regions, every tier's and staging pool's),
     * {@code strata_memory_huge_page_advised_bytes} (of
     * those, the ones advised for transparent huge pages) and, where the kernel reports it,
     * {@code strata_memory_anon_huge_page_bytes} (what the kernel actually backs with huge pages,
     * process-wide). Advised bytes well above backed bytes mean the kernel found no huge pages to
     * give (its setting is {@code never}, or memory is fragmented). Then the counter
     * {@code strata_memory_non_temporal_copy_bytes_total}: bytes copied between regions with
     * streaming stores ({@code memory.non-temporal-copies}).
     */
    public static void writeRegions(PrometheusText out, MemoryAudit.Usage regions) {
        out.family("strata_memory_region_bytes", PrometheusText.Type.GAUGE, "Bytes of live off-heap regions")
                .sample("strata_memory_region_bytes", regions.regionBytes());
        out.family("strata_memory_huge_page_advised_bytes", PrometheusText.Type.GAUGE,
                        "Bytes of live off-heap regions advised for transparent huge pages")
                .sample("strata_memory_huge_page_advised_bytes", regions.hugePageAdvisedBytes());
        if (regions.anonHugePageBytes() >= 0) {
            out.family("strata_memory_anon_huge_page_bytes", PrometheusText.Type.GAUGE,
                            "Anonymous memory of the process backed by transparent huge pages (the kernel's AnonHugePages)")
                    .sample("strata_memory_anon_huge_page_bytes", regions.anonHugePageBytes());
        }
        out.family("strata_memory_non_temporal_copy_bytes_total", PrometheusText.Type.COUNTER,
                        "Bytes copied between off-heap regions with non-temporal (streaming) stores")
                .sample("strata_memory_non_temporal_copy_bytes_total", regions.streamedBytes());
    }

    /** Appends the families of every link in {@code links} to {@code out}. */
    public static void writeLinks(PrometheusText out, Collection<LinkStats> links) {
        link(out, links, "strata_link_transfers_total", PrometheusText.Type.COUNTER, "Transfers finished", LinkStats::operations);
        link(out, links, "strata_link_failed_total", PrometheusText.Type.COUNTER, "Transfers that failed", LinkStats::failed);
        link(out, links, "strata_link_not_found_total", PrometheusText.Type.COUNTER, "Transfers whose source object was missing",
                LinkStats::notFound);
        link(out, links, "strata_link_bytes_total", PrometheusText.Type.COUNTER, "Bytes moved", LinkStats::bytes);
        link(out, links, "strata_link_queue_depth", PrometheusText.Type.GAUGE, "Requests waiting", LinkStats::queueDepth);
        link(out, links, "strata_link_queue_depth_max", PrometheusText.Type.GAUGE, "Most requests ever waiting at once",
                LinkStats::maxQueueDepth);
        link(out, links, "strata_link_busy_bandwidth_bytes_per_second", PrometheusText.Type.GAUGE,
                "Bytes moved over the time workers were busy", l -> l.busyGBps() * 1e9);
        out.family("strata_link_latency_seconds", PrometheusText.Type.SUMMARY, "Transfer latency, submission to completion");
        for (LinkStats l : links) {
            out.summary("strata_link_latency_seconds", LINK_QUANTILES,
                    new double[] {l.p50Nanos() / 1e9, l.p99Nanos() / 1e9, l.p999Nanos() / 1e9}, l.operations(),
                    "source", l.source(), "destination", l.destination());
        }
    }

    private static void link(PrometheusText out, Collection<LinkStats> links, String name, PrometheusText.Type type,
                             String help, java.util.function.ToDoubleFunction<LinkStats> f) {
        out.family(name, type, help);
        for (LinkStats l : links) {
            out.sample(name, f.applyAsDouble(l), "source", l.source(), "destination", l.destination());
        }
    }

    private static void gauge(PrometheusText out, Collection<TierStats> tiers, String name, String help,
                              java.util.function.ToDoubleFunction<TierStats> f) {
        family(out, tiers, name, PrometheusText.Type.GAUGE, help, f);
    }

    private static void counter(PrometheusText out, Collection<TierStats> tiers, String name, String help,
                                java.util.function.ToDoubleFunction<TierStats> f) {
        family(out, tiers, name, PrometheusText.Type.COUNTER, help, f);
    }

    private static void family(PrometheusText out, Collection<TierStats> tiers, String name, PrometheusText.Type type,
                               String help, java.util.function.ToDoubleFunction<TierStats> f) {
        out.family(name, type, help);
        for (TierStats s : tiers) {
            out.sample(name, f.applyAsDouble(s), "tier", s.name(), "kind", s.kind().name().toLowerCase(Locale.ROOT));
        }
    }
}
