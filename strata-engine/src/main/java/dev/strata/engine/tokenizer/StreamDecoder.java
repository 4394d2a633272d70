package dev.strata.engine.tokenizer;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Decodes tokens one at a time for streaming output: a token may end in the middle of a
 * multi-byte UTF-8 character (byte-level BPE splits characters freely), so the bytes of a
 * character that may still be completed are held back until the next token or {@link #finish()}.
 * Only a prefix that the JDK's UTF-8 decoder would still wait on is held: a lead byte C2..F4
 * followed by fewer continuation bytes than it needs, each in the range allowed at its position
 * (E0 needs A0..BF next, F0 90..BF, F4 80..8F; ED accepts 80..BF because the JDK treats an encoded
 * surrogate ED A0..BF xx as one ill-formed sequence); anything else is emitted at once. The concatenation of everything emitted therefore equals
 * {@link BpeTokenizer#decode(int[], boolean)} of all the tokens, replacement characters included.
 *
 * <p>SentencePiece-style tokenizers decode through a decoder chain whose output for a token depends
 * on its neighbours (the first token loses its leading space; a run of byte tokens is decoded
 * together), so they are streamed as the Hugging Face {@code DecodeStream} does: a short window of
 * ids is decoded after each token and the text beyond the window's earlier decode is emitted, unless
 * it ends in U+FFFD (a character whose bytes may still come); the window then restarts at the ids
 * decoded before this step, keeping one step of context.
 *
 * <p>Threads: one sequence's decoder, used by one thread at a time.
 */
public final class StreamDecoder {
    private final BpeTokenizer tokenizer;
    private final boolean skipSpecial;
    private byte[] pending = new byte[0]; // at most 3 bytes: an incomplete character
    private int[] window = new int[0];    // SentencePiece-style: ids whose decode starts with prefix
    private String prefix = "";           // SentencePiece-style: decode of window[0, prefixIndex) as last emitted
    private int prefixIndex;              // SentencePiece-style: ids of the window already emitted

    StreamDecoder(BpeTokenizer tokenizer, boolean skipSpecial) {
        this.tokenizer = tokenizer;
        this.skipSpecial = skipSpecial;
    }

    /** Adds one token; returns the text that is now complete (possibly empty). */
    public String push(int id) {
        if (!tokenizer.isByteLevel()) {
            return pushWindow(id);
        }
        byte[] add = tokenizer.decodeBytes(new int[] {id}, skipSpecial);
        ByteArrayOutputStream all = new ByteArrayOutputStream(pending.length + add.length);
        all.writeBytes(pending);
        all.writeBytes(add);
        byte[] b = all.toByteArray();
        int keep = incompleteTail(b);
        pending = Arrays.copyOfRange(b, b.length - keep, b.length);
        return new String(b, 0, b.length - keep, StandardCharsets.UTF_8);
    }

    /** Ends the stream: bytes still held become replacement characters. */
    public String finish() {
        if (!tokenizer.isByteLevel()) {
            String all = tokenizer.decode(window, skipSpecial);
            window = new int[0];
            String rest = all.length() > prefix.length() && all.startsWith(prefix) ? all.substring(prefix.length()) : "";
            prefix = "";
            prefixIndex = 0;
            return rest;
        }
        String s = new String(pending, StandardCharsets.UTF_8);
        pending = new byte[0];
        return s;
    }

    private String pushWindow(int id) {
        window = Arrays.copyOf(window, window.length + 1);
        window[window.length - 1] = id;
        String text = tokenizer.decode(window, skipSpecial);
        if (text.length() <= prefix.length() || text.endsWith("\uFFFD") || !text.startsWith(prefix)) {
            return "";
        }
        String fresh = text.substring(prefix.length());
        int nextPrefixIndex = window.length - prefixIndex;
        window = Arrays.copyOfRange(window, prefixIndex, window.length);
        prefix = tokenizer.decode(window, skipSpecial);
        prefixIndex = nextPrefixIndex;
        return fresh;
    }

    /** Length of the suffix of {@code b} that is a valid but incomplete UTF-8 sequence (0 if none). */
    static int incompleteTail(byte[] b) {
        for (int k = 1; k <= 3 && k <= b.length; k++) {
            int lead = b[b.length - k] & 0xFF;
            int need = lead >= 0xC2 && lead <= 0xDF ? 2 : lead >= 0xE0 && lead <= 0xEF ? 3 : lead >= 0xF0 && lead <= 0xF4 ? 4 : 0;
            if (need == 0) {
                if ((lead & 0xC0) == 0x80) {
                    continue; // a continuation byte: look further back for the lead
                }
                return 0;
            }
            if (k >= need) {
                return 0; // the sequence is complete (or over-long): nothing to hold
            }
            for (int i = 1; i < k; i++) {
                int c = b[b.length - k + i] & 0xFF;
                int lo = 0x80;
                int hi = 0xBF;
                if (i == 1) {
                    if (lead == 0xE0) {
                        lo = 0xA0;
                    } else if (lead == 0xF0) {
                        lo = 0x90;
                    } else if (lead == 0xF4) {
                        hi = 0x8F;
                    }
                }
                if (c < lo || c > hi) {
                    return 0;
                }
            }
            return k;
        }
        return 0;
    }
}
