package dev.strata.bench.peer;

import dev.strata.cache.peer.PeerClient;

/**
 * A peer client over one lender whose agent can be made to want its memory back: what
 * {@link RevocationLatencyMeasure} drives. Implementations: the in-process {@code LocalLender}, and
 * the cross-process shared-memory lender when a peer agent process runs it.
 *
 * <p>Threads: the measuring thread.
 */
public interface RevocationRig extends AutoCloseable {

    /** Says which lender this is, for figure names and notes, e.g. {@code in_process}. */
    String label();

    /** The client the measure borrows through. */
    PeerClient client();

    /** The agent's budget, bytes. */
    long budget();

    /**
     * Sets the agent's own demand, bytes: it offers the rest of its budget and asks lent regions
     * back by the lending rule every Strata lender follows ({@code LendingRule}).
     */
    void demand(long bytes);

    /** The agent asks for all of its memory back (its own demand rose to the whole budget). */
    default void takeBack() {
        demand(budget());
    }

    /** The agent offers its whole budget again (its own demand fell to 0). */
    default void offerAll() {
        demand(0);
    }

    /** True when no revocation is under way at the client or the agent. */
    boolean settled();

    @Override
    void close();
}
