package dev.strata.cache.split;

/**
 * What one miss costs on each side of the split, in seconds, and where each figure came from.
 *
 * <p>An expert miss fetches one expert of one layer over the link from where the expert masters
 * live (HOST, DISK) into the expert slots: {@code expertBytes / bandwidth}. A KV miss either
 * recomputes the block (prefill of {@code blockTokens} tokens) or, when a lower tier still holds
 * the block, reloads it: {@code kvBlockBytes / bandwidth}. {@link #kvMissSeconds()} is the cheaper
 * of the two that is available, which is what a block manager that checks the lower tiers first
 * pays.
 *
 * <p>Immutable; any thread.
 *
 * @param expertMissSeconds  seconds to fetch one expert of one layer, &gt; 0
 * @param kvRecomputeSeconds seconds to recompute one KV block, &gt; 0
 * @param kvReloadSeconds    seconds to reload one KV block from a lower tier; NaN when no lower
 *                           tier keeps KV blocks
 * @param expertSource       where {@code expertMissSeconds} came from
 * @param recomputeSource    where {@code kvRecomputeSeconds} came from
 * @param reloadSource       where {@code kvReloadSeconds} came from ({@link Source#NONE} when NaN)
 */
public record MissCosts(
        double expertMissSeconds,
        double kvRecomputeSeconds,
        double kvReloadSeconds,
        Source expertSource,
        Source recomputeSource,
        Source reloadSource) {

    /** Where a cost figure came from. */
    public enum Source {
        /** A configured prior: no measurement yet. */
        PRIOR,
        /** Measured while running (smoothed). */
        MEASURED,
        /** Given outright by the caller (an offline plan, a test). */
        GIVEN,
        /** Not applicable (no lower KV tier). */
        NONE
    }

    public MissCosts {
        positive("expert miss seconds", expertMissSeconds);
        positive("KV recompute seconds", kvRecomputeSeconds);
        if (!Double.isNaN(kvReloadSeconds)) {
            positive("KV reload seconds", kvReloadSeconds);
        }
        if (expertSource == null || recomputeSource == null || reloadSource == null) {
            throw new IllegalArgumentException("every cost needs a source");
        }
    }

    /** Costs given outright, with no lower KV tier. */
    public static MissCosts given(double expertMissSeconds, double kvRecomputeSeconds) {
        return new MissCosts(expertMissSeconds, kvRecomputeSeconds, Double.NaN, Source.GIVEN, Source.GIVEN, Source.NONE);
    }

    /**
     * Costs from the physical figures of a deployment.
     *
     * @param expertBytes           bytes of one expert of one layer
     * @param linkBytesPerSecond    bandwidth of the expert fetch link, bytes/s
     * @param blockTokens           tokens per KV block
     * @param recomputeSecondsPerToken prefill seconds per token
     */
    public static MissCosts fromPhysical(long expertBytes, double linkBytesPerSecond, int blockTokens,
                                         double recomputeSecondsPerToken, Source source) {
        positive("expert bytes", expertBytes);
        positive("link bandwidth", linkBytesPerSecond);
        positive("block tokens", blockTokens);
        return new MissCosts(expertBytes / linkBytesPerSecond, blockTokens * recomputeSecondsPerToken, Double.NaN,
                source, source, Source.NONE);
    }

    /** Seconds one KV miss costs: the reload when a lower tier keeps blocks and is cheaper, else the recompute. */
    public double kvMissSeconds() {
        return Double.isNaN(kvReloadSeconds) ? kvRecomputeSeconds : Math.min(kvRecomputeSeconds, kvReloadSeconds);
    }

    /** True when no figure is still a prior. */
    public boolean fullyMeasured() {
        return expertSource != Source.PRIOR && recomputeSource != Source.PRIOR && reloadSource != Source.PRIOR;
    }

    @Override
    public String toString() {
        return String.format(java.util.Locale.ROOT, "expert miss %.1f us (%s), KV recompute %.1f us (%s), KV reload %s",
                expertMissSeconds * 1e6, label(expertSource), kvRecomputeSeconds * 1e6, label(recomputeSource),
                Double.isNaN(kvReloadSeconds) ? "none" : String.format(java.util.Locale.ROOT, "%.1f us (%s)",
                        kvReloadSeconds * 1e6, label(reloadSource)));
    }

    private static String label(Source s) {
        return s.name().toLowerCase(java.util.Locale.ROOT);
    }

    private static void positive(String what, double v) {
        if (!(v > 0) || Double.isInfinite(v)) {
            throw new IllegalArgumentException(what + " must be positive and finite, got " + v);
        }
    }
}
