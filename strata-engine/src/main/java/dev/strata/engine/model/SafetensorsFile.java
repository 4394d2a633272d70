package dev.strata.engine.model;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.strata.memory.host.OffHeapRegion;
import dev.strata.memory.Sizes;
import dev.strata.memory.log.Log;
import dev.strata.memory.posix.UncachedRead;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * One {@code .safetensors} file, validated, and its data brought into an arena owned by the caller
 * (one arena for the whole model; never one per tensor) in one of two ways ({@link WeightLoad}):
 * {@link WeightLoad#COPY} reads the data area once into private memory of the arena (through
 * {@link UncachedRead}, the one file-to-memory read path), after which the file is not used;
 * {@link WeightLoad#MAP} memory-maps the file read-only. Tensors are read-only slices of the copy
 * or of the mapping, so files and tensors larger than 2 GB need no splitting. A copy may leave the
 * tensors its caller reads only once, at start, mapped (the experts a pager copies into its
 * masters), so that no tensor is held twice; the others are then copied one by one, each on a
 * cache line, through one descriptor.
 *
 * <pre>
 *  offset 0        8                      8 + N                                  file size
 *         +--------+----------------------+--------------------------------------+
 *         | N (u64 | header: N bytes of   | data: tensor bytes; each tensor at   |
 *         |  LE)   | UTF-8 JSON, padded   | [begin, end) of data_offsets,        |
 *         |        | with spaces          | relative to byte 8 + N               |
 *         +--------+----------------------+--------------------------------------+
 * </pre>
 *
 * <p>Header: {@code {"__metadata__": {str: str}, "<name>": {"dtype": "BF16", "shape": [..],
 * "data_offsets": [begin, end]}, ...}}. Checks: N ≤ 100 MiB and 8 + N ≤ file size; every range
 * within the data area; ranges do not overlap; {@code end - begin = product(shape) × dtype bytes};
 * dtype one of BF16, F16, F32 (others refused by name). Every error names the file and the tensor.
 *
 * <p>A mapped file must stay as it was opened while its tensors are read: {@link #changedInPlace()}
 * compares the file at its path with its state at opening (size, modification time, inode; one
 * {@code stat}), so a caller can stop reading before a truncated mapping faults.
 *
 * <p>Threads: immutable after {@link #open} (but for the once-only replacement warning); any thread
 * may read tensors while the arena is open, and call {@link #changedInPlace()}.
 */
public final class SafetensorsFile {
    /** Largest header accepted, as the format's reference reader does. */
    public static final long MAX_HEADER_BYTES = 100L << 20;
    /** Bytes of the header-length prefix. */
    public static final int PREFIX_BYTES = 8;
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long COPY_ALIGNMENT = 4096; // bytes: the copied data area starts on a page, as a mapping does
    private static final long TENSOR_ALIGNMENT = 64; // bytes: each tensor copied alone starts on a cache line

    /** One tensor's entry in the header; {@code fileOffset} is absolute. */
    record Entry(String name, DType dtype, long[] shape, long fileOffset, long byteSize) {
    }

    private final Path path;
    private final long fileSize;      // bytes
    private final long dataStart;     // 8 + N
    private final Map<String, Entry> entries; // header order
    private final Map<String, String> metadata;
    private final WeightLoad load;
    private final Map<String, MemorySegment> data; // tensor name -> its bytes, read-only: a slice of the copy or the mapping
    private final BasicFileAttributes opened; // the file as opened: size, modification time, inode
    private volatile boolean replacedNoted;   // the path names another file (or none); warned once

    private SafetensorsFile(Path path, long fileSize, long dataStart, Map<String, Entry> entries, Map<String, String> metadata,
                            WeightLoad load, Map<String, MemorySegment> data, BasicFileAttributes opened) {
        this.path = path;
        this.fileSize = fileSize;
        this.dataStart = dataStart;
        this.entries = entries;
        this.metadata = metadata;
        this.load = load;
        this.data = data;
        this.opened = opened;
    }

    /** Validates {@code path} and maps it into {@code arena} ({@link WeightLoad#MAP}); the mapping lives as long as the arena. */
    public static SafetensorsFile open(Path path, Arena arena) {
        return open(path, arena, WeightLoad.MAP);
    }

    /**
     * Validates {@code path} and brings its tensors into {@code arena} as {@code load} says; they
     * live as long as the arena. With {@link WeightLoad#COPY} the arena holds the file's data area
     * (its size in bytes, page-aligned) and the file is closed when this returns.
     */
    public static SafetensorsFile open(Path path, Arena arena, WeightLoad load) {
        return open(path, arena, load, name -> false);
    }

    /**
     * As {@link #open(Path, Arena, WeightLoad)}, except that with {@link WeightLoad#COPY} the
     * tensors {@code readOnce} accepts are left mapped instead of copied: tensors the caller reads
     * once, at start, into memory of its own (the expert masters of a pager), so that they are not
     * held twice. The caller must not read those tensors once the file may have changed. With
     * {@link WeightLoad#MAP} every tensor is mapped and {@code readOnce} is not used.
     */
    public static SafetensorsFile open(Path path, Arena arena, WeightLoad load, Predicate<String> readOnce) {
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
            BasicFileAttributes opened = Files.readAttributes(path, BasicFileAttributes.class);
            long size = ch.size();
            if (size < PREFIX_BYTES) {
                throw new ModelFormatException(path + ": " + size + " bytes is too short for a safetensors file (needs at least 8)");
            }
            ByteBuffer prefix = ByteBuffer.allocate(PREFIX_BYTES).order(ByteOrder.LITTLE_ENDIAN);
            readFully(ch, prefix, 0);
            long n = prefix.getLong(0);
            if (n < 2 || n > MAX_HEADER_BYTES) {
                throw new ModelFormatException(path + ": header length " + Long.toUnsignedString(n)
                        + " is not sane (2 .. " + MAX_HEADER_BYTES + " bytes)");
            }
            if (PREFIX_BYTES + n > size) {
                throw new ModelFormatException(path + ": header length " + n + " reaches beyond the end of the file ("
                        + size + " bytes)");
            }
            ByteBuffer header = ByteBuffer.allocate((int) n);
            readFully(ch, header, PREFIX_BYTES);
            String text = new String(header.array(), StandardCharsets.UTF_8);
            long dataStart = PREFIX_BYTES + n;
            Map<String, String> metadata = new LinkedHashMap<>();
            Map<String, Entry> entries = parseHeader(path, text, dataStart, size, metadata);
            Map<String, MemorySegment> data = new HashMap<>();
            List<Entry> copied = new ArrayList<>();
            for (Entry e : entries.values()) {
                if (load == WeightLoad.COPY && !readOnce.test(e.name())) {
                    copied.add(e);
                }
            }
            if (load == WeightLoad.COPY && copied.size() == entries.size()) { // the whole data area, in one read
                MemorySegment area = OffHeapRegion.reserve(size - dataStart, COPY_ALIGNMENT, arena, false);
                UncachedRead.into(path, dataStart, area);
                for (Entry e : copied) {
                    data.put(e.name(), area.asSlice(e.fileOffset() - dataStart, e.byteSize()).asReadOnly());
                }
            } else if (!copied.isEmpty()) { // the copied tensors only, each on a cache line
                long total = 0;
                for (Entry e : copied) {
                    total += Sizes.alignUp(e.byteSize(), TENSOR_ALIGNMENT);
                }
                MemorySegment area = OffHeapRegion.reserve(total, COPY_ALIGNMENT, arena, false);
                List<UncachedRead.Part> parts = new ArrayList<>();
                long at = 0;
                for (Entry e : copied) {
                    MemorySegment dst = area.asSlice(at, e.byteSize());
                    parts.add(new UncachedRead.Part(e.fileOffset(), dst));
                    data.put(e.name(), dst.asReadOnly());
                    at += Sizes.alignUp(e.byteSize(), TENSOR_ALIGNMENT);
                }
                UncachedRead.into(path, parts);
            }
            if (data.size() < entries.size()) {
                MemorySegment mapping = ch.map(FileChannel.MapMode.READ_ONLY, 0, size, arena).asReadOnly();
                for (Entry e : entries.values()) {
                    data.putIfAbsent(e.name(), mapping.asSlice(e.fileOffset(), e.byteSize()));
                }
            }
            return new SafetensorsFile(path, size, dataStart, entries, metadata, load, data, opened);
        } catch (NoSuchFileException e) {
            throw new ModelFormatException(path + ": no such file");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + path + ": " + e.getMessage(), e);
        }
    }

    private static void readFully(FileChannel ch, ByteBuffer buf, long position) throws IOException {
        long pos = position;
        while (buf.hasRemaining()) {
            int r = ch.read(buf, pos);
            if (r < 0) {
                throw new IOException("unexpected end of file at byte " + pos);
            }
            pos += r;
        }
    }

    private static Map<String, Entry> parseHeader(Path path, String text, long dataStart, long fileSize,
                                                  Map<String, String> metadata) {
        JsonNode root;
        try {
            root = JSON.readTree(text);
        } catch (JsonProcessingException e) {
            throw new ModelFormatException(path + ": header is not valid JSON: " + e.getOriginalMessage());
        }
        if (root == null || !root.isObject()) {
            throw new ModelFormatException(path + ": header must be a JSON object");
        }
        long dataBytes = fileSize - dataStart;
        Map<String, Entry> entries = new LinkedHashMap<>();
        for (var it = root.properties().iterator(); it.hasNext(); ) {
            var field = it.next();
            String name = field.getKey();
            JsonNode v = field.getValue();
            if (name.equals("__metadata__")) {
                if (!v.isObject()) {
                    throw new ModelFormatException(path + ": __metadata__ must be an object of strings, got " + v);
                }
                v.properties().forEach(m -> metadata.put(m.getKey(), m.getValue().asText()));
                continue;
            }
            String where = path + ": tensor '" + name + "'";
            if (!v.isObject()) {
                throw new ModelFormatException(where + ": entry must be an object, got " + v);
            }
            JsonNode dt = v.get("dtype");
            if (dt == null || !dt.isTextual()) {
                throw new ModelFormatException(where + ": missing dtype");
            }
            DType dtype = DType.ofSafetensors(dt.asText());
            if (dtype == null) {
                throw new ModelFormatException(where + ": dtype '" + dt.asText() + "' is not supported (BF16, F16, F32)");
            }
            JsonNode sh = v.get("shape");
            if (sh == null || !sh.isArray()) {
                throw new ModelFormatException(where + ": missing shape");
            }
            long[] shape = new long[sh.size()];
            for (int i = 0; i < shape.length; i++) {
                JsonNode d = sh.get(i);
                if (!d.isIntegralNumber() || !d.canConvertToLong() || d.longValue() < 0) {
                    throw new ModelFormatException(where + ": shape " + sh + " holds " + d + ", not a size");
                }
                shape[i] = d.longValue();
            }
            JsonNode off = v.get("data_offsets");
            if (off == null || !off.isArray() || off.size() != 2 || !off.get(0).canConvertToLong() || !off.get(1).canConvertToLong()
                    || !off.get(0).isIntegralNumber() || !off.get(1).isIntegralNumber()) {
                throw new ModelFormatException(where + ": data_offsets must be [begin, end], got " + off);
            }
            long begin = off.get(0).longValue();
            long end = off.get(1).longValue();
            if (begin < 0 || end < begin || end > dataBytes) {
                throw new ModelFormatException(where + ": data_offsets [" + begin + ", " + end
                        + "] lie outside the data area of " + dataBytes + " bytes");
            }
            long expected;
            try {
                expected = Math.multiplyExact(Tensor.elements(shape), dtype.bytes());
            } catch (ArithmeticException e) {
                throw new ModelFormatException(where + ": shape " + Arrays.toString(shape) + " overflows 64 bits");
            }
            if (end - begin != expected) {
                throw new ModelFormatException(where + ": holds " + (end - begin) + " bytes but shape "
                        + Arrays.toString(shape) + " of " + dtype + " needs " + expected);
            }
            entries.put(name, new Entry(name, dtype, shape, dataStart + begin, end - begin));
        }
        List<Entry> sorted = new ArrayList<>(entries.values());
        sorted.sort(Comparator.comparingLong(Entry::fileOffset).thenComparingLong(Entry::byteSize));
        for (int i = 1; i < sorted.size(); i++) {
            Entry a = sorted.get(i - 1);
            Entry b = sorted.get(i);
            if (b.fileOffset() < a.fileOffset() + a.byteSize() && b.byteSize() > 0 && a.byteSize() > 0) {
                throw new ModelFormatException(path + ": tensors '" + a.name() + "' [" + (a.fileOffset() - dataStart) + ", "
                        + (a.fileOffset() - dataStart + a.byteSize()) + ") and '" + b.name() + "' [" + (b.fileOffset() - dataStart)
                        + ", " + (b.fileOffset() - dataStart + b.byteSize()) + ") overlap");
            }
        }
        return entries;
    }

    public Path path() {
        return path;
    }

    /** Bytes of the file. */
    public long fileSize() {
        return fileSize;
    }

    /** Absolute offset of the data area (8 + header length). */
    public long dataStart() {
        return dataStart;
    }

    /** How the tensors were brought into memory. */
    public WeightLoad load() {
        return load;
    }

    /**
     * Whether the file at {@link #path()} was changed in place since it was opened: null when it
     * is as opened, or when the path now names another file or none (replaced by rename or
     * removed: a mapping keeps the file it mapped, which nobody can reach by name any more, so
     * its tensors stay valid; logged once); otherwise what changed (size, modification time),
     * naming the file. One {@code stat}; any thread. Meaningful for {@link WeightLoad#MAP}: a copy
     * never reads the file again.
     */
    public String changedInPlace() {
        BasicFileAttributes now;
        try {
            now = Files.readAttributes(path, BasicFileAttributes.class);
        } catch (NoSuchFileException e) {
            noteReplaced("was removed");
            return null;
        } catch (IOException e) {
            return path + ": cannot be checked while served (" + e.getMessage() + "); its mapped weights are no longer trusted";
        }
        Object key = opened.fileKey();
        if (key != null && !key.equals(now.fileKey())) {
            noteReplaced("was replaced by another file");
            return null;
        }
        if (now.size() == opened.size() && now.lastModifiedTime().equals(opened.lastModifiedTime())) {
            return null;
        }
        String what = now.size() < opened.size() ? "truncated" : now.size() > opened.size() ? "extended" : "rewritten in place";
        return path + " was " + what + " while served: " + now.size() + " bytes modified " + now.lastModifiedTime()
                + ", opened as " + opened.size() + " bytes modified " + opened.lastModifiedTime();
    }

    private void noteReplaced(String what) {
        if (!replacedNoted) {
            replacedNoted = true;
            if (load == WeightLoad.MAP) {
                Log.warn("model", path + " " + what + " while served; the weights mapped from the file as opened stay valid"
                        + " and are served until restart");
            }
        }
    }

    /** The {@code __metadata__} strings. */
    public Map<String, String> metadata() {
        return Collections.unmodifiableMap(metadata);
    }

    /** Tensor names in header order. */
    public List<String> names() {
        return List.copyOf(entries.keySet());
    }

    public boolean contains(String name) {
        return entries.containsKey(name);
    }

    /** The tensor {@code name}, a slice of the mapping or the copy; fails naming the file when absent. */
    public Tensor tensor(String name) {
        Entry e = entry(name);
        return new Tensor(e.name(), e.dtype(), e.shape(), data.get(e.name()));
    }

    /** Where tensor {@code name} lies in the file. */
    public ByteRange location(String name) {
        Entry e = entry(name);
        return new ByteRange(name, path, e.fileOffset(), e.byteSize());
    }

    private Entry entry(String name) {
        Entry e = entries.get(name);
        if (e == null) {
            throw new ModelFormatException(path + ": no tensor '" + name + "'");
        }
        return e;
    }
}
