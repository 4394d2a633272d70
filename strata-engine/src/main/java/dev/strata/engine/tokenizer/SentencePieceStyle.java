package dev.strata.engine.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Map;

/**
 * The parts of a SentencePiece-style {@code tokenizer.json} (Llama 2, Mistral, Mixtral) that
 * byte-level files do not have, compiled: the normalizer, the Metaspace pre-tokenizer (null when
 * the file has none), the BPE model with byte fallback and unknown token, and the decoder chain;
 * {@code source} keeps the file's own JSON of those parts so the tokenizer can be written back as
 * it was read. Immutable; any thread.
 *
 * @param normalizer normalizer applied to each stretch between added tokens
 * @param metaspace  pre-tokenizer, or null: the normalized stretch is one piece
 * @param model      the BPE model
 * @param decoder    the decoder chain
 * @param source     {"normalizer", "pre_tokenizer", "decoder", "unk_token", "fuse_unk", "byte_fallback"} as in the file
 */
record SentencePieceStyle(TextNormalizer normalizer, Metaspace metaspace, SentencePieceBpe model, TokenDecoder decoder,
                          ObjectNode source) {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** Collects the SentencePiece-specific parts of a {@code tokenizer.json} root, uncompiled. */
    static ObjectNode source(JsonNode root) {
        ObjectNode s = JSON.createObjectNode();
        s.set("normalizer", root.path("normalizer").isMissingNode() ? JSON.nullNode() : root.get("normalizer"));
        s.set("pre_tokenizer", root.path("pre_tokenizer").isMissingNode() ? JSON.nullNode() : root.get("pre_tokenizer"));
        s.set("decoder", root.path("decoder").isMissingNode() ? JSON.nullNode() : root.get("decoder"));
        JsonNode model = root.path("model");
        s.set("unk_token", model.path("unk_token").isTextual() ? model.get("unk_token") : JSON.nullNode());
        s.put("fuse_unk", model.path("fuse_unk").asBoolean(false));
        s.put("byte_fallback", model.path("byte_fallback").asBoolean(false));
        return s;
    }

    /**
     * The layout Llama 2, Mistral v0.1 and Mixtral 8x7B ship: normalizer Prepend("▁") then
     * Replace(" ", "▁"), no pre-tokenizer, byte fallback, {@code unkToken} fused, and the decoders
     * Replace("▁", " "), ByteFallback, Fuse, Strip(" ", 1, 0).
     */
    static ObjectNode legacySource(String unkToken) {
        ObjectNode s = JSON.createObjectNode();
        ObjectNode norm = s.putObject("normalizer");
        norm.put("type", "Sequence");
        ArrayNode ns = norm.putArray("normalizers");
        ns.addObject().put("type", "Prepend").put("prepend", "▁");
        ObjectNode rep = ns.addObject().put("type", "Replace");
        rep.putObject("pattern").put("String", " ");
        rep.put("content", "▁");
        s.putNull("pre_tokenizer");
        ObjectNode dec = s.putObject("decoder");
        dec.put("type", "Sequence");
        ArrayNode ds = dec.putArray("decoders");
        ObjectNode drep = ds.addObject().put("type", "Replace");
        drep.putObject("pattern").put("String", "▁");
        drep.put("content", " ");
        ds.addObject().put("type", "ByteFallback");
        ds.addObject().put("type", "Fuse");
        ds.addObject().put("type", "Strip").put("content", " ").put("start", 1).put("stop", 0);
        s.put("unk_token", unkToken);
        s.put("fuse_unk", true);
        s.put("byte_fallback", true);
        return s;
    }

    /** Compiles {@code source} against the vocabulary and merges; fails naming an unsupported part. */
    static SentencePieceStyle compile(ObjectNode source, Map<String, Integer> vocab, BpeMerges merges, boolean ignoreMerges) {
        JsonNode pre = source.get("pre_tokenizer");
        Metaspace metaspace = null;
        if (pre != null && !pre.isNull()) {
            JsonNode m = pre;
            if ("Sequence".equals(pre.path("type").asText()) && pre.path("pretokenizers").size() == 1) {
                m = pre.path("pretokenizers").get(0);
            }
            if (!"Metaspace".equals(m.path("type").asText())) {
                throw new IllegalArgumentException("pre_tokenizer " + pre + " is not supported with SentencePiece-style BPE "
                        + "(null or Metaspace)");
            }
            metaspace = Metaspace.parse(m);
        }
        String unk = source.path("unk_token").isTextual() ? source.get("unk_token").asText() : null;
        SentencePieceBpe model = new SentencePieceBpe(vocab, merges, source.path("byte_fallback").asBoolean(false), unk,
                source.path("fuse_unk").asBoolean(false), ignoreMerges);
        return new SentencePieceStyle(TextNormalizer.parse(source.get("normalizer")), metaspace, model,
                TokenDecoder.parse(source.get("decoder")), source);
    }
}
