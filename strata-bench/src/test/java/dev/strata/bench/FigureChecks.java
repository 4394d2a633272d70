package dev.strata.bench;

import static org.assertj.core.api.Assertions.assertThat;

/** Assertions every measured figure satisfies, whatever the machine's speed. */
public final class FigureChecks {
    private FigureChecks() {
    }

    /**
     * {@code f} was measured over rounds and is self-consistent: its median value and median ratio
     * lie within their spreads, and its verdict is its goal's judgement of the spread the goal
     * names (so {@code met} holds only when the whole spread meets the goal).
     */
    public static void assertConsistent(Figure f) {
        assertThat(f.rounds()).as("%s rounds", f.name()).isPositive();
        assertThat(f.value()).as("%s value within its spread", f.name()).isBetween(f.valueLow(), f.valueHigh());
        if (!Double.isNaN(f.ratio())) {
            assertThat(f.ratio()).as("%s ratio within its spread", f.name()).isBetween(f.ratioLow(), f.ratioHigh());
        }
        Goal g = Goal.parse(f.goal());
        Verdict expected = g.onValue() ? g.judge(f.valueLow(), f.value(), f.valueHigh())
                : g.judge(f.ratioLow(), f.ratio(), f.ratioHigh());
        assertThat(f.verdict()).as("%s verdict", f.name()).isEqualTo(expected);
        assertThat(f.met()).as("%s met", f.name()).isEqualTo(expected == Verdict.MET);
    }
}
