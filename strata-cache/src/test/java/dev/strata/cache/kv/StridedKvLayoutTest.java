package dev.strata.cache.kv;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.cache.kv.EngineKv.Kind;
import dev.strata.testing.Property;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Segment counts of {@link StridedKvLayout} derived by hand for each layout kind, the empty
 * selection, and the layout's argument checks.
 *
 * <p>Derivation, for {@code L} layers, {@code T} tokens per block, {@code H} heads, a selection of
 * {@code c} tokens in {@code r} maximal runs, {@code ends} = 1 when both token 0 and token
 * {@code T-1} are selected:
 * <ul>
 *   <li>blockMajor: the block is the canonical order itself; each of the {@code 2L} (layer, K/V)
 *       parts has {@code r} runs and the last run of a part continues into the first of the next
 *       when {@code ends}: {@code 2L·r − (2L−1)·ends}; a full block is 1 segment.</li>
 *   <li>layerMajor ({@code slots > 1}): K and V of one slot are {@code slots × T} tokens apart,
 *       layers are separate tensors: {@code 2L·r}; a full block is {@code 2L}. With one slot the
 *       K of a layer ends where its V begins: {@code 2L·r − L·ends}.</li>
 *   <li>headMajor ({@code H > 1}): within a token the heads are {@code T} tokens apart, so every
 *       (token, head) is a run, but the last head of token {@code T−1} of K ends where head 0 of
 *       token 0 of V begins: {@code 2L·c·H − L·ends}; a full block is {@code 2L·T·H − L}. With one
 *       head it degenerates to {@code 2L·r − L·ends}.</li>
 *   <li>explicit strides with padding after heads and tokens: {@code 2L·c·H}; with padding only
 *       between slots: {@code 2L·r}.</li>
 * </ul>
 */
class StridedKvLayoutTest {
    private Arena arena;

    @BeforeEach
    void open() {
        arena = Arena.ofConfined();
    }

    @AfterEach
    void close() {
        arena.close();
    }

    @Test
    void fullBlockSegmentCounts() {
        KvGeometry g = new KvGeometry(3, 5, 7, KvDtype.FP16, 13);
        SplittableRandom random = new SplittableRandom(11);
        TokenSelection all = TokenSelection.all(13);
        int L = 3;
        int T = 13;
        int H = 5;
        assertThat(count(new EngineKv(arena, g, Kind.BLOCK_MAJOR, 4, random), 2, all)).isEqualTo(1);
        assertThat(count(new EngineKv(arena, g, Kind.LAYER_MAJOR, 4, random), 2, all)).isEqualTo(2 * L);
        assertThat(count(new EngineKv(arena, g, Kind.LAYER_MAJOR, 1, random), 0, all)).isEqualTo(L);
        assertThat(count(new EngineKv(arena, g, Kind.HEAD_MAJOR, 4, random), 3, all)).isEqualTo(2 * L * T * H - L);
        assertThat(count(new EngineKv(arena, g, Kind.PADDED, 4, random), 1, all)).isEqualTo(2 * L * T * H);
        assertThat(count(new EngineKv(arena, g, Kind.SLOT_PADDED, 4, random), 1, all)).isEqualTo(2 * L);
        KvGeometry oneHead = new KvGeometry(3, 1, 7, KvDtype.FP32, 16);
        assertThat(count(new EngineKv(arena, oneHead, Kind.HEAD_MAJOR, 2, random), 1, TokenSelection.all(16)))
                .isEqualTo(L);
    }

    @Test
    void sparseSegmentCountsMatchTheDerivation() {
        Property.forAll("strided layout segment counts", 200, random -> {
            KvGeometry g = KvLayoutRoundTripTest.GEOMETRIES.get(random.nextInt(KvLayoutRoundTripTest.GEOMETRIES.size()));
            int slots = 1 + random.nextInt(3);
            int slot = random.nextInt(slots);
            TokenSelection sel = KvLayoutRoundTripTest.randomSelection(random, g.blockTokens());
            int T = g.blockTokens();
            int L = g.layers();
            int H = g.kvHeads();
            int c = sel.count();
            int r = runs(sel);
            int ends = sel.contains(0) && sel.contains(T - 1) ? 1 : 0;
            String what = g + " slots " + slots + " " + KvLayoutRoundTripTest.positions(sel);
            assertThat(count(new EngineKv(arena, g, Kind.BLOCK_MAJOR, slots, random), slot, sel)).as(what)
                    .isEqualTo(c == 0 ? 0 : 2 * L * r - (2 * L - 1) * ends);
            assertThat(count(new EngineKv(arena, g, Kind.LAYER_MAJOR, slots, random), slot, sel)).as(what)
                    .isEqualTo(2 * L * r - (slots == 1 ? L * ends : 0));
            assertThat(count(new EngineKv(arena, g, Kind.HEAD_MAJOR, slots, random), slot, sel)).as(what)
                    .isEqualTo(H == 1 ? 2 * L * r - L * ends : 2 * L * c * H - L * ends);
            assertThat(count(new EngineKv(arena, g, Kind.PADDED, slots, random), slot, sel)).as(what)
                    .isEqualTo(2 * L * c * H);
            assertThat(count(new EngineKv(arena, g, Kind.SLOT_PADDED, slots, random), slot, sel)).as(what)
                    .isEqualTo(2 * L * r);
        });
    }

