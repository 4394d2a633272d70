package dev.strata.cache.config;

import dev.strata.cache.Durability;
import dev.strata.cache.ObjectKey;
import dev.strata.cache.ObjectKind;
import dev.strata.cache.ObjectView;
import dev.strata.cache.PriorityClass;
import dev.strata.cache.PutStatus;
import dev.strata.cache.ResidencyInfo;
import dev.strata.cache.TieredMemory;
import dev.strata.cache.peer.LocalLender;
import dev.strata.cache.peer.PeerClient;
import dev.strata.memory.Sizes;
import dev.strata.memory.TierKind;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The {@code tiers.peer} section and opening a PEER tier through a peer client. */
class PeerTierConfigTest {

    @Test
    void thePeerSectionIsReadCheckedAndTakesItsPlaceInTheChain() {
        StrataConfig c = ConfigLoader.load(null, List.of("tiers.device.capacity=64MiB", "tiers.host.capacity=1GiB",
                "tiers.peer.capacity=2GiB", "tiers.peer.chunk=8MiB", "tiers.peer.durability=backed", "tiers.peer.policy=locality"),
                null).conclude(64 * Sizes.GiB);
        assertThat(c.peer()).isEqualTo(new StrataConfig.PeerTier(2 * Sizes.GiB, 8 * Sizes.MiB, Durability.BACKED, "locality"));
        assertThat(c.store().chain()).containsExactly(TierKind.DEVICE, TierKind.PEER, TierKind.HOST);

        StrataConfig d = ConfigLoader.load(null, List.of("tiers.host.capacity=1GiB", "tiers.peer.capacity=64MiB"), null)
                .conclude(64 * Sizes.GiB);
        assertThat(d.peer()).isEqualTo(new StrataConfig.PeerTier(64 * Sizes.MiB, 4 * Sizes.MiB, Durability.LOSSY, "stability"));

        assertThatThrownBy(() -> ConfigLoader.load(null, List.of("tiers.peer.capacity=1GiB", "tiers.peer.policy=nearest"), null))
                .isInstanceOf(ConfigException.class).hasMessageContaining("tiers.peer.policy").hasMessageContaining("nearest");
        assertThatThrownBy(() -> ConfigLoader.load(null, List.of("tiers.peer.capacity=1MiB", "tiers.peer.chunk=2MiB"), null)
                .conclude(64 * Sizes.GiB)).isInstanceOf(ConfigException.class).hasMessageContaining("tiers.peer.chunk")
                .hasMessageContaining("tiers.peer.capacity");
        assertThatThrownBy(() -> ConfigLoader.load(null, List.of("tiers.peer.capacity=1MiB", "tiers.peer.chunk=1000"), null)
                .conclude(64 * Sizes.GiB)).hasMessageContaining("tiers.peer.chunk: 1000 bytes");
        assertThatThrownBy(() -> ConfigLoader.load(null, List.of("tiers.host.capacity=1GiB", "tiers.peer.capacity=1GiB",
                "store.chain=host,peer"), null).conclude(64 * Sizes.GiB)).hasMessageContaining("to the faster 'peer'");
        assertThatThrownBy(() -> ConfigLoader.load(null, List.of("tiers.host.capacity=1GiB", "store.chain=peer,host"), null)
                .conclude(64 * Sizes.GiB)).hasMessageContaining("tiers.peer is not configured");
    }

    @Test
    void tieredMemoryOpensThePeerTierThroughAPeerClient() {
        StrataConfig c = ConfigLoader.load(null, List.of("tiers.host.capacity=4MiB", "tiers.peer.capacity=1MiB",
                "tiers.peer.chunk=64KiB"), null).conclude();
        assertThatThrownBy(() -> TieredMemory.open(c, (k, kind, d, s, r) -> { })).isInstanceOf(ConfigException.class)
                .hasMessageContaining("tiers.peer is configured but no peer client");
        LocalLender lender = new LocalLender(LocalLender.Config.of(0, "gpu1", 2 * Sizes.MiB));
        try (PeerClient client = PeerClient.of(List.of(lender), c.peer().policy());
             TieredMemory memory = TieredMemory.open(c, (k, kind, d, s, r) -> { }, client)) {
            assertThat(memory.store().tiers()).extracting(t -> t.kind()).containsExactly(TierKind.PEER, TierKind.HOST);
            byte[] bytes = new byte[12_345];
            new SplittableRandom(9).nextBytes(bytes);
            bytes[0] |= 1;
            ObjectKey key = ObjectKey.of(77);
            assertThat(memory.store().put(key, ObjectKind.KV_BLOCK, Durability.BACKED, PriorityClass.RECENT,
                    MemorySegment.ofArray(bytes))).isEqualTo(PutStatus.STORED);
            assertThat(memory.store().residencies(key)).extracting(ResidencyInfo::tierName).containsExactly("peer", "host");
            try (ObjectView v = memory.store().get(key)) {
                assertThat(v.bytes().toArray(ValueLayout.JAVA_BYTE)).isEqualTo(bytes);
                assertThat(v.tierName()).isEqualTo("peer");
            }
            assertThat(memory.metrics().tiers()).extracting(t -> t.kind()).contains(TierKind.PEER);
        }
        assertThat(lender.stats().lentBytes()).as("closing the tiers gave the leases back").isZero();
    }
}
