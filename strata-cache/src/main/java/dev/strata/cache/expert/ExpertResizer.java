package dev.strata.cache.expert;

/**
 * Resizes the slots of an {@link ExpertPager} to {@code units} per layer ({@code units × layers}
 * in a shared pool) at a drained barrier, for the expert/KV split controller: the DEVICE memory
 * ({@link ExpertSlotMemory}) and the slot table ({@link ExpertSlotTable}) change together.
 *
 * <p>Design note (the resize protocol): DEVICE bytes never exceed the tier's budget at any moment.
 * <ul>
 *   <li>Grow: allocate every new slot first; if the tier refuses one, give back those allocated and
 *       return false with the pager exactly as before. Then add the new slots to the table, free.
 *       Residents stay where they are.</li>
 *   <li>Shrink, group by group: evict the policy's victims (nothing is pinned between calls) until
 *       the group holds at most the new capacity; re-page each resident of a slot being removed into
 *       the lowest free slot that stays, by a DEVICE-to-DEVICE copy of its byte-equal image rather
 *       than a re-read of its master (the same bytes, without a HOST or DISK read), so slot ids stay
 *       below the new capacity; then free the removed slots. Never allocates, so it cannot be
 *       refused.</li>
 *   <li>{@code k} changes (and is published to other threads) only once every group is done.</li>
 * </ul>
 *
 * <p>Invariant: after a resize returns, memory and table agree on the capacity and every resident
 * is in a slot below it, holding its master's bytes.
 *
 * <p>Threads: the pager's driving thread, with no fetch in flight (the pager joins them first).
 */
final class ExpertResizer {

    private final String pager;                   // the pager's name, for messages
    private final ExpertSlotTable table;
    private final ExpertSlotMemory memory;
    private final ExpertPagerCounters counters;
    private final int minUnits;                   // top-K: one token's experts must fit at once
    private final int maxUnits;                   // every expert of a layer

    ExpertResizer(String pager, ExpertSlotTable table, ExpertSlotMemory memory, ExpertPagerCounters counters, int minUnits,
                  int maxUnits) {
        this.pager = pager;
        this.table = table;
        this.memory = memory;
        this.counters = counters;
        this.minUnits = minUnits;
        this.maxUnits = maxUnits;
    }

    int minUnits() {
        return minUnits;
    }

    int maxUnits() {
        return maxUnits;
    }

    /**
     * Resizes to {@code units} slots per layer; counts the resize as done or refused (a resize to
     * the current size is neither).
     *
     * @return false when a grow was refused by the DEVICE tier (nothing changed)
     * @throws IllegalArgumentException naming the value when {@code units} is outside [min, max]
     */
    boolean resize(int units) {
        if (units < minUnits || units > maxUnits) {
            throw new IllegalArgumentException("expert pager '" + pager + "': " + units + " slots per layer is outside ["
                    + minUnits + ", " + maxUnits + "]");
        }
        if (units == table.units()) {
            return true;
        }
        boolean done = units > table.units() ? grow(units) : shrink(units);
        counters.resized(done);
        return done;
    }

    private boolean grow(int units) {
        if (!memory.grow(table.capacity(), table.capacityFor(units))) {
            return false;
        }
        table.grow(units);
        return true;
    }

    private boolean shrink(int units) {
        int oldCap = table.capacity();
        int newCap = table.capacityFor(units);
        for (int g = 0; g < table.groups(); g++) {
            table.evictDownTo(g, newCap);
            int target = 0;
            for (int s = newCap; s < oldCap; s++) {
                if (table.keyIn(g, s) < 0) {
                    continue;
                }
                while (table.keyIn(g, target) >= 0) {
                    target++;
                }
                memory.copy(g, s, target);
                table.move(g, s, target);
            }
            memory.truncate(g, newCap);
            table.truncate(g, newCap);
        }
        table.setUnits(units);
        return true;
    }
}
