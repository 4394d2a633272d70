package dev.strata.bench;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonSerializer;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.module.SimpleModule;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * Writes a {@link BenchReport} three ways: a table on the console, {@code <scenario>.json} in the
 * shared shape (NaN written as {@code null}), and {@code <scenario>.html} with the table and a
 * bar chart of each figure's ratio against its goal.
 *
 * <p>Stateless apart from its Jackson mapper, which is thread-safe; any thread.
 */
public final class ReportWriter {

    private static final ObjectMapper JSON = new ObjectMapper()
            .enable(SerializationFeature.INDENT_OUTPUT)
            .registerModule(new SimpleModule().addSerializer(Double.class, new FiniteOrNull())
                    .addSerializer(double.class, new FiniteOrNull()));

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

    /** Prints the figures as an aligned table. */
    public static void printTable(BenchReport r, PrintStream out) {
        out.printf(Locale.ROOT, "%nscenario %s%s on %s%n", r.scenario(), r.quick() ? " (quick)" : "", r.machine());
        out.printf(Locale.ROOT, "%-40s %12s %-8s %12s %7s %-18s %s%n", "figure", "value", "unit", "baseline", "ratio", "goal", "met");
        for (Figure f : r.figures()) {
            out.printf(Locale.ROOT, "%-40s %12s %-8s %12s %7s %-18s %s%s%n", f.name(), num(f.value()), f.unit(),
                    num(f.baselineValue()), num(f.ratio()), f.goal(), f.met() ? "yes" : "NO",
                    f.note().isEmpty() ? "" : "  (" + f.note() + ")");
        }
        for (String n : r.notes()) {
            out.println("note: " + n);
        }
    }

    private static String num(double v) {
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

    private static String esc(String s) {
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
    }

    static String html(BenchReport r) {
        StringBuilder h = new StringBuilder();
        h.append("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>strata bench ").append(esc(r.scenario()))
                .append("</title><style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
                        + "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}td:first-child{text-align:left}"
                        + ".no{color:#b00}.yes{color:#070}</style></head><body>");
        h.append("<h1>strata bench ").append(esc(r.scenario())).append(r.quick() ? " (quick)" : "").append("</h1>");
        h.append("<p>").append(esc(r.machine())).append("</p>");
        // Bar chart of ratios: one row per figure that has a ratio; the goal is a vertical tick.
        var rows = r.figures().stream().filter(f -> !Double.isNaN(f.ratio())).toList();
        double max = Math.max(1.2, rows.stream().mapToDouble(Figure::ratio).max().orElse(1.0) * 1.1);
        int rowH = 22;
        int labelW = 300;
        int barW = 500;
        h.append("<svg width=\"").append(labelW + barW + 80).append("\" height=\"").append(rows.size() * rowH + 30)
                .append("\" xmlns=\"http://www.w3.org/2000/svg\" font-size=\"12\">");
        for (int i = 0; i < rows.size(); i++) {
            Figure f = rows.get(i);
            int y = i * rowH + 5;
            double w = f.ratio() / max * barW;
            h.append(String.format(Locale.ROOT,
                    "<text x=\"0\" y=\"%d\">%s</text><rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"16\" fill=\"%s\"/>"
                            + "<text x=\"%.1f\" y=\"%d\">%.2f</text>",
                    y + 13, esc(f.name()), labelW, y, w, f.met() ? "#4a4" : "#c44", labelW + w + 4, y + 13, f.ratio()));
            Goal g = Goal.parse(f.goal());
            if (!g.onValue()) {
                double gx = labelW + g.threshold() / max * barW;
                h.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#000\"/>", gx, gx, y - 2, y + 18));
            }
        }
        double one = labelW + 1.0 / max * barW;
        h.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\">1.0x baseline</text></svg>", one - 30, rows.size() * rowH + 25));
        h.append("<table><tr><th>figure</th><th>value</th><th>unit</th><th>baseline</th><th>baseline value</th>"
                + "<th>ratio</th><th>goal</th><th>met</th><th>note</th></tr>");
        for (Figure f : r.figures()) {
            h.append("<tr><td>").append(esc(f.name())).append("</td><td>").append(num(f.value())).append("</td><td>")
                    .append(esc(f.unit())).append("</td><td>").append(esc(f.baseline())).append("</td><td>")
                    .append(num(f.baselineValue())).append("</td><td>").append(num(f.ratio())).append("</td><td>")
                    .append(esc(f.goal())).append("</td><td class=\"").append(f.met() ? "yes\">yes" : "no\">no")
                    .append("</td><td>").append(esc(f.note())).append("</td></tr>");
        }
        h.append("</table>");
        for (String n : r.notes()) {
            h.append("<p>note: ").append(esc(n)).append("</p>");
        }
        return h.append("</body></html>\n").toString();
    }
}
