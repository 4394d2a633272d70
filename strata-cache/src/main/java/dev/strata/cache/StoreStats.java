package dev.strata.cache;

import java.util.List;

/**
 * A consistent snapshot of a {@link TieredStore} (taken under its lock): every tier's metrics and
 * the store-wide totals. Exporters (Prometheus text, JSON) are built from this record.
 * Immutable; any thread.
 *
 * @param tiers           per-tier metrics, in chain order
 * @param objects         live objects
 * @param pinnedObjects   live or removed-pending objects with a pin count above zero
 * @param bytesStored     payload bytes of live objects (each counted once, whatever its copies)
 * @param gets            get calls
 * @param hits            gets that returned a view
 * @param misses          gets that found nothing
 * @param puts            put calls
 * @param stored          puts that stored a new object
 * @param alreadyPresent  puts whose key was stored already
 * @param refusedPuts     puts refused (no space, too large)
 * @param removes         objects removed by their owner
 * @param dropsReported   drops reported to the drop listener
 * @param bytesMoved      payload bytes copied between tiers
 */
public record StoreStats(
        List<StoreTierStats> tiers,
        long objects,
        long pinnedObjects,
        long bytesStored,
        long gets,
        long hits,
        long misses,
        long puts,
        long stored,
        long alreadyPresent,
        long refusedPuts,
        long removes,
        long dropsReported,
        long bytesMoved) {

    public StoreStats {
        tiers = List.copyOf(tiers);
    }

    /** The metrics of the tier named {@code name}. */
    public StoreTierStats tier(String name) {
        for (StoreTierStats t : tiers) {
            if (t.name().equals(name)) {
                return t;
            }
        }
        throw new IllegalArgumentException("no tier named '" + name + "' in this store (tiers: "
                + tiers.stream().map(StoreTierStats::name).toList() + ")");
    }

    /** Hits over gets, 0 if none. */
    public double hitRate() {
        return gets == 0 ? 0.0 : (double) hits / gets;
    }
}
