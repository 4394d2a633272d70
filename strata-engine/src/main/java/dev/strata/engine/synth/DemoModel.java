package dev.strata.engine.synth;

import dev.strata.engine.model.DType;
import dev.strata.engine.model.ModelFamily;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Comparator;
import java.util.Locale;
import java.util.stream.Stream;

/**
 * The model {@code strata demo} and {@code strata serve} (without {@code --model}) run: one fixed
 * {@link SynthSpec}, synthesised on first use into a cache directory and reused afterwards.
 *
 * <p>The model is a Qwen3-MoE of 4 layers, width 384, 32 experts per layer with 4 routed per token,
 * and a router with {@value #TOPIC_CLUSTERS} topic clusters, so that tokens of one topic route
 * mostly to a consistent subset of about 5 experts per layer: routing is skewed and local, so an
 * expert cap of half the experts (the demo's 16 slots per layer) hits about two lookups in three
 * even across prefills that mix topics. About 58 MiB of BF16 weights; it is written in about two
 * seconds and decodes at tens of tokens per second on one core. Its weights are synthetic: its
 * answers are a bigram echo of the built-in {@link TextSample} (see {@link ModelSynthesizer}),
 * readable text that shows the machinery at work, not an answer to the prompt.
 *
 * <p>Design note (first use): the model is written into a fresh temporary directory beside the
 * target ({@code .demo-v2.tmp-<pid>-<nanos>}), a marker file is written last, and the directory is
 * then renamed to {@code demo-v<version>} in one atomic step. A directory under the final name is
 * therefore always complete; a writer that dies leaves only a temporary directory, which is never
 * read (and is removed by a later writer once its owner is gone). When two processes synthesise at
 * once, the first rename wins and the second process discards its copy and uses the winner's: the
 * spec is fixed and seeded, so both copies are byte-identical anyway. Bumping {@link #VERSION}
 * whenever {@link #SPEC} changes keeps an old cache from being served for a new spec.
 *
 * <p>Threads: any; the static methods keep no state. Several processes may call {@link #ensure}
 * on the same cache root at once.
 */
public final class DemoModel {
    /** Version of {@link #SPEC}; part of the directory name. */
    public static final int VERSION = 2;
    /** Topic clusters of the router. */
    public static final int TOPIC_CLUSTERS = 6;
    /** The demo model. */
    public static final SynthSpec SPEC = new SynthSpec(ModelFamily.QWEN3_MOE, 4, 32, 4, 384, 768, 192, 6, 2, 64, 1024,
            DType.BF16, 20_261_122L, 1, TOPIC_CLUSTERS, false);
    /** The environment variable that overrides the cache root. */
    public static final String ENV = "STRATA_MODELS";
    /** The file written last into a complete model directory. */
    static final String MARKER = "strata-demo-model.txt";

    private DemoModel() {
    }

    /** The directory name of the current spec version: {@code demo-v<version>}. */
    public static String directoryName() {
        return "demo-v" + VERSION;
    }

    /**
     * The cache root: {@code $STRATA_MODELS}, else {@code $XDG_CACHE_HOME/strata/models}, else
     * {@code ~/.cache/strata/models}.
     */
    public static Path defaultCacheRoot() {
        String env = System.getenv(ENV);
        if (env != null && !env.isBlank()) {
            return Path.of(env);
        }
        String xdg = System.getenv("XDG_CACHE_HOME");
        Path base = xdg != null && !xdg.isBlank() ? Path.of(xdg) : Path.of(System.getProperty("user.home"), ".cache");
        return base.resolve("strata").resolve("models");
    }

