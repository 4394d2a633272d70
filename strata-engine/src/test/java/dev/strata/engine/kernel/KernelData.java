package dev.strata.engine.kernel;

import dev.strata.engine.model.DType;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;

/** Seeded random inputs for kernel tests: never zero, weights at deliberately unaligned addresses. */
final class KernelData {
    private KernelData() {
    }

    /** {@code n} floats in ±[0.05, 1), never zero. */
    static float[] floats(SplittableRandom r, int n) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            float m = (float) (0.05 + 0.95 * r.nextDouble());
            v[i] = r.nextBoolean() ? m : -m;
        }
        return v;
    }

    /** {@code values} rounded to what {@code dtype} can hold. */
    static float[] rounded(DType dtype, float[] values) {
        float[] v = new float[values.length];
        for (int i = 0; i < v.length; i++) {
            v[i] = switch (dtype) {
                case F32 -> values[i];
                case BF16 -> FloatLoads.bf16ToFloat(FloatLoads.floatToBf16(values[i]));
                case F16 -> Float.float16ToFloat(Float.floatToFloat16(values[i]));
            };
        }
        return v;
    }

    /**
     * {@code values} encoded as {@code dtype} in a segment from {@code arena} that starts
     * {@code misalign} bytes past a 64-byte boundary.
     */
    static MemorySegment encode(Arena arena, DType dtype, float[] values, int misalign) {
        MemorySegment s = arena.allocate((long) values.length * dtype.bytes() + misalign, 64).asSlice(misalign);
        for (int i = 0; i < values.length; i++) {
            store(dtype, s, i, values[i]);
        }
        return s;
    }

    static void store(DType dtype, MemorySegment s, long index, float v) {
        switch (dtype) {
            case F32 -> s.setAtIndex(FloatLoads.F32, index, v);
            case BF16 -> s.setAtIndex(FloatLoads.I16, index, FloatLoads.floatToBf16(v));
            case F16 -> s.setAtIndex(FloatLoads.I16, index, Float.floatToFloat16(v));
        }
    }
}
