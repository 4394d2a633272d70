package dev.strata.cache.config;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.strata.cache.policy.PolicyKind;
import dev.strata.memory.Sizes;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;

/**
 * A read cursor over one mapping of the configuration tree that remembers its dotted path, so
 * that every value error names its key; {@link #allowOnly} reports unknown keys by name.
 *
 * <p>Confined to the thread that loads the configuration.
 */
final class ConfigNode {
    private final String path; // dotted path of this mapping, "" at the root
    private final ObjectNode node;

    ConfigNode(String path, ObjectNode node) {
        this.path = path;
        this.node = node;
    }

    private String key(String name) {
        return path.isEmpty() ? name : path + "." + name;
    }

    boolean has(String name) {
        JsonNode v = node.get(name);
        return v != null && !v.isNull();
    }

    /** The child mapping {@code name}, or null when absent. */
    ConfigNode child(String name) {
        JsonNode v = node.get(name);
        if (v == null || v.isNull()) {
            return null;
        }
        if (!v.isObject()) {
            throw new ConfigException(key(name) + ": expected a mapping of settings, found '" + v.asText() + "'");
        }
        return new ConfigNode(key(name), (ObjectNode) v);
    }

    String text(String name, String fallback) {
        JsonNode v = node.get(name);
        if (v == null || v.isNull()) {
            return fallback;
        }
        if (!v.isValueNode()) {
            throw new ConfigException(key(name) + ": expected a single value, found " + v);
        }
        return v.asText();
    }

    long size(String name, long fallback) {
        return parsed(name, fallback, Sizes::parse);
    }

    /** The text at {@code name} read by {@code parse}, or {@code fallback} when absent; a parse error names the key. */
    private <T> T parsed(String name, T fallback, java.util.function.Function<String, T> parse) {
        String t = text(name, null);
        if (t == null) {
            return fallback;
        }
        try {
            return parse.apply(t);
        } catch (IllegalArgumentException e) {
            throw new ConfigException(key(name) + ": " + e.getMessage());
        }
    }

    /**
     * A duration with its unit ({@code 500ms}, {@code 2s}, {@code 10m}, {@code 1h}, {@code 1d}),
     * in milliseconds, within {@code [min, max]}.
     */
    long millis(String name, long fallback, long min, long max) {
        String t = text(name, null);
        if (t == null) {
            return fallback;
        }
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("\\s*(\\d+)\\s*(ms|s|m|h|d)\\s*").matcher(t);
        if (!m.matches()) {
            throw new ConfigException(key(name) + ": '" + t + "' is not a duration (a whole number with ms, s, m, h or d, e.g. 500ms or 1h)");
        }
        long unit = switch (m.group(2)) {
            case "ms" -> 1;
            case "s" -> 1_000;
            case "m" -> 60_000;
            case "h" -> 3_600_000;
            default -> 86_400_000;
        };
        long v;
        try {
            v = Math.multiplyExact(Long.parseLong(m.group(1)), unit);
        } catch (ArithmeticException | NumberFormatException e) {
            v = Long.MAX_VALUE;
        }
        if (v < min || v > max) {
            throw new ConfigException(key(name) + ": " + t + " is outside [" + min + "ms, " + max + "ms]");
        }
        return v;
    }

    double fraction(String name, double fallback) {
        String t = text(name, null);
        if (t == null) {
            return fallback;
        }
        double v;
        try {
            v = t.endsWith("%") ? Double.parseDouble(t.substring(0, t.length() - 1).trim()) / 100.0 : Double.parseDouble(t);
        } catch (NumberFormatException e) {
            throw new ConfigException(key(name) + ": not a fraction: '" + t + "' (expected e.g. 0.9 or 90%)");
        }
        if (!(v > 0.0 && v <= 1.0)) {
            throw new ConfigException(key(name) + ": " + t + " is outside (0, 1]");
        }
        return v;
    }

    int integer(String name, int fallback, int min, int max) {
        String t = text(name, null);
        if (t == null) {
            return fallback;
        }
        int v;
        try {
            v = Integer.parseInt(t.trim());
        } catch (NumberFormatException e) {
            throw new ConfigException(key(name) + ": not an integer: '" + t + "'");
        }
        if (v < min || v > max) {
            throw new ConfigException(key(name) + ": " + v + " is outside [" + min + ", " + max + "]");
        }
        return v;
    }

    boolean bool(String name, boolean fallback) {
        String t = text(name, null);
        if (t == null) {
            return fallback;
        }
        return switch (t.trim().toLowerCase(Locale.ROOT)) {
            case "true", "yes", "on" -> true;
            case "false", "no", "off" -> false;
            default -> throw new ConfigException(key(name) + ": not a boolean: '" + t + "' (use true or false)");
        };
    }

    /**
     * An eviction policy by its configuration name, read with {@link PolicyKind#parse}
     * ({@code priority-lru}, {@code lru}, {@code tiny-lfu}, {@code prefix-aware}, {@code adaptive-reach}).
     */
    PolicyKind policy(String name, PolicyKind fallback) {
        return parsed(name, fallback, PolicyKind::parse);
    }

    <E extends Enum<E>> E choice(String name, Class<E> type, E fallback) {
        String t = text(name, null);
        if (t == null) {
            return fallback;
        }
        String wanted = t.trim().toUpperCase(Locale.ROOT).replace("-", "").replace("_", "");
        for (E e : type.getEnumConstants()) {
            if (e.name().replace("_", "").equals(wanted)) {
                return e;
            }
        }
        List<String> names = new ArrayList<>();
        for (E e : type.getEnumConstants()) {
            names.add(e.name().toLowerCase(Locale.ROOT).replace('_', '-'));
        }
        throw new ConfigException(key(name) + ": unknown value '" + t + "' (expected one of " + names + ")");
    }

    /** A list of scalar values; a single scalar counts as a one-element list. */
    List<String> list(String name) {
        JsonNode v = node.get(name);
        List<String> out = new ArrayList<>();
        if (v == null || v.isNull()) {
            return out;
        }
        if (v.isArray()) {
            for (JsonNode e : v) {
                if (!e.isValueNode()) {
                    throw new ConfigException(key(name) + ": expected a list of values, found " + e);
                }
                out.add(e.asText());
            }
        } else if (v.isValueNode()) {
            for (String part : v.asText().split(",")) {
                if (!part.isBlank()) {
                    out.add(part.trim());
                }
            }
        } else {
            throw new ConfigException(key(name) + ": expected a list, found " + v);
        }
        return out;
    }

    /**
     * Fails naming the first key of this mapping that is not one of {@code known}; called before
     * any value is read, so a misspelt key is reported as such rather than as a missing one.
     */
    ConfigNode allowOnly(String... known) {
        java.util.Set<String> allowed = java.util.Set.of(known);
        Iterator<String> names = node.fieldNames();
        while (names.hasNext()) {
            String n = names.next();
            if (!allowed.contains(n)) {
                throw new ConfigException("unknown configuration key '" + key(n) + "' (known here: "
                        + new java.util.TreeSet<>(allowed) + ")");
            }
        }
        return this;
    }

}
