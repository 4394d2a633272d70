package dev.strata.cache.config;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;

/**
 * Builds a {@link StrataConfig} from, in increasing precedence: a YAML file, the comma-separated
 * {@code key=value} settings of the {@code STRATA_SET} environment variable, and
 * {@code --set key=value} flags. Keys are dotted paths into the YAML tree
 * ({@code tiers.host.capacity=8GiB}).
 *
 * <p>Stateless; any thread.
 */
public final class ConfigLoader {

    /** The environment variable holding comma-separated {@code key=value} settings. */
    public static final String ENV_SETTINGS = "STRATA_SET";

    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory())
            .enable(com.fasterxml.jackson.core.JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

    private ConfigLoader() {
    }

    /**
     * Loads and reads a configuration (without the cross-checks of {@link StrataConfig#conclude()}).
     *
     * @param file      a YAML file, or null
     * @param settings  {@code key=value} flags, applied last
     * @param envValue  the value of {@link #ENV_SETTINGS}, or null
     * @throws ConfigException naming the file, key or value at fault
     */
    public static StrataConfig load(Path file, List<String> settings, String envValue) {
        return load(List.of(), file, settings, envValue, List.of());
    }

    /**
     * Loads and reads a configuration from five layers, each overriding the ones before it: a
     * command's own defaults, the YAML file, {@link #ENV_SETTINGS}, {@code --set} settings, and the
     * command's shorthand flags (each already translated to its {@code key=value}). A value of
     * {@code null} removes the key (e.g. {@code tiers.host=null}: no HOST tier).
     *
     * @param defaults  {@code key=value} settings of the command, applied first
     * @param file      a YAML file, or null
     * @param settings  {@code --set key=value} flags
     * @param envValue  the value of {@link #ENV_SETTINGS}, or null
     * @param shorthands {@code key=value} settings of the command's shorthand flags, applied last
     * @throws ConfigException naming the file, key or value at fault
     */
    public static StrataConfig load(List<String> defaults, Path file, List<String> settings, String envValue,
                                    List<String> shorthands) {
        ObjectNode root = JsonNodeFactory.instance.objectNode();
        for (String s : defaults) {
            apply(root, s, "default");
        }
        if (file != null) {
            merge(root, readFile(file));
        }
        if (envValue != null && !envValue.isBlank()) {
            for (String s : envValue.split(",(?=[A-Za-z0-9_.-]+=)")) {
                apply(root, s.trim(), ENV_SETTINGS);
            }
        }
        for (String s : settings) {
            apply(root, s, "--set");
        }
        for (String s : shorthands) {
            apply(root, s, "flag");
        }
        return StrataConfig.read(new ConfigNode("", root));
    }

    /** Copies {@code over} into {@code base}, mapping by mapping; values and lists replace. */
    private static void merge(ObjectNode base, ObjectNode over) {
        var fields = over.fields();
        while (fields.hasNext()) {
            var e = fields.next();
            JsonNode mine = base.get(e.getKey());
            if (mine instanceof ObjectNode m && e.getValue() instanceof ObjectNode o) {
                merge(m, o);
            } else {
                base.set(e.getKey(), e.getValue());
            }
        }
    }

    private static ObjectNode readFile(Path file) {
        String text;
        try {
            text = Files.readString(file);
        } catch (NoSuchFileException e) {
            throw new ConfigException("configuration file not found: " + file);
        } catch (IOException e) {
            throw new ConfigException("cannot read configuration file " + file + ": " + e.getMessage(), e);
        }
        JsonNode tree;
        try {
            tree = YAML.readTree(text);
        } catch (JsonProcessingException e) {
            throw new ConfigException("configuration file " + file + " is not valid YAML: " + e.getOriginalMessage()
                    + (e.getLocation() == null ? "" : " (line " + e.getLocation().getLineNr() + ")"), e);
        }
        if (tree == null || tree.isMissingNode() || tree.isNull()) {
            return JsonNodeFactory.instance.objectNode();
        }
        if (!tree.isObject()) {
            throw new ConfigException("configuration file " + file + " must hold a mapping of settings, found: " + tree);
        }
        return (ObjectNode) tree;
    }

    private static void apply(ObjectNode root, String setting, String origin) {
        int eq = setting.indexOf('=');
        if (eq <= 0) {
            throw new ConfigException(origin + " '" + setting + "' is not of the form key=value (e.g. tiers.host.capacity=8GiB)");
        }
        String[] path = setting.substring(0, eq).trim().split("\\.");
        String value = setting.substring(eq + 1).trim();
        ObjectNode node = root;
        for (int i = 0; i < path.length - 1; i++) {
            if (path[i].isEmpty()) {
                throw new ConfigException(origin + " '" + setting + "' has an empty key segment");
            }
            JsonNode next = node.get(path[i]);
            if (next == null || next.isNull()) {
                next = node.putObject(path[i]);
            } else if (!next.isObject()) {
                throw new ConfigException(origin + " '" + setting + "': '" + path[i] + "' holds a value, not settings");
            }
            node = (ObjectNode) next;
        }
        String last = path[path.length - 1];
        if (value.equals("null")) {
            node.remove(last);
        } else if (value.equals("{}")) {
            node.putObject(last);
        } else if (value.startsWith("[") && value.endsWith("]")) {
            var array = node.putArray(last);
            for (String part : value.substring(1, value.length() - 1).split(",")) {
                if (!part.isBlank()) {
                    array.add(part.trim());
                }
            }
        } else {
            node.put(last, value);
        }
    }
}
