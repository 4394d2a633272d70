package dev.strata.cache.kv;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;

/**
 * Engine-side KV memory for layout tests: one native segment, filled with seeded random bytes
 * (padding and guard gaps included), carved into the tensors of one layout kind, together with a
 * scalar reference that computes where each element lives from first principles (layer, K/V,
 * slot, token, head, dim) without looking at {@link StridedKvLayout}'s strides.
 *
 * <p>Tensors are separated by {@link #GUARD} random bytes, so bytes of different tensors are never
 * adjacent in memory and the minimal segment count is a property of each tensor alone.
 */
final class EngineKv {
    /** Random bytes between and around tensors. */
    static final long GUARD = 24;

    /** The engine layouts under test. */
    enum Kind {
        /** One arena {@code [slot][layer][K,V][token][head][dim]}. */
        BLOCK_MAJOR,
        /** Per layer {@code [K,V][slot][token][head][dim]}. */
        LAYER_MAJOR,
        /** Per layer {@code [slot][K,V][head][token][dim]}. */
        HEAD_MAJOR,
        /** Separate K and V regions per layer, padding after each head, each token and each slot. */
        PADDED,
        /** Separate K and V regions per layer, tokens packed, padding only between slots. */
        SLOT_PADDED
    }

    // Padding of the explicit-stride kinds, bytes; odd on purpose.
    static final long HEAD_PAD = 3;
    static final long TOKEN_PAD = 5;
    static final long SLOT_PAD = 11;

    final KvGeometry g;
    final Kind kind;
    final int slots;
    final MemorySegment memory; // the whole engine memory, guards included
    final KvLayout layout;
    private final long[] tensorBase; // offset of each tensor in memory: kind-specific count
    private final long run; // bytes of one head of one token
    private final int e; // bytes per element

    EngineKv(Arena arena, KvGeometry g, Kind kind, int slots, SplittableRandom random) {
        this.g = g;
        this.kind = kind;
        this.slots = slots;
        this.e = g.dtype().bytes();
        this.run = (long) g.headDim() * e;
        int tensors;
        long tensorBytes;
        switch (kind) {
            case BLOCK_MAJOR -> {
                tensors = 1;
                tensorBytes = (long) slots * 2 * g.layers() * g.blockTokens() * g.kvHeads() * run;
            }
            case LAYER_MAJOR, HEAD_MAJOR -> {
                tensors = g.layers();
                tensorBytes = 2L * slots * g.blockTokens() * g.kvHeads() * run;
            }
            case PADDED, SLOT_PADDED -> {
                tensors = 2 * g.layers();
                tensorBytes = (slots - 1) * slotStride() + (g.blockTokens() - 1) * tokenStride()
                        + (g.kvHeads() - 1) * headStride() + run;
            }
            default -> throw new AssertionError(kind);
        }
        tensorBase = new long[tensors];
        long total = GUARD;
        for (int i = 0; i < tensors; i++) {
            tensorBase[i] = total;
            total += tensorBytes + GUARD;
        }
        memory = arena.allocate(total, 64);
        for (long i = 0; i < total; i++) {
            memory.set(ValueLayout.JAVA_BYTE, i, (byte) random.nextInt(256));
        }
        memory.set(ValueLayout.JAVA_BYTE, 0, (byte) 0x5A);
        MemorySegment[] slices = new MemorySegment[tensors];
        for (int i = 0; i < tensors; i++) {
            slices[i] = memory.asSlice(tensorBase[i], tensorBytes);
        }
        layout = switch (kind) {
            case BLOCK_MAJOR -> StridedKvLayout.blockMajor(g, slots, slices[0]);
            case LAYER_MAJOR -> StridedKvLayout.layerMajor(g, slots, slices);
            case HEAD_MAJOR -> StridedKvLayout.headMajor(g, slots, slices);
            case PADDED, SLOT_PADDED -> new StridedKvLayout(g, slots, slices, slotStride(), tokenStride(), headStride());
        };
    }

