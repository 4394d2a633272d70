package dev.strata.bench.peer;

/**
 * What a replay's fetches into the compute device cost: where each one was served from and how
 * many bytes crossed which link.
 *
 * <p>A <em>fetch</em> is a reference that missed the device's own cache for an object that was
 * offloaded before: it is served from a peer, from the host, or it finds the object gone (a LOSSY
 * copy dropped by revocation or by eviction) and the object is rebuilt. A <em>cold</em> reference
 * is the object's first use. Confined to the replaying thread.
 */
public final class FetchTally {
    long references;   // every reference replayed
    long deviceHits;   // served by the device cache
    long cold;         // first use of the object: computed, no fetch
    long peerFetches;  // served by a copy on a peer
    long hostFetches;  // served by the host copy
    long lost;         // offloaded before, no copy left: rebuilt (recomputed KV, or re-read from its source)
    long peerBytes;    // bytes fetched from peers
    long hostBytes;    // bytes fetched over the host link
    long offloads;     // objects written out of the device into the store
    long refusedOffloads; // offloads the store refused (no room without dropping BACKED data)
    long wrongBytes;   // fetched objects whose stamps did not match: must stay 0

    public long references() {
        return references;
    }

    public long deviceHits() {
        return deviceHits;
    }

    public long cold() {
        return cold;
    }

    public long peerFetches() {
        return peerFetches;
    }

    public long hostFetches() {
        return hostFetches;
    }

    public long lost() {
        return lost;
    }

    public long peerBytes() {
        return peerBytes;
    }

    public long hostBytes() {
        return hostBytes;
    }

    public long offloads() {
        return offloads;
    }

    public long refusedOffloads() {
        return refusedOffloads;
    }

    public long wrongBytes() {
        return wrongBytes;
    }

    /** Fetches of any source, rebuilt objects included. */
    public long fetches() {
        return peerFetches + hostFetches + lost;
    }

    /** Share of fetches a peer served; NaN with no fetch. */
    public double peerShare() {
        long f = fetches();
        return f == 0 ? Double.NaN : (double) peerFetches / f;
    }

    /** Share of fetches that found the object gone; NaN with no fetch. */
    public double lostShare() {
        long f = fetches();
        return f == 0 ? Double.NaN : (double) lost / f;
    }

    @Override
    public String toString() {
        return String.format(java.util.Locale.ROOT,
                "%d refs: %d device hits, %d cold, fetches %d peer / %d host / %d lost (peer share %.3f), %.1f MB from peers, "
                        + "%.1f MB over the host link, %d offloads (%d refused), %d wrong",
                references, deviceHits, cold, peerFetches, hostFetches, lost, peerShare(), peerBytes / 1e6, hostBytes / 1e6,
                offloads, refusedOffloads, wrongBytes);
    }
}
