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
import java.util.function.Predicate;

/**
 * All weight files of a model directory, each brought once into one shared arena that lives until
 * {@link #close()}, copied into private memory or memory-mapped ({@link WeightLoad}): either
 * {@code model.safetensors}, or the shards named by {@code model.safetensors.index.json}
 * ({@code {"metadata": {...}, "weight_map": {tensor: file}}}). Every tensor named in the index must
 * be in the shard it names.
 *
 * <p>Mapped files must not change while their tensors are read. {@link #check()} is the guard the
 * code that reads tensors over a long time (the server's generator, before every step) calls: one
 * {@code stat} per file; a file truncated or rewritten in place takes the weights out of service
 * for good ({@link ModelFileChangedException}, naming the file) before any kernel reads the
 * mapping. Copied weights need no guard: {@link #check()} returns at once.
 *
 * <p>Threads: immutable after opening but for the sticky out-of-service state; any thread may look
 * up and read tensors and call {@link #check()} and {@link #problem()}. {@link #close()} once, when
 * no thread reads any more (it unmaps or frees every file's tensors).
 */
public final class WeightFiles implements AutoCloseable {
    public static final String SINGLE_FILE = "model.safetensors";
    public static final String INDEX_FILE = "model.safetensors.index.json";
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Path dir;
    private final Arena arena;
    private final List<SafetensorsFile> files;
    private final Map<String, SafetensorsFile> byTensor; // tensor name -> file holding it, in order
    private final WeightLoad load;
    private volatile String outOfService; // why the mapped weights may no longer be read; null while usable

    private WeightFiles(Path dir, Arena arena, List<SafetensorsFile> files, Map<String, SafetensorsFile> byTensor, WeightLoad load) {
        this.dir = dir;
        this.arena = arena;
        this.files = files;
        this.byTensor = byTensor;
        this.load = load;
    }

    /** Opens the weights of the model directory {@code dir}, copied into private memory ({@link WeightLoad#COPY}). */
    public static WeightFiles open(Path dir) {
        return open(dir, WeightLoad.COPY);
    }

    /** Opens the weights of the model directory {@code dir}, copied or mapped as {@code load} says. */
    public static WeightFiles open(Path dir, WeightLoad load) {
        return open(dir, load, name -> false);
    }

    /**
     * As {@link #open(Path, WeightLoad)}, with the tensors {@code readOnce} accepts left mapped by
     * a copy: the caller reads them once, at start, into memory of its own
     * ({@link SafetensorsFile#open(Path, Arena, WeightLoad, Predicate)}).
     */
    public static WeightFiles open(Path dir, WeightLoad load, Predicate<String> readOnce) {
        Path index = dir.resolve(INDEX_FILE);
        Path single = dir.resolve(SINGLE_FILE);
        Arena arena = Arena.ofShared();
        try {
            if (Files.exists(index)) {
                return openSharded(dir, index, arena, load, readOnce);
            }
            if (Files.exists(single)) {
                SafetensorsFile f = SafetensorsFile.open(single, arena, load, readOnce);
                Map<String, SafetensorsFile> by = new LinkedHashMap<>();
                for (String n : f.names()) {
                    by.put(n, f);
                }
                return new WeightFiles(dir, arena, List.of(f), by, load);
            }
            throw new ModelFormatException(dir + ": no " + SINGLE_FILE + " or " + INDEX_FILE);
        } catch (RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    private static WeightFiles openSharded(Path dir, Path index, Arena arena, WeightLoad load, Predicate<String> readOnce) {
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
            SafetensorsFile shard = shards.computeIfAbsent(file, f -> SafetensorsFile.open(p, arena, load, readOnce));
            if (!shard.contains(tensor)) {
                throw new ModelFormatException(index + ": tensor '" + tensor + "' is missing from " + p);
            }
            byTensor.put(tensor, shard);
        }
        return new WeightFiles(dir, arena, new ArrayList<>(shards.values()), byTensor, load);
    }

    /** How the tensors were brought into memory. */
    public WeightLoad load() {
        return load;
    }

    /**
     * Fails when the weights may no longer be read: a mapped file was truncated or rewritten in
     * place since it was opened (now, or at an earlier check: the state is sticky). Call it before
     * reading mapped tensors after a pause (the generator does, before every step). One
     * {@code stat} per file with {@link WeightLoad#MAP}; nothing with {@link WeightLoad#COPY}. Any
     * thread.
     *
     * @throws ModelFileChangedException naming the file, what changed and what to do
     */
    public void check() {
        String problem = problem();
        if (problem != null) {
            throw new ModelFileChangedException(problem);
        }
    }

    /**
     * Why the weights may no longer be read, or null while they may (what {@link #check()} would
     * throw); runs the same {@code stat}s. Any thread.
     */
    public String problem() {
        String known = outOfService;
        if (known != null || load == WeightLoad.COPY) {
            return known;
        }
        for (SafetensorsFile f : files) {
            String change = f.changedInPlace();
            if (change != null) {
                synchronized (this) {
                    if (outOfService == null) {
                        outOfService = change + "; its weights are memory-mapped (model.load: map), so the model is out of"
                                + " service until it is opened again: restart the server, and replace model files by rename"
                                + " (or serve with model.load: copy, which reads the weights into private memory)";
                        dev.strata.memory.log.Log.error("model", outOfService, null);
                    }
                    return outOfService;
                }
            }
        }
        return null;
    }

    public Path dir() {
        return dir;
    }

    /** The weight files, each once. */
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

    /** Unmaps or frees every file's tensors; tensors read before become invalid. */
    @Override
    public void close() {
        arena.close();
    }
}
