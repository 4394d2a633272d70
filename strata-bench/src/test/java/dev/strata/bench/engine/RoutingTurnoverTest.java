package dev.strata.bench.engine;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Routing turnover counts the experts of a decode step that the layer's previous step did not route. */
class RoutingTurnoverTest {

    @Test
    void countsTheExpertsThatChangedPerLayerSinceThePreviousCountedStep() {
        RoutingTurnover t = new RoutingTurnover(2);
        t.counting(true);
        t.routed(0, 0, new int[] {1, 2, 3, 4});
        t.routed(1, 0, new int[] {5, 6, 7, 8});
        assertThat(t.turnover()).as("a first step has nothing to compare with").isNaN();
        t.routed(0, 0, new int[] {4, 3, 9, 10}); // 2 of 4 new, in another rank order
        t.routed(1, 0, new int[] {8, 7, 6, 5}); // none new
        assertThat(t.compared()).isEqualTo(8);
        assertThat(t.turnover()).isEqualTo(2.0 / 8);
    }

    @Test
    void ignoresPrefillsOtherTokensOfABatchAndTheLastStepOfAnotherSequence() {
        RoutingTurnover t = new RoutingTurnover(1);
        t.routed(0, 0, new int[] {1, 2}); // not counting: a prefill
        t.counting(true);
        t.routed(0, 0, new int[] {1, 2});
        t.routed(0, 1, new int[] {7, 8}); // a second token of the call
        t.routed(0, 0, new int[] {2, 3});
        assertThat(t.turnover()).isEqualTo(0.5);
        t.newSequence();
        t.routed(0, 0, new int[] {9, 10}); // compared with nothing
        assertThat(t.compared()).isEqualTo(2);
        t.reset();
        assertThat(t.turnover()).isNaN();
    }

    @Test
    void rejectsAModelWithoutMoeLayers() {
        assertThatThrownBy(() -> new RoutingTurnover(0)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("0");
    }
}
