package dev.strata.cache.kv;

import java.nio.charset.StandardCharsets;

/**
 * A streaming 128-bit hash over 64-bit words: two lanes that absorb each word with multiply,
 * rotate and cross-add steps, and a final avalanche of both lanes. Pure arithmetic on primitive
 * values, so it gives the same result in every process, JVM and run.
 *
 * <p>Not cryptographic: tenants that must not be able to forge each other's keys use a secret
 * tenant salt, which seeds the chain.
 *
 * <p>Threads: an instance is confined to one thread; the static helpers are pure.
 */
final class Hash128 {
    private static final long C1 = 0x87C37B91114253D5L;
    private static final long C2 = 0x4CF5AD432745937FL;

    private long h1; // lane one
    private long h2; // lane two
    private long words; // words absorbed so far

    Hash128(long seedHigh, long seedLow) {
        h1 = seedHigh;
        h2 = seedLow;
    }

    /** Absorbs one word. */
    void add(long word) {
        long k1 = Long.rotateLeft(word * C1, 31) * C2;
        h1 ^= k1;
        h1 = Long.rotateLeft(h1, 27) + h2;
        h1 = h1 * 5 + 0x52DCE729L;
        long k2 = Long.rotateLeft(word * C2, 33) * C1;
        h2 ^= k2;
        h2 = Long.rotateLeft(h2, 31) + h1;
        h2 = h2 * 5 + 0x38495AB5L;
        words++;
    }

    /** Absorbs a string as its UTF-8 bytes, preceded by its length, so concatenations differ. */
    void add(String text) {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        add(bytes.length);
        long word = 0;
        for (int i = 0; i < bytes.length; i++) {
            word |= (bytes[i] & 0xFFL) << ((i & 7) * 8);
            if ((i & 7) == 7) {
                add(word);
                word = 0;
            }
        }
        if ((bytes.length & 7) != 0) {
            add(word);
        }
    }

    /** The upper half of the digest (call after the last {@link #add}). */
    long high() {
        long a = h1 ^ words;
        long b = h2 ^ words;
        a += b;
        b += a;
        a = avalanche(a);
        b = avalanche(b);
        return a + b;
    }

    /** The lower half of the digest. */
    long low() {
        long a = h1 ^ words;
        long b = h2 ^ words;
        a += b;
        b += a;
        a = avalanche(a);
        b = avalanche(b);
        a += b;
        return b + a;
    }

    /** A bijective 64-bit finaliser: every input bit affects every output bit. */
    static long avalanche(long x) {
        x ^= x >>> 33;
        x *= 0xFF51AFD7ED558CCDL;
        x ^= x >>> 33;
        x *= 0xC4CEB9FE1A85EC53L;
        return x ^ (x >>> 33);
    }
}
