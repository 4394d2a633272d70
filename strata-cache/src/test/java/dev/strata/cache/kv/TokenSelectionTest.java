package dev.strata.cache.kv;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.testing.Property;
import java.util.BitSet;
import org.junit.jupiter.api.Test;

/** {@link TokenSelection} against a {@link BitSet} model, blocks up to 200 tokens (several words). */
class TokenSelectionTest {

    @Test
    void agreesWithABitSet() {
        Property.forAll("token selection", 300, r -> {
            int bt = 1 + r.nextInt(200);
            int[] picked = r.ints(r.nextInt(bt + 1), 0, bt).toArray();
            TokenSelection s = TokenSelection.of(bt, picked);
            BitSet model = new BitSet();
            for (int t : picked) {
                model.set(t);
            }
            assertThat(s.count()).isEqualTo(model.cardinality());
            assertThat(s.isAll()).isEqualTo(model.cardinality() == bt);
            for (int t = -1; t <= bt; t++) {
                assertThat(s.contains(t)).isEqualTo(t >= 0 && t < bt && model.get(t));
                int from = Math.max(t, 0);
                int next = model.nextSetBit(from);
                assertThat(s.nextSelected(t)).as("nextSelected(%d)", t).isEqualTo(next < 0 || next >= bt ? -1 : next);
                if (from <= bt) {
                    assertThat(s.nextUnselected(t)).as("nextUnselected(%d)", t).isEqualTo(Math.min(model.nextClearBit(from), bt));
                }
            }
            int from = r.nextInt(bt + 1);
            int to = from + r.nextInt(bt - from + 1);
            TokenSelection range = TokenSelection.range(bt, from, to);
            assertThat(range.count()).isEqualTo(to - from);
            assertThat(range.nextSelected(0)).isEqualTo(to > from ? from : -1);
            assertThat(range).isEqualTo(TokenSelection.of(bt, java.util.stream.IntStream.range(from, to).toArray()));
        });
    }

    @Test
    void allAndNone() {
        assertThat(TokenSelection.all(13).isAll()).isTrue();
        assertThat(TokenSelection.all(13).count()).isEqualTo(13);
        assertThat(TokenSelection.none(13).count()).isZero();
        assertThat(TokenSelection.none(13)).isEqualTo(TokenSelection.of(13)).isNotEqualTo(TokenSelection.none(16));
        assertThat(TokenSelection.all(64).nextUnselected(0)).isEqualTo(64);
        assertThat(TokenSelection.all(130).nextSelected(129)).isEqualTo(129);
    }

    @Test
    void rejectsPositionsOutsideTheBlock() {
        assertThatThrownBy(() -> TokenSelection.of(16, 3, 16)).hasMessageContaining("16");
        assertThatThrownBy(() -> TokenSelection.of(16, -1)).hasMessageContaining("-1");
        assertThatThrownBy(() -> TokenSelection.range(16, 4, 17)).hasMessageContaining("[4, 17)");
        assertThatThrownBy(() -> TokenSelection.range(16, 5, 4)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> TokenSelection.all(0)).hasMessageContaining("0");
    }
}
