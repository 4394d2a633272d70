package dev.strata.cache.split;

import dev.strata.memory.device.DeviceTier;

/**
 * Watches one DEVICE tier that two pools share: after every allocation and free either pool makes,
 * the tier's used bytes must not exceed the split budget. The tier itself is larger than the
 * budget, so an ordering mistake would succeed physically and be caught here.
 */
final class BudgetWatch {
    private final DeviceTier tier;
    private final long budget;
    private long maxUsed;
    private long checks;

    BudgetWatch(DeviceTier tier, long budget) {
        this.tier = tier;
        this.budget = budget;
    }

    void check(String after) {
        long used = tier.used();
        checks++;
        maxUsed = Math.max(maxUsed, used);
        if (used > budget) {
            throw new AssertionError("tier '" + tier.name() + "' holds " + used + " bytes after " + after
                    + ", over the split budget of " + budget);
        }
    }

    long maxUsed() {
        return maxUsed;
    }

    long checks() {
        return checks;
    }
}
