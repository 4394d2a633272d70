package dev.strata.cache.peer.trace;

/**
 * One line of a peer availability trace: at {@code t} seconds from the start of the trace, peer
 * {@code peer} had {@code free} bytes of memory it could lend. The value holds until the peer's next
 * sample (a step function).
 *
 * <p>Immutable value; any thread.
 *
 * @param t    seconds from the start of the trace; finite and {@code >= 0}
 * @param peer the peer's name, e.g. {@code gpu3}; not blank
 * @param free bytes free on the peer from {@code t} on; {@code >= 0}
 */
public record AvailabilitySample(double t, String peer, long free) {
    public AvailabilitySample {
        if (!Double.isFinite(t) || t < 0) {
            throw new IllegalArgumentException("sample time t must be finite and >= 0 seconds, got " + t);
        }
        if (peer == null || peer.isBlank()) {
            throw new IllegalArgumentException("sample peer must be a non-blank name, got "
                    + (peer == null ? "null" : "'" + peer + "'"));
        }
        if (free < 0) {
            throw new IllegalArgumentException("sample free bytes must be >= 0, got " + free + " for peer '" + peer + "' at t " + t);
        }
    }
}
