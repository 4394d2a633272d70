package dev.strata.engine.model;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * One weight tensor: its name, element type, shape (row-major, outermost first) and its bytes, a
 * read-only slice of the safetensors file's private copy or mapping ({@link WeightLoad}). The segment is valid while the
 * {@link WeightFiles} that made it is open. Any thread may read it.
 *
 * @param name  the tensor's name in the file, e.g. {@code model.layers.0.self_attn.q_proj.weight}
 * @param dtype element type
 * @param shape dimensions, outermost first (a [out, in] matrix for projections)
 * @param data  {@code elements() × dtype.bytes()} bytes, little-endian
 */
public record Tensor(String name, DType dtype, long[] shape, MemorySegment data) {

    public Tensor {
        shape = shape.clone();
    }

    @Override
    public long[] shape() {
        return shape.clone();
    }

    /** Dimension {@code i} of the shape. */
    public long dim(int i) {
        return shape[i];
    }

    /** Number of dimensions. */
    public int rank() {
        return shape.length;
    }

    /** Product of the shape (1 for a scalar). */
    public long elements() {
        return elements(shape);
    }

    /** Bytes of the data. */
    public long byteSize() {
        return data.byteSize();
    }

    /** Product of {@code shape}, failing on overflow. */
    public static long elements(long[] shape) {
        long n = 1;
        for (long d : shape) {
            n = Math.multiplyExact(n, d);
        }
        return n;
    }

    /** Reads element {@code index} (flat, row-major) as a float, whatever the dtype. */
    public float getFloat(long index) {
        return switch (dtype) {
            case F32 -> data.get(Dtypes.F32, index * 4);
            case F16 -> Float.float16ToFloat(data.get(Dtypes.I16, index * 2));
            case BF16 -> Float.intBitsToFloat((data.get(Dtypes.I16, index * 2) & 0xFFFF) << 16);
        };
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Tensor t && t.name.equals(name) && t.dtype == dtype && Arrays.equals(t.shape, shape)
                && t.data.address() == data.address() && t.data.byteSize() == data.byteSize();
    }

    @Override
    public int hashCode() {
        return name.hashCode() * 31 + Arrays.hashCode(shape);
    }

    @Override
    public String toString() {
        return name + " " + dtype + " " + Arrays.toString(shape);
    }
}
