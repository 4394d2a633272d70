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
                // the fork inherits this JVM's options first; its own heap follows them and wins: fixed and
                // pre-touched, so that no iteration pays the first touch of heap pages committed mid-run
                .jvmArgsAppend("--enable-native-access=ALL-UNNAMED", "--add-modules", "jdk.incubator.vector",
                        "-XX:+UseParallelGC", "-Xms1g", "-Xmx1g", "-Xmn512m", "-XX:+AlwaysPreTouch")
                .shouldFailOnError(true)
                .output(log.toString())
                .build();
        Collection<RunResult> results = new Runner(opts).run();
        Map<String, Sample> score = new HashMap<>(); // benchmark method -> its measured iterations' ops/s
        for (RunResult r : results) {
            String label = r.getParams().getBenchmark();
            double[] iterations = r.getBenchmarkResults().stream()
                    .flatMap(b -> b.getIterationResults().stream())
                    .mapToDouble(i -> i.getPrimaryResult().getScore()).toArray();
            if (iterations.length > 0) {
                score.put(label.substring(label.lastIndexOf('.') + 1), new Sample(iterations));
            }
        }
        List<Figure> figures = new ArrayList<>();
        figures.add(figure("store_put_evict_64B_ops", score.get("storePutEvict"), "ConcurrentHashMap remove+put",
                score.get("mapPutEvict")));
        figures.add(figure("store_get_64B_ops", score.get("storeGet"), "ConcurrentHashMap get", score.get("mapGet")));
        figures.add(figure("store_mixed_put_evict_get_64B_ops", score.get("storeMixed"), "ConcurrentHashMap, same mix",
                score.get("mapMixed")));
        return figures;
    }

    /**
     * A figure judged on the store's ops/s over JMH's measured iterations (goal on the value); the
     * map baseline runs as a separate JMH benchmark, so its median is context, not a pair.
     */
    private static Figure figure(String name, Sample store, String baseline, Sample map) {
        String goal = ">= 5000000 ops/s";
        if (store == null) {
            return Figure.missing(name, "ops/s", baseline, goal, "JMH returned no result for this benchmark");
        }
        return Figure.sampled(name, "ops/s", baseline, store, map == null ? Double.NaN : map.median(), goal)
                .withNote(store.rounds() + " JMH iterations; the baseline is a separate JMH benchmark (ratio for context)");
    }
}
