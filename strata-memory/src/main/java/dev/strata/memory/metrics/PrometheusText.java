package dev.strata.memory.metrics;

import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The one writer of the Prometheus text exposition format (version 0.0.4) in Strata: every
 * {@code /metrics} page and every {@code toPrometheus()} is built with it.
 *
 * <p>Design: the text is grouped by family. {@link #family} declares a family (its {@code # HELP}
 * and {@code # TYPE} lines); samples go into their family's group whenever they are written, so
 * several objects may contribute samples to one family, in any order, and the family still
 * appears once with its samples together, as the format requires. {@link #toString} writes the
 * families in the order they were first declared.
 *
 * <p>Invariants kept (each breach throws {@link IllegalArgumentException} naming the name and the
 * problem, so a bad metric fails when it is written, not when it is scraped):
 * <ul>
 *   <li>metric and label names follow the format's character rules;</li>
 *   <li>a family is declared with one type; declaring it again with the same type is a no-op;</li>
 *   <li>counter families end in {@code _total};</li>
 *   <li>every sample belongs to a declared family: its name is the family's, or for a histogram
 *       the family's with {@code _bucket}, {@code _sum} or {@code _count}, for a summary with
 *       {@code _sum} or {@code _count}; no two families claim the same sample name;</li>
 *   <li>no series (sample name plus labels) is written twice;</li>
 *   <li>label values are escaped ({@code \\}, {@code \"}, {@code \n}), help text too
 *       ({@code \\}, {@code \n}).</li>
 * </ul>
 *
 * <p>Threads: confined to one thread.
 */
public final class PrometheusText {

    /** Metric types of the exposition format. */
    public enum Type { COUNTER, GAUGE, SUMMARY, HISTOGRAM, UNTYPED }

    /** One declared family: its header and the samples written to it so far. */
    private static final class Family {
        final String name;
        final Type type;
        final String help;
        final StringBuilder samples = new StringBuilder(256); // complete sample lines, '\n'-terminated
        final Set<String> series = new HashSet<>();           // sample name + rendered labels, one per line

        Family(String name, Type type, String help) {
            this.name = name;
            this.type = type;
            this.help = help;
        }
    }

    private final Map<String, Family> families = new LinkedHashMap<>(); // family name -> family, declaration order
    private final Map<String, Family> bySample = new HashMap<>();        // every sample name a family may write -> it

    /**
     * Declares a family (HELP and TYPE lines). Declaring the same name again with the same type is
     * a no-op (the first help text stays); with another type it throws.
     */
    public PrometheusText family(String name, Type type, String help) {
        checkName(name);
        Family existing = families.get(name);
        if (existing != null) {
            if (existing.type != type) {
                throw new IllegalArgumentException("family '" + name + "' was declared as " + lower(existing.type)
                        + " and now as " + lower(type));
            }
            return this;
        }
        if (type == Type.COUNTER && !name.endsWith("_total")) {
            throw new IllegalArgumentException("counter family '" + name + "' must end in _total");
        }
        Family f = new Family(name, type, help);
        for (String s : sampleNames(name, type)) {
            Family other = bySample.get(s);
            if (other != null) {
                throw new IllegalArgumentException("family '" + name + "' would write samples named '" + s
                        + "', which family '" + other.name + "' already writes");
            }
        }
        for (String s : sampleNames(name, type)) {
            bySample.put(s, f);
        }
        families.put(name, f);
        return this;
    }

    /**
     * Writes one sample into its family's group.
     *
     * @param name   the sample's name: the family's name, or with a suffix its type allows
     * @param value  the value; NaN and infinities are written as the format spells them
     * @param labels alternating label names and values
     */
    public PrometheusText sample(String name, double value, String... labels) {
        checkName(name);
        Family f = bySample.get(name);
        if (f == null) {
            throw new IllegalArgumentException("sample '" + name + "' belongs to no declared family; declare it with family() first");
        }
        if (labels.length % 2 != 0) {
            throw new IllegalArgumentException("labels of '" + name + "' must come in name/value pairs, got " + labels.length + " strings");
        }
        StringBuilder line = new StringBuilder(name.length() + 16 * labels.length);
        line.append(name);
        if (labels.length > 0) {
            line.append('{');
            Set<String> seen = new HashSet<>();
            for (int i = 0; i < labels.length; i += 2) {
                checkLabelName(labels[i]);
                if (!seen.add(labels[i])) {
                    throw new IllegalArgumentException("sample '" + name + "' has label '" + labels[i] + "' twice");
                }
                if (labels[i + 1] == null) {
                    throw new IllegalArgumentException("label '" + labels[i] + "' of '" + name + "' has no value (null)");
                }
                if (i > 0) {
                    line.append(',');
                }
                line.append(labels[i]).append("=\"").append(escapeLabel(labels[i + 1])).append('"');
            }
            line.append('}');
        }
        if (!f.series.add(line.toString())) {
            throw new IllegalArgumentException("series " + line + " was already written");
        }
        f.samples.append(line).append(' ').append(format(value)).append('\n');
        return this;
    }

    /**
     * Writes one histogram series: cumulative {@code _bucket} samples labelled {@code le} (the
     * bounds, then {@code +Inf}), {@code _sum} and {@code _count}. The family must be declared as
     * {@link Type#HISTOGRAM}.
     *
     * @param name         the family's name
     * @param upperBounds  bucket upper bounds, strictly ascending and finite
     * @param bucketCounts observations per bucket (not cumulative), one more than the bounds: the last
     *                     counts observations above every bound
     * @param sum          the sum of the observations
     * @param labels       alternating label names and values ({@code le} is the writer's)
     */
    public PrometheusText histogram(String name, double[] upperBounds, long[] bucketCounts, double sum, String... labels) {
        requireType(name, Type.HISTOGRAM);
        if (bucketCounts.length != upperBounds.length + 1) {
            throw new IllegalArgumentException("histogram '" + name + "' has " + upperBounds.length + " bounds, so it needs "
                    + (upperBounds.length + 1) + " bucket counts, got " + bucketCounts.length);
        }
        for (int b = 0; b < upperBounds.length; b++) {
            if (!Double.isFinite(upperBounds[b]) || (b > 0 && !(upperBounds[b] > upperBounds[b - 1]))) {
                throw new IllegalArgumentException("histogram '" + name + "' bounds must be finite and strictly ascending, got "
                        + Arrays.toString(upperBounds));
            }
        }
        long cumulative = 0;
        for (int b = 0; b <= upperBounds.length; b++) {
            cumulative += bucketCounts[b];
            String le = b == upperBounds.length ? "+Inf" : format(upperBounds[b]);
            sample(name + "_bucket", cumulative, with(labels, "le", le));
        }
        sample(name + "_sum", sum, labels);
        sample(name + "_count", cumulative, labels);
        return this;
    }

    /**
     * Writes one summary series: a sample per quantile labelled {@code quantile}, then
     * {@code _count}. The family must be declared as {@link Type#SUMMARY}.
     *
     * @param name      the family's name
     * @param quantiles the quantiles, each in [0, 1]
     * @param values    the value at each quantile
     * @param count     observations
     * @param labels    alternating label names and values ({@code quantile} is the writer's)
     */
    public PrometheusText summary(String name, double[] quantiles, double[] values, long count, String... labels) {
        requireType(name, Type.SUMMARY);
        if (quantiles.length != values.length) {
            throw new IllegalArgumentException("summary '" + name + "' has " + quantiles.length + " quantiles but "
                    + values.length + " values");
        }
        for (int i = 0; i < quantiles.length; i++) {
            if (!(quantiles[i] >= 0 && quantiles[i] <= 1)) {
                throw new IllegalArgumentException("summary '" + name + "' quantile must be in [0, 1], got " + quantiles[i]);
            }
            sample(name, values[i], with(labels, "quantile", format(quantiles[i])));
        }
        sample(name + "_count", count, labels);
        return this;
    }

    private void requireType(String name, Type type) {
        Family f = families.get(name);
        if (f == null || f.type != type) {
            throw new IllegalArgumentException("'" + name + "' is not a declared " + lower(type) + " family"
                    + (f == null ? "" : " (it is a " + lower(f.type) + ")"));
        }
    }

    private static String[] with(String[] labels, String name, String value) {
        for (int i = 0; i < labels.length; i += 2) {
            if (labels[i].equals(name)) {
                throw new IllegalArgumentException("label '" + name + "' is written by the exposition format itself");
            }
        }
        String[] out = Arrays.copyOf(labels, labels.length + 2);
        out[labels.length] = name;
        out[labels.length + 1] = value;
        return out;
    }

    private static List<String> sampleNames(String name, Type type) {
        return switch (type) {
            case HISTOGRAM -> List.of(name + "_bucket", name + "_sum", name + "_count");
            case SUMMARY -> List.of(name, name + "_sum", name + "_count");
            default -> List.of(name);
        };
    }

    /** The format's escaping of a label value: backslash, double quote and line feed. */
    static String escapeLabel(String v) {
        return v.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n");
    }

    /** The format's escaping of help text: backslash and line feed. */
    static String escapeHelp(String v) {
        return v.replace("\\", "\\\\").replace("\n", "\\n");
    }

    private static String lower(Type t) {
        return t.name().toLowerCase(Locale.ROOT);
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
        if (name == null || name.isEmpty()
                || !(isAsciiLetter(name.charAt(0)) || name.charAt(0) == '_' || name.charAt(0) == ':')) {
            throw new IllegalArgumentException("not a valid metric or label name: '" + name + "'");
        }
        for (int i = 1; i < name.length(); i++) {
            char c = name.charAt(i);
            if (!(isAsciiLetter(c) || (c >= '0' && c <= '9') || c == '_' || c == ':')) {
                throw new IllegalArgumentException("not a valid metric or label name: '" + name + "' (character '" + c + "')");
            }
        }
    }

    private static void checkLabelName(String name) {
        checkName(name);
        if (name.indexOf(':') >= 0 || name.startsWith("__")) {
            throw new IllegalArgumentException("not a valid label name: '" + name + "' (no ':' and no leading '__')");
        }
    }

    private static boolean isAsciiLetter(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    }

    /** The exposition: each family's HELP, TYPE and samples, in declaration order. */
    @Override
    public String toString() {
        StringBuilder out = new StringBuilder(4096);
        for (Family f : families.values()) {
            out.append("# HELP ").append(f.name).append(' ').append(escapeHelp(f.help)).append('\n');
            out.append("# TYPE ").append(f.name).append(' ').append(lower(f.type)).append('\n');
            out.append(f.samples);
        }
        return out.toString();
    }
}
