package dev.strata.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The HTML of a scenario's report and of a {@code bench all} index: self-contained pages (inline
 * CSS and SVG drawn here, no scripts, nothing fetched), written as well-formed XML so that any XML
 * parser reads them.
 *
 * <p>A report shows, in order: the machine and its measured noise; the ratio chart, one row per
 * figure with a ratio (a bar from the baseline's 1× to the median pair ratio on a logarithmic
 * axis, the spread as a whisker, the goal as a vertical line, coloured by verdict, details in a
 * tooltip); the plots of its {@link Series} (line charts, logarithmic x where the series ask);
 * the table of figures with notes folded away; the run's notes.
 *
 * <p>Stateless; any thread.
 */
final class HtmlReport {
    /** Verdict colours: met, missed, inconclusive, not judged. */
    private static final Map<Verdict, String> COLOUR = Map.of(Verdict.MET, "#2e8b57", Verdict.MISSED, "#c0392b",
            Verdict.INCONCLUSIVE, "#e6a817", Verdict.NOT_JUDGED, "#999999");
    private static final String[] PALETTE = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf",
            "#7f7f7f"};
    private static final String STYLE = "body{font-family:sans-serif;margin:2em;color:#222}"
            + "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
            + "td.l,th.l{text-align:left}.met{color:#2e8b57}.missed{color:#c0392b}.inconclusive{color:#b07d00}"
            + ".not-judged{color:#777}details summary{cursor:pointer;color:#555}svg{display:block;margin:1em 0}"
            + "svg text{font-size:11px}.muted{color:#666}";

    private HtmlReport() {
    }

    /** The page of one scenario's report. */
    static String scenario(BenchReport r) {
        StringBuilder h = new StringBuilder(16_384);
        String title = "strata bench " + r.scenario() + (r.quick() ? " (quick)" : "");
        head(h, title);
        h.append("<h1>").append(esc(title)).append("</h1>");
        h.append("<p>").append(esc(r.machine())).append("</p>");
        h.append("<p class=\"summary\"><b>").append(esc(r.summary())).append("</b></p>");
        noise(h, r.noise());
        h.append("<h2>Ratios to the baselines</h2>");
        h.append("<p class=\"muted\">Each bar runs from the baseline (1×) to the median of the per-round ratios; the whisker is"
                + " their spread (min to max for up to eight rounds, else the 95% confidence interval of the median, 97.5% for"
                + " a figure measured on after a first look left it undecided); the black"
                + " line is the goal (for a goal on the value, drawn at the goal divided by the baseline). Hover a row for"
                + " details.</p>");
        ratioChart(h, r);
        if (!r.series().isEmpty()) {
            h.append("<h2>Plots</h2>");
            Map<String, List<Series>> plots = new LinkedHashMap<>();
            for (Series s : r.series()) {
                plots.computeIfAbsent(s.plot(), k -> new ArrayList<>()).add(s);
            }
            plots.forEach((name, lines) -> lineChart(h, name, lines));
        }
        h.append("<h2>Figures</h2>");
        figureTable(h, r);
        if (!r.notes().isEmpty()) {
            h.append("<h2>Notes</h2><ul>");
            for (String n : r.notes()) {
                h.append("<li>").append(esc(n)).append("</li>");
            }
            h.append("</ul>");
        }
        return h.append("</body></html>\n").toString();
    }

    /** The index of a {@code bench all} run: one row per scenario with its verdict counts. */
    static String index(List<BenchRunner.Outcome> outcomes) {
        StringBuilder h = new StringBuilder(4096);
        head(h, "strata bench all");
        h.append("<h1>strata bench all</h1>");
        h.append("<table class=\"index\"><tr><th class=\"l\">scenario</th><th>figures</th><th>met</th><th>missed</th>"
                + "<th>inconclusive</th><th>not judged</th><th class=\"l\">machine noise (memory copy, start / end)</th>"
                + "<th class=\"l\">summary</th></tr>");
        for (BenchRunner.Outcome o : outcomes) {
            h.append("<tr><td class=\"l\">");
            BenchReport r = o.report();
            if (r == null) {
                h.append(esc(o.scenario())).append("</td><td colspan=\"6\"></td><td class=\"l missed\">failed: ")
                        .append(esc(o.failure())).append("</td></tr>");
                continue;
            }
            h.append("<a href=\"").append(esc(r.scenario())).append(".html\">").append(esc(r.scenario())).append("</a>")
                    .append(r.quick() ? " (quick)" : "").append("</td>");
            h.append("<td>").append(r.figures().size()).append("</td>");
            h.append("<td class=\"met\">").append(r.count(Verdict.MET)).append("</td>");
            h.append("<td class=\"missed\">").append(r.count(Verdict.MISSED)).append("</td>");
            h.append("<td class=\"inconclusive\">").append(r.count(Verdict.INCONCLUSIVE)).append("</td>");
            h.append("<td class=\"not-judged\">").append(r.count(Verdict.NOT_JUDGED)).append("</td>");
            StringBuilder noise = new StringBuilder();
            for (NoiseProbe.NoiseReading n : r.noise()) {
                if (n.workload().startsWith("memory copy")) {
                    noise.append(noise.isEmpty() ? "" : " / ")
                            .append(String.format(Locale.ROOT, "%.3g %s ±%.0f%%", n.median(), n.unit(), 50 * n.spread()));
                }
            }
            h.append("<td class=\"l\">").append(esc(noise.toString())).append("</td>");
            h.append("<td class=\"l\">").append(esc(r.summary())).append("</td></tr>");
        }
        h.append("</table>");
        return h.append("</body></html>\n").toString();
    }

    private static void head(StringBuilder h, String title) {
        h.append("<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\"><head><meta charset=\"utf-8\"/><title>")
                .append(esc(title)).append("</title><style>").append(STYLE).append("</style></head><body>");
    }

    private static void noise(StringBuilder h, List<NoiseProbe.NoiseReading> noise) {
        if (noise.isEmpty()) {
            return;
        }
        h.append("<h2>Machine noise</h2><p class=\"muted\">Fixed reference workloads run at the start and the end of the run;"
                + " their spread is what the machine itself varies by.</p>");
        h.append("<table class=\"noise\"><tr><th class=\"l\">reference workload</th><th class=\"l\">when</th><th>median</th>"
                + "<th class=\"l\">unit</th><th>min</th><th>max</th><th>spread</th><th>runs</th></tr>");
        for (NoiseProbe.NoiseReading n : noise) {
            h.append(String.format(Locale.ROOT, "<tr><td class=\"l\">%s</td><td class=\"l\">%s</td><td>%.3g</td><td class=\"l\">%s"
                            + "</td><td>%.3g</td><td>%.3g</td><td>%.1f%%</td><td>%d</td></tr>", esc(n.workload()), esc(n.when()),
                    n.median(), esc(n.unit()), n.low(), n.high(), 100 * n.spread(), n.runs()));
        }
        h.append("</table>");
    }

    /** Where the goal falls on the ratio axis: its threshold, or for a goal on the value, the threshold over the baseline. */
    static double goalRatio(Figure f) {
        Goal g = Goal.parse(f.goal());
        if (!g.onValue()) {
            return g.threshold();
        }
        return f.baselineValue() > 0 ? g.threshold() / f.baselineValue() : Double.NaN;
    }

    private static void ratioChart(StringBuilder h, BenchReport r) {
        List<Figure> rows = r.figures().stream().filter(f -> f.ratio() > 0 && Double.isFinite(f.ratio())).toList();
        if (rows.isEmpty()) {
            h.append("<p class=\"muted\">No figure of this run has a ratio.</p>");
            return;
        }
        double lo = 1;
        double hi = 1;
        for (Figure f : rows) {
            for (double v : new double[] {f.ratio(), f.ratioLow(), f.ratioHigh(), goalRatio(f)}) {
                if (v > 0 && Double.isFinite(v)) {
                    lo = Math.min(lo, v);
                    hi = Math.max(hi, v);
                }
            }
        }
        int labelW = 330;
        int plotW = 520;
        int rowH = 22;
        int top = 10;
        int height = top + rows.size() * rowH + 60;
        Axis x = new Axis(true, lo / 1.3, hi * 1.3, labelW, labelW + plotW);
        h.append("<svg class=\"ratios\" xmlns=\"http://www.w3.org/2000/svg\" width=\"").append(labelW + plotW + 90)
                .append("\" height=\"").append(height).append("\">");
        int axisY = top + rows.size() * rowH + 4;
        for (double t : x.ticks()) { // grid and tick labels
            double px = x.map(t);
            h.append(String.format(Locale.ROOT, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#e4e4e4\"/>"
                    + "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s×</text>", px, px, top, axisY, px, axisY + 14, tick(t)));
        }
        double one = x.map(1);
        h.append(String.format(Locale.ROOT, "<line class=\"axis\" x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"#444\"/>",
                labelW, labelW + plotW, axisY, axisY));
        h.append(String.format(Locale.ROOT, "<line class=\"baseline\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#444\"/>",
                one, one, top, axisY));
        h.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">ratio to the baseline (log scale;"
                + " 1× = baseline)</text>", labelW + plotW / 2, axisY + 30));
        for (int i = 0; i < rows.size(); i++) {
            Figure f = rows.get(i);
            int y = top + i * rowH;
            int mid = y + rowH / 2;
            String colour = COLOUR.get(f.verdict());
            h.append("<g class=\"figure ").append(cssClass(f.verdict())).append("\"><title>").append(esc(tooltip(r, f)))
                    .append("</title>");
            h.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\">%s</text>", 0, mid + 4, esc(f.name())));
            double px = x.map(f.ratio());
            h.append(String.format(Locale.ROOT, "<rect class=\"bar\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"12\" fill=\"%s\""
                    + " fill-opacity=\"0.75\"/>", Math.min(one, px), mid - 6, Math.max(1, Math.abs(px - one)), colour));
            if (Double.isFinite(f.ratioLow()) && Double.isFinite(f.ratioHigh()) && f.ratioLow() > 0) {
                double a = x.map(f.ratioLow());
                double b = x.map(f.ratioHigh());
                h.append(String.format(Locale.ROOT, "<g class=\"whisker\" stroke=\"#222\"><line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\""
                                + " y2=\"%d\"/><line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\"/><line x1=\"%.1f\" x2=\"%.1f\""
                                + " y1=\"%d\" y2=\"%d\"/></g>", a, b, mid, mid, a, a, mid - 4, mid + 4, b, b, mid - 4,
                        mid + 4));
            }
            double goal = goalRatio(f);
            if (goal > 0 && Double.isFinite(goal)) {
                double gx = x.map(Math.max(x.lo, Math.min(x.hi, goal)));
                h.append(String.format(Locale.ROOT, "<line class=\"goal\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\""
                        + " stroke=\"#000\" stroke-width=\"2\"/>", gx, gx, y + 1, y + rowH - 1));
            }
            h.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" fill=\"%s\">%.3g× %s</text></g>", labelW + plotW + 6,
                    mid + 4, colour, f.ratio(), esc(verdictWord(r, f))));
        }
        h.append("</svg>");
        legend(h);
    }

    private static void legend(StringBuilder h) {
        h.append("<svg class=\"legend\" xmlns=\"http://www.w3.org/2000/svg\" width=\"720\" height=\"24\">");
        int x = 0;
        for (Verdict v : Verdict.values()) {
            h.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"6\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                    + "<text x=\"%d\" y=\"16\">%s</text>", x, COLOUR.get(v), x + 16, v.label()));
            x += 110;
        }
        h.append(String.format(Locale.ROOT, "<line x1=\"%d\" x2=\"%d\" y1=\"4\" y2=\"20\" stroke=\"#000\" stroke-width=\"2\"/>"
                + "<text x=\"%d\" y=\"16\">goal</text>", x + 6, x + 6, x + 12));
        x += 60;
        h.append(String.format(Locale.ROOT, "<line x1=\"%d\" x2=\"%d\" y1=\"12\" y2=\"12\" stroke=\"#222\"/><line x1=\"%d\" x2=\"%d\""
                + " y1=\"8\" y2=\"16\" stroke=\"#222\"/><line x1=\"%d\" x2=\"%d\" y1=\"8\" y2=\"16\" stroke=\"#222\"/>"
                + "<text x=\"%d\" y=\"16\">spread</text>", x, x + 20, x, x, x + 20, x + 20, x + 26));
        h.append("</svg>");
    }

    private static void lineChart(StringBuilder h, String title, List<Series> lines) {
        int left = 70;
        int plotW = 480;
        int top = 30;
        int plotH = 260;
        int legendW = 260;
        double xlo = Double.POSITIVE_INFINITY;
        double xhi = Double.NEGATIVE_INFINITY;
        double yhi = 0;
        double ylo = 0;
        boolean log = lines.getFirst().logX();
        for (Series s : lines) {
            for (double v : s.x()) {
                xlo = Math.min(xlo, v);
                xhi = Math.max(xhi, v);
            }
            for (double v : s.y()) {
                if (Double.isFinite(v)) {
                    yhi = Math.max(yhi, v);
                    ylo = Math.min(ylo, v);
                }
            }
        }
        if (!(xhi > xlo)) { // one x value (or none): widen around it
            xlo = log ? xlo / 2 : xlo - 1;
            xhi = log ? xhi * 2 : xhi + 1;
        }
        if (yhi <= ylo) {
            yhi = ylo + 1;
        }
        Axis x = new Axis(log, log ? xlo / 1.1 : xlo, log ? xhi * 1.1 : xhi, left, left + plotW);
        Axis y = new Axis(false, ylo, yhi * 1.05, top + plotH, top); // pixel y grows downwards
        Series first = lines.getFirst();
        h.append("<svg class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"").append(left + plotW + legendW)
                .append("\" height=\"").append(top + plotH + 50).append("\">");
        h.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"16\" font-weight=\"bold\">%s</text>", left, esc(title)));
        for (double t : x.ticks()) {
            double px = x.map(t);
            h.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#e4e4e4\"/>"
                    + "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>", px, px, top, top + plotH, px, top + plotH + 14,
                    tick(t)));
        }
        for (double t : y.ticks()) {
            double py = y.map(t);
            h.append(String.format(Locale.ROOT, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>"
                    + "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>", left, left + plotW, py, py, left - 4, py + 4,
                    tick(t)));
        }
        h.append(String.format(Locale.ROOT, "<rect class=\"frame\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\""
                + " stroke=\"#444\"/>", left, top, plotW, plotH));
        h.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s%s</text>", left + plotW / 2,
                top + plotH + 34, esc(first.xAxis()), log ? " (log scale)" : ""));
        h.append(String.format(Locale.ROOT, "<text transform=\"translate(14,%d) rotate(-90)\" text-anchor=\"middle\">%s</text>",
                top + plotH / 2, esc(first.yAxis())));
        for (int i = 0; i < lines.size(); i++) {
            Series s = lines.get(i);
            String colour = PALETTE[i % PALETTE.length];
            double[] xs = s.x();
            double[] ys = s.y();
            StringBuilder points = new StringBuilder();
            StringBuilder marks = new StringBuilder();
            for (int k = 0; k < xs.length; k++) {
                if (!Double.isFinite(ys[k])) {
                    continue;
                }
                double px = x.map(xs[k]);
                double py = y.map(ys[k]);
                points.append(String.format(Locale.ROOT, "%.1f,%.1f ", px, py));
                marks.append(String.format(Locale.ROOT, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>%s: %s = %s,"
                        + " %s = %s</title></circle>", px, py, colour, esc(s.label()), esc(s.xAxis()), tick(xs[k]), esc(s.yAxis()),
                        String.format(Locale.ROOT, "%.4g", ys[k])));
            }
            h.append("<g class=\"series\"><polyline fill=\"none\" stroke=\"").append(colour).append("\" stroke-width=\"2\" points=\"")
                    .append(points.toString().strip()).append("\"/>").append(marks).append("</g>");
            int ly = top + 10 + i * 18;
            h.append(String.format(Locale.ROOT, "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"/>"
                    + "<text x=\"%d\" y=\"%d\">%s</text>", left + plotW + 12, left + plotW + 32, ly, ly, colour, left + plotW + 36,
                    ly + 4, esc(s.label())));
        }
        h.append("</svg>");
    }

    private static void figureTable(StringBuilder h, BenchReport r) {
        h.append("<table class=\"figures\"><tr><th class=\"l\">figure</th><th>value</th><th>value spread</th><th class=\"l\">unit"
                + "</th><th class=\"l\">baseline</th><th>baseline value</th><th>ratio</th><th>ratio spread</th><th class=\"l\">goal"
                + "</th><th class=\"l\">verdict</th><th>rounds</th><th class=\"l\">note</th></tr>");
        for (Figure f : r.figures()) {
            h.append("<tr><td class=\"l\">").append(esc(f.name())).append("</td><td>").append(num(f.value())).append("</td><td>")
                    .append(range(f.valueLow(), f.valueHigh())).append("</td><td class=\"l\">").append(esc(f.unit()))
                    .append("</td><td class=\"l\">").append(esc(f.baseline())).append("</td><td>").append(num(f.baselineValue()))
                    .append("</td><td>").append(num(f.ratio())).append("</td><td>").append(range(f.ratioLow(), f.ratioHigh()))
                    .append("</td><td class=\"l\">").append(esc(f.goal())).append("</td><td class=\"l ")
                    .append(cssClass(f.verdict())).append("\">").append(esc(verdictWord(r, f))).append("</td><td>")
                    .append(f.rounds() == 0 ? "exact" : Integer.toString(f.rounds())).append("</td><td class=\"l\">");
            if (!f.note().isEmpty()) {
                h.append("<details><summary>note</summary>").append(esc(f.note())).append("</details>");
            }
            h.append("</td></tr>");
        }
        h.append("</table>");
    }

    private static String tooltip(BenchReport r, Figure f) {
        return String.format(Locale.ROOT, "%s: %s %s (spread %s) against %s %s; ratio %s (spread %s) over %s; goal %s: %s%s",
                f.name(), num(f.value()), f.unit(), range(f.valueLow(), f.valueHigh()), f.baseline(), num(f.baselineValue()),
                num(f.ratio()), range(f.ratioLow(), f.ratioHigh()), f.rounds() == 0 ? "an exact computation" : f.rounds() + " rounds",
                f.goal(), verdictWord(r, f), f.note().isEmpty() ? "" : "; " + f.note());
    }

    private static String verdictWord(BenchReport r, Figure f) {
        return ReportWriter.verdictText(r, f);
    }

    private static String cssClass(Verdict v) {
        return v.label().replace(' ', '-');
    }

    private static String range(double lo, double hi) {
        return Double.isNaN(lo) || Double.isNaN(hi) ? "-" : num(lo) + " – " + num(hi);
    }

    private static String num(double v) {
        if (Double.isNaN(v)) {
            return "-";
        }
        return Math.abs(v) >= 1e6 || (v != 0 && Math.abs(v) < 1e-3) ? String.format(Locale.ROOT, "%.3g", v)
                : String.format(Locale.ROOT, "%.3f", v);
    }

    /** A tick label: short, with k/M/G for large values. */
    private static String tick(double v) {
        double a = Math.abs(v);
        if (a >= 1e9) {
            return trim(v / 1e9) + "G";
        }
        if (a >= 1e6) {
            return trim(v / 1e6) + "M";
        }
        if (a >= 1e4) {
            return trim(v / 1e3) + "k";
        }
        return trim(v);
    }

    /** Three significant digits without trailing zeros or an exponent, e.g. {@code 1000}, {@code 0.25}. */
    private static String trim(double v) {
        if (!Double.isFinite(v)) {
            return String.valueOf(v);
        }
        return new java.math.BigDecimal(String.format(Locale.ROOT, "%.3g", v)).stripTrailingZeros().toPlainString();
    }

    /** Escapes text for element content and attribute values. */
    static String esc(String s) {
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
    }

    /**
     * One axis: maps values in {@code [lo, hi]} to pixels from {@code from} to {@code to}
     * (either direction), linearly or logarithmically, and picks tick values.
     */
    private record Axis(boolean log, double lo, double hi, double from, double to) {
        double map(double v) {
            double t = log ? (Math.log(v) - Math.log(lo)) / (Math.log(hi) - Math.log(lo)) : (v - lo) / (hi - lo);
            return from + t * (to - from);
        }

        /** 1-2-5 steps per decade on a log axis (decades only when it spans more than three), nice steps on a linear one. */
        List<Double> ticks() {
            List<Double> out = new ArrayList<>();
            if (log) {
                int d0 = (int) Math.floor(Math.log10(lo));
                int d1 = (int) Math.ceil(Math.log10(hi));
                double[] steps = d1 - d0 > 3 ? new double[] {1} : new double[] {1, 2, 5};
                for (int d = d0; d <= d1; d++) {
                    for (double m : steps) {
                        double t = m * Math.pow(10, d);
                        if (t >= lo && t <= hi) {
                            out.add(t);
                        }
                    }
                }
                return out;
            }
            double raw = (hi - lo) / 5;
            double mag = Math.pow(10, Math.floor(Math.log10(raw)));
            double step = raw / mag < 1.5 ? mag : raw / mag < 3.5 ? 2 * mag : raw / mag < 7.5 ? 5 * mag : 10 * mag;
            for (double t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) {
                out.add(Math.abs(t) < step * 1e-9 ? 0 : t);
            }
            return out;
        }
    }
}
