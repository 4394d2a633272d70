package dev.strata.bench;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

/**
 * Runs {@link StoreOpsJmh} under JMH (forked JVMs) and turns its scores into figures: the store's
 * operations per second against the map baseline, with the goal of 5 M operations/s on one thread.
 * Confined to the calling thread.
 */
final class StoreOpsBenchmark {
    private StoreOpsBenchmark() {
    }

    /**
     * Runs the benchmarks.
     *
     * @param log where JMH's own progress output goes
     */
    static List<Figure> figures(boolean quick, java.nio.file.Path log) throws RunnerException {
        Options opts = new OptionsBuilder()
                .include(StoreOpsJmh.class.getName().replace("$", "\\$") + "\\.")
                .forks(1)
                .threads(1)
                .warmupIterations(quick ? 2 : 3)
                .warmupTime(TimeValue.milliseconds(quick ? 400 : 1000))
                .measurementIterations(quick ? 3 : 5)
                .measurementTime(TimeValue.milliseconds(quick ? 400 : 1000))
                .jvmArgsAppend("--enable-native-access=ALL-UNNAMED", "--add-modules", "jdk.incubator.vector",
                        "-XX:+UseParallelGC", "-Xmx1g")
                .shouldFailOnError(true)
                .output(log.toString())
                .build();
        Collection<RunResult> results = new Runner(opts).run();
        Map<String, Double> score = new HashMap<>();
        for (RunResult r : results) {
            String label = r.getParams().getBenchmark();
            score.put(label.substring(label.lastIndexOf('.') + 1), r.getPrimaryResult().getScore());
        }
        List<Figure> figures = new ArrayList<>();
        figures.add(Figure.of("store_put_evict_64B_ops", score.getOrDefault("storePutEvict", Double.NaN), "ops/s",
                "ConcurrentHashMap remove+put", score.getOrDefault("mapPutEvict", Double.NaN), ">= 5000000 ops/s"));
        figures.add(Figure.of("store_get_64B_ops", score.getOrDefault("storeGet", Double.NaN), "ops/s",
                "ConcurrentHashMap get", score.getOrDefault("mapGet", Double.NaN), ">= 5000000 ops/s"));
        figures.add(Figure.of("store_mixed_put_evict_get_64B_ops", score.getOrDefault("storeMixed", Double.NaN), "ops/s",
                "ConcurrentHashMap, same mix", score.getOrDefault("mapMixed", Double.NaN), ">= 5000000 ops/s"));
        return figures;
    }
}
