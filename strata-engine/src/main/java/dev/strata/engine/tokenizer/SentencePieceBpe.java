package dev.strata.engine.tokenizer;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The BPE model of SentencePiece-style files (Llama 2, Mistral, Mixtral): a piece is split into
 * Unicode characters (code points), each character that is a vocabulary token is its symbol, and
 * the others become, with {@code byte_fallback}, the {@code <0xNN>} tokens of their UTF-8 bytes
 * (when all of them are in the vocabulary), else the unknown token ({@code fuse_unk} folds a run of
 * unknown characters into one), else nothing; then the shared {@link BpeMerges} loop merges the
 * symbols. With {@code ignore_merges}, a piece that is itself a token is that token. This is the
 * Hugging Face BPE model's order, including its quirk that a pending unknown token is emitted only
 * at the next character found in the vocabulary or at the end of the piece.
 *
 * <p>Invariants: {@code unkId} is -1 exactly when there is no unknown token; the byte ids are -1
 * for bytes without a {@code <0xNN>} token. Immutable apart from the per-piece cache (a concurrent
 * map of pieces up to 256 chars: files without a pre-tokenizer make each stretch one piece); any
 * thread.
 */
final class SentencePieceBpe {
    private static final int CACHE_LIMIT = 1 << 16; // pieces
    private static final int CACHED_PIECE_MAX = 256; // chars: without a pre-tokenizer a piece is a whole prompt, never cached

    private final Map<String, Integer> vocab;  // token string -> id
    private final BpeMerges merges;
    private final int[] byteIds = new int[256]; // byte -> id of <0xNN>, or -1
    private final boolean byteFallback;
    private final int unkId;                   // -1: no unknown token
    private final boolean fuseUnk;
    private final boolean ignoreMerges;
    private final Map<String, int[]> cache = new ConcurrentHashMap<>();

    /** Builds the model; fails naming {@code unkToken} when it is given but not a vocabulary token. */
    SentencePieceBpe(Map<String, Integer> vocab, BpeMerges merges, boolean byteFallback, String unkToken, boolean fuseUnk,
                     boolean ignoreMerges) {
        this.vocab = vocab;
        this.merges = merges;
        this.byteFallback = byteFallback;
        this.fuseUnk = fuseUnk;
        this.ignoreMerges = ignoreMerges;
        if (unkToken == null) {
            unkId = -1;
        } else {
            Integer id = vocab.get(unkToken);
            if (id == null) {
                throw new IllegalArgumentException("model.unk_token '" + unkToken + "' is not in the vocabulary");
            }
            unkId = id;
        }
        for (int b = 0; b < 256; b++) {
            Integer id = vocab.get(String.format("<0x%02X>", b));
            byteIds[b] = id == null ? -1 : id;
        }
    }

    /** The ids of one piece (a pre-tokenized, normalized stretch). */
    int[] encode(String piece) {
        if (piece.length() > CACHED_PIECE_MAX) {
            return bpe(piece);
        }
        int[] ids = cache.get(piece);
        if (ids == null) {
            ids = bpe(piece);
            if (cache.size() >= CACHE_LIMIT) {
                cache.clear();
            }
            cache.put(piece, ids);
        }
        return ids;
    }

    private int[] bpe(String piece) {
        if (ignoreMerges) {
            Integer whole = vocab.get(piece);
            if (whole != null) {
                return new int[] {whole};
            }
        }
        int[] sym = new int[piece.length() * 4];
        int n = 0;
        boolean unkPending = false;
        for (int i = 0; i < piece.length(); ) {
            int cp = piece.codePointAt(i);
            String c = piece.substring(i, i + Character.charCount(cp));
            i += c.length();
            Integer id = vocab.get(c);
            if (id != null) {
                if (unkPending) {
                    sym[n++] = unkId;
                    unkPending = false;
                }
                sym[n++] = id;
                continue;
            }
            if (byteFallback) {
                byte[] bytes = c.getBytes(StandardCharsets.UTF_8);
                boolean all = true;
                for (byte b : bytes) {
                    all &= byteIds[b & 0xFF] >= 0;
                }
                if (all) {
                    for (byte b : bytes) {
                        sym[n++] = byteIds[b & 0xFF];
                    }
                    continue;
                }
            }
            if (unkId >= 0) {
                if (unkPending && !fuseUnk) {
                    sym[n++] = unkId;
                }
                unkPending = true;
            }
        }
        if (unkPending) {
            sym[n++] = unkId;
        }
        return merges.merge(Arrays.copyOf(sym, n));
    }
}
