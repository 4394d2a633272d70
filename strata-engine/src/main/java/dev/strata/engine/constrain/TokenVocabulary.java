package dev.strata.engine.constrain;

import dev.strata.engine.tokenizer.BpeTokenizer;
import java.util.Arrays;

/**
 * The bytes every token adds to the output, arranged in a trie, so that the tokens a grammar
 * state allows are found in one walk that shares the work of common prefixes and skips every
 * subtree whose prefix the grammar refuses.
 *
 * <p>Tokens left out (never allowed by a mask): special tokens (their text is not output) and
 * tokens that add no bytes. Ids at or beyond {@code size} (padding rows of the model) do not exist
 * here. Built once per tokenizer (about a second for 150k tokens); immutable; any thread.
 */
public final class TokenVocabulary {
    private final int size;           // ids [0, size)
    private final byte[][] bytes;     // [size] each token's bytes; null when left out
    // the trie: node 0 is the root; children are a linked list through firstChild / nextSibling
    final int[] firstChild;           // [nodes] -1: none
    final int[] nextSibling;          // [nodes] -1: none
    final byte[] edge;                // [nodes] the byte leading into the node
    final int[] firstToken;           // [nodes] a token whose bytes end here, -1: none
    final int[] nextToken;            // [size] the next token with the same bytes, -1: none
    final long[] plain;               // [ceil(size / 64)] tokens that are whole characters inside a JSON string, no quote,
                                      // backslash or control byte: written in a string, they leave it open and at a character boundary
    final int[] plainChars;           // [size] code points of a plain token; 0 otherwise
    final int[] notPlain;             // ids of the tokens with bytes that are not plain, ascending
    private final int nodes;

    /** The vocabulary of {@code tokenizer}'s ids below {@code size}. */
    public static TokenVocabulary of(BpeTokenizer tokenizer, int size) {
        byte[][] b = new byte[size][];
        for (int id = 0; id < size; id++) {
            if (id >= tokenizer.size() || tokenizer.isSpecial(id)) {
                continue;
            }
            byte[] t = tokenizer.tokenBytes(id);
            b[id] = t.length == 0 ? null : t;
        }
        return new TokenVocabulary(b);
    }

    /** A vocabulary of the given token bytes ({@code null} entries left out). */
    public TokenVocabulary(byte[][] tokenBytes) {
        this.size = tokenBytes.length;
        this.bytes = tokenBytes.clone();
        long total = 1;
        for (byte[] t : bytes) {
            total += t == null ? 0 : t.length;
        }
        if (total > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("a vocabulary of " + total + " bytes is too large");
        }
        int cap = (int) total;
        int[] fc = new int[cap];
        int[] ns = new int[cap];
        byte[] e = new byte[cap];
        int[] ft = new int[cap];
        Arrays.fill(fc, -1);
        Arrays.fill(ns, -1);
        Arrays.fill(ft, -1);
        int[] nt = new int[size];
        Arrays.fill(nt, -1);
        int n = 1;
        for (int id = 0; id < size; id++) {
            byte[] t = bytes[id];
            if (t == null) {
                continue;
            }
            int at = 0;
            for (byte x : t) {
                int c = fc[at];
                while (c >= 0 && e[c] != x) {
                    c = ns[c];
                }
                if (c < 0) {
                    c = n++;
                    e[c] = x;
                    ns[c] = fc[at];
                    fc[at] = c;
                }
                at = c;
            }
            nt[id] = ft[at];
            ft[at] = id;
        }
        this.nodes = n;
        this.firstChild = Arrays.copyOf(fc, n);
        this.nextSibling = Arrays.copyOf(ns, n);
        this.edge = Arrays.copyOf(e, n);
        this.firstToken = Arrays.copyOf(ft, n);
        this.nextToken = nt;
        this.plain = new long[(size + 63) >>> 6];
        this.plainChars = new int[size];
        int[] other = new int[size];
        int others = 0;
        for (int id = 0; id < size; id++) {
            byte[] t = bytes[id];
            if (t == null) {
                continue;
            }
            int chars = plainStringChars(t);
            if (chars > 0) {
                plain[id >>> 6] |= 1L << (id & 63);
                plainChars[id] = chars;
            } else {
                other[others++] = id;
            }
        }
        this.notPlain = Arrays.copyOf(other, others);
    }

    /** A string node that counts every character (its bound is never reached). */
    private static final GrammarNode.StringNode CHARACTER_COUNT = new GrammarNode.StringNode(0, Integer.MAX_VALUE - 1);

    /**
     * The code points of {@code t} when, written inside a JSON string at a character boundary, it
     * leaves the string open at a character boundary and holds no backslash (escapes are stepped
     * byte by byte); 0 otherwise. The string frame of the grammar judges the bytes, so a plain
     * token is exactly what that frame accepts.
     */
    static int plainStringChars(byte[] t) {
        GrammarFrame f = new GrammarFrame.Str(CHARACTER_COUNT, 0, 0, 0, 0, null);
        for (byte b : t) {
            if (b == '\\') {
                return 0;
            }
            f = f.feed(b & 0xFF);
            if (!(f instanceof GrammarFrame.Str)) {
                return 0; // refused, or a quote ended the string
            }
        }
        GrammarFrame.Str end = (GrammarFrame.Str) f;
        return end.need() == 0 ? end.chars() : 0;
    }

    /** The number of ids, allowed or not. */
    public int size() {
        return size;
    }

    /** The bytes of token {@code id}, or null when it is left out. */
    public byte[] bytes(int id) {
        return id >= 0 && id < size ? bytes[id] : null;
    }

    /** The number of trie nodes (a measure of the walk's worst case). */
    public int trieNodes() {
        return nodes;
    }
}
