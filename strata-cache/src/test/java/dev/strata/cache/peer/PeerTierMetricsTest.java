package dev.strata.cache.peer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.cache.Durability;
import dev.strata.memory.Sizes;
import dev.strata.memory.metrics.PrometheusText;
import java.util.List;
import org.junit.jupiter.api.Test;

class PeerTierMetricsTest {

    @Test
    void everyTierIsOneSampleOfEachFamilyWrittenOnce() {
        LocalLender lender = new LocalLender(LocalLender.Config.of(0, "peer0", 1 << 20));
        try (PeerClient client = PeerClient.of(List.of(lender), "best-fit");
             PeerTier kv = new PeerTier("kv-peer", client, 128 * Sizes.KiB, 16 * Sizes.KiB, LeaseHints.of(Durability.LOSSY));
             PeerTier experts = new PeerTier("expert-peer", client, 128 * Sizes.KiB, 16 * Sizes.KiB, LeaseHints.of(Durability.LOSSY))) {
            long h = kv.allocate(4 * Sizes.KiB);
            assertThat(h).isGreaterThanOrEqualTo(0);
            PrometheusText out = new PrometheusText();
            PeerTierMetrics.writeTo(out, List.of(kv, experts));
            PeerTierMetrics.writeTo(new PrometheusText(), List.of()); // no tiers: nothing, and no failure
            String text = out.toString();
            assertThat(text).contains(
                    "# TYPE strata_peer_tier_leases_borrowed_total counter\n"
                            + "strata_peer_tier_leases_borrowed_total{tier=\"kv-peer\"} 1\n"
                            + "strata_peer_tier_leases_borrowed_total{tier=\"expert-peer\"} 0\n",
                    "strata_peer_tier_borrowed_bytes{tier=\"kv-peer\"} " + kv.borrowedBytes() + "\n",
                    "strata_peer_tier_used_bytes{tier=\"kv-peer\"} " + kv.used() + "\n",
                    "strata_peer_tier_used_bytes{tier=\"expert-peer\"} 0\n");
            assertThat(text.lines().filter(l -> l.startsWith("# TYPE "))).hasSize(8);
            assertThat(text.lines().filter(l -> !l.startsWith("#"))).hasSize(16);
            assertThat(kv.used()).isPositive();
            kv.free(h);
        }
    }
}