    private long headStride() {
        return kind == Kind.PADDED ? run + HEAD_PAD : run;
    }

    private long tokenStride() {
        return g.kvHeads() * headStride() + (kind == Kind.PADDED ? TOKEN_PAD : 0);
    }

    private long slotStride() {
        return g.blockTokens() * tokenStride() + SLOT_PAD;
    }

    /**
     * Offset in {@link #memory} of byte {@code b} of element {@code dim} of head {@code head} of
     * token {@code token} of slot {@code slot}, in the K ({@code part 0}) or V ({@code part 1}) of
     * {@code layer}: the reference every layout test compares against.
     */
    long offset(int layer, int part, int slot, int token, int head, int dim, int b) {
        int L = g.layers();
        int T = g.blockTokens();
        int H = g.kvHeads();
        int D = g.headDim();
        long inElement = (long) dim * e + b;
        return switch (kind) {
            case BLOCK_MAJOR -> tensorBase[0]
                    + ((((((long) slot * L + layer) * 2 + part) * T + token) * H + head) * D) * e + inElement;
            case LAYER_MAJOR -> tensorBase[layer]
                    + (((((long) part * slots + slot) * T + token) * H + head) * D) * e + inElement;
            case HEAD_MAJOR -> tensorBase[layer]
                    + (((((long) slot * 2 + part) * H + head) * T + token) * D) * e + inElement;
            case PADDED -> tensorBase[2 * layer + part] + slot * (T * (H * (D * (long) e + HEAD_PAD) + TOKEN_PAD) + SLOT_PAD)
                    + token * (H * (D * (long) e + HEAD_PAD) + TOKEN_PAD) + head * (D * (long) e + HEAD_PAD) + inElement;
            case SLOT_PADDED -> tensorBase[2 * layer + part] + slot * (T * (H * D * (long) e) + SLOT_PAD)
                    + token * (H * D * (long) e) + head * (D * (long) e) + inElement;
        };
    }

    /**
     * The offsets in {@link #memory} of the bytes of {@code slot}'s contiguous block for
     * {@code selection}, in canonical order: layer, K then V, selected tokens ascending, head,
     * dim, byte.
     */
    long[] canonicalOffsets(int slot, TokenSelection selection) {
        int count = selection.count();
        long[] out = new long[Math.toIntExact(2L * g.layers() * count * g.kvHeads() * g.headDim() * e)];
        int i = 0;
        for (int layer = 0; layer < g.layers(); layer++) {
            for (int part = 0; part < 2; part++) {
                for (int t = 0; t < g.blockTokens(); t++) {
                    if (!selection.contains(t)) {
                        continue;
                    }
                    for (int h = 0; h < g.kvHeads(); h++) {
                        for (int d = 0; d < g.headDim(); d++) {
                            for (int b = 0; b < e; b++) {
                                out[i++] = offset(layer, part, slot, t, h, d, b);
                            }
                        }
                    }
                }
            }
        }
        if (i != out.length) {
            throw new AssertionError("reference produced " + i + " of " + out.length + " bytes");
        }
        return out;
    }

    /** The fewest contiguous memory runs that can spell {@code offsets} in order. */
    static int contiguousRuns(long[] offsets) {
        int runs = offsets.length == 0 ? 0 : 1;
        for (int i = 1; i < offsets.length; i++) {
            if (offsets[i] != offsets[i - 1] + 1) {
                runs++;
            }
        }
        return runs;
    }

    /** The bytes at {@code offsets}, in order. */
    byte[] bytesAt(long[] offsets) {
        byte[] out = new byte[offsets.length];
        for (int i = 0; i < offsets.length; i++) {
            out[i] = memory.get(ValueLayout.JAVA_BYTE, offsets[i]);
        }
        return out;
    }

    /** A copy of the whole engine memory. */
    byte[] snapshot() {
        return memory.toArray(ValueLayout.JAVA_BYTE);
    }
}
