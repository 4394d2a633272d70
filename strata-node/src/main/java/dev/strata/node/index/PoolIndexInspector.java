package dev.strata.node.index;

import dev.strata.memory.pool.PoolInspector;
import dev.strata.memory.shm.ShmHeader;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * Reads the block index of a pool for people and tools without attaching to the pool: the pool
 * is mapped read-only through {@link PoolInspector}, nothing is written. Liveness of pin holders
 * comes from the pool's process table as {@link PoolInspector} reports it.
 *
 * <p>Stateless; any thread.
 */
public final class PoolIndexInspector {
    private PoolIndexInspector() {
    }

    /**
     * The index's counts and identity, or empty if the pool has no root region or no index has
     * been formatted in it.
     *
     * @throws dev.strata.memory.shm.ShmFormatException if an index header is there but invalid
     */
    public static Optional<IndexStats> inspect(List<Path> paths) {
        PoolInspector.Report pool = PoolInspector.inspect(paths);
        int slots = pool.layout().processSlots();
        long now = System.currentTimeMillis();
        return PoolInspector.readRootRegion(paths, region -> {
            if (region.byteSize() < IndexRegion.HEADER_SIZE || ShmHeader.versionAcquire(region) == 0) {
                return Optional.empty();
            }
            IndexRegion.Geometry g = PoolBlockIndex.validate(paths.getFirst(), region, slots);
            return Optional.of(IndexScan.stats(region, g, now, (slot, incarnation) -> pool.processes().stream()
                    .anyMatch(p -> p.slot() == slot && p.incarnation() == incarnation && p.alive()
                            && p.state().equals("ACTIVE"))));
        });
    }
}
