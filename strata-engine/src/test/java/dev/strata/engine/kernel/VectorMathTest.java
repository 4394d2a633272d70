package dev.strata.engine.kernel;

import jdk.incubator.vector.FloatVector;
import org.junit.jupiter.api.Test;

import java.util.SplittableRandom;

import static dev.strata.engine.kernel.FloatLoads.FLOATS;
import static dev.strata.engine.kernel.FloatLoads.LANES;
import static org.assertj.core.api.Assertions.assertThat;

class VectorMathTest {

    @Test
    void expIsWithinTwoUlpAndVectorEqualsScalar() {
        SplittableRandom r = new SplittableRandom(11);
        float[] x = new float[LANES * 4096];
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) (-87.0 + 175.0 * r.nextDouble());
            if (i % 3 == 0) {
                x[i] = (float) (r.nextDouble() * 10 - 5); // the range softmax and SiLU use most
            }
        }
        float[] v = new float[x.length];
        for (int i = 0; i < x.length; i += LANES) {
            VectorMath.exp(FloatVector.fromArray(FLOATS, x, i)).intoArray(v, i);
        }
        for (int i = 0; i < x.length; i++) {
            float s = VectorMath.exp(x[i]);
            assertThat(Float.floatToRawIntBits(v[i])).as("exp(%s) vector vs scalar", x[i])
                    .isEqualTo(Float.floatToRawIntBits(s));
            float exact = (float) Math.exp(x[i]);
            assertThat(Math.abs(s - exact)).as("exp(%s) = %s, exact %s", x[i], s, exact)
                    .isLessThanOrEqualTo(2 * Math.ulp(exact));
        }
    }

    @Test
    void expEdgeValues() {
        assertThat(VectorMath.exp(0f)).isEqualTo(1f);
        assertThat(VectorMath.exp(-1000f)).isEqualTo(0f);
        assertThat(VectorMath.exp(Float.NEGATIVE_INFINITY)).isEqualTo(0f);
        assertThat(VectorMath.exp(Float.POSITIVE_INFINITY)).isFinite().isGreaterThan(1e38f);
        assertThat(VectorMath.exp(Float.NaN)).isNaN();
        float[] x = new float[LANES];
        x[0] = Float.NEGATIVE_INFINITY;
        x[LANES - 1] = Float.NaN;
        float[] v = new float[LANES];
        VectorMath.exp(FloatVector.fromArray(FLOATS, x, 0)).intoArray(v, 0);
        assertThat(v[0]).isEqualTo(0f);
        assertThat(v[LANES - 1]).isNaN();
    }
}
