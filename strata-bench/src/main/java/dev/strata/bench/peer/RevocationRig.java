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

    /** The agent asks for all of its memory back (its own demand rose to the whole budget). */
    void takeBack();

    /** The agent offers its whole budget again. */
    void offerAll();

    /** True when no revocation is under way at the client or the agent. */
    boolean settled();

    @Override
    void close();
}
