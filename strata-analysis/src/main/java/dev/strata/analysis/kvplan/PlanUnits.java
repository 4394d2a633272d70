package dev.strata.analysis.kvplan;

import dev.strata.memory.Sizes;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Parses the units of a capacity plan's inputs: durations such as {@code 15ms} and bandwidths
 * such as {@code 24GB/s}. Sizes are {@link Sizes#parse} (KB, MB, GB, TB decimal; KiB, MiB, GiB,
 * TiB binary).
 *
 * <p>Stateless; any thread.
 */
public final class PlanUnits {
    private static final Pattern BITS = Pattern.compile("([0-9]+(?:\\.[0-9]+)?)\\s*([kmgt]?)bit");
    private static final Pattern DURATION = Pattern.compile("\\s*([0-9]+(?:\\.[0-9]+)?)\\s*(ns|us|µs|ms|s)\\s*");

    private PlanUnits() {
    }

    /**
     * A duration in ns from {@code <number><unit>}, unit one of ns, us (or µs), ms, s.
     *
     * @throws IllegalArgumentException naming the option and the text
     */
    public static long durationNanos(String option, String text) {
        Matcher m = DURATION.matcher(text == null ? "" : text.toLowerCase(Locale.ROOT));
        if (!m.matches()) {
            throw new IllegalArgumentException(option + ": not a duration: '" + text + "' (expected e.g. 15ms, 800us, 0.02s)");
        }
        double scale = switch (m.group(2)) {
            case "ns" -> 1;
            case "us", "µs" -> 1e3;
            case "ms" -> 1e6;
            default -> 1e9;
        };
        double nanos = Double.parseDouble(m.group(1)) * scale;
        if (nanos < 1 || nanos > Long.MAX_VALUE) {
            throw new IllegalArgumentException(option + ": duration out of range: '" + text + "'");
        }
        return Math.round(nanos);
    }

    /**
     * A size in bytes.
     *
     * @throws IllegalArgumentException naming the option and the text
     */
    public static long size(String option, String text) {
        try {
            return Sizes.parse(text);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(option + ": " + e.getMessage());
        }
    }

    /**
     * A bandwidth in bytes per second from a size per second: {@code 24GB/s}, {@code 7 GB/s},
     * {@code 900MiB/s}; the {@code /s} may be left out. Network rates in bits are read too:
     * {@code 10Gbit/s}, {@code 100 Mbit/s} (decimal: Gbit = 10⁹ bits, 8 bits a byte).
     *
     * @throws IllegalArgumentException naming the option and the text
     */
    public static long bytesPerSecond(String option, String text) {
        String t = text == null ? "" : text.strip();
        if (t.toLowerCase(Locale.ROOT).endsWith("/s")) {
            t = t.substring(0, t.length() - 2);
        }
        Matcher bits = BITS.matcher(t.toLowerCase(Locale.ROOT));
        if (bits.matches()) {
            double scale = switch (bits.group(2)) {
                case "k" -> 1e3;
                case "m" -> 1e6;
                case "g" -> 1e9;
                case "t" -> 1e12;
                default -> 1;
            };
            double bytes = Double.parseDouble(bits.group(1)) * scale / 8;
            if (bytes < 1 || bytes > Long.MAX_VALUE) {
                throw new IllegalArgumentException(option + ": bandwidth out of range: '" + text + "'");
            }
            return Math.round(bytes);
        }
        try {
            return Sizes.parse(t);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(option + ": not a bandwidth: '" + text + "' (expected e.g. 24GB/s, 900MiB/s, 10Gbit/s)");
        }
    }
}
