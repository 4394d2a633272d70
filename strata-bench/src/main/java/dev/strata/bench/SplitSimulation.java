package dev.strata.bench;

import dev.strata.cache.curve.MissCurve;
import dev.strata.cache.curve.ReuseDistanceTracker;
import dev.strata.cache.split.ExpertDemand;
import dev.strata.cache.split.MissCosts;
import dev.strata.cache.split.MvWsaSolver;
import dev.strata.cache.split.ResizablePool;
import dev.strata.cache.split.SplitController;
import dev.strata.cache.split.SplitEstimator;
import dev.strata.cache.split.SplitProblem;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;

/**
 * Trace-driven simulation of the expert/KV split: the latency a workload spends on misses under a
 * static split (exact, from the LRU miss curves of the whole trace) or under the online controller
 * (per-layer LRU expert caches and an LRU KV pool, resized at every burst end, which is a drained
 * barrier).
 *
 * <p>Latency is {@code expert misses × expert miss seconds + KV misses × KV miss seconds}, first
 * sights included (they cost every policy the same).
 *
 * <p>Confined to the calling thread.
 */
final class SplitSimulation {
    private final SplitWorkload workload;
    private final long budgetBytes;
    private final long slotBytes; // one expert slot in every layer
    private final long blockBytes; // one KV block
    private final MissCosts costs;
    private final long floorBlocks;

    SplitSimulation(SplitWorkload workload, long budgetBytes, long slotBytes, long blockBytes, MissCosts costs, long floorBlocks) {
        this.workload = workload;
        this.budgetBytes = budgetBytes;
        this.slotBytes = slotBytes;
        this.blockBytes = blockBytes;
        this.costs = costs;
        this.floorBlocks = floorBlocks;
    }

    /** The split problem over {@code w}'s exact LRU curves (per-layer expert caches). */
    SplitProblem exactProblem(SplitWorkload w) {
        ReuseDistanceTracker[] layers = new ReuseDistanceTracker[w.layers];
        for (int l = 0; l < w.layers; l++) {
            layers[l] = new ReuseDistanceTracker(w.expertsPerLayer);
        }
        ReuseDistanceTracker kv = new ReuseDistanceTracker(4096);
        for (SplitWorkload.Burst b : w.bursts) {
            for (int[][] step : b.experts()) {
                for (int l = 0; l < w.layers; l++) {
                    for (int e : step[l]) {
                        layers[l].access(e);
                    }
                }
            }
            for (long block : b.kvBlocks()) {
                kv.access(block);
            }
        }
        List<MissCurve> curves = new ArrayList<>();
        for (ReuseDistanceTracker t : layers) {
            curves.add(t.missCurve(w.expertsPerLayer));
        }
        int maxKv = (int) Math.min(Integer.MAX_VALUE - 8, budgetBytes / blockBytes + 1);
        return new SplitProblem(budgetBytes, slotBytes, blockBytes, ExpertDemand.perLayer(curves, w.expertsPerLayer),
                kv.missCurve(maxKv), costs, floorBlocks, w.topK, w.expertsPerLayer);
    }

    /** The whole trace's exact problem. */
    SplitProblem exactProblem() {
        return exactProblem(workload);
    }

