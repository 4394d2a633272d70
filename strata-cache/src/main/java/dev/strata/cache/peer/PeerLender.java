package dev.strata.cache.peer;

/**
 * One peer agent as the client library reaches it: the transport under {@link PeerMemory}. An
 * in-process implementation lends from an arena of this process; the node's implementation lends
 * from a shared-memory file owned by a {@code strata peer} agent process.
 *
 * <p>Protocol, as both sides keep it:
 * <ol>
 *   <li>{@link #borrow} lends a region at its current epoch; the agent counts it as lent.</li>
 *   <li>The agent asks for a region back through {@link LenderEvents#revocationRequested} with a
 *       deadline. The client stops new accesses ({@link LentRegion#enter} fails from then on),
 *       waits for the accesses under way to {@link LentRegion#exit}, runs its callbacks and calls
 *       {@link #acknowledge}. Only then does the agent reuse the memory.</li>
 *   <li>A client that has not acknowledged by the deadline is fenced: the agent advances the
 *       region's epoch (every later {@code enter} through the old lease fails) and reuses the
 *       memory only once no access begun under the old epoch is still under way, or the client
 *       process is dead. {@link LenderEvents#fenced} tells the client.</li>
 * </ol>
 *
 * <p>Threads: any thread may call; events arrive on the lender's own thread.
 */
public interface PeerLender extends AutoCloseable {

    /** This peer's id, unique among the lenders one client sees. */
    int id();

    String name();

    /** Topology distance from this client: 0 same device, 1 direct link, 2 via the host. */
    int distance();

    /**
     * Modelled or measured time to the first byte of a fetch from this peer, in nanoseconds; the
     * client compares it with {@link LeaseHints#latencyBoundNanos()}. A lender that does not know
     * its latency keeps this default, {@link Long#MAX_VALUE}: it then satisfies only hints that
     * accept any latency.
     */
    default long firstByteLatencyNanos() {
        return Long.MAX_VALUE;
    }

    /** Bytes the agent offers to lend now (advisory: a borrow may still fail). */
    long lendableBytes();

    /** False once the agent is known dead or unreachable. */
    boolean alive();

    /** Lends {@code size} bytes, or returns null when the agent cannot now (an expected outcome). */
    LentRegion borrow(long size);

    /** Returns a region before any revocation; the agent may reuse it at once. Idempotent. */
    void giveBack(LentRegion region);

    /** Acknowledges a revocation after draining; the agent may reuse the region. Idempotent. */
    void acknowledge(LentRegion region);

    /** Registers the one listener for this lender's events; call before the first borrow. */
    void listen(LenderEvents events);

    /** Stops listening; regions still lent are given back. */
    @Override
    void close();
}
