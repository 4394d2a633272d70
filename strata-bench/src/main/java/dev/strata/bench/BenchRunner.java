package dev.strata.bench;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Supplier;

/**
 * Runs a named scenario and writes its report: the table to {@code out}, JSON and HTML to the
 * results directory. Confined to the calling thread.
 */
public final class BenchRunner {

    private static final Map<String, Supplier<Scenario>> SCENARIOS = new TreeMap<>(Map.of(
            "tiers", TiersScenario::new,
            "kv", KvScenario::new,
            "experts", ExpertsScenario::new,
            "engine", EngineScenario::new,
            "peer", PeerScenario::new,
            "cluster", ClusterScenario::new,
            "seeds", SeedsScenario::new));

    private BenchRunner() {
    }

    /** Names of the scenarios {@link #run} accepts. */
    public static List<String> scenarios() {
        return List.copyOf(SCENARIOS.keySet());
    }

    /** One line per scenario: its name and what it measures. */
    public static String describeScenarios() {
        StringBuilder b = new StringBuilder();
        SCENARIOS.forEach((n, s) -> b.append(String.format("  %-10s %s%n", n, s.get().description())));
        return b.toString();
    }

    /**
     * Runs scenario {@code name}: probes the machine's noise, runs the scenario, probes again,
     * prints the table and writes the JSON and HTML reports. A quick run's figures carry no
     * verdict ({@link Figure#unjudged}).
     *
     * @throws IllegalArgumentException naming the scenario if it is unknown
     */
    public static BenchReport run(String name, Scenario.Options options, Path resultsDir, PrintStream out) throws Exception {
        Supplier<Scenario> factory = SCENARIOS.get(name);
        if (factory == null) {
            throw new IllegalArgumentException("unknown benchmark scenario '" + name + "' (known: " + scenarios()
                    + "; all runs every one)");
        }
        return run(name, factory.get(), options, resultsDir, out);
    }

    /** Runs {@code scenario} under {@code name} as {@link #run(String, Scenario.Options, Path, PrintStream)} does. */
    static BenchReport run(String name, Scenario scenario, Scenario.Options options, Path resultsDir, PrintStream out)
            throws Exception {
        List<NoiseProbe.NoiseReading> noise = new ArrayList<>(NoiseProbe.probe("start", options.quick()));
        List<String> notes = new ArrayList<>();
        List<Figure> figures = scenario.run(options, notes);
        noise.addAll(NoiseProbe.probe("end", options.quick()));
        if (options.quick()) {
            figures = figures.stream().map(Figure::unjudged).toList();
        }
        BenchReport report = new BenchReport(name, MachineInfo.describe(), options.quick(), figures, notes, noise,
                scenario.series());
        ReportWriter.printTable(report, out);
        Path json = ReportWriter.write(report, resultsDir);
        out.println("\n" + report.summary());
        out.println("wrote " + json + " and " + json.resolveSibling(name + ".html"));
        return report;
    }

    /**
     * The outcome of one scenario of {@link #runAll}: its report, or why it failed.
     *
     * @param scenario the scenario's name
     * @param report   its report; null when it failed
     * @param failure  the failure's message; null when it ran
     */
    public record Outcome(String scenario, BenchReport report, String failure) {
    }

    /**
     * {@code strata bench all}: runs every scenario in sequence, each as {@link #run} does, and
     * writes {@code index.html} listing each scenario's verdict counts. A scenario that fails is
     * listed with its failure and the next one runs.
     */
    public static List<Outcome> runAll(Scenario.Options options, Path resultsDir, PrintStream out) throws java.io.IOException {
        return runAll(SCENARIOS, options, resultsDir, out);
    }

    /** As {@link #runAll(Scenario.Options, Path, PrintStream)}, over the given scenarios in their map's order. */
    static List<Outcome> runAll(Map<String, Supplier<Scenario>> scenarios, Scenario.Options options, Path resultsDir,
                                PrintStream out) throws java.io.IOException {
        List<Outcome> outcomes = new ArrayList<>();
        for (var e : scenarios.entrySet()) {
            out.println("\n=== strata bench " + e.getKey() + (options.quick() ? " --quick" : "") + " ===");
            try {
                outcomes.add(new Outcome(e.getKey(), run(e.getKey(), e.getValue().get(), options, resultsDir, out), null));
            } catch (Exception x) {
                String why = x.getClass().getSimpleName() + ": " + x.getMessage();
                out.println("scenario " + e.getKey() + " failed: " + why);
                outcomes.add(new Outcome(e.getKey(), null, why));
                if (x instanceof InterruptedException) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
        }
        Path index = ReportWriter.writeIndex(outcomes, resultsDir);
        out.println("\nwrote " + index);
        return outcomes;
    }
}
