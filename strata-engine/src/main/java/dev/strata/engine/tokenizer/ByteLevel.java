package dev.strata.engine.tokenizer;

/**
 * The byte-to-character mapping of byte-level BPE: each of the 256 byte values is shown as one
 * printable character, so that token strings in {@code tokenizer.json} are text. Bytes that are
 * printable in Latin-1 and not a space ('!'..'~', '¡'..'¬', '®'..'ÿ') map to themselves; the
 * other 68 bytes map, in increasing order, to U+0100, U+0101, ... (so the space 0x20 is 'Ġ'
 * U+0120 and the newline 0x0A is 'Ċ' U+010A). Immutable tables; any thread.
 */
public final class ByteLevel {
    private static final char[] BYTE_TO_CHAR = new char[256];
    private static final int[] CHAR_TO_BYTE = new int[512]; // -1 when the char is no byte's image

    static {
        java.util.Arrays.fill(CHAR_TO_BYTE, -1);
        int next = 256;
        for (int b = 0; b < 256; b++) {
            boolean printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            char c = printable ? (char) b : (char) next++;
            BYTE_TO_CHAR[b] = c;
            CHAR_TO_BYTE[c] = b;
        }
    }

    private ByteLevel() {
    }

    /** The character shown for byte {@code b} (0..255). */
    public static char charOf(int b) {
        return BYTE_TO_CHAR[b & 0xFF];
    }

    /** The byte a character stands for, or -1. */
    public static int byteOf(char c) {
        return c < CHAR_TO_BYTE.length ? CHAR_TO_BYTE[c] : -1;
    }

    /** Maps bytes to their characters. */
    public static String encode(byte[] bytes, int from, int to) {
        char[] out = new char[to - from];
        for (int i = from; i < to; i++) {
            out[i - from] = BYTE_TO_CHAR[bytes[i] & 0xFF];
        }
        return new String(out);
    }

    /** Maps bytes to their characters. */
    public static String encode(byte[] bytes) {
        return encode(bytes, 0, bytes.length);
    }

    /**
     * Appends the bytes a token string stands for to {@code out}; returns false (appending nothing
     * more) at the first character that is no byte's image.
     */
    public static boolean decode(String token, java.io.ByteArrayOutputStream out) {
        for (int i = 0; i < token.length(); i++) {
            int b = byteOf(token.charAt(i));
            if (b < 0) {
                return false;
            }
            out.write(b);
        }
        return true;
    }
}
