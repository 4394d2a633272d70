package dev.strata.cli;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Translates a command's shorthand flags into the configuration keys they stand for: each flag
 * given becomes one {@code key=value} setting applied after the file, {@code STRATA_SET} and
 * {@code --set}; a flag not given adds nothing, so the file's value stands. The table of flags and
 * keys is in {@code docs/CONFIGURATION.md}. Confined to the main thread.
 */
final class Shorthands {
    private final List<String> settings = new ArrayList<>();
    private final java.util.Map<String, String> flags = new java.util.LinkedHashMap<>(); // key -> the flag that set it

    /** {@code key=value} when {@code value} was given (not null) by {@code flag}. */
    Shorthands put(String flag, String key, Object value) {
        if (value != null) {
            flags.put(key, flag);
            settings.add(key + "=" + (value instanceof Enum<?> e ? e.name().toLowerCase(Locale.ROOT) : value));
        }
        return this;
    }

    /** {@code key=[a,b]} when {@code values} is not empty. */
    Shorthands list(String flag, String key, List<?> values) {
        if (values != null && !values.isEmpty()) {
            flags.put(key, flag);
            settings.add(key + "=[" + String.join(",", values.stream().map(String::valueOf).toList()) + "]");
        }
        return this;
    }

    /**
     * A size flag whose 0 means "no such tier": {@code section=null} for 0, else
     * {@code section.capacity=SIZE}.
     */
    Shorthands tierCapacity(String flag, String section, String size) {
        if (size != null) {
            flags.put(section + ".capacity", flag);
            settings.add(isZero(size) ? section + "=null" : section + ".capacity=" + size);
        }
        return this;
    }

    static boolean isZero(String size) {
        return size.strip().matches("0+(B|KiB|MiB|GiB|TiB|KB|MB|GB|TB)?");
    }

    List<String> settings() {
        return List.copyOf(settings);
    }

    /**
     * {@code failure} with the flag that set its key named first, so that a user who typed the
     * flag sees it ({@code --port (server.port): 70000 is outside [0, 65535]}); unchanged when no
     * flag set the key it names.
     */
    RuntimeException explain(dev.strata.cache.config.ConfigException failure) {
        String message = failure.getMessage();
        for (var e : flags.entrySet()) {
            if (message.startsWith(e.getKey() + ":") || message.startsWith(e.getKey() + " ")) {
                return new dev.strata.cache.config.ConfigException(e.getValue() + " (" + e.getKey() + ")"
                        + message.substring(e.getKey().length()), failure);
            }
        }
        return failure;
    }
}
