package dev.strata.cache.split;

/**
 * The closed-form split for a step-shaped KV miss curve (the control law of the live dual resize).
 *
 * <p>Design note. In a live engine an extra KV block beyond the blocks the running batch touches
 * (plus a little headroom) is never read, so the KV curve is a step: its marginal value is zero past
 * {@code peak + headroom}. With one side of the equimarginal balance pinned to zero the balance has
 * a closed form:
 * <pre>
 *   kvTarget = max(floor, peak + headroom)                          (8)  the floor, enforced always
 *   k        = clamp(⌊(B − kvTarget·s_kv) / s_e⌋, kMin, kMax)       (9)  the remainder to experts
 *   kv       = ⌊(B − k·s_e) / s_kv⌋                                 (10) reclaim the clamp's slack
 * </pre>
 * Equation (10) gives KV whatever the clamp on {@code k} left over, so {@code k·s_e + kv·s_kv ≤ B}
 * always holds. When even {@code kMin} leaves less than {@code kvTarget}, the result is the split at
 * {@code kMin} and is marked not admissible.
 *
 * <p>Stateless; any thread.
 */
public final class StepRule {
    private StepRule() {
    }

    /**
     * The split for a budget and the burst's KV peak.
     *
     * @param budgetBytes     pageable bytes B
     * @param expertSlotBytes bytes of one expert slot in every layer s_e
     * @param kvBlockBytes    bytes of one KV block s_kv
     * @param peakBlocks      KV blocks the burst actually held at its peak
     * @param headroomBlocks  blocks kept above the peak
     * @param floorBlocks     the admission floor
     * @param minCap          the fewest expert slots per layer
     * @param maxCap          the most expert slots per layer
     * @return the expert cap and KV blocks; the predicted latency is NaN (the rule predicts none)
     */
    public static Split target(long budgetBytes, long expertSlotBytes, long kvBlockBytes, long peakBlocks,
                               long headroomBlocks, long floorBlocks, int minCap, int maxCap) {
        if (budgetBytes <= 0 || expertSlotBytes <= 0 || kvBlockBytes <= 0 || peakBlocks < 0 || headroomBlocks < 0
                || floorBlocks < 0 || minCap < 1 || maxCap < minCap) {
            throw new IllegalArgumentException("step rule arguments out of range: budget " + budgetBytes + ", slot "
                    + expertSlotBytes + ", block " + kvBlockBytes + ", peak " + peakBlocks + ", headroom " + headroomBlocks
                    + ", floor " + floorBlocks + ", caps [" + minCap + ", " + maxCap + "]");
        }
        long kvTarget = Math.max(floorBlocks, peakBlocks + headroomBlocks);
        long room = budgetBytes - kvTarget * kvBlockBytes;
        long k = room < 0 ? minCap : Math.max(minCap, Math.min(maxCap, room / expertSlotBytes));
        long kv = Math.max(0, (budgetBytes - k * expertSlotBytes) / kvBlockBytes);
        return new Split((int) k, kv, Double.NaN, kv >= kvTarget);
    }
}
