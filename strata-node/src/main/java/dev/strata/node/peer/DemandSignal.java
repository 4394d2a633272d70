package dev.strata.node.peer;

/**
 * How much of its own budget a peer agent needs for itself right now: the rest is what it lends.
 * When demand rises above what is free, the agent asks lent regions back.
 *
 * <p>Implementations: {@link FixedDemand} (a constant reserve), {@link FileDemand} (a number in a
 * file that operators or tests write) and {@link TraceDemand} (replay of an availability trace).
 * {@link #parse} builds one from a command-line spec.
 *
 * <p>Threads: {@link #demandBytes} is called by the agent's tick thread only.
 */
public interface DemandSignal {

    /**
     * The agent's own demand in bytes now; the agent clamps it to {@code [0, budget]}.
     *
     * @param elapsedNanos nanoseconds since the agent started lending
     */
    long demandBytes(long elapsedNanos);

    /** One line saying where the demand comes from, for logs and the ready line. */
    String describe();

    /**
     * Builds a signal from a spec: {@code fixed:SIZE} (e.g. {@code fixed:1GiB}),
     * {@code file:PATH} (a file holding a size), or {@code trace:PATH[,peer=NAME][,speed=X][,loop]}
     * (one peer of an availability trace: the demand is the budget minus the peer's free bytes).
     *
     * @param budget the agent's budget in bytes (a trace's free bytes are subtracted from it)
     * @throws IllegalArgumentException naming the spec and what is wrong with it
     */
    static DemandSignal parse(String spec, long budget) {
        if (spec == null || spec.isBlank()) {
            throw new IllegalArgumentException("demand spec is empty (expected fixed:SIZE, file:PATH or trace:PATH[,peer=NAME][,speed=X][,loop])");
        }
        int colon = spec.indexOf(':');
        String kind = colon < 0 ? spec : spec.substring(0, colon);
        String rest = colon < 0 ? "" : spec.substring(colon + 1);
        return switch (kind) {
            case "fixed" -> FixedDemand.parse(rest);
            case "file" -> {
                if (rest.isBlank()) {
                    throw new IllegalArgumentException("demand spec '" + spec + "' names no file (expected file:PATH)");
                }
                yield new FileDemand(java.nio.file.Path.of(rest));
            }
            case "trace" -> TraceDemand.parse(rest, budget);
            default -> throw new IllegalArgumentException("demand spec '" + spec + "': unknown kind '" + kind
                    + "' (expected fixed:SIZE, file:PATH or trace:PATH[,peer=NAME][,speed=X][,loop])");
        };
    }
}
