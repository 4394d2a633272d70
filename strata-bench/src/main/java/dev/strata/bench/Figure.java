package dev.strata.bench;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;

/**
 * One measured figure of a benchmark scenario, in the shape every scenario shares: the value, the
 * baseline measured in the same run, their ratio, and the goal with whether it was met.
 *
 * @param name          a stable identifier, e.g. {@code host_to_device_copy_256KiB}
 * @param value         Strata's measurement, in {@code unit}
 * @param unit          e.g. {@code GB/s}, {@code ops/s}
 * @param baseline      what was measured as the baseline, e.g. {@code raw MemorySegment.copy}
 * @param baselineValue the baseline's measurement in the same unit; NaN when absent
 * @param ratio         {@code value / baselineValue}; NaN when no baseline
 * @param goal          e.g. {@code >= 0.9} (on the ratio) or {@code >= 5000000 ops/s} (on the value)
 * @param met           whether the goal was met; false when it could not be judged
 * @param note          why a figure is missing or what qualifies it; empty when nothing to say
 */
@JsonPropertyOrder({"name", "value", "unit", "baseline", "baseline_value", "ratio", "goal", "met", "note"})
public record Figure(
        String name,
        double value,
        String unit,
        String baseline,
        @JsonProperty("baseline_value") double baselineValue,
        double ratio,
        String goal,
        boolean met,
        String note) {

    /** A figure judged against a baseline; the goal applies to the ratio or, with a unit, to the value. */
    public static Figure of(String name, double value, String unit, String baseline, double baselineValue, String goal) {
        double ratio = baselineValue > 0 ? value / baselineValue : Double.NaN;
        return new Figure(name, value, unit, baseline, baselineValue, ratio, goal, Goal.parse(goal).met(value, ratio), "");
    }

    /** This figure with a note attached. */
    public Figure withNote(String text) {
        return new Figure(name, value, unit, baseline, baselineValue, ratio, goal, met, text);
    }

    /** A figure that could not be measured, with the reason. */
    public static Figure missing(String name, String unit, String baseline, String goal, String reason) {
        return new Figure(name, Double.NaN, unit, baseline, Double.NaN, Double.NaN, goal, false, reason);
    }
}
