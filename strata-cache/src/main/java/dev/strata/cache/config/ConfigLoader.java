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

    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

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
        ObjectNode root = file == null ? JsonNodeFactory.instance.objectNode() : readFile(file);
        if (envValue != null && !envValue.isBlank()) {
            for (String s : envValue.split(",(?=[A-Za-z0-9_.-]+=)")) {
                apply(root, s.trim(), ENV_SETTINGS);
            }
        }
        for (String s : settings) {
            apply(root, s, "--set");
        }
        return StrataConfig.read(new ConfigNode("", root));
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
        if (value.startsWith("[") && value.endsWith("]")) {
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
