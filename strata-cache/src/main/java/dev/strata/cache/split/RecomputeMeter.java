package dev.strata.cache.split;

/**
 * Where the engine reports the prefill it runs, so that the cost of recomputing a KV block is
 * measured rather than assumed.
 *
 * <p>Threads: implementations say; {@link MissCostCalibrator} accepts calls from any thread.
 */
public interface RecomputeMeter {

    /**
     * One prefill: {@code tokens} tokens computed in {@code nanos} nanoseconds of wall time.
     * Calls with no tokens or no time are ignored.
     */
    void recordPrefill(long tokens, long nanos);
}
