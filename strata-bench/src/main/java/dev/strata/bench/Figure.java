package dev.strata.bench;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;

/**
 * One measured figure of a benchmark scenario, in the shape every scenario shares: the value, the
 * baseline measured in the same run, their ratio, the spread of both over the rounds, and the goal
 * with its verdict.
 *
 * <p>A figure measured in paired rounds ({@link #paired}) reports the subject's median as
 * {@code value}, the baseline's median as {@code baselineValue}, and the <em>median of the
 * per-pair ratios</em> as {@code ratio} (not {@code value / baselineValue}). The spread fields hold
 * {@link Trials#interval} of the per-round values and ratios: min to max for up to eight rounds,
 * the order-statistic 95% confidence interval of the median beyond (97.5% for rounds measured
 * further at a second look, {@link Trials#pairedUntilDecided}). The verdict judges the spread
 * of the quantity the goal names ({@link Goal#judge}): a spread straddling the goal is
 * {@link Verdict#INCONCLUSIVE}.
 *
 * <p>Immutable; any thread.
 *
 * @param name          a stable identifier, e.g. {@code host_to_device_copy_256KiB}
 * @param value         Strata's measurement (median over rounds), in {@code unit}
 * @param unit          e.g. {@code GB/s}, {@code ops/s}
 * @param baseline      what was measured as the baseline, e.g. {@code raw MemorySegment.copy}
 * @param baselineValue the baseline's median in the same unit; NaN when absent
 * @param ratio         median of the per-round ratios value / baseline; NaN when no baseline
 * @param goal          e.g. {@code >= 0.9} (on the ratio) or {@code >= 5000000 ops/s} (on the value)
 * @param met           {@code verdict == MET}, kept for readers of the older JSON shape
 * @param note          why a figure is missing or what qualifies it; empty when nothing to say
 * @param valueLow      low end of the value's spread over rounds, in {@code unit}; NaN when not measured
 * @param valueHigh     high end of the value's spread
 * @param ratioLow      low end of the per-round ratios' spread; NaN when no baseline
 * @param ratioHigh     high end of the per-round ratios' spread
 * @param rounds        measured rounds behind the figure (0: computed exactly, e.g. a simulation)
 * @param verdict       met, missed, inconclusive or not judged
 */
@JsonPropertyOrder({"name", "value", "unit", "baseline", "baseline_value", "ratio", "goal", "met", "note",
        "value_low", "value_high", "ratio_low", "ratio_high", "rounds", "verdict"})
