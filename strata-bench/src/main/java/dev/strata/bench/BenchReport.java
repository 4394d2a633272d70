package dev.strata.bench;

import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import java.util.List;

/**
 * The result of one scenario run, in the one shape docs/BENCHMARKS.md describes for {@code bench-results/<scenario>.json}.
 *
 * @param scenario the scenario's name, e.g. {@code tiers}
 * @param machine  a description of the machine it ran on
 * @param quick    whether this was a reduced {@code --quick} run
 * @param figures  the figures in the order measured
 * @param notes    remarks about the run as a whole (tools absent, fallbacks taken)
 */
@JsonPropertyOrder({"scenario", "machine", "quick", "figures", "notes"})
public record BenchReport(String scenario, String machine, boolean quick, List<Figure> figures, List<String> notes) {

    /** True if every figure met its goal. */
    public boolean allMet() {
        return figures.stream().allMatch(Figure::met);
    }
}
