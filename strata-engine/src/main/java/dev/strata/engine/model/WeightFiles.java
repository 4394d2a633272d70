package dev.strata.engine.model;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * All weight files of a model directory, each memory-mapped once into one shared arena that
 * lives until {@link #close()}: either {@code model.safetensors}, or the shards named by
 * {@code model.safetensors.index.json} ({@code {"metadata": {...}, "weight_map": {tensor: file}}}).
 * Every tensor named in the index must be in the shard it names.
 *
 * <p>Threads: immutable after opening; any thread may look up and read tensors. {@link #close()}
 * once, when no thread reads any more (it unmaps every file).
 */
public final class WeightFiles implements AutoCloseable {
    public static final String SINGLE_FILE = "model.safetensors";
    public static final String INDEX_FILE = "model.safetensors.index.json";
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Path dir;
    private final Arena arena;
    private final List<SafetensorsFile> files;
    private final Map<String, SafetensorsFile> byTensor; // tensor name -> file holding it, in order

    private WeightFiles(Path dir, Arena arena, List<SafetensorsFile> files, Map<String, SafetensorsFile> byTensor) {
        this.dir = dir;
        this.arena = arena;
        this.files = files;
        this.byTensor = byTensor;
    }

    /** Opens the weights of the model directory {@code dir}. */
    public static WeightFiles open(Path dir) {
        Path index = dir.resolve(INDEX_FILE);
        Path single = dir.resolve(SINGLE_FILE);
        Arena arena = Arena.ofShared();
        try {
            if (Files.exists(index)) {
                return openSharded(dir, index, arena);
            }
            if (Files.exists(single)) {
                SafetensorsFile f = SafetensorsFile.open(single, arena);
                Map<String, SafetensorsFile> by = new LinkedHashMap<>();
                for (String n : f.names()) {
                    by.put(n, f);
                }
                return new WeightFiles(dir, arena, List.of(f), by);
            }
            throw new ModelFormatException(dir + ": no " + SINGLE_FILE + " or " + INDEX_FILE);
        } catch (RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    private static WeightFiles openSharded(Path dir, Path index, Arena arena) {
        JsonNode root;
        try {
            root = JSON.readTree(Files.readString(index));
        } catch (JsonProcessingException e) {
            throw new ModelFormatException(index + ": not valid JSON: " + e.getOriginalMessage());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + index + ": " + e.getMessage(), e);
        }
        JsonNode map = root == null ? null : root.get("weight_map");
        if (map == null || !map.isObject() || map.isEmpty()) {
            throw new ModelFormatException(index + ": 'weight_map' must be a non-empty object of tensor name to file");
        }
        Map<String, SafetensorsFile> shards = new LinkedHashMap<>();
        Map<String, SafetensorsFile> byTensor = new LinkedHashMap<>();
        for (var it = map.properties().iterator(); it.hasNext(); ) {
            var e = it.next();
            String tensor = e.getKey();
            if (!e.getValue().isTextual()) {
                throw new ModelFormatException(index + ": tensor '" + tensor + "' maps to " + e.getValue() + ", not a file name");
            }
            String file = e.getValue().asText();
            Path base = dir.toAbsolutePath().normalize();
            Path p = base.resolve(file).normalize();
            if (!base.equals(p.getParent())) {
                throw new ModelFormatException(index + ": tensor '" + tensor + "' maps to '" + file
                        + "', which is not a file of the model directory");
            }
            SafetensorsFile shard = shards.computeIfAbsent(file, f -> SafetensorsFile.open(p, arena));
            if (!shard.contains(tensor)) {
                throw new ModelFormatException(index + ": tensor '" + tensor + "' is missing from " + p);
            }
            byTensor.put(tensor, shard);
        }
        return new WeightFiles(dir, arena, new ArrayList<>(shards.values()), byTensor);
    }

    public Path dir() {
        return dir;
    }

    /** The mapped files, each once. */
    public List<SafetensorsFile> files() {
        return Collections.unmodifiableList(files);
    }

    /** Tensor names in index (or header) order. */
    public List<String> names() {
        return List.copyOf(byTensor.keySet());
    }

    public boolean contains(String name) {
        return byTensor.containsKey(name);
    }

    /** The tensor {@code name}; fails naming the directory when no file holds it. */
    public Tensor tensor(String name) {
        return file(name).tensor(name);
    }

    /** The file and byte range holding tensor {@code name}. */
    public ByteRange location(String name) {
        return file(name).location(name);
    }

    /** Sum of all tensors' bytes. */
    public long tensorBytes() {
        long sum = 0;
        for (var e : byTensor.entrySet()) {
            sum += e.getValue().location(e.getKey()).length();
        }
        return sum;
    }

    private SafetensorsFile file(String name) {
        SafetensorsFile f = byTensor.get(name);
        if (f == null) {
            throw new ModelFormatException(dir + ": no weight file holds tensor '" + name + "'");
        }
        return f;
    }

    /** Unmaps every file; tensors read before become invalid. */
    @Override
    public void close() {
        arena.close();
    }
}
