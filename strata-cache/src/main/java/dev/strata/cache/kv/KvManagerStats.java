package dev.strata.cache.kv;

import dev.strata.cache.PriorityClass;
import dev.strata.memory.metrics.PrometheusText;
import java.util.Locale;

/**
 * A snapshot of a {@link KvBlockManager}'s counters (running since it was created) and gauges:
 * prefix hits by where the block was found, blocks and bytes per link, prefetch hits and late
 * prefetches, evictions from DEVICE slots by priority class, dedups, drops and failed loads,
 * the name of the eviction policy of the DEVICE slots, and what the load gate weighs: the measured
 * time to load a block per location and to recompute one, and the matched blocks it left to
 * recompute ({@link KvBlockManager#worthLoading}).
 * {@link #writeTo} renders them in the Prometheus text format beside the store's metrics
 * ({@code strata_kv_*}).
 *
 * <p>Immutable; any thread.
 */
public final class KvManagerStats {
    private final long[] c; // counter cells, see KvCounters
    private final int slots; // DEVICE block slots
    private final int freeSlots; // slots free now
    private final int residentBlocks; // keyed blocks in slots
    private final int openSequences; // sequences not released
    private final String policy; // the DEVICE slots' eviction policy, e.g. adaptive-reach
    private final double[] loadSeconds; // [location] measured seconds to load one block, NaN if not measured
    private final double recomputeSeconds; // measured seconds to recompute one block, NaN if not measured

    KvManagerStats(long[] cells, int slots, int freeSlots, int residentBlocks, int openSequences, String policy,
            double[] loadSeconds, double recomputeSeconds) {
        this.c = cells;
        this.loadSeconds = loadSeconds;
        this.recomputeSeconds = recomputeSeconds;
        this.policy = policy;
        this.slots = slots;
        this.freeSlots = freeSlots;
        this.residentBlocks = residentBlocks;
        this.openSequences = openSequences;
    }

    /** Matched blocks found at {@code where} (shared-pool hits are {@code hits(SHARED)}). */
    public long hits(BlockLocation where) {
        return c[KvCounters.HITS + where.ordinal()];
    }

    /** Full blocks asked for by matches that lay past the cached prefix. */
    public long misses() {
        return c[KvCounters.MISSES];
    }

    /** Calls of match. */
    public long lookups() {
        return c[KvCounters.LOOKUPS];
    }

    /** Blocks moved over {@code link}. */
    public long blocks(KvLink link) {
        return c[KvCounters.LINK_BLOCKS + link.ordinal()];
    }

    /** Bytes moved over {@code link}. */
    public long bytes(KvLink link) {
        return c[KvCounters.LINK_BYTES + link.ordinal()];
    }

    /** Blocks evicted from DEVICE slots while in class {@code c}. */
    public long evictions(PriorityClass priority) {
        return c[KvCounters.EVICTIONS + priority.ordinal()];
    }

    /** Blocks committed under a key not yet resident. */
    public long commits() {
        return c[KvCounters.COMMITS];
    }

    /** Commits that shared an already resident block and freed their own slot. */
    public long dedups() {
        return c[KvCounters.DEDUPS];
    }

    /** Required blocks that a prefetch had already brought in. */
    public long prefetchHits() {
        return c[KvCounters.PREFETCH_HITS];
    }

    /** Required blocks whose load was still in flight. */
    public long prefetchLate() {
        return c[KvCounters.PREFETCH_LATE];
    }

    /** Block loads that failed (corrupt copy, I/O error, gone). */
    public long failedLoads() {
        return c[KvCounters.FAILED_LOADS];
    }

    /** Offloaded blocks the store dropped, each forgotten once. */
    public long drops() {
        return c[KvCounters.DROPS];
    }

    /** Drops of keys the manager had not offloaded (a broken invariant if not zero). */
    public long unexpectedDrops() {
        return c[KvCounters.UNEXPECTED_DROPS];
    }

    /** Offloads the store refused for lack of space. */
    public long refusedOffloads() {
        return c[KvCounters.OFFLOAD_REFUSED];
    }

    /** Staging reads for a resume ({@link KvBlockManager#stageForResume}) that failed; the resume loaded those blocks. */
    public long failedStagings() {
        return c[KvCounters.FAILED_STAGINGS];
    }

    /**
     * Matched blocks found at {@code where} that were left for the engine to recompute because
     * recomputing them was faster than loading them ({@link KvBlockManager#worthLoading}).
     */
    public long recomputedInstead(BlockLocation where) {
        return c[KvCounters.RECOMPUTED_INSTEAD + where.ordinal()];
    }

    /** The measured seconds one block takes to load from {@code where} (an average of recent loads); NaN if never measured. */
    public double loadSecondsPerBlock(BlockLocation where) {
        return loadSeconds[where.ordinal()];
    }

    /** The measured seconds the engine's prefill takes for one block's tokens (recent average); NaN if never measured. */
    public double recomputeSecondsPerBlock() {
        return recomputeSeconds;
    }

    /** Cached blocks a shrink of the DEVICE slots moved into a surviving slot. */
    public long slotMoves() {
        return c[KvCounters.SLOT_MOVES];
    }

    public int slots() {
        return slots;
    }

