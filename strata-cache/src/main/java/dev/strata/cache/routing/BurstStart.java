package dev.strata.cache.routing;

/**
 * Marks the start of a burst: a run of consecutive steps the online controller treats as one
 * unit (a decode burst of one request, a tool-call round). Decayed histograms age once per burst.
 * Immutable; any thread.
 */
public record BurstStart() implements RoutingRecord {
    /** The one value: bursts carry no payload. */
    public static final BurstStart INSTANCE = new BurstStart();
}
