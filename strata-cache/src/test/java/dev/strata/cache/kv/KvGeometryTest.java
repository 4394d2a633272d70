package dev.strata.cache.kv;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.testing.Property;
import org.junit.jupiter.api.Test;

/** Sizes, tensor-parallel splits and argument checks of {@link KvGeometry} and {@link KvDtype}. */
class KvGeometryTest {

    @Test
    void llama2_70bBlockIs1_31MBPerRankUnderTp4() {
        KvGeometry g = new KvGeometry(80, 8, 128, KvDtype.FP16, 16);
        assertThat(g.headBytesPerToken()).isEqualTo(8 * 128 * 2);
        assertThat(g.bytesPerToken()).isEqualTo(327_680L);
        assertThat(g.bytesPerBlock()).isEqualTo(5_242_880);
        KvGeometry rank = g.perRank(4);
        assertThat(rank.kvHeads()).isEqualTo(2);
        assertThat(rank.bytesPerBlock()).isEqualTo(1_310_720);
        assertThat(rank.partBytesPerBlock()).isEqualTo(16 * 2 * 128 * 2);
    }

    @Test
    void sizesFollowFromTheShape() {
        Property.forAll("kv geometry sizes", 100, r -> {
            KvGeometry g = new KvGeometry(1 + r.nextInt(100), 1 + r.nextInt(16), 1 + r.nextInt(256),
                    KvDtype.values()[r.nextInt(KvDtype.values().length)], 1 + r.nextInt(64));
            long elements = 2L * g.layers() * g.blockTokens() * g.kvHeads() * g.headDim();
            assertThat((long) g.bytesPerBlock()).isEqualTo(elements * g.dtype().bytes());
            assertThat(g.bytesPerToken() * g.blockTokens()).isEqualTo(g.bytesPerBlock());
            long tokens = r.nextLong(1_000_000);
            assertThat(g.blocksFor(tokens)).isEqualTo((long) Math.ceil(tokens / (double) g.blockTokens()));
        });
    }

    @Test
    void perRankSplitsOrReplicatesHeads() {
        KvGeometry g = new KvGeometry(32, 8, 128, KvDtype.BF16, 16);
        assertThat(g.perRank(1)).isEqualTo(g);
        assertThat(g.perRank(8).kvHeads()).isEqualTo(1);
        assertThat(g.perRank(16).kvHeads()).isEqualTo(1); // replicated: each head on two ranks
        assertThatThrownBy(() -> g.perRank(3)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("8 KV heads").hasMessageContaining("3 ranks");
        assertThatThrownBy(() -> g.perRank(12)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("12 ranks");
        assertThatThrownBy(() -> g.perRank(0)).hasMessageContaining("0");
    }

    @Test
    void rejectsNonPositiveFieldsAndOversizedBlocks() {
        assertThatThrownBy(() -> new KvGeometry(0, 8, 128, KvDtype.FP16, 16)).hasMessageContaining("layers");
        assertThatThrownBy(() -> new KvGeometry(2, -1, 128, KvDtype.FP16, 16)).hasMessageContaining("kv heads");
        assertThatThrownBy(() -> new KvGeometry(2, 8, 0, KvDtype.FP16, 16)).hasMessageContaining("head dim");
        assertThatThrownBy(() -> new KvGeometry(2, 8, 128, KvDtype.FP16, 0)).hasMessageContaining("block tokens");
        assertThatThrownBy(() -> new KvGeometry(2, 8, 128, null, 16)).hasMessageContaining("dtype");
        assertThatThrownBy(() -> new KvGeometry(128, 64, 256, KvDtype.FP32, 1024)).hasMessageContaining("too large");
        assertThatThrownBy(() -> KvGeometry.of(2, 2, 2, KvDtype.FP8_E4M3).blocksFor(-1)).hasMessageContaining("-1");
    }

    @Test
    void dtypeParsesConfigNames() {
        assertThat(KvDtype.parse("torch.bfloat16")).isEqualTo(KvDtype.BF16);
        assertThat(KvDtype.parse(" Float16 ")).isEqualTo(KvDtype.FP16);
        assertThat(KvDtype.parse("float32")).isEqualTo(KvDtype.FP32);
        assertThat(KvDtype.parse("fp8-e5m2")).isEqualTo(KvDtype.FP8_E5M2);
        assertThat(KvDtype.parse("fp8")).isEqualTo(KvDtype.FP8_E4M3);
        assertThat(KvDtype.parse("int8").bytes()).isEqualTo(1);
        for (KvDtype d : KvDtype.values()) {
            assertThat(KvDtype.parse(d.label())).isEqualTo(d);
        }
        assertThatThrownBy(() -> KvDtype.parse("float64")).hasMessageContaining("'float64'").hasMessageContaining("bf16");
        assertThatThrownBy(() -> KvDtype.parse(null)).isInstanceOf(IllegalArgumentException.class);
    }
}
