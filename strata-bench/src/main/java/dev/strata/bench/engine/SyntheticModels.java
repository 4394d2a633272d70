package dev.strata.bench.engine;

import dev.strata.engine.synth.ModelSynthesizer;
import dev.strata.engine.synth.SynthSpec;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.Locale;

/**
 * The synthetic models the engine benchmark runs on, written in the real Hugging Face format by
 * {@link ModelSynthesizer} under {@code <work dir>/models/} and reused by later runs: a model
 * directory is named after its spec's hash and holds a {@code strata-bench-spec.txt} marker with
 * the spec's full text, written last, so a directory whose synthesis was cut short is rewritten.
 *
 * <p>Threads: one call at a time per work directory.
 */
public final class SyntheticModels {
    static final String MARKER = "strata-bench-spec.txt";

    private SyntheticModels() {
    }

    /**
     * The directory of the model of {@code spec} under {@code workDir}, synthesised now unless a
     * complete one is already there.
     *
     * @param label a short name for the directory and the progress lines, e.g. {@code decode-moe}
     */
    public static Path prepare(SynthSpec spec, String label, Path workDir, PrintStream progress) throws IOException {
        String text = spec.toString();
        Path dir = workDir.resolve("models").resolve(label + "-" + hash(text));
        Path marker = dir.resolve(MARKER);
        if (Files.isRegularFile(marker) && Files.readString(marker, StandardCharsets.UTF_8).equals(text)) {
            return dir;
        }
        Files.createDirectories(dir);
        Files.deleteIfExists(marker);
        long start = System.nanoTime();
        long[] lastReport = {start};
        ModelSynthesizer.Summary summary = ModelSynthesizer.write(spec, dir, (done, total, bytesDone, bytesTotal) -> {
            long now = System.nanoTime();
            if (now - lastReport[0] > 5_000_000_000L || done == total) {
                lastReport[0] = now;
                progress.printf(Locale.ROOT, "      synthesising %s: %d of %d tensors, %.0f of %.0f MB%n", label, done, total,
                        bytesDone / 1e6, bytesTotal / 1e6);
            }
        });
        Files.writeString(marker, text, StandardCharsets.UTF_8);
        progress.printf(Locale.ROOT, "      synthesised %s (%.0f MB in %d tensors) in %.1f s%n", label,
                summary.tensorBytes() / 1e6, summary.tensors(), (System.nanoTime() - start) / 1e9);
        return dir;
    }

    /** 64 bits of FNV-1a over the spec's text, as hex. */
    private static String hash(String text) {
        long h = 0xcbf29ce484222325L;
        for (byte b : text.getBytes(StandardCharsets.UTF_8)) {
            h = (h ^ (b & 0xFF)) * 0x100000001b3L;
        }
        return HexFormat.of().toHexDigits(h);
    }
}
