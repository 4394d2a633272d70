package dev.strata.cli;

import dev.strata.bench.BenchReport;
import dev.strata.bench.BenchRunner;
import dev.strata.bench.Scenario;
import dev.strata.bench.Verdict;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code strata bench <scenario>}: runs a benchmark scenario and writes its report;
 * {@code strata bench all} runs every scenario in sequence and writes an index of their verdicts;
 * {@code strata bench compare} sets runs' reports side by side ({@link BenchCompareCommand}).
 */
@Command(name = "bench", mixinStandardHelpOptions = true, subcommands = BenchCompareCommand.class,
        description = {"Runs a benchmark scenario: prints a table and writes bench-results/<scenario>.json and .html.",
                "Every ratio is the median of paired rounds against its baseline, with its spread; a figure whose spread",
                "straddles its goal is inconclusive. 'all' runs every scenario and writes bench-results/index.html.",
                "Scenarios: tiers (tier transfers, KV gather/scatter, disk against fio, object store ops),",
                "kv (block manager ops, cross-process pool loads, shared-memory RPC, trace replay against Belady),",
                "experts (expert pager steps, reuse distances, MV-WSA split against the oracle),",
                "engine (decode against the memory roofline, prefill against the matmul peak, cross-instance prefix TTFT,",
                "disk-resident experts against static streaming),",
                "peer (revocation-to-callback and drain latency, KV and expert fetches served from peers under churn),",
                "cluster (cluster block store throughput against Redis, failover recovery),",
                "seeds (published results of vLLM offload, Beluga, WiSP and Harvest beside Strata's measured or modelled figure).",
                "'bench compare RUN.json RUN.json...' sets runs of one scenario side by side: which figures kept their verdict."})
final class BenchCommand implements Callable<Integer> {

    @Parameters(index = "0", arity = "0..1", paramLabel = "SCENARIO",
            description = "the scenario to run, or all: ${COMPLETION-CANDIDATES}", completionCandidates = ScenarioNames.class)
    String scenario; // optional only so that 'bench compare' parses; call() requires it

    @Option(names = "--quick", description = "a reduced run that checks every figure can be measured; its figures are not judged")
    boolean quick;

    @Option(names = "--out", paramLabel = "DIR", description = "results directory (default: ${DEFAULT-VALUE})")
    Path out = Path.of("bench-results");

    @Option(names = "--work-dir", paramLabel = "DIR",
            description = "directory for the scenario's disk files, on the file system to measure (default: ${DEFAULT-VALUE})")
    Path workDir = Path.of("/var/tmp/strata-bench");

    @Option(names = "--no-install", description = "do not install missing baseline tools (fio)")
    boolean noInstall;

    @Option(names = "--trace", paramLabel = "FILE",
            description = "the KV request trace (Mooncake JSON lines) the kv scenario replays (default: traces/mooncake/synthetic_trace.jsonl)")
    Path trace;

    @Option(names = "--strict", description = "exit with status 1 when a figure misses its goal (or, with all, a scenario fails)")
    boolean strict;

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    /** The scenario name that runs them all. */
    static final String ALL = "all";

    static final class ScenarioNames extends java.util.ArrayList<String> {
        private static final long serialVersionUID = 1L;

        ScenarioNames() {
            super(BenchRunner.scenarios());
            add(ALL);
        }
    }

    @Override
    public Integer call() throws Exception {
        if (scenario == null) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(),
                    "Missing required parameter: 'SCENARIO' (one of " + String.join(", ", new ScenarioNames()) + ")");
        }
        Scenario.Options options = new Scenario.Options(quick, workDir, !noInstall, trace);
        if (ALL.equals(scenario)) {
            List<BenchRunner.Outcome> outcomes = BenchRunner.runAll(options, out, System.out);
            System.out.println();
            long failed = 0;
            long missed = 0;
            for (BenchRunner.Outcome o : outcomes) {
                if (o.report() == null) {
                    failed++;
                    System.out.println(o.scenario() + ": failed: " + o.failure());
                } else {
                    missed += o.report().count(Verdict.MISSED);
                    System.out.println(o.scenario() + ": " + o.report().summary());
                }
            }
            return strict && (failed > 0 || missed > 0) ? 1 : 0;
        }
        BenchReport report = BenchRunner.run(scenario, options, out, System.out);
        return strict && report.count(Verdict.MISSED) > 0 ? 1 : 0;
    }
}
