package dev.strata.engine.kernel;

import dev.strata.engine.model.DType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

class FloatLoadsTest {
    private static final Arena ARENA = Arena.ofShared();

    @AfterAll
    static void close() {
        ARENA.close();
    }

    /** All 65,536 patterns at a byte offset of 1, so every vector load is unaligned. */
    private static MemorySegment allPatterns() {
        MemorySegment s = ARENA.allocate(2 * 65536 + 1, 64).asSlice(1);
        for (int i = 0; i < 65536; i++) {
            s.setAtIndex(FloatLoads.I16, i, (short) i);
        }
        return s;
    }

    @Test
    void bf16WideningIsExactOnEveryPattern() {
        MemorySegment s = allPatterns();
        float[] out = new float[65536];
        FloatLoads.toFloats(DType.BF16, s, 0, out, 0, 65536);
        for (int i = 0; i < 65536; i++) {
            int expected = i << 16; // the bit definition of bfloat16
            if (Float.floatToRawIntBits(out[i]) != expected
                    || Float.floatToRawIntBits(FloatLoads.load(DType.BF16, s, i)) != expected) {
                fail("bf16 0x%04x: vector 0x%08x, scalar 0x%08x, expected 0x%08x", i, Float.floatToRawIntBits(out[i]),
                        Float.floatToRawIntBits(FloatLoads.load(DType.BF16, s, i)), expected);
            }
        }
    }

    @Test
    void f16WideningEqualsFloat16ToFloatOnEveryPattern() {
        MemorySegment s = allPatterns();
        float[] out = new float[65536];
        FloatLoads.toFloats(DType.F16, s, 0, out, 0, 65536);
        int nans = 0, subnormals = 0, infinities = 0;
        for (int i = 0; i < 65536; i++) {
            float expected = Float.float16ToFloat((short) i);
            if (Float.floatToRawIntBits(out[i]) != Float.floatToRawIntBits(expected)) {
                fail("f16 0x%04x: vector 0x%08x, Float.float16ToFloat 0x%08x", i, Float.floatToRawIntBits(out[i]),
                        Float.floatToRawIntBits(expected));
            }
            nans += Float.isNaN(out[i]) ? 1 : 0;
            infinities += Float.isInfinite(out[i]) ? 1 : 0;
            subnormals += (i & 0x7C00) == 0 && (i & 0x3FF) != 0 ? 1 : 0;
        }
        assertThat(nans).isEqualTo(2 * 1023);
        assertThat(infinities).isEqualTo(2);
        assertThat(subnormals).isEqualTo(2 * 1023);
    }

    @Test
    void unalignedStartsAndTailsWidenEveryElement() {
        MemorySegment s = allPatterns();
        for (int start : new int[] {0, 1, 3, 7, 1001}) {
            for (int count : new int[] {1, 7, 9, 17, 33, 127}) {
                for (DType d : new DType[] {DType.BF16, DType.F16}) {
                    float[] out = new float[count + 2];
                    out[0] = 42f;
                    out[count + 1] = 43f;
                    FloatLoads.toFloats(d, s, start, out, 1, count);
                    assertThat(out[0]).isEqualTo(42f);
                    assertThat(out[count + 1]).isEqualTo(43f);
                    for (int i = 0; i < count; i++) {
                        assertThat(Float.floatToRawIntBits(out[1 + i]))
                                .as("%s element %d from %d", d, i, start)
                                .isEqualTo(Float.floatToRawIntBits(FloatLoads.load(d, s, start + i)));
                    }
                }
            }
        }
    }

    @Test
    void floatToBf16RoundsToNearestEven() {
        assertThat(FloatLoads.floatToBf16(1.0f)).isEqualTo((short) 0x3F80);
        // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties to even (1.0)
        assertThat(FloatLoads.floatToBf16(Float.intBitsToFloat(0x3F808000))).isEqualTo((short) 0x3F80);
        // 1 + 3·2^-8: halfway, rounds up to the even 1 + 2^-6
        assertThat(FloatLoads.floatToBf16(Float.intBitsToFloat(0x3F818000))).isEqualTo((short) 0x3F82);
        assertThat(FloatLoads.floatToBf16(Float.intBitsToFloat(0x3F808001))).isEqualTo((short) 0x3F81);
        assertThat(Float.isNaN(FloatLoads.bf16ToFloat(FloatLoads.floatToBf16(Float.NaN)))).isTrue();
        assertThat(FloatLoads.bf16ToFloat(FloatLoads.floatToBf16(Float.NEGATIVE_INFINITY)))
                .isEqualTo(Float.NEGATIVE_INFINITY);
    }
}
