package dev.strata.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** Goals judge a spread: met, missed, or inconclusive when it straddles the threshold, in either direction. */
class GoalTest {

    @Test
    void goalsApplyToRatioOrValue() {
        assertThat(Goal.parse(">= 0.9").met(1.0, 0.95)).isTrue();
        assertThat(Goal.parse(">= 0.9").met(100, 0.85)).isFalse();
        assertThat(Goal.parse(">= 5000000 ops/s").met(6e6, 0.1)).isTrue();
        assertThat(Goal.parse("<= 2").met(0, 3)).isFalse();
        assertThat(Goal.parse(">= 0.9").met(1, Double.NaN)).isFalse();
        assertThatThrownBy(() -> Goal.parse("about 1")).hasMessageContaining("'about 1'");
    }

    @Test
    void aTieThatRoundingPutsPastTheThresholdMeetsItAndNothingMore() {
        assertThat(Goal.parse("<= 1.0").meets(Math.nextUp(Math.nextUp(1.0)))).as("a tie, two ulps over").isTrue();
        assertThat(Goal.parse(">= 0.9").meets(Math.nextDown(0.9))).as("a tie, one ulp under").isTrue();
        assertThat(Goal.parse(">= 5000000 ops/s").meets(4_999_999.999)).as("a rounding error of the value").isTrue();
        assertThat(Goal.parse("<= 1.0").meets(1.000001)).as("a millionth over").isFalse();
        assertThat(Goal.parse(">= 0.9").meets(0.8999999)).isFalse();
        assertThat(Goal.parse(">= 5000000 ops/s").meets(4_999_990)).isFalse();
    }

    @Test
    void anAtLeastGoalIsInconclusiveWhenTheSpreadStraddlesIt() {
        Goal g = Goal.parse(">= 0.9");
        assertThat(g.judge(0.92, 1.0, 1.1)).isEqualTo(Verdict.MET);
        assertThat(g.judge(0.5, 0.7, 0.89)).isEqualTo(Verdict.MISSED);
        assertThat(g.judge(0.85, 0.95, 1.1)).as("median meets, low end does not").isEqualTo(Verdict.INCONCLUSIVE);
        assertThat(g.judge(0.85, 0.88, 0.95)).as("median misses, high end meets").isEqualTo(Verdict.INCONCLUSIVE);
        assertThat(g.judge(0.9, 0.9, 0.9)).as("the bound itself meets").isEqualTo(Verdict.MET);
    }

    @Test
    void anAtMostGoalIsJudgedFromTheOtherEnd() {
        Goal g = Goal.parse("<= 3");
        assertThat(g.judge(1, 2, 2.9)).isEqualTo(Verdict.MET);
        assertThat(g.judge(3.1, 4, 9)).isEqualTo(Verdict.MISSED);
        assertThat(g.judge(2, 2.5, 3.5)).isEqualTo(Verdict.INCONCLUSIVE);
    }

    @Test
    void valueGoalsJudgeTheValuesSpreadAndIgnoreTheRatio() {
        Figure straddles = Figure.sampled("store_get_64B_ops", "ops/s", "map", Sample.of(4.8e6, 5.1e6, 5.3e6), 1e8,
                ">= 5000000 ops/s");
        assertThat(straddles.verdict()).isEqualTo(Verdict.INCONCLUSIVE);
        assertThat(straddles.met()).isFalse();
        Figure below = Figure.sampled("store_get_64B_ops", "ops/s", "map", Sample.of(4.0e6, 4.5e6), 1e6, ">= 5000000 ops/s");
        assertThat(below.verdict()).as("ratio 4.25 does not matter").isEqualTo(Verdict.MISSED);
        Figure latency = Figure.paired("step", "ns", "lookup", Paired.of(new double[] {5, 5, 5}, new double[] {80, 90, 120}),
                "<= 100 ns");
        assertThat(latency.verdict()).isEqualTo(Verdict.INCONCLUSIVE);
        assertThat(latency.valueLow()).isEqualTo(80);
        assertThat(latency.valueHigh()).isEqualTo(120);
    }

    @Test
    void nothingMeasuredIsNotJudgedAndExactFiguresHaveNoSpread() {
        assertThat(Goal.parse(">= 0.9").judge(Double.NaN, Double.NaN, Double.NaN)).isEqualTo(Verdict.NOT_JUDGED);
        assertThat(Figure.sampled("disk", "GB/s", "fio (absent)", Sample.of(1, 2), Double.NaN, ">= 0.9").verdict())
                .as("a ratio goal without a baseline").isEqualTo(Verdict.NOT_JUDGED);
        Figure exact = Figure.exact("hit_ratio", 0.5, "", "Belady", 0.6, ">= 0.8");
        assertThat(exact.rounds()).isZero();
        assertThat(exact.ratioLow()).isEqualTo(exact.ratioHigh()).isEqualTo(0.5 / 0.6);
        assertThat(exact.verdict()).isEqualTo(Verdict.MET);
    }

    @Test
    void quickRunsCarryNoVerdictAndMetFollowsTheVerdict() {
        Figure met = Figure.exact("x", 2, "", "b", 1, ">= 1");
        Figure unjudged = met.unjudged();
        assertThat(unjudged.verdict()).isEqualTo(Verdict.NOT_JUDGED);
        assertThat(unjudged.met()).isFalse();
        assertThat(unjudged.value()).isEqualTo(2);
        assertThat(unjudged.withNote("n").verdict()).isEqualTo(Verdict.NOT_JUDGED);
        assertThatThrownBy(() -> new Figure("x", 1, "", "b", 1, 1, ">= 1", true, "", 1, 1, 1, 1, 1, Verdict.MISSED))
                .hasMessageContaining("figure x: met = true but verdict missed");
        assertThat(Verdict.ofLabel("not judged")).isEqualTo(Verdict.NOT_JUDGED);
        assertThatThrownBy(() -> Verdict.ofLabel("maybe")).hasMessageContaining("'maybe'");
    }
}