    /** Seconds the whole trace spends on misses under the online controller, starting at cap {@code startCap}. */
    double online(SplitController.Settings settings, int startCap, double decay, MvWsaSolver solver) {
        long kvMax = budgetBytes / blockBytes;
        LruPool experts = new LruPool("experts", slotBytes, workload.topK, workload.expertsPerLayer, startCap, workload.layers);
        LruPool kv = new LruPool("kv", blockBytes, 1, (int) kvMax, (int) ((budgetBytes - startCap * slotBytes) / blockBytes), 1);
        SplitController controller = new SplitController(experts, kv, settings, solver);
        SplitEstimator estimator = new SplitEstimator(workload.layers, workload.expertsPerLayer, (int) kvMax, decay);
        double seconds = 0;
        for (SplitWorkload.Burst b : workload.bursts) {
            long expertMisses = 0;
            for (int[][] step : b.experts()) {
                for (int l = 0; l < workload.layers; l++) {
                    for (int e : step[l]) {
                        expertMisses += experts.access(l, e);
                        estimator.expertAccess(l, e);
                    }
                }
            }
            long kvMisses = 0;
            for (long block : b.kvBlocks()) {
                kvMisses += kv.access(0, block);
                estimator.kvAccess(block);
            }
            estimator.kvOccupancy(b.peak());
            estimator.endBurst();
            seconds += expertMisses * costs.expertMissSeconds() + kvMisses * costs.kvMissSeconds();
            controller.onBurst(estimator.view(costs));
            controller.atDrainedBarrier();
        }
        return seconds;
    }

    /** Seconds under a static split at cap {@code k}, simulated with real LRU caches (checks the exact curves). */
    double simulatedStatic(int k) {
        LruPool experts = new LruPool("experts", slotBytes, workload.topK, workload.expertsPerLayer, k, workload.layers);
        int blocks = (int) ((budgetBytes - k * slotBytes) / blockBytes);
        LruPool kv = new LruPool("kv", blockBytes, 1, blocks, blocks, 1);
        double seconds = 0;
        for (SplitWorkload.Burst b : workload.bursts) {
            for (int[][] step : b.experts()) {
                for (int l = 0; l < workload.layers; l++) {
                    for (int e : step[l]) {
                        seconds += experts.access(l, e) * costs.expertMissSeconds();
                    }
                }
            }
            for (long block : b.kvBlocks()) {
                seconds += kv.access(0, block) * costs.kvMissSeconds();
            }
        }
        return seconds;
    }

    /**
     * A simulated pool: {@code caches} LRU caches (one per layer for experts, one for KV) of
     * {@code units} entries each; a shrink evicts the least recently used entries.
     */
    static final class LruPool implements ResizablePool {
        private final String name;
        private final long bytesPerUnit;
        private final int minUnits;
        private final int maxUnits;
        private final List<LinkedHashMap<Long, Boolean>> caches = new ArrayList<>();
        private int units;

        LruPool(String name, long bytesPerUnit, int minUnits, int maxUnits, int units, int caches) {
            this.name = name;
            this.bytesPerUnit = bytesPerUnit;
            this.minUnits = minUnits;
            this.maxUnits = maxUnits;
            this.units = Math.max(minUnits, Math.min(maxUnits, units));
            for (int i = 0; i < caches; i++) {
                this.caches.add(new LinkedHashMap<>(256, 0.75f, true));
            }
        }

        /** 1 on a miss (the item is brought in, evicting the least recently used), 0 on a hit. */
        int access(int cache, long item) {
            LinkedHashMap<Long, Boolean> c = caches.get(cache);
            if (c.get(item) != null) {
                return 0;
            }
            c.put(item, Boolean.TRUE);
            trim(c);
            return 1;
        }

        private void trim(LinkedHashMap<Long, Boolean> c) {
            Iterator<Long> it = c.keySet().iterator();
            while (c.size() > units && it.hasNext()) {
                it.next();
                it.remove();
            }
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public int units() {
            return units;
        }

        @Override
        public long bytesPerUnit() {
            return bytesPerUnit;
        }

        @Override
        public int minUnits() {
            return minUnits;
        }

        @Override
        public int maxUnits() {
            return maxUnits;
        }

        @Override
        public boolean resize(int newUnits) {
            if (newUnits < minUnits || newUnits > maxUnits) {
                throw new IllegalArgumentException("pool '" + name + "': " + newUnits + " units outside [" + minUnits + ", "
                        + maxUnits + "]");
            }
            units = newUnits;
            for (LinkedHashMap<Long, Boolean> c : caches) {
                trim(c);
            }
            return true;
        }
    }
}
