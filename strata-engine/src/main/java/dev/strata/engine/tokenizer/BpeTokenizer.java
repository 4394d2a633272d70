package dev.strata.engine.tokenizer;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.strata.engine.model.ModelFormatException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.text.Normalizer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A byte-level BPE tokenizer as Qwen2/3 and Llama 3 ship it in {@code tokenizer.json}: a vocabulary
 * of byte-level token strings, ranked merges, a split regex, and added tokens.
 *
 * <p>Encoding: added tokens are found first (longest match, leftmost) and emitted as their ids,
 * never split; the text between them is (NFC-normalised when the file asks for it) split by the
 * {@link PreTokenizer}, each piece is turned into UTF-8 bytes, each byte into its
 * {@link ByteLevel} symbol, and the symbols are merged by rank: always the adjacent pair of lowest
 * merge rank, the leftmost on ties, until no adjacent pair has a merge. A binary heap of
 * (rank, position) over a linked list of symbols makes one piece O(n log n); results per piece are
 * cached. With {@code ignore_merges}, a piece that is itself in the vocabulary is one token.
 * Java strings are encoded as UTF-8; an unpaired surrogate becomes '?'.
 *
 * <p>Decoding: tokens become their bytes (added tokens their UTF-8 text, or nothing when skipping
 * special tokens), the bytes are decoded as UTF-8 by the JDK decoder, and each ill-formed
 * subsequence becomes one U+FFFD: Unicode's "maximal subpart" practice (a truncated sequence is one
 * U+FFFD, a byte that cannot start or continue one is one U+FFFD), except that an encoded
 * surrogate (ED A0..BF 80..BF) is one U+FFFD for its three bytes. Without a
 * normalizer, {@code decode(encode(s)) == s} for every string without unpaired surrogates; with
 * NFC it holds for NFC text. {@link #decodeBytes} gives the exact bytes.
 *
 * <p>Threads: immutable apart from the per-piece cache (a concurrent map); any thread.
 */
public final class BpeTokenizer {
    public static final String FILE_NAME = "tokenizer.json";
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int CACHE_LIMIT = 1 << 16; // pieces

    private final Map<String, Integer> vocab;        // byte-level token string -> id
    private final String[] tokens;                   // id -> string (vocab or added content), null for gaps
    private final List<String[]> merges;             // rank -> (left, right)
    private final Map<Long, Integer> rankOf;         // (leftId << 32 | rightId) -> rank
    private final int[] mergedId;                    // rank -> id of the merged token
    private final int[] byteIds = new int[256];      // byte -> id of its symbol
    private final List<AddedToken> added;
    private final Map<Integer, AddedToken> addedById;
    private final Map<String, Integer> addedByContent;
    private final Pattern addedPattern;              // null when there are none
    private final PreTokenizer preTokenizer;
    private final boolean nfc;
    private final boolean ignoreMerges;
    private final Map<String, int[]> cache = new ConcurrentHashMap<>();

    /**
     * Builds a tokenizer. {@code vocab} must hold the symbol of every byte; each merge's parts and
     * their concatenation must be in {@code vocab}; added-token ids must not collide with
     * vocabulary ids of other strings.
     */
    public BpeTokenizer(Map<String, Integer> vocab, List<String[]> merges, List<AddedToken> added, PreTokenizer preTokenizer,
                        boolean nfc, boolean ignoreMerges) {
        this.vocab = Map.copyOf(vocab);
        this.merges = List.copyOf(merges);
        this.added = List.copyOf(added);
        this.preTokenizer = preTokenizer;
        this.nfc = nfc;
        this.ignoreMerges = ignoreMerges;
        int maxId = -1;
        for (int id : vocab.values()) {
            if (id < 0) {
                throw new IllegalArgumentException("token id " + id + " is negative");
            }
            maxId = Math.max(maxId, id);
        }
        for (AddedToken t : added) {
            maxId = Math.max(maxId, t.id());
        }
        tokens = new String[maxId + 1];
        for (var e : vocab.entrySet()) {
            if (tokens[e.getValue()] != null) {
                throw new IllegalArgumentException("token id " + e.getValue() + " is given to both '" + tokens[e.getValue()]
                        + "' and '" + e.getKey() + "'");
            }
            tokens[e.getValue()] = e.getKey();
        }
        Map<Integer, AddedToken> byId = new HashMap<>();
        Map<String, Integer> byContent = new HashMap<>();
        for (AddedToken t : added) {
            if (t.content().isEmpty()) {
                throw new IllegalArgumentException("added token " + t.id() + " is empty");
            }
            if (tokens[t.id()] != null && !tokens[t.id()].equals(t.content())) {
                throw new IllegalArgumentException("added token '" + t.content() + "' has id " + t.id()
                        + ", which the vocabulary gives to '" + tokens[t.id()] + "'");
            }
            tokens[t.id()] = t.content();
            byId.put(t.id(), t);
            byContent.putIfAbsent(t.content(), t.id());
        }
        addedById = Map.copyOf(byId);
        addedByContent = Map.copyOf(byContent);
        for (int b = 0; b < 256; b++) {
            Integer id = vocab.get(String.valueOf(ByteLevel.charOf(b)));
            if (id == null) {
                throw new IllegalArgumentException("the vocabulary lacks the symbol '" + ByteLevel.charOf(b) + "' of byte 0x"
                        + Integer.toHexString(b) + "; byte-level BPE needs all 256");
            }
            byteIds[b] = id;
        }
        rankOf = new HashMap<>(merges.size() * 2);
        mergedId = new int[merges.size()];
        for (int r = 0; r < merges.size(); r++) {
            String[] m = merges.get(r);
            Integer a = vocab.get(m[0]);
            Integer b = vocab.get(m[1]);
            Integer ab = vocab.get(m[0] + m[1]);
            if (a == null || b == null || ab == null) {
                String missing = a == null ? m[0] : b == null ? m[1] : m[0] + m[1];
                throw new IllegalArgumentException("merge " + r + " '" + m[0] + " " + m[1] + "' needs '" + missing
                        + "', which is not in the vocabulary");
            }
            rankOf.putIfAbsent(key(a, b), r);
            mergedId[r] = ab;
        }
        if (added.isEmpty()) {
            addedPattern = null;
        } else {
            List<String> contents = new ArrayList<>();
            for (AddedToken t : added) {
                contents.add(t.content());
            }
            contents.sort(Comparator.comparingInt(String::length).reversed().thenComparing(Comparator.naturalOrder()));
            StringBuilder alt = new StringBuilder();
            for (String c : contents) {
                alt.append(alt.isEmpty() ? "" : "|").append(Pattern.quote(c));
            }
            addedPattern = Pattern.compile(alt.toString());
        }
    }

    private static long key(int a, int b) {
        return ((long) a << 32) | (b & 0xFFFFFFFFL);
    }

    /** Reads {@code dir/tokenizer.json} (or the file itself). */
    public static BpeTokenizer read(Path dirOrFile) {
        Path file = Files.isDirectory(dirOrFile) ? dirOrFile.resolve(FILE_NAME) : dirOrFile;
        String text;
        try {
            text = Files.readString(file);
        } catch (NoSuchFileException e) {
            throw new ModelFormatException(file + ": no such file (a model directory needs tokenizer.json)");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file + ": " + e.getMessage(), e);
        }
        try {
            return parse(JSON.readTree(text));
        } catch (JsonProcessingException e) {
            throw new ModelFormatException(file + ": not valid JSON: " + e.getOriginalMessage());
        } catch (IllegalArgumentException e) {
            throw new ModelFormatException(file + ": " + e.getMessage(), e);
        }
    }

    private static BpeTokenizer parse(JsonNode root) {
        JsonNode model = root.path("model");
        if (!"BPE".equals(model.path("type").asText("BPE")) || !model.has("vocab")) {
            throw new IllegalArgumentException("model.type must be BPE with a vocab, got " + model.path("type"));
        }
        if (model.path("byte_fallback").asBoolean(false)) {
            throw new IllegalArgumentException("model.byte_fallback true (SentencePiece-style BPE) is not supported; "
                    + "Strata reads byte-level BPE");
        }
        Map<String, Integer> vocab = new LinkedHashMap<>();
        for (var it = model.get("vocab").properties().iterator(); it.hasNext(); ) {
            var e = it.next();
            if (!e.getValue().canConvertToInt()) {
                throw new IllegalArgumentException("model.vocab['" + e.getKey() + "'] is " + e.getValue() + ", not an id");
            }
            vocab.put(e.getKey(), e.getValue().intValue());
        }
        List<String[]> merges = new ArrayList<>();
        int r = 0;
        for (JsonNode m : model.path("merges")) {
            if (m.isTextual()) {
                String s = m.asText();
                int sp = s.indexOf(' ', 1);
                if (sp < 0 || s.indexOf(' ', sp + 1) >= 0) {
                    throw new IllegalArgumentException("merge " + r + " '" + s + "' is not two tokens separated by one space");
                }
                merges.add(new String[] {s.substring(0, sp), s.substring(sp + 1)});
            } else if (m.isArray() && m.size() == 2 && m.get(0).isTextual() && m.get(1).isTextual()) {
                merges.add(new String[] {m.get(0).asText(), m.get(1).asText()});
            } else {
                throw new IllegalArgumentException("merge " + r + " is " + m + ", neither \"a b\" nor [\"a\", \"b\"]");
            }
            r++;
        }
        List<AddedToken> added = new ArrayList<>();
        for (JsonNode t : root.path("added_tokens")) {
            if (!t.path("id").canConvertToInt() || !t.path("content").isTextual()) {
                throw new IllegalArgumentException("added_tokens entry " + t + " needs an id and a content");
            }
            added.add(new AddedToken(t.get("id").intValue(), t.get("content").asText(), t.path("special").asBoolean(false)));
        }
        JsonNode norm = root.path("normalizer");
        boolean nfc = false;
        if (!norm.isMissingNode() && !norm.isNull()) {
            if (!"NFC".equals(norm.path("type").asText())) {
                throw new IllegalArgumentException("normalizer " + norm + " is not supported (null or NFC)");
            }
            nfc = true;
        }
        return new BpeTokenizer(vocab, merges, added, preTokenizer(root.path("pre_tokenizer")), nfc,
                model.path("ignore_merges").asBoolean(false));
    }

    private static PreTokenizer preTokenizer(JsonNode p) {
        if (p.isMissingNode() || p.isNull()) {
            return PreTokenizer.none();
        }
        List<JsonNode> steps = new ArrayList<>();
        if ("Sequence".equals(p.path("type").asText())) {
            p.path("pretokenizers").forEach(steps::add);
        } else {
            steps.add(p);
        }
        String regex = null;
        for (JsonNode s : steps) {
            switch (s.path("type").asText()) {
                case "Split" -> {
                    if (regex != null || !s.path("pattern").has("Regex")) {
                        throw new IllegalArgumentException("pre_tokenizer Split " + s + " is not supported (one Split with a Regex)");
                    }
                    if (!"Isolated".equals(s.path("behavior").asText()) || s.path("invert").asBoolean(false)) {
                        throw new IllegalArgumentException("pre_tokenizer Split behaviour " + s.path("behavior")
                                + " (invert " + s.path("invert") + ") is not supported (Isolated, not inverted)");
                    }
                    regex = s.path("pattern").get("Regex").asText();
                }
                case "ByteLevel" -> {
                    if (s.path("add_prefix_space").asBoolean(false)) {
                        throw new IllegalArgumentException("pre_tokenizer ByteLevel add_prefix_space true is not supported");
                    }
                    if (s.path("use_regex").asBoolean(true)) {
                        if (regex != null) {
                            throw new IllegalArgumentException("pre_tokenizer has both a Split regex and ByteLevel use_regex true");
                        }
                        regex = PreTokenizer.GPT2;
                    }
                }
                default -> throw new IllegalArgumentException("pre_tokenizer " + s.path("type") + " is not supported (Split, ByteLevel)");
            }
        }
        return regex == null ? PreTokenizer.none() : PreTokenizer.of(regex);
    }

    /** Writes this tokenizer as a Hugging Face {@code tokenizer.json} (merges in the "a b" form). */
    public ObjectNode toJson() {
        ObjectNode root = JSON.createObjectNode();
        root.put("version", "1.0");
        root.putNull("truncation");
        root.putNull("padding");
        ArrayNode at = root.putArray("added_tokens");
        for (AddedToken t : added) {
            ObjectNode o = at.addObject();
            o.put("id", t.id());
            o.put("content", t.content());
            o.put("single_word", false);
            o.put("lstrip", false);
            o.put("rstrip", false);
            o.put("normalized", false);
            o.put("special", t.special());
        }
        if (nfc) {
            root.putObject("normalizer").put("type", "NFC");
        } else {
            root.putNull("normalizer");
        }
        ObjectNode pre = root.putObject("pre_tokenizer");
        pre.put("type", "Sequence");
        ArrayNode steps = pre.putArray("pretokenizers");
        if (preTokenizer.regex() != null) {
            ObjectNode split = steps.addObject();
            split.put("type", "Split");
            split.putObject("pattern").put("Regex", preTokenizer.regex());
            split.put("behavior", "Isolated");
            split.put("invert", false);
        }
        ObjectNode bl = steps.addObject();
        bl.put("type", "ByteLevel");
        bl.put("add_prefix_space", false);
        bl.put("trim_offsets", false);
        bl.put("use_regex", false);
        root.putNull("post_processor");
        ObjectNode dec = root.putObject("decoder");
        dec.put("type", "ByteLevel");
        dec.put("add_prefix_space", true);
        dec.put("trim_offsets", true);
        dec.put("use_regex", true);
        ObjectNode model = root.putObject("model");
        model.put("type", "BPE");
        model.putNull("dropout");
        model.putNull("unk_token");
        model.putNull("continuing_subword_prefix");
        model.putNull("end_of_word_suffix");
        model.put("fuse_unk", false);
        model.put("byte_fallback", false);
        model.put("ignore_merges", ignoreMerges);
        ObjectNode v = model.putObject("vocab");
        List<Map.Entry<String, Integer>> byId = new ArrayList<>(vocab.entrySet());
        byId.sort(Map.Entry.comparingByValue());
        for (var e : byId) {
            v.put(e.getKey(), e.getValue());
        }
        ArrayNode m = model.putArray("merges");
        for (String[] pair : merges) {
            m.add(pair[0] + " " + pair[1]);
        }
        return root;
    }

    /** One more than the largest id (vocabulary and added tokens). */
    public int size() {
        return tokens.length;
    }

    /** The id of a vocabulary or added token string, or -1. */
    public int id(String token) {
        Integer a = addedByContent.get(token);
        if (a != null) {
            return a;
        }
        Integer id = vocab.get(token);
        return id == null ? -1 : id;
    }

    /** The string of token {@code id} (byte-level form for vocabulary tokens). */
    public String token(int id) {
        if (id < 0 || id >= tokens.length || tokens[id] == null) {
            throw new IllegalArgumentException("token id " + id + " is not in the vocabulary of " + tokens.length);
        }
        return tokens[id];
    }

    public List<AddedToken> addedTokens() {
        return added;
    }

    public boolean isSpecial(int id) {
        AddedToken t = addedById.get(id);
        return t != null && t.special();
    }

    public PreTokenizer preTokenizer() {
        return preTokenizer;
    }

    /** The merges by rank, each (left, right). */
    public List<String[]> merges() {
        return merges;
    }

    /** Encodes {@code text}, matching added tokens. */
    public int[] encode(String text) {
        return encode(text, true);
    }

    /** Encodes {@code text} with no added token matched (for untrusted text that must not inject control tokens). */
    public int[] encodeOrdinary(String text) {
        return encode(text, false);
    }

    private int[] encode(String text, boolean matchAdded) {
        IntList out = new IntList();
        if (matchAdded && addedPattern != null) {
            Matcher m = addedPattern.matcher(text);
            int last = 0;
            while (m.find()) {
                encodeOrdinary(text.substring(last, m.start()), out);
                out.add(id(m.group()));
                last = m.end();
            }
            encodeOrdinary(text.substring(last), out);
        } else {
            encodeOrdinary(text, out);
        }
        return out.toArray();
    }

    private void encodeOrdinary(String text, IntList out) {
        if (text.isEmpty()) {
            return;
        }
        String t = nfc ? Normalizer.normalize(text, Normalizer.Form.NFC) : text;
        for (String piece : preTokenizer.split(t)) {
            int[] ids = cache.get(piece);
            if (ids == null) {
                ids = bpe(piece.getBytes(StandardCharsets.UTF_8));
                if (cache.size() >= CACHE_LIMIT) {
                    cache.clear();
                }
                cache.put(piece, ids);
            }
            out.addAll(ids);
        }
    }

    /** Merges the byte symbols of one piece by rank. */
    int[] bpe(byte[] bytes) {
        int n = bytes.length;
        if (ignoreMerges) {
            Integer whole = vocab.get(ByteLevel.encode(bytes));
            if (whole != null) {
                return new int[] {whole};
            }
        }
        int[] sym = new int[n];
        int[] next = new int[n];
        int[] prev = new int[n];
        for (int i = 0; i < n; i++) {
            sym[i] = byteIds[bytes[i] & 0xFF];
            next[i] = i + 1 < n ? i + 1 : -1;
            prev[i] = i - 1;
        }
        if (n < 2) {
            return sym;
        }
        LongHeap heap = new LongHeap(n);
        for (int i = 0; i + 1 < n; i++) {
            push(heap, sym, i, i + 1);
        }
        boolean[] dead = new boolean[n];
        int alive = n;
        while (!heap.isEmpty()) {
            long top = heap.poll();
            int rank = (int) (top >>> 32);
            int pos = (int) top;
            if (dead[pos]) {
                continue;
            }
            int right = next[pos];
            if (right < 0) {
                continue;
            }
            Integer r = rankOf.get(key(sym[pos], sym[right]));
            if (r == null || r != rank) {
                continue; // stale: a neighbour changed since this pair was queued
            }
            sym[pos] = mergedId[rank];
            dead[right] = true;
            alive--;
            next[pos] = next[right];
            if (next[right] >= 0) {
                prev[next[right]] = pos;
            }
            if (prev[pos] >= 0) {
                push(heap, sym, prev[pos], pos);
            }
            if (next[pos] >= 0) {
                push(heap, sym, pos, next[pos]);
            }
        }
        int[] out = new int[alive];
        int k = 0;
        for (int i = 0; i >= 0; i = next[i]) {
            out[k++] = sym[i];
        }
        return out;
    }

    private void push(LongHeap heap, int[] sym, int left, int right) {
        Integer r = rankOf.get(key(sym[left], sym[right]));
        if (r != null) {
            heap.add(((long) r << 32) | left);
        }
    }

    /** Decodes to text; ill-formed UTF-8 becomes U+FFFD as the class describes. */
    public String decode(int[] ids) {
        return new String(decodeBytes(ids, false), StandardCharsets.UTF_8);
    }

    /** Decodes to text, leaving out special tokens when {@code skipSpecial}. */
    public String decode(int[] ids, boolean skipSpecial) {
        return new String(decodeBytes(ids, skipSpecial), StandardCharsets.UTF_8);
    }

    /** The exact bytes the tokens stand for. */
    public byte[] decodeBytes(int[] ids, boolean skipSpecial) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int id : ids) {
            AddedToken a = addedById.get(id);
            if (a != null) {
                if (!(skipSpecial && a.special())) {
                    out.writeBytes(a.content().getBytes(StandardCharsets.UTF_8));
                }
                continue;
            }
            String t = token(id);
            if (!ByteLevel.decode(t, out)) {
                throw new IllegalArgumentException("token " + id + " '" + t + "' holds a character that is no byte's symbol");
            }
        }
        return out.toByteArray();
    }

    /** A decoder for a stream of tokens that emits text only once its UTF-8 sequences are complete. */
    public StreamDecoder streamDecoder(boolean skipSpecial) {
        return new StreamDecoder(this, skipSpecial);
    }

    @Override
    public String toString() {
        return "BpeTokenizer[" + size() + " tokens, " + merges.size() + " merges, " + added.size() + " added]";
    }

    /** A growable int array. */
    private static final class IntList {
        int[] a = new int[16];
        int n;

        void add(int v) {
            if (n == a.length) {
                a = Arrays.copyOf(a, n * 2);
            }
            a[n++] = v;
        }

        void addAll(int[] vs) {
            if (n + vs.length > a.length) {
                a = Arrays.copyOf(a, Math.max(a.length * 2, n + vs.length));
            }
            System.arraycopy(vs, 0, a, n, vs.length);
            n += vs.length;
        }

        int[] toArray() {
            return Arrays.copyOf(a, n);
        }
    }

    /** A binary min-heap of longs. */
    private static final class LongHeap {
        long[] a;
        int n;

        LongHeap(int capacity) {
            a = new long[Math.max(4, capacity)];
        }

        boolean isEmpty() {
            return n == 0;
        }

        void add(long v) {
            if (n == a.length) {
                a = Arrays.copyOf(a, n * 2);
            }
            int i = n++;
            while (i > 0) {
                int p = (i - 1) >>> 1;
                if (a[p] <= v) {
                    break;
                }
                a[i] = a[p];
                i = p;
            }
            a[i] = v;
        }

        long poll() {
            long top = a[0];
            long v = a[--n];
            int i = 0;
            while (true) {
                int c = 2 * i + 1;
                if (c >= n) {
                    break;
                }
                if (c + 1 < n && a[c + 1] < a[c]) {
                    c++;
                }
                if (a[c] >= v) {
                    break;
                }
                a[i] = a[c];
                i = c;
            }
            a[i] = v;
            return top;
        }
    }
}
