package dev.strata.engine.kernel;

import dev.strata.cache.kv.KvDtype;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.engine.model.DType;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * One layer's view of a sequence's KV held in paged blocks, for attention. Each block is a
 * segment in Strata's canonical block layout ({@link dev.strata.cache.kv.KvLayout}): for each
 * layer, K of the block's {@code blockTokens} tokens then their V; within a token, the KV heads in
 * order, each {@code headDim} elements. The blocks are the sequence's in token order; all are full
 * except the last, which holds {@code lastBlockTokens} valid tokens (the rest of its slot is
 * ignored).
 *
 * <pre>
 * block b:  [layer 0: K[token 0..bt)[head 0..kvHeads)[dim] | V[...]] [layer 1: K | V] ...
 * token t of the sequence = block t / bt, token t % bt within it
 * </pre>
 *
 * Immutable; any thread may read through it while the blocks' owner keeps them unchanged.
 *
 * @param geometry        KV shape: layers, kvHeads, headDim, dtype (FP32, FP16 or BF16), blockTokens
 * @param layer           the layer attended, in {@code [0, layers)}
 * @param blocks          at least one block, each at least {@code geometry.bytesPerBlock()} bytes
 * @param lastBlockTokens valid tokens of the last block, in {@code [1, blockTokens]}
 */
public record PagedKv(KvGeometry geometry, int layer, List<MemorySegment> blocks, int lastBlockTokens) {

    public PagedKv {
        blocks = List.copyOf(blocks);
        if (layer < 0 || layer >= geometry.layers()) {
            throw new IllegalArgumentException("layer " + layer + " is not in [0, " + geometry.layers() + ")");
        }
        if (blocks.isEmpty()) {
            throw new IllegalArgumentException("attention needs at least one KV block");
        }
        if (lastBlockTokens < 1 || lastBlockTokens > geometry.blockTokens()) {
            throw new IllegalArgumentException("last block holds " + lastBlockTokens + " tokens; must be in [1, "
                    + geometry.blockTokens() + "]");
        }
        elementType(geometry.dtype());
        for (int b = 0; b < blocks.size(); b++) {
            if (blocks.get(b).byteSize() < geometry.bytesPerBlock()) {
                throw new IllegalArgumentException("KV block " + b + " has " + blocks.get(b).byteSize()
                        + " bytes; a block of " + geometry + " needs " + geometry.bytesPerBlock());
            }
        }
    }

    /** The weight dtype that reads this KV's elements. */
    public DType elementType() {
        return elementType(geometry.dtype());
    }

    /** The weight dtype for a KV dtype the kernels read (FP32, FP16, BF16). */
    public static DType elementType(KvDtype kv) {
        return switch (kv) {
            case FP32 -> DType.F32;
            case FP16 -> DType.F16;
            case BF16 -> DType.BF16;
            default -> throw new IllegalArgumentException("attention kernels read FP32, FP16 and BF16 KV, not "
                    + kv.label());
        };
    }

    /** Valid tokens in all blocks. */
    public int tokens() {
        return (blocks.size() - 1) * geometry.blockTokens() + lastBlockTokens;
    }

    /** The block holding sequence token {@code t}. */
    public MemorySegment block(int t) {
        return blocks.get(t / geometry.blockTokens());
    }

    /** Element index, within {@link #block(int)}, of K of token {@code t}, KV head {@code head}. */
    public long keyIndex(int t, int head) {
        long perToken = (long) geometry.kvHeads() * geometry.headDim();
        long part = perToken * geometry.blockTokens();
        return 2L * layer * part + (t % geometry.blockTokens()) * perToken + (long) head * geometry.headDim();
    }

    /** Element index, within {@link #block(int)}, of V of token {@code t}, KV head {@code head}. */
    public long valueIndex(int t, int head) {
        return keyIndex(t, head) + (long) geometry.kvHeads() * geometry.headDim() * geometry.blockTokens();
    }
}
