package dev.strata.bench.peer;

import dev.strata.cache.peer.LocalLender;
import dev.strata.cache.peer.PeerClient;
import java.util.List;

/**
 * The in-process rig: one {@link LocalLender} of {@code budget} bytes under a {@link PeerClient};
 * the demand goes straight to the lender ({@link LocalLender#demand}), which asks back by its
 * lending rule at once.
 *
 * <p>Threads: the measuring thread.
 */
public final class LocalRevocationRig implements RevocationRig {
    private final LocalLender lender;
    private final PeerClient client;
    private final long budget; // bytes

    public LocalRevocationRig(long budget) {
        this.budget = budget;
        this.lender = new LocalLender(LocalLender.Config.of(0, "gpu1", budget));
        this.client = PeerClient.of(List.of(lender), "BEST_FIT");
    }

    @Override
    public String label() {
        return "in_process";
    }

    @Override
    public PeerClient client() {
        return client;
    }

    @Override
    public long budget() {
        return budget;
    }

    @Override
    public void demand(long bytes) {
        lender.demand(bytes);
    }

    @Override
    public boolean settled() {
        LocalLender.Stats s = lender.stats();
        return client.revocationsIdle() && s.revokingBytes() == 0 && s.releasingBytes() == 0 && s.lentBytes() == 0;
    }

    @Override
    public void close() {
        client.close(); // closes the lender
    }
}