    /** Whether {@code dir} is a complete demo model directory (its marker names this spec). */
    public static boolean isComplete(Path dir) {
        Path marker = dir.resolve(MARKER);
        try {
            return Files.isRegularFile(marker) && Files.readString(marker, StandardCharsets.UTF_8).equals(markerText());
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * The demo model's directory under {@code cacheRoot}, synthesised first if it is not there yet,
     * with progress lines on {@code progress}.
     *
     * @throws UncheckedIOException if the cache root cannot be created or the model cannot be written
     * @throws IllegalStateException if a directory under the model's name exists but is not a complete model
     */
    public static Path ensure(Path cacheRoot, PrintStream progress) {
        Path target = cacheRoot.resolve(directoryName());
        if (isComplete(target)) {
            return target;
        }
        if (Files.exists(target)) {
            throw new IllegalStateException("the demo model directory " + target + " exists but is not a complete model of spec "
                    + "version " + VERSION + " (no valid " + MARKER + "): remove it and run again");
        }
        try {
            Files.createDirectories(cacheRoot);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create the model cache " + cacheRoot + ": " + e.getMessage(), e);
        }
        removeAbandoned(cacheRoot);
        Path temp = cacheRoot.resolve("." + directoryName() + ".tmp-" + ProcessHandle.current().pid() + "-" + System.nanoTime());
        long start = System.nanoTime();
        progress.printf(Locale.ROOT, "strata: first use: writing the demo model (%s, %d layers, %d experts top-%d) to %s%n",
                SPEC.family().cliName(), SPEC.layers(), SPEC.experts(), SPEC.topK(), target);
        try {
            int[] lastQuarter = {-1};
            ModelSynthesizer.Summary s = ModelSynthesizer.write(SPEC, temp, (done, total, bytes, totalBytes) -> {
                int quarter = (int) (bytes * 4 / Math.max(1, totalBytes));
                if (quarter != lastQuarter[0]) {
                    lastQuarter[0] = quarter;
                    progress.printf(Locale.ROOT, "strata:   weights %3d%% (%d of %d tensors)%n", quarter * 25, done, total);
                }
            });
            Files.writeString(temp.resolve(MARKER), markerText(), StandardCharsets.UTF_8);
            try {
                Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE);
            } catch (AtomicMoveNotSupportedException e) {
                throw new UncheckedIOException("the model cache " + cacheRoot + " does not support atomic renames", e);
            } catch (IOException lost) {
                if (!isComplete(target)) {
                    throw lost;
                }
                deleteTree(temp); // another process finished first; its copy is identical
            }
            if (!isComplete(target)) {
                throw new IllegalStateException("the demo model directory " + target + " is incomplete after synthesis");
            }
            progress.printf(Locale.ROOT, "strata: demo model ready in %.1f s (%.1f MiB of weights)%n",
                    (System.nanoTime() - start) / 1e9, s.tensorBytes() / (double) (1 << 20));
            return target;
        } catch (IOException e) {
            deleteTree(temp);
            throw new UncheckedIOException("cannot write the demo model into " + temp + ": " + e.getMessage(), e);
        } catch (RuntimeException | Error e) {
            deleteTree(temp);
            throw e;
        }
    }

    private static String markerText() {
        return "strata demo model, spec version " + VERSION + "\n" + SPEC + "\n";
    }

    /** Removes temporary directories left by writers that are no longer alive. */
    private static void removeAbandoned(Path cacheRoot) {
        String prefix = "." + directoryName() + ".tmp-";
        try (Stream<Path> entries = Files.list(cacheRoot)) {
            for (Path p : entries.toList()) {
                String name = p.getFileName().toString();
                if (!name.startsWith(prefix)) {
                    continue;
                }
                String rest = name.substring(prefix.length());
                int dash = rest.indexOf('-');
                try {
                    long pid = Long.parseLong(dash < 0 ? rest : rest.substring(0, dash));
                    if (ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
                        continue; // still being written
                    }
                } catch (NumberFormatException e) {
                    continue; // not ours
                }
                deleteTree(p);
            }
        } catch (IOException e) {
            // cleaning up is best effort; the new write does not depend on it
        }
    }

    private static void deleteTree(Path dir) {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            // a leftover temporary directory is never read and is removed by a later writer
        }
    }
}
