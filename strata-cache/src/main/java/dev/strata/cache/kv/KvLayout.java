package dev.strata.cache.kv;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * Where an engine keeps the KV of its block slots, described so that one block can be gathered
 * into a contiguous object (in HOST, POOL or DISK) and scattered back, without the engine's
 * tensors being contiguous per block.
 *
 * <p>The contiguous form of a block is the canonical order: for each layer {@code 0..layers-1},
 * the K of the selected tokens, then their V; within a token, heads in order, each head
 * {@code headDim} elements. A full block is therefore {@link KvGeometry#bytesPerBlock()} bytes, a
 * sparse one {@code 2 × layers × selected × headBytesPerToken}. A selection of no tokens is an
 * empty block: no segments and zero bytes (there is nothing to transfer; tiers hold no empty
 * objects).
 *
 * <p>Threads: implementations are immutable descriptions; any thread may call them. The bytes the
 * segments point at belong to the engine, which decides who may write them when.
 */
public interface KvLayout {

    /** The geometry of the KV this layout holds. */
    KvGeometry geometry();

    /** Number of block slots. */
    int slots();

    /**
     * Appends to {@code out} the segments holding {@code slot}'s KV for the selected tokens, in
     * the canonical order, adjacent pieces merged; their concatenation is the contiguous block.
     *
     * @throws IndexOutOfBoundsException if {@code slot} is not in {@code [0, slots())}
     * @throws IllegalArgumentException  if the selection is for another block size
     */
    void segments(int slot, TokenSelection selection, List<MemorySegment> out);

    /** Bytes of the contiguous form of a block with {@code selection}'s tokens. */
    default long blockBytes(TokenSelection selection) {
        return 2L * geometry().layers() * selection.count() * geometry().headBytesPerToken();
    }
}
