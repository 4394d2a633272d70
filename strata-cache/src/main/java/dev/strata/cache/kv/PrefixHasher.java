package dev.strata.cache.kv;

import dev.strata.cache.ObjectKey;

/**
 * Chained 128-bit prefix hashes of KV blocks: the key of block {@code i} of a token sequence is
 * the hash of (the key of block {@code i - 1}, the block's token ids); block 0 chains from the
 * root, which hashes the {@link PrefixHashContext} (model fingerprint, KV dtype, block size,
 * adapter, tenant salt) and the {@link #VERSION}. Two sequences therefore share the key of block
 * {@code i} exactly when they share the context and their first {@code (i + 1) × blockTokens}
 * tokens.
 *
 * <p>Design note: the hash is pure arithmetic over the token ids as unsigned 32-bit values (two
 * per 64-bit word, little end first), so it is the same in every process, JVM and restart; it
 * never depends on {@code hashCode}, iteration order or the platform. {@link #VERSION} names the
 * scheme: it is stored with every shared index, and a process that would hash differently is
 * refused on attach instead of silently missing every block. Change the scheme only with a new
 * version.
 *
 * <p>Only full blocks have keys; the tokens of a partly filled last block are not hashed.
 *
 * <p>Threads: immutable; any thread. The methods allocate nothing but their results.
 */
public final class PrefixHasher {

    /** The version of the hash scheme; part of every key through the root. */
    public static final int VERSION = 1;

    private final PrefixHashContext context;
    private final long rootHigh; // key of the empty prefix, upper half
    private final long rootLow; // key of the empty prefix, lower half

    /** A hasher for one context. */
    public PrefixHasher(PrefixHashContext context) {
        this.context = java.util.Objects.requireNonNull(context, "prefix hash context");
        Hash128 h = new Hash128(0x5354524154414B56L /* "STRATAKV" */, VERSION);
        h.add(context.modelFingerprint().high());
        h.add(context.modelFingerprint().low());
        h.add(context.dtype().label());
        h.add(context.blockTokens());
        h.add(context.adapterId());
        h.add(context.tenantSalt());
        this.rootHigh = h.high();
        this.rootLow = h.low();
    }

    /** The context the chain is seeded with. */
    public PrefixHashContext context() {
        return context;
    }

    /** Tokens per block. */
    public int blockTokens() {
        return context.blockTokens();
    }

    /** The key of the empty prefix: the parent of block 0. */
    public ObjectKey root() {
        return new ObjectKey(rootHigh, rootLow);
    }

    /**
     * The key of the block holding {@code tokens[from, from + blockTokens)} whose predecessor has
     * key {@code parent}.
     *
     * @throws IndexOutOfBoundsException if the block does not lie within {@code tokens}
     */
    public ObjectKey next(ObjectKey parent, int[] tokens, int from) {
        long[] out = new long[2];
        hashBlock(parent.high(), parent.low(), tokens, from, out, 0);
        return new ObjectKey(out[0], out[1]);
    }

    /**
     * The keys of the full blocks among the first {@code length} tokens.
     *
     * @throws IndexOutOfBoundsException if {@code length} exceeds {@code tokens.length}
     */
    public ObjectKey[] chain(int[] tokens, int length) {
        int blocks = fullBlocks(tokens, length);
        long[] raw = new long[2 * blocks];
        chainInto(tokens, length, raw);
        ObjectKey[] keys = new ObjectKey[blocks];
        for (int i = 0; i < blocks; i++) {
            keys[i] = new ObjectKey(raw[2 * i], raw[2 * i + 1]);
        }
        return keys;
    }

    /**
     * Writes the keys of the full blocks among the first {@code length} tokens into {@code out}
     * as (high, low) pairs, without allocating.
     *
     * @return the number of keys written
     * @throws IndexOutOfBoundsException if {@code out} is too short or {@code length} exceeds
     *                                   {@code tokens.length}
     */
    public int chainInto(int[] tokens, int length, long[] out) {
        int blocks = fullBlocks(tokens, length);
        if (out.length < 2 * blocks) {
            throw new IndexOutOfBoundsException("key array of " + out.length + " longs cannot hold " + blocks + " keys");
        }
        long high = rootHigh;
        long low = rootLow;
        int bt = context.blockTokens();
        for (int b = 0; b < blocks; b++) {
            hashBlock(high, low, tokens, b * bt, out, 2 * b);
            high = out[2 * b];
            low = out[2 * b + 1];
        }
        return blocks;
    }

    private int fullBlocks(int[] tokens, int length) {
        if (length < 0 || length > tokens.length) {
            throw new IndexOutOfBoundsException("length " + length + " is outside a token array of " + tokens.length);
        }
        return length / context.blockTokens();
    }

    private void hashBlock(long parentHigh, long parentLow, int[] tokens, int from, long[] out, int at) {
        int bt = context.blockTokens();
        java.util.Objects.checkFromIndexSize(from, bt, tokens.length);
        Hash128 h = new Hash128(parentHigh, parentLow);
        int i = from;
        int end = from + bt;
        for (; i + 1 < end; i += 2) {
            h.add((tokens[i] & 0xFFFFFFFFL) | ((long) tokens[i + 1] << 32));
        }
        if (i < end) {
            h.add((tokens[i] & 0xFFFFFFFFL) | (0xFFFFFFFFL << 32));
        }
        out[at] = h.high();
        out[at + 1] = h.low();
    }
}
