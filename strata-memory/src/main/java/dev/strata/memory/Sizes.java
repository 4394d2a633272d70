package dev.strata.memory;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Parses and prints byte sizes such as {@code 8GiB}, {@code 512MiB}, {@code 64KiB}, {@code 2MB},
 * {@code 4096}. Binary units (KiB, MiB, GiB, TiB) are powers of 1024; decimal units (KB, MB, GB,
 * TB) powers of 1000, as storage vendors use them.
 *
 * <p>Stateless; any thread.
 */
public final class Sizes {
    public static final long KiB = 1L << 10;
    public static final long MiB = 1L << 20;
    public static final long GiB = 1L << 30;
    public static final long TiB = 1L << 40;

    private static final Pattern SIZE = Pattern.compile("\\s*([0-9]+(?:\\.[0-9]+)?)\\s*([A-Za-z]*)\\s*");

    private Sizes() {
    }

    /**
     * Parses a size.
     *
     * @throws IllegalArgumentException naming the text if it is not a size
     */
    public static long parse(String text) {
        if (text == null) {
            throw new IllegalArgumentException("size is missing");
        }
        Matcher m = SIZE.matcher(text);
        if (!m.matches()) {
            throw new IllegalArgumentException("not a size: '" + text + "' (expected e.g. 4096, 64KiB, 8GiB, 2GB)");
        }
        double number = Double.parseDouble(m.group(1));
        String unit = m.group(2).toLowerCase(Locale.ROOT);
        long scale = switch (unit) {
            case "", "b" -> 1L;
            case "k", "kib" -> KiB;
            case "m", "mib" -> MiB;
            case "g", "gib" -> GiB;
            case "t", "tib" -> TiB;
            case "kb" -> 1_000L;
            case "mb" -> 1_000_000L;
            case "gb" -> 1_000_000_000L;
            case "tb" -> 1_000_000_000_000L;
            default -> throw new IllegalArgumentException(
                    "unknown size unit '" + m.group(2) + "' in '" + text + "' (use B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)");
        };
        double bytes = number * scale;
        if (bytes > Long.MAX_VALUE) {
            throw new IllegalArgumentException("size too large: '" + text + "'");
        }
        if (bytes != Math.floor(bytes)) {
            throw new IllegalArgumentException("size is not a whole number of bytes: '" + text + "'");
        }
        return (long) bytes;
    }

    /** Prints a size in the largest binary unit that keeps it readable, e.g. {@code 1.5 GiB}. */
    public static String format(long bytes) {
        if (bytes < KiB) {
            return bytes + " B";
        }
        String[] units = {"KiB", "MiB", "GiB", "TiB"};
        double v = bytes;
        int u = -1;
        while (v >= 1024 && u < units.length - 1) {
            v /= 1024;
            u++;
        }
        return (v == Math.rint(v) ? String.format(Locale.ROOT, "%.0f", v) : String.format(Locale.ROOT, "%.2f", v))
                + " " + units[u];
    }

    /** Rounds {@code value} up to a multiple of {@code alignment} (a power of two). */
    public static long alignUp(long value, long alignment) {
        return (value + alignment - 1) & -alignment;
    }

    /** True if {@code value} is a positive power of two. */
    public static boolean isPowerOfTwo(long value) {
        return value > 0 && (value & (value - 1)) == 0;
    }
}
