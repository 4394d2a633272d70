package dev.strata.cli;

import dev.strata.bench.BenchReport;
import dev.strata.bench.BenchRunner;
import dev.strata.bench.Scenario;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code strata bench <scenario>}: runs a benchmark scenario and writes its report. */
@Command(name = "bench", mixinStandardHelpOptions = true,
        description = {"Runs a benchmark scenario: prints a table and writes bench-results/<scenario>.json and .html.",
                "Scenarios: tiers (tier transfers, KV gather/scatter, disk against fio, object store ops),",
                "kv (block manager ops, cross-process pool loads, shared-memory RPC, trace replay against Belady),",
                "experts (expert pager steps, reuse distances, MV-WSA split against the oracle),",
                "engine (decode against the memory roofline, prefill against the matmul peak, cross-instance prefix TTFT,",
                "disk-resident experts against static streaming),",
                "peer (revocation-to-callback and drain latency, KV and expert fetches served from peers under churn)."})
final class BenchCommand implements Callable<Integer> {

    @Parameters(index = "0", paramLabel = "SCENARIO", description = "the scenario to run: ${COMPLETION-CANDIDATES}",
            completionCandidates = ScenarioNames.class)
    String scenario;

    @Option(names = "--quick", description = "a reduced run that finishes in well under a minute")
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

    @Option(names = "--strict", description = "exit with status 1 when a figure misses its goal")
    boolean strict;

    static final class ScenarioNames extends java.util.ArrayList<String> {
        private static final long serialVersionUID = 1L;

        ScenarioNames() {
            super(BenchRunner.scenarios());
        }
    }

    @Override
    public Integer call() throws Exception {
        BenchReport report = BenchRunner.run(scenario, new Scenario.Options(quick, workDir, !noInstall, trace), out, System.out);
        long missed = report.figures().stream().filter(f -> !f.met()).count();
        System.out.println(missed == 0 ? "every figure met its goal"
                : missed + " of " + report.figures().size() + " figures missed their goal");
        return strict && missed > 0 ? 1 : 0;
    }
}
