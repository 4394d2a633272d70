package dev.strata.bench.peer;

/**
 * The modelled cost of fetching bytes into the compute device over the host link (PCIe) or from a
 * peer device (NVLink), for figures this machine cannot measure: it has no GPU, and a lent GPU is
 * a single device with no NVLink peer. Every figure built from it is labelled "modelled".
 *
 * <p>Host fetches cost {@code bytes / pcieBytesPerSecond}. Peer fetches cost the host time divided
 * by the speed-up Harvest measured for transfers of that kind between two NVLink-connected H100s
 * over a PCIe 5.0 host link: 7.5× (Phi-tiny-MoE's experts) to 9.5× (Mixtral-8x7B's) for expert-sized
 * chunks (Harvest, Figure 3), 3× to 5.65× for KV chunks of 100 to 8,000 entries (Mistral-Large-3;
 * Kimi-K2 5.42× to 5.68×; Figure 7). {@link #harvestLow} takes the low end of each range and
 * {@link #harvestHigh} the high end. The bandwidths in ANCHORS.md agree: H100 NVLink peer-to-peer
 * 365–393 GB/s per direction against PCIe Gen5 ~55 GB/s is 6.6–7.1×.
 *
 * <p>Immutable; any thread.
 *
 * @param pcieBytesPerSecond host link bandwidth, bytes/s (ANCHORS.md: PCIe Gen5 host→GPU ~55 GB/s)
 * @param kvPeerSpeedup      how many times faster a KV fetch from a peer is than from the host
 * @param expertPeerSpeedup  how many times faster an expert fetch from a peer is than from the host
 */
public record LinkCostModel(double pcieBytesPerSecond, double kvPeerSpeedup, double expertPeerSpeedup) {

    /** PCIe Gen5, ANCHORS.md. */
    public static final double PCIE_GEN5_BYTES_PER_SECOND = 55e9;

    public LinkCostModel {
        if (!(pcieBytesPerSecond > 0) || !(kvPeerSpeedup >= 1) || !(expertPeerSpeedup >= 1)) {
            throw new IllegalArgumentException("link cost model: PCIe bandwidth " + pcieBytesPerSecond
                    + " B/s must be > 0 and speed-ups (KV " + kvPeerSpeedup + ", expert " + expertPeerSpeedup + ") >= 1");
        }
    }

    /** The low end of Harvest's measured speed-ups: KV 3×, experts 7.5×. */
    public static LinkCostModel harvestLow() {
        return new LinkCostModel(PCIE_GEN5_BYTES_PER_SECOND, 3.0, 7.5);
    }

    /** The high end of Harvest's measured speed-ups: KV 5.65×, experts 9.5×. */
    public static LinkCostModel harvestHigh() {
        return new LinkCostModel(PCIE_GEN5_BYTES_PER_SECOND, 5.65, 9.5);
    }

    /** Seconds to fetch {@code bytes} over the host link. */
    public double hostSeconds(long bytes) {
        return bytes / pcieBytesPerSecond;
    }

    /** Seconds to fetch {@code bytes} of KV blocks from a peer. */
    public double kvPeerSeconds(long bytes) {
        return hostSeconds(bytes) / kvPeerSpeedup;
    }

    /** Seconds to fetch {@code bytes} of expert weights from a peer. */
    public double expertPeerSeconds(long bytes) {
        return hostSeconds(bytes) / expertPeerSpeedup;
    }

    /** A short label for reports. */
    public String describe() {
        return String.format(java.util.Locale.ROOT, "modelled: PCIe %.0f GB/s, peer fetch %.2fx faster for KV and %.1fx for experts "
                + "(Harvest Fig. 3 and 7, H100 NVLink vs PCIe 5.0)", pcieBytesPerSecond / 1e9, kvPeerSpeedup, expertPeerSpeedup);
    }
}