public record Figure(
        String name,
        double value,
        String unit,
        String baseline,
        @JsonProperty("baseline_value") double baselineValue,
        double ratio,
        String goal,
        boolean met,
        String note,
        @JsonProperty("value_low") double valueLow,
        @JsonProperty("value_high") double valueHigh,
        @JsonProperty("ratio_low") double ratioLow,
        @JsonProperty("ratio_high") double ratioHigh,
        int rounds,
        Verdict verdict) {

    /**
     * Keeps {@code met} and {@code verdict} in step; a report written before verdicts existed
     * (no {@code verdict} field) reads as met or missed from its {@code met} field.
     *
     * @throws IllegalArgumentException if {@code met} disagrees with {@code verdict}
     */
    public Figure {
        if (verdict == null) {
            verdict = met ? Verdict.MET : Verdict.MISSED;
        }
        if (met != (verdict == Verdict.MET)) {
            throw new IllegalArgumentException("figure " + name + ": met = " + met + " but verdict " + verdict.label());
        }
        note = note == null ? "" : note;
    }

    /**
     * A figure measured in paired rounds ({@link Trials#paired}): value and baseline are the
     * sides' medians, the ratio the median of the pair ratios; judged on the spread of the ratio
     * or, when the goal names a unit, of the value. The spreads are at {@link Paired#coverage()}.
     */
    public static Figure paired(String name, String unit, String baseline, Paired p, String goal) {
        double[] vi = p.subjectInterval();
        double[] ri = p.ratioInterval();
        return judged(name, p.subjectSample().median(), vi, unit, baseline, p.baselineSample().median(), p.ratio(), ri,
                p.rounds(), goal);
    }

    /**
     * A figure measured over rounds ({@link Trials#sample}) against a baseline that is not
     * measured per round (a bound computed once, a constant, a benchmark run apart, or none:
     * NaN). The ratio and its spread are the value's divided by {@code baselineValue}.
     */
    public static Figure sampled(String name, String unit, String baseline, Sample s, double baselineValue, String goal) {
        double[] vi = s.interval();
        double median = s.median();
        boolean hasBaseline = baselineValue > 0;
        double ratio = hasBaseline ? median / baselineValue : Double.NaN;
        double[] ri = hasBaseline ? new double[] {vi[0] / baselineValue, vi[1] / baselineValue}
                : new double[] {Double.NaN, Double.NaN};
        return judged(name, median, vi, unit, baseline, baselineValue, ratio, ri, s.rounds(), goal);
    }

    /**
     * A figure computed exactly, with no measurement noise (a deterministic simulation or replay,
     * a count): its spread is the value itself and {@code rounds} is 0.
     */
    public static Figure exact(String name, double value, String unit, String baseline, double baselineValue, String goal) {
        double ratio = baselineValue > 0 ? value / baselineValue : Double.NaN;
        return judged(name, value, new double[] {value, value}, unit, baseline, baselineValue, ratio,
                new double[] {ratio, ratio}, 0, goal);
    }

    /**
     * A measured figure judged again under another name, against a baseline measured apart (a
     * percentile of another distribution, say): its value, value spread and rounds are kept, and
     * the ratio and its spread are the value's divided by {@code baselineValue}.
     */
    public static Figure against(Figure measured, String name, String baseline, double baselineValue, String goal) {
        boolean hasBaseline = baselineValue > 0;
        double ratio = hasBaseline ? measured.value() / baselineValue : Double.NaN;
        double[] ri = hasBaseline ? new double[] {measured.valueLow() / baselineValue, measured.valueHigh() / baselineValue}
                : new double[] {Double.NaN, Double.NaN};
        return judged(name, measured.value(), new double[] {measured.valueLow(), measured.valueHigh()}, measured.unit(), baseline,
                baselineValue, ratio, ri, measured.rounds(), goal);
    }

    private static Figure judged(String name, double value, double[] valueSpread, String unit, String baseline,
                                 double baselineValue, double ratio, double[] ratioSpread, int rounds, String goal) {
        Goal g = Goal.parse(goal);
        Verdict v = g.judge(value, valueSpread, ratio, ratioSpread);
        return new Figure(name, value, unit, baseline, baselineValue, ratio, goal, v == Verdict.MET, "",
                valueSpread[0], valueSpread[1], ratioSpread[0], ratioSpread[1], rounds, v);
    }

    /** This figure with a note attached. */
    public Figure withNote(String text) {
        return new Figure(name, value, unit, baseline, baselineValue, ratio, goal, met, text, valueLow, valueHigh,
                ratioLow, ratioHigh, rounds, verdict);
    }

    /** This figure's measurements without a verdict ({@link Verdict#NOT_JUDGED}), as a quick run reports them. */
    public Figure unjudged() {
        return new Figure(name, value, unit, baseline, baselineValue, ratio, goal, false, note, valueLow, valueHigh,
                ratioLow, ratioHigh, rounds, Verdict.NOT_JUDGED);
    }

    /** A figure that could not be measured, with the reason; not judged. */
    public static Figure missing(String name, String unit, String baseline, String goal, String reason) {
        Goal.parse(goal);
        return new Figure(name, Double.NaN, unit, baseline, Double.NaN, Double.NaN, goal, false, reason,
                Double.NaN, Double.NaN, Double.NaN, Double.NaN, 0, Verdict.NOT_JUDGED);
    }
}
