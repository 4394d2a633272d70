package dev.strata.cache;

/**
 * The 128-bit identity of a stored object (for KV blocks a chained prefix hash, for experts a
 * layer/expert id packed by the caller).
 *
 * <p>Printed and parsed as 32 lower-case hex digits, {@code high} first. Immutable; any thread.
 *
 * @param high the upper 64 bits
 * @param low  the lower 64 bits
 */
public record ObjectKey(long high, long low) {

    /** Number of hex digits in the printed form. */
    public static final int HEX_DIGITS = 32;

    /** A key whose upper half is zero, handy for tests and small id spaces. */
    public static ObjectKey of(long low) {
        return new ObjectKey(0L, low);
    }

    /**
     * Parses the 32-hex-digit form produced by {@link #toString()}.
     *
     * @throws IllegalArgumentException naming the text if it is not 32 hex digits
     */
    public static ObjectKey parse(String hex) {
        if (hex == null || hex.length() != HEX_DIGITS) {
            throw new IllegalArgumentException("object key must be " + HEX_DIGITS + " hex digits, got '" + hex + "'");
        }
        try {
            return new ObjectKey(Long.parseUnsignedLong(hex, 0, 16, 16), Long.parseUnsignedLong(hex, 16, 32, 16));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("object key is not hex: '" + hex + "'", e);
        }
    }

    /** A well-mixed 64-bit hash of both halves (for sketches and hash tables). */
    public long hash64() {
        return hash64(high, low);
    }

    /** {@link #hash64()} of the key with these halves, without making the key. */
    public static long hash64(long high, long low) {
        long h = high * 0x9E3779B97F4A7C15L ^ Long.rotateLeft(low, 31) * 0xC2B2AE3D27D4EB4FL;
        h ^= h >>> 33;
        h *= 0xFF51AFD7ED558CCDL;
        h ^= h >>> 33;
        h *= 0xC4CEB9FE1A85EC53L;
        return h ^ (h >>> 33);
    }

    @Override
    public int hashCode() {
        return (int) (hash64() >>> 32);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ObjectKey k && k.high == high && k.low == low;
    }

    @Override
    public String toString() {
        String h = Long.toHexString(high);
        String l = Long.toHexString(low);
        return "0".repeat(16 - h.length()) + h + "0".repeat(16 - l.length()) + l;
    }
}
