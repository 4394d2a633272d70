package dev.strata.engine.kernel;

import dev.strata.engine.model.DType;
import dev.strata.engine.model.RopeScaling;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

class RopeAndCalibrationTest {

    @Test
    void llama3ScalingKeepsHighFrequenciesDividesLowOnesAndBlendsBetween() {
        int d = 128;
        double theta = 500_000;
        RopeScaling s = new RopeScaling("llama3", 8, 1, 4, 8192);
        Rope plain = new Rope(d, theta, null);
        Rope scaled = new Rope(d, theta, s);
        int kept = 0, divided = 0, blended = 0;
        for (int i = 0; i < d / 2; i++) {
            double f = Math.pow(theta, -2.0 * i / d);
            assertThat(plain.invFreq(i)).isCloseTo(f, within(f * 1e-12));
            double wavelen = 2 * Math.PI / f;
            double expected;
            if (wavelen < 8192 / 4.0) {
                expected = f;
                kept++;
            } else if (wavelen > 8192 / 1.0) {
                expected = f / 8;
                divided++;
            } else {
                double smooth = (8192 / wavelen - 1) / (4 - 1);
                expected = (1 - smooth) * f / 8 + smooth * f;
                blended++;
            }
            assertThat(scaled.invFreq(i)).as("pair %d", i).isCloseTo(expected, within(expected * 1e-12));
        }
        assertThat(kept).isPositive();
        assertThat(divided).isPositive();
        assertThat(blended).isPositive();
        Rope linear = new Rope(d, theta, new RopeScaling("linear", 4, 0, 0, 0));
        assertThat(linear.invFreq(5)).isCloseTo(plain.invFreq(5) / 4, within(1e-15));
    }

    @Test
    void calibrationReturnsFinitePositiveFigures() {
        try (KernelPool pool = new KernelPool(2)) {
            for (DType dtype : DType.values()) {
                for (KernelCalibration.Result r : new KernelCalibration.Result[] {
                        KernelCalibration.measureMatvec(dtype, 67, 129, pool, 3),
                        KernelCalibration.measureMatmul(dtype, 67, 129, 5, pool, 3)}) {
                    for (double v : new double[] {r.seconds(), r.gflops(), r.weightGBps(), r.copyGBps(),
                            r.fractionOfCopy()}) {
                        assertThat(v).as("%s", r).isFinite().isPositive();
                    }
                    assertThat(r.threads()).isEqualTo(2);
                }
            }
        }
    }
}
