package dev.strata.bench;

import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import java.util.List;

/**
 * The result of one scenario run, in the one shape docs/BENCHMARKS.md describes for {@code bench-results/<scenario>.json}.
 *
 * <p>Immutable; any thread.
 *
 * @param scenario the scenario's name, e.g. {@code tiers}
 * @param machine  a description of the machine it ran on
 * @param quick    whether this was a reduced {@code --quick} run (its figures are then not judged)
 * @param figures  the figures in the order measured
 * @param notes    remarks about the run as a whole (tools absent, fallbacks taken)
 * @param noise    the machine's noise as measured at the start and end of the run ({@link NoiseProbe})
 * @param series   plot data (miss curves, latency CDFs, throughput against block size); may be empty
 */
@JsonPropertyOrder({"scenario", "machine", "quick", "figures", "notes", "noise", "series"})
public record BenchReport(String scenario, String machine, boolean quick, List<Figure> figures, List<String> notes,
                          List<NoiseProbe.NoiseReading> noise, List<Series> series) {

    /** Absent lists (a report written before they existed) read as empty. */
    public BenchReport {
        figures = List.copyOf(figures);
        notes = notes == null ? List.of() : List.copyOf(notes);
        noise = noise == null ? List.of() : List.copyOf(noise);
        series = series == null ? List.of() : List.copyOf(series);
    }

    /** A report without noise readings or plots. */
    public BenchReport(String scenario, String machine, boolean quick, List<Figure> figures, List<String> notes) {
        this(scenario, machine, quick, figures, notes, List.of(), List.of());
    }

    /** True if every figure met its goal. */
    public boolean allMet() {
        return figures.stream().allMatch(Figure::met);
    }

    /** How many figures have verdict {@code v}. */
    public long count(Verdict v) {
        return figures.stream().filter(f -> f.verdict() == v).count();
    }

    /**
     * One line summing up the verdicts, e.g. {@code 33 figures: 20 met, 3 missed, 10 inconclusive};
     * for a quick run, that its figures were not judged.
     */
    public String summary() {
        if (quick) {
            return figures.size() + " figures measured, not judged (quick): a quick run checks that the scenario works";
        }
        String s = figures.size() + " figures: " + count(Verdict.MET) + " met, " + count(Verdict.MISSED) + " missed, "
                + count(Verdict.INCONCLUSIVE) + " inconclusive";
        long notJudged = count(Verdict.NOT_JUDGED);
        return notJudged == 0 ? s : s + ", " + notJudged + " not judged (not measured)";
    }
}
