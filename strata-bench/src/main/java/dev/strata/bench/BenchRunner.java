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
            "cluster", ClusterScenario::new));

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
     * Runs scenario {@code name}.
     *
     * @throws IllegalArgumentException naming the scenario if it is unknown
     */
    public static BenchReport run(String name, Scenario.Options options, Path resultsDir, PrintStream out) throws Exception {
        Supplier<Scenario> factory = SCENARIOS.get(name);
        if (factory == null) {
            throw new IllegalArgumentException("unknown benchmark scenario '" + name + "' (known: " + scenarios() + ")");
        }
        List<String> notes = new ArrayList<>();
        List<Figure> figures = factory.get().run(options, notes);
        BenchReport report = new BenchReport(name, MachineInfo.describe(), options.quick(), figures, notes);
        ReportWriter.printTable(report, out);
        Path json = ReportWriter.write(report, resultsDir);
        out.println("\nwrote " + json + " and " + json.resolveSibling(name + ".html"));
        return report;
    }
}
