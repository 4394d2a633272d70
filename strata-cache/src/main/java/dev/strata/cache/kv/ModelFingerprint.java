package dev.strata.cache.kv;

import dev.strata.cache.ObjectKey;
import java.util.Objects;

/**
 * The 128-bit identity of a model, derived from the facts that decide its KV bytes: for example
 * its name, the digest of its weights and its {@code config.json}. Two processes that serve the
 * same model compute the same fingerprint; a pool written for one model refuses another.
 *
 * <p>Pure; any thread.
 */
public final class ModelFingerprint {
    private static final long SEED_HIGH = 0x5354524154414D46L; // "STRATAMF"
    private static final long SEED_LOW = 0x0000000000000001L; // fingerprint scheme 1

    private ModelFingerprint() {
    }

    /**
     * The fingerprint of the given parts, in order (each part is length-prefixed, so
     * {@code ("ab", "c")} and {@code ("a", "bc")} differ).
     *
     * @throws NullPointerException if a part is null
     */
    public static ObjectKey of(String... parts) {
        Hash128 h = new Hash128(SEED_HIGH, SEED_LOW);
        h.add(parts.length);
        for (String part : parts) {
            h.add(Objects.requireNonNull(part, "fingerprint part"));
        }
        return new ObjectKey(h.high(), h.low());
    }

    /** The fingerprint of a model by name and KV geometry alone (for tests and synthetic models). */
    public static ObjectKey of(String name, KvGeometry geometry) {
        return of(name, Integer.toString(geometry.layers()), Integer.toString(geometry.kvHeads()),
                Integer.toString(geometry.headDim()), geometry.dtype().label());
    }
}
