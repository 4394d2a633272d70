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
 * A BPE tokenizer read from a Hugging Face {@code tokenizer.json}, of either kind real checkpoints
 * ship: byte-level BPE (Qwen2/3, Llama 3, OLMoE: a vocabulary of byte-level token strings, ranked
 * merges, a split regex, and added tokens), described below, or SentencePiece-style BPE (Llama 2,
 * Mistral, Mixtral: characters as symbols, {@code <0xNN>} byte fallback, an unknown token, a
 * normalizer, an optional Metaspace pre-tokenizer and a decoder chain; see
 * {@link SentencePieceStyle}). Both kinds share the added-token matching and the merge loop
 * ({@link BpeMerges}); the post-processor's template ({@link #encodeWithSpecialTokens},
 * {@link #addsBos}) applies to both. A file is byte-level when its pre-tokenizer or decoder has a
 * {@code ByteLevel} step, SentencePiece-style otherwise.
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
 * <p>SentencePiece-style encoding: added tokens marked not {@code normalized} (Llama 2's and
 * Mistral's) are found first as above in the raw text; each stretch between them is normalized on
 * its own (so Llama 2's Prepend("▁") applies to every stretch); added tokens marked
 * {@code normalized} are then found, by their normalized content, in the normalized stretch;
 * each remaining stretch is split by the Metaspace pre-tokenizer ({@code prepend_scheme first}
 * prepends only to the stretch that starts the text), and each piece is encoded by
 * {@link SentencePieceBpe}. Decoding maps ids to token strings (added tokens to their content,
 * normalized for the {@code normalized} ones, skipped special tokens left out) and runs the file's
 * decoder chain ({@link TokenDecoder}), as the Hugging Face library does; {@link #decodeBytes} is
 * then the UTF-8 of that text.
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
    private final BpeMerges bpeMerges;
    private final int[] byteIds = new int[256];      // byte -> id of its symbol (byte-level only)
    private final SentencePieceStyle sentencePiece;  // null for byte-level files
    private volatile int anchor = -1;                // SentencePiece-style: see anchorId(); found on first use
    private final PostTemplate template;
    private final List<AddedToken> added;
    private final Map<Integer, AddedToken> addedById;
    private final Map<String, Integer> addedByContent;
    private final Pattern addedPattern;              // added tokens matched in the raw text; null when there are none
    private final Map<String, Integer> normalizedAdded; // SentencePiece-style: normalized content -> id of a "normalized" added token
    private final Pattern normalizedAddedPattern;    // their contents, matched in normalized text; null when there are none
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
        this(vocab, merges, added, preTokenizer, nfc, ignoreMerges, null, null);
    }

    /**
     * A SentencePiece-style tokenizer in the layout Llama 2, Mistral v0.1 and Mixtral 8x7B ship:
     * normalizer Prepend("▁") + Replace(" ", "▁"), no pre-tokenizer, byte fallback (the vocabulary
     * should hold {@code <0x00>}..{@code <0xFF>}), {@code unkToken} fused, the legacy decoder chain,
     * and a post-processor template putting {@code bosToken} (null: nothing) before the text.
     */
    public static BpeTokenizer sentencePiece(Map<String, Integer> vocab, List<String[]> merges, List<AddedToken> added,
                                             String unkToken, String bosToken) {
        PostTemplate template = PostTemplate.NONE;
        if (bosToken != null) {
            Integer bos = added.stream().filter(t -> t.content().equals(bosToken)).map(AddedToken::id).findFirst()
                    .orElse(vocab.get(bosToken));
            if (bos == null) {
                throw new IllegalArgumentException("bos token '" + bosToken + "' is neither an added token nor in the vocabulary");
            }
            template = new PostTemplate(new int[] {bos}, new int[0]);
        }
        return new BpeTokenizer(vocab, merges, added, PreTokenizer.none(), false, false,
                SentencePieceStyle.legacySource(unkToken), template);
    }

    private BpeTokenizer(Map<String, Integer> vocab, List<String[]> merges, List<AddedToken> added, PreTokenizer preTokenizer,
                         boolean nfc, boolean ignoreMerges, ObjectNode sentencePieceSource, PostTemplate template) {
        this.template = template == null ? PostTemplate.NONE : template;
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
        for (int b = 0; b < 256 && sentencePieceSource == null; b++) {
            Integer id = vocab.get(String.valueOf(ByteLevel.charOf(b)));
            if (id == null) {
                throw new IllegalArgumentException("the vocabulary lacks the symbol '" + ByteLevel.charOf(b) + "' of byte 0x"
                        + Integer.toHexString(b) + "; byte-level BPE needs all 256");
            }
            byteIds[b] = id;
        }
        bpeMerges = new BpeMerges(this.vocab, merges);
        sentencePiece = sentencePieceSource == null ? null
                : SentencePieceStyle.compile(sentencePieceSource, this.vocab, bpeMerges, ignoreMerges);
        for (int id : this.template.prefix()) {
            token(id);
        }
        for (int id : this.template.suffix()) {
            token(id);
        }
        List<String> raw = new ArrayList<>();
        Map<String, Integer> normalized = new HashMap<>();
        for (AddedToken t : added) {
            if (sentencePiece != null && t.normalized()) {
                normalized.putIfAbsent(sentencePiece.normalizer().apply(t.content()), t.id());
            } else {
                raw.add(t.content());
            }
        }
        addedPattern = leftmostLongest(raw);
        normalizedAdded = Map.copyOf(normalized);
        normalizedAddedPattern = leftmostLongest(new ArrayList<>(normalized.keySet()));
    }

    /** A pattern matching any of {@code contents}, longest first at each position; null when there are none. */
    private static Pattern leftmostLongest(List<String> contents) {
        if (contents.isEmpty()) {
            return null;
        }
        contents.sort(Comparator.comparingInt(String::length).reversed().thenComparing(Comparator.naturalOrder()));
        StringBuilder alt = new StringBuilder();
        for (String c : contents) {
            alt.append(alt.isEmpty() ? "" : "|").append(Pattern.quote(c));
        }
        return Pattern.compile(alt.toString());
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
        boolean byteLevel = hasByteLevelStep(root.path("pre_tokenizer"), "pretokenizers")
                || hasByteLevelStep(root.path("decoder"), "decoders");
        if (byteLevel && model.path("byte_fallback").asBoolean(false)) {
            throw new IllegalArgumentException("model.byte_fallback true with a ByteLevel pre-tokenizer or decoder is not "
                    + "supported (byte fallback belongs to SentencePiece-style BPE)");
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
            added.add(new AddedToken(t.get("id").intValue(), t.get("content").asText(), t.path("special").asBoolean(false),
                    t.path("normalized").asBoolean(false)));
        }
        PostTemplate template = PostTemplate.parse(root.path("post_processor"));
        boolean ignoreMerges = model.path("ignore_merges").asBoolean(false);
        if (!byteLevel) {
            return new BpeTokenizer(vocab, merges, added, PreTokenizer.none(), false, ignoreMerges,
                    SentencePieceStyle.source(root), template);
        }
        JsonNode norm = root.path("normalizer");
        boolean nfc = false;
        if (!norm.isMissingNode() && !norm.isNull()) {
            if (!"NFC".equals(norm.path("type").asText())) {
                throw new IllegalArgumentException("normalizer " + norm + " is not supported (null or NFC)");
            }
            nfc = true;
        }
        return new BpeTokenizer(vocab, merges, added, preTokenizer(root.path("pre_tokenizer")), nfc, ignoreMerges, null, template);
    }

    /** Whether a pre-tokenizer or decoder node is, or is a Sequence holding, a ByteLevel step. */
    private static boolean hasByteLevelStep(JsonNode n, String sequenceField) {
        if ("ByteLevel".equals(n.path("type").asText())) {
            return true;
        }
        for (JsonNode s : n.path(sequenceField)) {
            if ("ByteLevel".equals(s.path("type").asText())) {
                return true;
            }
        }
        return false;
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

    /** Writes this tokenizer as a Hugging Face {@code tokenizer.json} (merges in the "a b" form), of its own kind. */
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
            o.put("normalized", t.normalized());
            o.put("special", t.special());
        }
        ObjectNode sp = sentencePiece == null ? null : sentencePiece.source();
        if (sp != null) {
            root.set("normalizer", sp.get("normalizer"));
            root.set("pre_tokenizer", sp.get("pre_tokenizer"));
            root.set("post_processor", templateJson());
            root.set("decoder", sp.get("decoder"));
            return putModel(root, sp.get("unk_token"), sp.get("fuse_unk").asBoolean(), sp.get("byte_fallback").asBoolean());
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
        root.set("post_processor", templateJson());
        ObjectNode dec = root.putObject("decoder");
        dec.put("type", "ByteLevel");
        dec.put("add_prefix_space", true);
        dec.put("trim_offsets", true);
        dec.put("use_regex", true);
        return putModel(root, JSON.nullNode(), false, false);
    }

    /** The post-processor: null, or a TemplateProcessing putting the template's special tokens around $A. */
    private JsonNode templateJson() {
        if (template.prefix().length == 0 && template.suffix().length == 0) {
            return JSON.nullNode();
        }
        ObjectNode post = JSON.createObjectNode();
        post.put("type", "TemplateProcessing");
        ArrayNode single = post.putArray("single");
        ArrayNode pair = post.putArray("pair");
        ObjectNode specials = post.putObject("special_tokens");
        for (int id : template.prefix()) {
            single.addObject().putObject("SpecialToken").put("id", token(id)).put("type_id", 0);
            pair.addObject().putObject("SpecialToken").put("id", token(id)).put("type_id", 0);
        }
        single.addObject().putObject("Sequence").put("id", "A").put("type_id", 0);
        pair.addObject().putObject("Sequence").put("id", "A").put("type_id", 0);
        for (int id : template.suffix()) {
            single.addObject().putObject("SpecialToken").put("id", token(id)).put("type_id", 0);
        }
        for (int id : template.prefix()) {
            pair.addObject().putObject("SpecialToken").put("id", token(id)).put("type_id", 1);
        }
        pair.addObject().putObject("Sequence").put("id", "B").put("type_id", 1);
        for (int id : template.suffix()) {
            pair.addObject().putObject("SpecialToken").put("id", token(id)).put("type_id", 1);
        }
        for (int id : concat(template.prefix(), template.suffix())) {
            ObjectNode t = specials.putObject(token(id));
            t.put("id", token(id));
            t.putArray("ids").add(id);
            t.putArray("tokens").add(token(id));
        }
        return post;
    }

    private ObjectNode putModel(ObjectNode root, JsonNode unkToken, boolean fuseUnk, boolean byteFallback) {
        ObjectNode model = root.putObject("model");
        model.put("type", "BPE");
        model.putNull("dropout");
        model.set("unk_token", unkToken);
        model.putNull("continuing_subword_prefix");
        model.putNull("end_of_word_suffix");
        model.put("fuse_unk", fuseUnk);
        model.put("byte_fallback", byteFallback);
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

    /** Encodes {@code text}, matching added tokens; the post-processor's special tokens are not added. */
    public int[] encode(String text) {
        return encode(text, true);
    }

    /**
     * Encodes {@code text} as the Hugging Face library does with {@code add_special_tokens}: the
     * post-processor template's special tokens (Llama 2's {@code <s>}) around {@link #encode}.
     */
    public int[] encodeWithSpecialTokens(String text) {
        return concat(concat(template.prefix(), encode(text)), template.suffix());
    }

    /** Whether the post-processor template puts a token before the text (the bos token of Llama 2, Mistral, Llama 3). */
    public boolean addsBos() {
        return template.prefix().length > 0;
    }

    /** Whether this tokenizer is byte-level BPE (false: SentencePiece-style). */
    public boolean isByteLevel() {
        return sentencePiece == null;
    }

    private static int[] concat(int[] a, int[] b) {
        int[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
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
                encodeStretch(text.substring(last, m.start()), last == 0, true, out);
                out.add(id(m.group()));
                last = m.end();
            }
            encodeStretch(text.substring(last), last == 0, true, out);
        } else {
            encodeStretch(text, true, matchAdded, out);
        }
        return out.toArray();
    }

    /**
     * Encodes text holding no raw-matched added token; {@code atTextStart} when it begins the whole
     * text; SentencePiece-style, {@code matchAdded} finds "normalized" added tokens in the normalized text.
     */
    private void encodeStretch(String text, boolean atTextStart, boolean matchAdded, IntList out) {
        if (text.isEmpty()) {
            return;
        }
        if (sentencePiece != null) {
            String normalized = sentencePiece.normalizer().apply(text);
            if (!matchAdded || normalizedAddedPattern == null) {
                encodeNormalized(normalized, atTextStart, out);
                return;
            }
            Matcher m = normalizedAddedPattern.matcher(normalized);
            int last = 0;
            while (m.find()) {
                encodeNormalized(normalized.substring(last, m.start()), atTextStart && last == 0, out);
                out.add(normalizedAdded.get(m.group()));
                last = m.end();
            }
            encodeNormalized(normalized.substring(last), atTextStart && last == 0, out);
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

    /** SentencePiece-style: pre-tokenizes normalized text and encodes its pieces. */
    private void encodeNormalized(String normalized, boolean atTextStart, IntList out) {
        if (normalized.isEmpty()) {
            return;
        }
        if (sentencePiece.metaspace() == null) {
            out.addAll(sentencePiece.model().encode(normalized));
            return;
        }
        for (String piece : sentencePiece.metaspace().split(normalized, atTextStart)) {
            out.addAll(sentencePiece.model().encode(piece));
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
        for (int i = 0; i < n; i++) {
            sym[i] = byteIds[bytes[i] & 0xFF];
        }
        return bpeMerges.merge(sym);
    }

    /** Decodes to text; ill-formed UTF-8 becomes U+FFFD as the class describes. */
    public String decode(int[] ids) {
        return decode(ids, false);
    }

    /** Decodes to text, leaving out special tokens when {@code skipSpecial}. */
    public String decode(int[] ids, boolean skipSpecial) {
        if (sentencePiece != null) {
            List<String> strings = new ArrayList<>(ids.length);
            for (int id : ids) {
                AddedToken a = addedById.get(id);
                if (a != null) {
                    if (!(skipSpecial && a.special())) {
                        // as the reference does, a normalized added token decodes as its normalized content
                        strings.add(a.normalized() ? sentencePiece.normalizer().apply(a.content()) : a.content());
                    }
                } else {
                    strings.add(token(id));
                }
            }
            return sentencePiece.decoder().decode(strings);
        }
        return new String(decodeBytes(ids, skipSpecial), StandardCharsets.UTF_8);
    }

    /** The exact bytes the tokens stand for (SentencePiece-style: the UTF-8 of {@link #decode(int[], boolean)}). */
    public byte[] decodeBytes(int[] ids, boolean skipSpecial) {
        if (sentencePiece != null) {
            return decode(ids, skipSpecial).getBytes(StandardCharsets.UTF_8);
        }
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

    /**
     * The bytes token {@code id} adds to a text when it follows other tokens: its symbols' bytes
     * (byte-level), its content (an added token), or, SentencePiece-style, its piece as the decoder
     * writes it after another token ({@code ▁} as the space it stands for; {@code <0xNN>} as the
     * byte NN). Empty for an id that is no token. Used where each token's own bytes matter:
     * constrained decoding and the {@code bytes} of log-probabilities.
     */
    public byte[] tokenBytes(int id) {
        if (id < 0 || id >= tokens.length || tokens[id] == null && !addedById.containsKey(id)) {
            return new byte[0];
        }
        if (sentencePiece == null || addedById.containsKey(id)) {
            return decodeBytes(new int[] {id}, false);
        }
        String t = tokens[id];
        if (t.length() == 6 && t.startsWith("<0x") && t.endsWith(">")) {
            try {
                return new byte[] {(byte) Integer.parseInt(t.substring(3, 5), 16)};
            } catch (NumberFormatException notAByte) {
                // an ordinary piece that looks like one
            }
        }
        int a = anchorId();
        byte[] before = decodeBytes(new int[] {a}, false);
        byte[] both = decodeBytes(new int[] {a, id}, false);
        if (both.length >= before.length && Arrays.equals(both, 0, before.length, before, 0, before.length)) {
            return Arrays.copyOfRange(both, before.length, both.length);
        }
        return decodeBytes(new int[] {id}, false);
    }

    /** A plain token (a single ASCII letter if there is one) after which another token decodes as it would mid-text. */
    private int anchorId() {
        int a = anchor;
        if (a >= 0) {
            return a;
        }
        for (char c = 'a'; c <= 'z' && a < 0; c++) {
            Integer id = vocab.get(String.valueOf(c));
            a = id == null ? -1 : id;
        }
        for (int i = 0; i < tokens.length && a < 0; i++) {
            if (tokens[i] != null && !addedById.containsKey(i) && !tokens[i].isEmpty() && !tokens[i].startsWith("<0x")) {
                a = i;
            }
        }
        anchor = a;
        return a;
    }

    /** A decoder for a stream of tokens that emits text only once its UTF-8 sequences are complete. */
    public StreamDecoder streamDecoder(boolean skipSpecial) {
        return new StreamDecoder(this, skipSpecial);
    }

    @Override
    public String toString() {
        return "BpeTokenizer[" + (isByteLevel() ? "byte-level, " : "SentencePiece-style, ") + size() + " tokens, "
                + merges.size() + " merges, " + added.size() + " added]";
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
}
