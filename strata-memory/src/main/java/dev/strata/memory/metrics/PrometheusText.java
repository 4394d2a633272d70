package dev.strata.memory.metrics;

import java.util.HashSet;
import java.util.Locale;
import java.util.Set;

/**
 * Writes metrics in the Prometheus text exposition format (version 0.0.4): one {@code # HELP} and
 * {@code # TYPE} line per family, then its samples with escaped label values.
 *
 * <p>Families are declared once, in order; samples must follow their family's declaration. Metric
 * and label names are checked against the format's character rules, so a bad name fails when
 * the metric is written rather than when it is scraped.
 *
 * <p>Confined to one thread (it wraps a {@link StringBuilder}).
 */
public final class PrometheusText {

    /** Metric types of the exposition format. */
    public enum Type { COUNTER, GAUGE, SUMMARY, HISTOGRAM, UNTYPED }

    private final StringBuilder out = new StringBuilder(4096);
    private final Set<String> declared = new HashSet<>();

    /** Declares a family (HELP and TYPE lines); declaring the same name twice is a no-op. */
    public PrometheusText family(String name, Type type, String help) {
        checkName(name);
        if (declared.add(name)) {
            out.append("# HELP ").append(name).append(' ').append(help.replace("\\", "\\\\").replace("\n", "\\n")).append('\n');
            out.append("# TYPE ").append(name).append(' ').append(type.name().toLowerCase(Locale.ROOT)).append('\n');
        }
        return this;
    }

    /**
     * Writes one sample.
     *
     * @param name   the sample's name (the family name, or with a {@code _sum}/{@code _count} suffix)
     * @param value  the value; NaN and infinities are written as the format spells them
     * @param labels alternating label names and values
     */
    public PrometheusText sample(String name, double value, String... labels) {
        checkName(name);
        if (labels.length % 2 != 0) {
            throw new IllegalArgumentException("labels of '" + name + "' must come in name/value pairs, got " + labels.length + " strings");
        }
        out.append(name);
        if (labels.length > 0) {
            out.append('{');
            for (int i = 0; i < labels.length; i += 2) {
                checkName(labels[i]);
                if (i > 0) {
                    out.append(',');
                }
                out.append(labels[i]).append("=\"")
                        .append(labels[i + 1].replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n"))
                        .append('"');
            }
            out.append('}');
        }
        out.append(' ').append(format(value)).append('\n');
        return this;
    }

    private static String format(double v) {
        if (Double.isNaN(v)) {
            return "NaN";
        }
        if (Double.isInfinite(v)) {
            return v > 0 ? "+Inf" : "-Inf";
        }
        if (v == Math.rint(v) && Math.abs(v) < 1e15) {
            return Long.toString((long) v);
        }
        return Double.toString(v);
    }

    private static void checkName(String name) {
        if (name.isEmpty() || !(Character.isLetter(name.charAt(0)) || name.charAt(0) == '_' || name.charAt(0) == ':')) {
            throw new IllegalArgumentException("not a valid metric or label name: '" + name + "'");
        }
        for (int i = 1; i < name.length(); i++) {
            char c = name.charAt(i);
            if (!(c < 128 && (Character.isLetterOrDigit(c) || c == '_' || c == ':'))) {
                throw new IllegalArgumentException("not a valid metric or label name: '" + name + "' (character '" + c + "')");
            }
        }
    }

    @Override
    public String toString() {
        return out.toString();
    }
}
