package dev.strata.engine.kernel;

import dev.strata.engine.model.DType;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Reads BF16, F16 and F32 elements (little-endian, any alignment) from memory segments as floats,
 * one element or one vector of {@link #FLOATS} lanes at a time. Both conversions are exact and
 * fully vectorised:
 * <ul>
 *   <li>BF16: the 16 bits are sign-extended to an int lane and shifted into the high half;
 *       the float with those bits is the value (NaN payloads, infinities and subnormals kept).</li>
 *   <li>F16: with magnitude bits {@code m = h & 0x7FFF}, normals are {@code (m << 13) + (112 << 23)}
 *       (the exponent rebased from bias 15 to 127, integer arithmetic only); subnormals are
 *       {@code (float) m · 2^-24}, exact, and computed on normal floats only (a float subnormal
 *       operand would cost a microcode assist on x86); lanes with an all-ones exponent (Inf,
 *       NaN) get the float exponent 255 and keep their significand, NaNs made quiet (bit 22 set)
 *       as {@link Float#float16ToFloat} does; the sign bit is OR-ed in last. This equals
 *       {@link Float#float16ToFloat} bit for bit on
 *       all 65,536 inputs.</li>
 * </ul>
 * Stateless; any thread.
 */
public final class FloatLoads {
    /** The float species every kernel uses. */
    public static final VectorSpecies<Float> FLOATS = FloatVector.SPECIES_PREFERRED;
    /** Int lanes matching {@link #FLOATS}. */
    static final VectorSpecies<Integer> INTS = VectorSpecies.of(int.class, FLOATS.vectorShape());
    /** Short lanes of the same count as {@link #FLOATS} (half the bits). */
    static final VectorSpecies<Short> SHORTS = VectorSpecies.of(short.class,
            VectorShape.forBitSize(Math.max(64, FLOATS.vectorBitSize() / 2)));
    /** Lanes per float vector (8 on AVX2). */
    public static final int LANES = FLOATS.length();

    static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;

    static {
        if (SHORTS.length() != LANES) {
            throw new IllegalStateException("no short species with " + LANES + " lanes for float species " + FLOATS);
        }
    }

    private FloatLoads() {
    }

    /** The float whose high 16 bits are {@code bits} (bfloat16 to float, exact). */
    public static float bf16ToFloat(short bits) {
        return Float.intBitsToFloat(bits << 16);
    }

    /** The float nearest-even to {@code f} in bfloat16, as bits (NaN stays a quiet NaN). */
    public static short floatToBf16(float f) {
        int b = Float.floatToRawIntBits(f);
        if (Float.isNaN(f)) {
            return (short) ((b >>> 16) | 0x40);
        }
        return (short) ((b + 0x7FFF + ((b >>> 16) & 1)) >>> 16);
    }

    /** Element {@code index} of {@code dtype} data at {@code segment} as a float. */
    public static float load(DType dtype, MemorySegment segment, long index) {
        return switch (dtype) {
            case F32 -> segment.get(F32, index * 4);
            case BF16 -> bf16ToFloat(segment.get(I16, index * 2));
            case F16 -> Float.float16ToFloat(segment.get(I16, index * 2));
        };
    }

    /** {@link #LANES} elements of {@code dtype} starting at element {@code index}. */
    public static FloatVector loadVector(DType dtype, MemorySegment segment, long index) {
        return switch (dtype) {
            case F32 -> f32Vector(segment, index * 4);
            case BF16 -> bf16Vector(segment, index * 2);
            case F16 -> f16Vector(segment, index * 2);
        };
    }

    /** {@link #LANES} little-endian floats at byte {@code offset}. */
    public static FloatVector f32Vector(MemorySegment segment, long offset) {
        return FloatVector.fromMemorySegment(FLOATS, segment, offset, LE);
    }

    /** {@link #LANES} bfloat16 values at byte {@code offset}, widened exactly. */
    public static FloatVector bf16Vector(MemorySegment segment, long offset) {
        ShortVector s = ShortVector.fromMemorySegment(SHORTS, segment, offset, LE);
        IntVector i = (IntVector) s.convertShape(VectorOperators.S2I, INTS, 0);
        return i.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
    }

    /** {@link #LANES} IEEE half values at byte {@code offset}, widened exactly. */
    public static FloatVector f16Vector(MemorySegment segment, long offset) {
        ShortVector s = ShortVector.fromMemorySegment(SHORTS, segment, offset, LE);
        IntVector h = (IntVector) s.convertShape(VectorOperators.S2I, INTS, 0);
        IntVector magnitude = h.and(0x7FFF);
        IntVector shifted = magnitude.lanewise(VectorOperators.LSHL, 13);
        IntVector normal = shifted.add(0x38000000); // exponent rebased from 15 to 127
        IntVector subnormal = magnitude.convert(VectorOperators.I2F, 0).reinterpretAsFloats().mul(0x1p-24f)
                .reinterpretAsInts(); // significand · 2^-24, exact and computed on normal floats only
        IntVector infOrNan = shifted.or(0x7F800000)
                .blend(shifted.or(0x7FC00000), magnitude.compare(VectorOperators.GT, 0x7C00));
        IntVector bits = normal.blend(subnormal, magnitude.compare(VectorOperators.LT, 0x0400))
                .blend(infOrNan, magnitude.compare(VectorOperators.GE, 0x7C00))
                .or(h.and(0x8000).lanewise(VectorOperators.LSHL, 16));
        return bits.reinterpretAsFloats();
    }

    /** Widens {@code count} elements of {@code dtype} from element {@code index} into {@code out}. */
    public static void toFloats(DType dtype, MemorySegment segment, long index, float[] out, int outOffset, int count) {
        int bound = FLOATS.loopBound(count);
        int i = 0;
        for (; i < bound; i += LANES) {
            loadVector(dtype, segment, index + i).intoArray(out, outOffset + i);
        }
        for (; i < count; i++) {
            out[outOffset + i] = load(dtype, segment, index + i);
        }
    }
}
