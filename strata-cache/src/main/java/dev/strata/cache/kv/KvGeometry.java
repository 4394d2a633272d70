package dev.strata.cache.kv;

/**
 * The shape of a model's KV cache as seen by one rank, and the bytes it takes.
 *
 * <p>A block holds the keys and values of {@code blockTokens} consecutive tokens for every layer:
 * {@code 2 × layers × blockTokens × kvHeads × headDim} elements of {@code dtype}. Under tensor
 * parallelism each rank holds {@code kvHeads / tp} heads (at least one: with fewer KV heads than
 * ranks, heads are replicated); {@link #perRank(int)} gives that rank's geometry.
 *
 * <p>Immutable; any thread.
 *
 * @param layers      attention layers that keep a KV cache
 * @param kvHeads     key/value heads per layer (after grouped-query sharing)
 * @param headDim     elements per head
 * @param dtype       element type
 * @param blockTokens tokens per block (16 by default)
 */
public record KvGeometry(int layers, int kvHeads, int headDim, KvDtype dtype, int blockTokens) {

    /** The default number of tokens per block. */
    public static final int DEFAULT_BLOCK_TOKENS = 16;

    /**
     * @throws IllegalArgumentException naming the field and value when one is not positive
     */
    public KvGeometry {
        requirePositive("layers", layers);
        requirePositive("kv heads", kvHeads);
        requirePositive("head dim", headDim);
        requirePositive("block tokens", blockTokens);
        if (dtype == null) {
            throw new IllegalArgumentException("KV dtype must be given");
        }
        long block = 2L * layers * blockTokens * kvHeads * headDim * dtype.bytes();
        if (block > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("a KV block of " + block + " bytes is too large ("
                    + layers + " layers × " + blockTokens + " tokens × " + kvHeads + " heads × " + headDim
                    + " × " + dtype.bytes() + " B × 2); use fewer block tokens");
        }
    }

    /** A geometry with {@link #DEFAULT_BLOCK_TOKENS} tokens per block. */
    public static KvGeometry of(int layers, int kvHeads, int headDim, KvDtype dtype) {
        return new KvGeometry(layers, kvHeads, headDim, dtype, DEFAULT_BLOCK_TOKENS);
    }

    /** The same geometry with another block size. */
    public KvGeometry withBlockTokens(int tokens) {
        return new KvGeometry(layers, kvHeads, headDim, dtype, tokens);
    }

    /**
     * The geometry one rank holds under {@code tp}-way tensor parallelism.
     *
     * @throws IllegalArgumentException if {@code tp} is not positive, or the heads do not divide
     *                                  evenly among the ranks (nor the ranks among the heads)
     */
    public KvGeometry perRank(int tp) {
        requirePositive("tensor-parallel degree", tp);
        if (tp <= kvHeads) {
            if (kvHeads % tp != 0) {
                throw new IllegalArgumentException(kvHeads + " KV heads do not divide among " + tp + " ranks");
            }
            return new KvGeometry(layers, kvHeads / tp, headDim, dtype, blockTokens);
        }
        if (tp % kvHeads != 0) {
            throw new IllegalArgumentException(tp + " ranks do not divide among " + kvHeads + " KV heads");
        }
        return new KvGeometry(layers, 1, headDim, dtype, blockTokens);
    }

    /** Bytes of the K (or the V) of one token in one layer. */
    public int headBytesPerToken() {
        return kvHeads * headDim * dtype.bytes();
    }

    /** Bytes of K and V of one token across all layers. */
    public long bytesPerToken() {
        return 2L * layers * headBytesPerToken();
    }

    /** Bytes of the K (or the V) of one block in one layer. */
    public int partBytesPerBlock() {
        return blockTokens * headBytesPerToken();
    }

    /** Bytes of one block: K and V of {@code blockTokens} tokens in every layer. */
    public int bytesPerBlock() {
        return (int) (2L * layers * partBytesPerBlock());
    }

    /** Blocks needed for {@code tokens} tokens (the last one may be partly filled). */
    public long blocksFor(long tokens) {
        if (tokens < 0) {
            throw new IllegalArgumentException("token count must not be negative, got " + tokens);
        }
        return (tokens + blockTokens - 1) / blockTokens;
    }

    private static void requirePositive(String what, int value) {
        if (value <= 0) {
            throw new IllegalArgumentException(what + " must be positive, got " + value);
        }
    }
}
