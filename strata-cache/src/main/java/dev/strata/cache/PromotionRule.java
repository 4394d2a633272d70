package dev.strata.cache;

/**
 * Decides, on a hit in a lower tier, to which tier of the chain the object is copied.
 *
 * <p>A promotion copies the object up and keeps the lower copy (the chain is inclusive): a later
 * demotion of the upper copy then costs no copy. Promotion is best effort: if the target tier
 * cannot make room, the hit is served from where it is.
 *
 * <p>Threads: called under the store's lock; implementations must be fast and must not call the
 * store.
 */
@FunctionalInterface
public interface PromotionRule {

    /**
     * @param kind      the object's kind
     * @param priority  its priority class
     * @param hitTier   chain index of the tier that served the hit (0 is the top)
     * @param accesses  hits of this object since it was stored, this one included
     * @return the chain index to copy it to; {@code hitTier} (or more) for no promotion
     */
    int target(ObjectKind kind, PriorityClass priority, int hitTier, int accesses);

    /** Never promote: objects are read where they are. */
    static PromotionRule never() {
        return (kind, priority, hitTier, accesses) -> hitTier;
    }

    /** Promote to the top of the chain on every hit below it (the default). */
    static PromotionRule toTop() {
        return (kind, priority, hitTier, accesses) -> 0;
    }

    /** Promote one tier up per hit. */
    static PromotionRule oneLevelUp() {
        return (kind, priority, hitTier, accesses) -> Math.max(0, hitTier - 1);
    }

    /** Promote to the top once an object has been hit {@code minAccesses} times. */
    static PromotionRule toTopAfter(int minAccesses) {
        if (minAccesses < 1) {
            throw new IllegalArgumentException("minAccesses must be at least 1, got " + minAccesses);
        }
        return (kind, priority, hitTier, accesses) -> accesses >= minAccesses ? 0 : hitTier;
    }
}