    public int freeSlots() {
        return freeSlots;
    }

    public int residentBlocks() {
        return residentBlocks;
    }

    public int openSequences() {
        return openSequences;
    }

    /** The name of the DEVICE slots' eviction policy ({@code kv.policy}), e.g. {@code adaptive-reach}. */
    public String policy() {
        return policy;
    }

    /** Appends the {@code strata_kv_*} families to {@code out}. */
    public void writeTo(PrometheusText out) {
        out.family("strata_kv_hits_total", PrometheusText.Type.COUNTER, "Matched prefix blocks by where they were found");
        for (BlockLocation l : BlockLocation.values()) {
            out.sample("strata_kv_hits_total", hits(l), "location", lower(l));
        }
        out.family("strata_kv_misses_total", PrometheusText.Type.COUNTER, "Full blocks past the matched prefix")
                .sample("strata_kv_misses_total", misses());
        out.family("strata_kv_recomputed_instead_total", PrometheusText.Type.COUNTER,
                "Matched blocks recomputed because that was faster than loading them, by where they were found");
        for (BlockLocation l : BlockLocation.values()) {
            out.sample("strata_kv_recomputed_instead_total", recomputedInstead(l), "location", lower(l));
        }
        out.family("strata_kv_load_seconds_per_block", PrometheusText.Type.GAUGE,
                "Measured time to load one block, by where it is loaded from (recent average; locations measured so far)");
        for (BlockLocation l : BlockLocation.values()) {
            if (!Double.isNaN(loadSecondsPerBlock(l))) {
                out.sample("strata_kv_load_seconds_per_block", loadSecondsPerBlock(l), "location", lower(l));
            }
        }
        out.family("strata_kv_recompute_seconds_per_block", PrometheusText.Type.GAUGE,
                "Measured prefill time of one block's tokens (recent average; once measured)");
        if (!Double.isNaN(recomputeSeconds)) {
            out.sample("strata_kv_recompute_seconds_per_block", recomputeSeconds);
        }
        out.family("strata_kv_link_blocks_total", PrometheusText.Type.COUNTER, "KV blocks moved per link");
        for (KvLink k : KvLink.values()) {
            out.sample("strata_kv_link_blocks_total", blocks(k), "link", lower(k));
        }
        out.family("strata_kv_link_bytes_total", PrometheusText.Type.COUNTER, "KV bytes moved per link");
        for (KvLink k : KvLink.values()) {
            out.sample("strata_kv_link_bytes_total", bytes(k), "link", lower(k));
        }
        out.family("strata_kv_evictions_total", PrometheusText.Type.COUNTER, "Blocks evicted from device slots by class");
        for (PriorityClass p : PriorityClass.values()) {
            out.sample("strata_kv_evictions_total", evictions(p), "class", lower(p));
        }
        out.family("strata_kv_prefetch_hits_total", PrometheusText.Type.COUNTER, "Required blocks already prefetched")
                .sample("strata_kv_prefetch_hits_total", prefetchHits());
        out.family("strata_kv_prefetch_late_total", PrometheusText.Type.COUNTER, "Required blocks still in flight")
                .sample("strata_kv_prefetch_late_total", prefetchLate());
        out.family("strata_kv_commits_total", PrometheusText.Type.COUNTER, "Blocks committed under a new key")
                .sample("strata_kv_commits_total", commits());
        out.family("strata_kv_dedups_total", PrometheusText.Type.COUNTER, "Commits shared onto a resident block")
                .sample("strata_kv_dedups_total", dedups());
        out.family("strata_kv_failed_loads_total", PrometheusText.Type.COUNTER, "Block loads that failed")
                .sample("strata_kv_failed_loads_total", failedLoads());
        out.family("strata_kv_failed_stagings_total", PrometheusText.Type.COUNTER, "Resume stagings that failed (the resume loaded those blocks)")
                .sample("strata_kv_failed_stagings_total", failedStagings());
        out.family("strata_kv_drops_total", PrometheusText.Type.COUNTER, "Offloaded blocks dropped by the store")
                .sample("strata_kv_drops_total", drops());
        out.family("strata_kv_device_policy", PrometheusText.Type.GAUGE, "Eviction policy of the device block slots (always 1)")
                .sample("strata_kv_device_policy", 1, "policy", policy);
        out.family("strata_kv_slots", PrometheusText.Type.GAUGE, "Device block slots").sample("strata_kv_slots", slots);
        out.family("strata_kv_free_slots", PrometheusText.Type.GAUGE, "Free device block slots")
                .sample("strata_kv_free_slots", freeSlots);
        out.family("strata_kv_resident_blocks", PrometheusText.Type.GAUGE, "Keyed blocks in device slots")
                .sample("strata_kv_resident_blocks", residentBlocks);
        out.family("strata_kv_sequences", PrometheusText.Type.GAUGE, "Open sequences")
                .sample("strata_kv_sequences", openSequences);
    }

    /** The counters alone in the Prometheus text format. */
    public String toPrometheus() {
        PrometheusText out = new PrometheusText();
        writeTo(out);
        return out.toString();
    }

    private static String lower(Enum<?> e) {
        return e.name().toLowerCase(Locale.ROOT);
    }
}
