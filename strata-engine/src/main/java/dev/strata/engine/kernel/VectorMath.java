package dev.strata.engine.kernel;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;

/**
 * The exponential for kernels, written with lanewise IEEE operations only (fma, mul, add,
 * conversions) so that its result is the same bits in the interpreter, in compiled code and on
 * any thread; {@link #exp(float)} performs the identical steps on one value, so an element gives
 * the same result whether it falls in a vector body or a scalar tail.
 *
 * <p>Method: {@code n = round(x·log2 e)} by the 1.5·2^23 addition trick, {@code r = x − n·ln 2}
 * in two parts (Cody–Waite), {@code e^r} by its degree-7 Taylor polynomial (|r| ≤ 0.35, error
 * below 1e-8 relative) and scaling by {@code 2^n} through the exponent bits. Accuracy: within
 * 2 ulp of the true value for x in [-87.3, 88]. Inputs above 88 give e^88 (finite); inputs below
 * -87.5 give 0; NaN gives NaN.
 *
 * <p>Stateless; any thread.
 */
public final class VectorMath {
    private static final float LOG2E = 1.44269504088896341f;
    private static final float MAGIC = 0x1.8p23f; // adding it rounds to an integer
    private static final float LN2_HI = 0.693145751953125f; // 16 significant bits: n·LN2_HI exact
    private static final float LN2_LO = 1.42860676533018704e-06f; // ln 2 − LN2_HI
    private static final float HIGH = 88.0f; // e^88 < Float.MAX_VALUE
    private static final float LOW = -87.5f; // below: 0
    private static final float C2 = 1f / 2, C3 = 1f / 6, C4 = 1f / 24, C5 = 1f / 120, C6 = 1f / 720, C7 = 1f / 5040;

    private VectorMath() {
    }

    /** e^x lane by lane, as {@link #exp(float)} per lane. */
    public static FloatVector exp(FloatVector x) {
        FloatVector xc = x.max(LOW).min(HIGH);
        FloatVector n = xc.fma(LOG2E, MAGIC).sub(MAGIC);
        FloatVector r = n.fma(v(-LN2_HI), xc);
        r = n.fma(v(-LN2_LO), r);
        FloatVector p = r.fma(C7, C6);
        p = p.fma(r, v(C5));
        p = p.fma(r, v(C4));
        p = p.fma(r, v(C3));
        p = p.fma(r, v(C2));
        p = p.fma(r, v(1f));
        p = p.fma(r, v(1f));
        FloatVector scale = n.convert(VectorOperators.F2I, 0).reinterpretAsInts().add(127)
                .lanewise(VectorOperators.LSHL, 23).reinterpretAsFloats();
        FloatVector result = p.mul(scale);
        VectorMask<Float> under = x.compare(VectorOperators.LT, LOW);
        return result.blend(0f, under);
    }

    private static FloatVector v(float c) {
        return FloatVector.broadcast(FloatLoads.FLOATS, c);
    }

    /** e^x, the same steps as the vector form. */
    public static float exp(float x) {
        float xc = Math.min(Math.max(x, LOW), HIGH);
        float n = Math.fma(xc, LOG2E, MAGIC) - MAGIC;
        float r = Math.fma(n, -LN2_HI, xc);
        r = Math.fma(n, -LN2_LO, r);
        float p = Math.fma(r, C7, C6);
        p = Math.fma(p, r, C5);
        p = Math.fma(p, r, C4);
        p = Math.fma(p, r, C3);
        p = Math.fma(p, r, C2);
        p = Math.fma(p, r, 1f);
        p = Math.fma(p, r, 1f);
        float scale = Float.intBitsToFloat(((int) n + 127) << 23);
        float result = p * scale;
        return x < LOW ? 0f : result;
    }
}
