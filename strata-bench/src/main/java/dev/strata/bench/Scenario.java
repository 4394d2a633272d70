package dev.strata.bench;

import java.nio.file.Path;
import java.util.List;

/**
 * A benchmark scenario run by {@code strata bench <name>}: measures figures, each as a ratio
 * against a baseline measured in the same run.
 *
 * <p>Implementations run on the calling thread and may start their own workers.
 */
public interface Scenario {

    /**
     * Settings every scenario accepts.
     *
     * @param quick        a reduced run
     * @param workDir      directory for the scenario's disk files
     * @param allowInstall whether missing baseline tools may be installed
     * @param trace        the KV request trace (Mooncake format) a scenario that replays one reads
     *                     ({@code --trace FILE}); null: the trace shipped in the repository
     */
    record Options(boolean quick, Path workDir, boolean allowInstall, Path trace) {
        /** Options that replay the shipped trace. */
        public Options(boolean quick, Path workDir, boolean allowInstall) {
            this(quick, workDir, allowInstall, null);
        }
    }

    /** The scenario's name, used for {@code bench-results/<name>.json}. */
    String name();

    /** One line saying what the scenario measures. */
    String description();

    /**
     * Runs the scenario.
     *
     * @param notes receives remarks about the run as a whole (tools absent, fallbacks taken)
     */
    List<Figure> run(Options options, List<String> notes) throws Exception;

    /**
     * The plot data the last {@link #run} gathered (miss curves, latency CDFs, throughput against
     * block size); empty for a scenario that draws none. A scenario instance serves one run.
     */
    default List<Series> series() {
        return List.of();
    }
}
