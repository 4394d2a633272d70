package dev.strata.bench;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.JsonSerializer;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.deser.std.StdDeserializer;
import com.fasterxml.jackson.databind.module.SimpleModule;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/**
 * Writes a {@link BenchReport} three ways: a table on the console, {@code <scenario>.json} in the
 * shared shape (NaN written as {@code null}, and read back as NaN), and {@code <scenario>.html} ({@link HtmlReport}: the
 * ratio chart with goals and spreads, the plots, the table); and the index of a {@code bench all} run.
 *
 * <p>Stateless apart from its Jackson mapper, which is thread-safe; any thread.
 */
public final class ReportWriter {

    private static final ObjectMapper JSON = new ObjectMapper()
            .enable(SerializationFeature.INDENT_OUTPUT)
            .registerModule(new SimpleModule().addSerializer(Double.class, new FiniteOrNull())
                    .addSerializer(double.class, new FiniteOrNull())
                    .addDeserializer(Double.class, new NullAsNaN()).addDeserializer(double.class, new NullAsNaN()));

    /** Reads a number, and {@code null} (what {@link FiniteOrNull} writes for NaN) as NaN rather than 0. */
    private static final class NullAsNaN extends StdDeserializer<Double> {
        private static final long serialVersionUID = 1L;

        NullAsNaN() {
            super(Double.class);
        }

        @Override
        public Double deserialize(JsonParser p, DeserializationContext ctxt) throws IOException {
            return p.getValueAsDouble(Double.NaN);
        }

        @Override
        public Double getNullValue(DeserializationContext ctxt) {
            return Double.NaN;
        }
    }

    private static final class FiniteOrNull extends JsonSerializer<Double> {
        @Override
        public void serialize(Double v, JsonGenerator gen, SerializerProvider p) throws IOException {
            if (v == null || v.isNaN() || v.isInfinite()) {
                gen.writeNull();
            } else {
                gen.writeNumber(v);
            }
        }
    }

    private ReportWriter() {
    }

    /** Prints the noise readings, the figures as an aligned table with their spreads and verdicts, and the notes. */
    public static void printTable(BenchReport r, PrintStream out) {
        out.printf(Locale.ROOT, "%nscenario %s%s on %s%n", r.scenario(), r.quick() ? " (quick: not judged)" : "", r.machine());
        for (NoiseProbe.NoiseReading n : r.noise()) {
            out.println("noise: " + n.describe());
        }
        out.printf(Locale.ROOT, "%-44s %12s %-25s %-10s %12s %7s %-17s %-18s %s%n", "figure", "value", "value spread", "unit",
                "baseline", "ratio", "ratio spread", "goal", "verdict");
        for (Figure f : r.figures()) {
            out.printf(Locale.ROOT, "%-44s %12s %-25s %-10s %12s %7s %-17s %-18s %s%s%n", f.name(), num(f.value()),
                    spread(f.valueLow(), f.valueHigh()), f.unit(), num(f.baselineValue()), num(f.ratio()),
                    spread(f.ratioLow(), f.ratioHigh()), f.goal(), verdictText(r, f), f.note().isEmpty() ? "" : "  (" + f.note() + ")");
        }
        for (String n : r.notes()) {
            out.println("note: " + n);
        }
    }

    /** The verdict as the reports print it: {@code not judged (quick)} in a quick run. */
    static String verdictText(BenchReport r, Figure f) {
        return r.quick() && f.verdict() == Verdict.NOT_JUDGED ? "not judged (quick)" : f.verdict().label();
    }

    private static String spread(double low, double high) {
        if (Double.isNaN(low) || Double.isNaN(high)) {
            return "-";
        }
        return "[" + num(low) + ", " + num(high) + "]";
    }

    /** A number as the reports print it: three decimals, three significant digits from a million up, {@code -} for NaN. */
    static String num(double v) {
        if (Double.isNaN(v)) {
            return "-";
        }
        if (Math.abs(v) >= 1e6) {
            return String.format(Locale.ROOT, "%.3g", v);
        }
        return String.format(Locale.ROOT, "%.3f", v);
    }

    /** Writes {@code <dir>/<scenario>.json} and {@code .html}; returns the JSON path. */
    public static Path write(BenchReport r, Path dir) {
        try {
            Files.createDirectories(dir);
            Path json = dir.resolve(r.scenario() + ".json");
            JSON.writeValue(json.toFile(), r);
            Files.writeString(dir.resolve(r.scenario() + ".html"), html(r));
            return json;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write benchmark results to " + dir + ": " + e.getMessage(), e);
        }
    }

    /** Reads a report written by {@link #write}. */
    public static BenchReport read(Path json) throws IOException {
        return JSON.readValue(json.toFile(), BenchReport.class);
    }

    /**
     * Writes {@code <dir>/index.html}: one row per scenario of a {@code bench all} run with its
     * verdict counts, the machine's noise and a link to its report (or why it failed).
     *
     * @return the index's path
     */
    public static Path writeIndex(List<BenchRunner.Outcome> outcomes, Path dir) {
        try {
            Files.createDirectories(dir);
            Path index = dir.resolve("index.html");
            Files.writeString(index, HtmlReport.index(outcomes));
            return index;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the benchmark index to " + dir + ": " + e.getMessage(), e);
        }
    }

    static String html(BenchReport r) {
        return HtmlReport.scenario(r);
    }
}
