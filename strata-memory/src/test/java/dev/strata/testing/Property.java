package dev.strata.testing;

import java.util.SplittableRandom;

/**
 * A small seeded property-test harness: runs a check over many random seeds and, when one fails,
 * names the seed so that the failure can be replayed.
 *
 * <p>Replay one seed with {@code -Dstrata.seed=<seed>}; scale the number of trials with
 * {@code -Dstrata.trials=<n>}. The base seed is fixed so CI runs are repeatable; set
 * {@code -Dstrata.seed.base=<n>} to explore other seeds.
 *
 * <p>Threads: a check runs on the calling thread; the harness keeps no shared state.
 */
public final class Property {

    /** A check of one property for one seeded random source. */
    @FunctionalInterface
    public interface Check {
        void run(SplittableRandom random) throws Exception;
    }

    private Property() {
    }

    /** Runs {@code check} for {@code trials} seeds (or only the seed in {@code strata.seed}). */
    public static void forAll(String name, int trials, Check check) {
        String only = System.getProperty("strata.seed");
        if (only != null) {
            runOne(name, Long.parseLong(only), check);
            return;
        }
        int n = Integer.getInteger("strata.trials", trials);
        long base = Long.getLong("strata.seed.base", 0x5EED_5EEDL);
        SplittableRandom seeds = new SplittableRandom(base ^ name.hashCode());
        for (int i = 0; i < n; i++) {
            runOne(name, seeds.nextLong(), check);
        }
    }

    private static void runOne(String name, long seed, Check check) {
        try {
            check.run(new SplittableRandom(seed));
        } catch (Throwable t) {
            AssertionError e = new AssertionError(
                    "property '" + name + "' failed for seed " + seed + " (replay with -Dstrata.seed=" + seed + "): " + t,
                    t);
            throw e;
        }
    }
}