    /** Selecting no tokens describes an empty block: no segments and zero bytes, in every kind. */
    @Test
    void emptySelectionHasNoSegmentsAndNoBytes() {
        SplittableRandom random = new SplittableRandom(5);
        for (KvGeometry g : KvLayoutRoundTripTest.GEOMETRIES) {
            for (TokenSelection none : List.of(TokenSelection.none(g.blockTokens()), TokenSelection.of(g.blockTokens()),
                    TokenSelection.range(g.blockTokens(), 3, 3))) {
                for (Kind kind : Kind.values()) {
                    EngineKv kv = new EngineKv(arena, g, kind, 2, random);
                    List<MemorySegment> out = new ArrayList<>();
                    kv.layout.segments(1, none, out);
                    assertThat(out).as(kind + " " + g).isEmpty();
                    assertThat(kv.layout.blockBytes(none)).isZero();
                    assertThat(none.count()).isZero();
                    assertThat(none.nextSelected(0)).isEqualTo(-1);
                }
            }
        }
    }

    @Test
    void segmentsAreAppendedAfterWhatTheListHolds() {
        KvGeometry g = new KvGeometry(2, 3, 7, KvDtype.FP16, 16);
        EngineKv kv = new EngineKv(arena, g, Kind.LAYER_MAJOR, 2, new SplittableRandom(3));
        List<MemorySegment> out = new ArrayList<>();
        MemorySegment marker = arena.allocate(8);
        out.add(marker);
        kv.layout.segments(0, TokenSelection.all(16), out);
        assertThat(out).hasSize(1 + 2 * 2);
        assertThat(out.getFirst()).isSameAs(marker);
    }

    @Test
    void blockBytesMatchTheGeometry() {
        for (KvGeometry g : KvLayoutRoundTripTest.GEOMETRIES) {
            EngineKv kv = new EngineKv(arena, g, Kind.BLOCK_MAJOR, 1, new SplittableRandom(1));
            assertThat(kv.layout.blockBytes(TokenSelection.all(g.blockTokens()))).isEqualTo(g.bytesPerBlock());
            assertThat(kv.layout.blockBytes(TokenSelection.of(g.blockTokens(), 0)))
                    .isEqualTo(2L * g.layers() * g.kvHeads() * g.headDim() * g.dtype().bytes());
        }
    }

    @Test
    void rejectsASlotOutsideTheLayout() {
        KvGeometry g = new KvGeometry(2, 3, 7, KvDtype.FP16, 16);
        EngineKv kv = new EngineKv(arena, g, Kind.BLOCK_MAJOR, 3, new SplittableRandom(2));
        List<MemorySegment> out = new ArrayList<>();
        assertThatThrownBy(() -> kv.layout.segments(3, TokenSelection.all(16), out))
                .isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> kv.layout.segments(-1, TokenSelection.all(16), out))
                .isInstanceOf(IndexOutOfBoundsException.class);
        assertThat(out).isEmpty();
    }

    @Test
    void rejectsASelectionForAnotherBlockSize() {
        KvGeometry g = new KvGeometry(2, 3, 7, KvDtype.FP16, 16);
        EngineKv kv = new EngineKv(arena, g, Kind.HEAD_MAJOR, 2, new SplittableRandom(2));
        assertThatThrownBy(() -> kv.layout.segments(0, TokenSelection.all(13), new ArrayList<>()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("13")
                .hasMessageContaining("16");
    }

    @Test
    void rejectsRegionsThatAreTooSmallOrMiscounted() {
        KvGeometry g = new KvGeometry(2, 3, 7, KvDtype.FP16, 16);
        long perLayer = StridedKvLayout.layerMajorBytesPerLayer(g, 4);
        MemorySegment[] tensors = {arena.allocate(perLayer), arena.allocate(perLayer - 1)};
        assertThatThrownBy(() -> StridedKvLayout.layerMajor(g, 4, tensors))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("layer 1").hasMessageContaining(Long.toString(perLayer));
        assertThatThrownBy(() -> StridedKvLayout.headMajor(g, 4, new MemorySegment[] {arena.allocate(perLayer)}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("one tensor per layer");
        assertThatThrownBy(() -> StridedKvLayout.blockMajor(g, 4,
                arena.allocate(StridedKvLayout.blockMajorBytes(g, 4) - 1)))
                .isInstanceOf(IllegalArgumentException.class);
        MemorySegment r = arena.allocate(1 << 16);
        assertThatThrownBy(() -> new StridedKvLayout(g, 2, new MemorySegment[] {r, r, r}, 4096, 64, 14))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("needs 4 regions");
        assertThatThrownBy(() -> new StridedKvLayout(g, 2, new MemorySegment[] {r, r, r, r}, 4096, -1, 14))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("-1");
        assertThatThrownBy(() -> new StridedKvLayout(g, 0, new MemorySegment[] {r, r, r, r}, 4096, 64, 14))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("slot count");
    }

    private static int count(EngineKv kv, int slot, TokenSelection selection) {
        List<MemorySegment> out = new ArrayList<>();
        kv.layout.segments(slot, selection, out);
        return out.size();
    }

    private static int runs(TokenSelection sel) {
        int runs = 0;
        for (int t = sel.nextSelected(0); t >= 0; t = sel.nextSelected(sel.nextUnselected(t))) {
            runs++;
        }
        return runs;
    }
}
