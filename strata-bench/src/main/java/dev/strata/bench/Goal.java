package dev.strata.bench;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A figure's goal: a comparison with a threshold, on the ratio ({@code >= 0.9}) or, when the
 * goal names a unit, on the value itself ({@code >= 5000000 ops/s}).
 *
 * @param greater   true for {@code >=}, false for {@code <=}
 * @param threshold the bound
 * @param onValue   true if the goal applies to the value, false for the ratio
 */
public record Goal(boolean greater, double threshold, boolean onValue) {
    private static final Pattern GOAL = Pattern.compile("\\s*(>=|<=)\\s*([0-9.eE+-]+)\\s*(\\S.*)?");

    /** Parses {@code >= 0.9} or {@code >= 5e6 ops/s}. */
    public static Goal parse(String text) {
        Matcher m = GOAL.matcher(text);
        if (!m.matches()) {
            throw new IllegalArgumentException("not a goal: '" + text + "' (expected e.g. '>= 0.9' or '>= 5e6 ops/s')");
        }
        return new Goal(m.group(1).equals(">="), Double.parseDouble(m.group(2)), m.group(3) != null);
    }

    /** Whether {@code value} (or {@code ratio}) meets the goal; NaN never does. */
    public boolean met(double value, double ratio) {
        return meets(onValue ? value : ratio);
    }

    /**
     * Relative slack at the threshold: a quantity equal to it but for rounding meets it. Two
     * deterministic simulations that cost the same seconds, summed in another order, give a ratio
     * a few units in the last place away from 1 on either side; a tie must not turn on that.
     */
    static final double ROUNDING = 1e-9;

    /** Whether {@code x}, a quantity this goal judges, meets it (within {@link #ROUNDING}); NaN never does. */
    public boolean meets(double x) {
        if (Double.isNaN(x)) {
            return false;
        }
        double slack = Math.abs(threshold) * ROUNDING;
        return greater ? x >= threshold - slack : x <= threshold + slack;
    }

    /**
     * The verdict on a quantity measured as {@code median} with spread {@code [low, high]}: met
     * when both ends meet the goal, missed when neither does, inconclusive when the spread
     * straddles the threshold (the direction of the goal decides which end is which), not judged
     * when the median is NaN. A NaN end counts as the median (a single measurement).
     */
    public Verdict judge(double low, double median, double high) {
        if (Double.isNaN(median)) {
            return Verdict.NOT_JUDGED;
        }
        boolean lowMeets = meets(Double.isNaN(low) ? median : low);
        boolean highMeets = meets(Double.isNaN(high) ? median : high);
        if (lowMeets && highMeets) {
            return Verdict.MET;
        }
        if (!lowMeets && !highMeets) {
            return Verdict.MISSED;
        }
        return Verdict.INCONCLUSIVE;
    }

    /**
     * The verdict on a figure: on its value and the value's spread {@code [low, high]} when this
     * goal names a unit, else on its ratio and the ratio's spread.
     */
    public Verdict judge(double value, double[] valueSpread, double ratio, double[] ratioSpread) {
        return onValue ? judge(valueSpread[0], value, valueSpread[1]) : judge(ratioSpread[0], ratio, ratioSpread[1]);
    }
}
