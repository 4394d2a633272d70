package dev.strata.engine.kernel;

import dev.strata.engine.model.RopeScaling;
import jdk.incubator.vector.FloatVector;

import static dev.strata.engine.kernel.FloatLoads.FLOATS;
import static dev.strata.engine.kernel.FloatLoads.LANES;

/**
 * Rotary position embedding in the rotate-half convention of Hugging Face Llama and Qwen: element
 * {@code i} of a head is paired with {@code i + d/2} and the pair is rotated by
 * {@code position · invFreq[i]}, {@code invFreq[i] = theta^(−2i/d)}:
 * <pre>
 * out[i]       = x[i]·cos − x[i + d/2]·sin
 * out[i + d/2] = x[i + d/2]·cos + x[i]·sin        (i &lt; d/2)
 * </pre>
 * Frequencies and angles are computed in double ({@link StrictMath}, so identical everywhere) and
 * rounded to float once; the rotation is vectorised over {@code i}. Scalings: {@code default},
 * {@code linear} (frequencies divided by the factor) and {@code llama3} (Llama 3.1's
 * wavelength-dependent blend).
 *
 * <p>Immutable; any thread.
 */
public final class Rope {
    private final int headDim; // elements per head, even
    private final double[] invFreq; // [headDim / 2], radians per position

    /**
     * @param headDim elements per head (even)
     * @param theta   {@code rope_theta}
     * @param scaling {@code rope_scaling}, or null for none
     */
    public Rope(int headDim, double theta, RopeScaling scaling) {
        if (headDim < 2 || headDim % 2 != 0) {
            throw new IllegalArgumentException("RoPE needs an even head dimension, got " + headDim);
        }
        if (!(theta > 0)) {
            throw new IllegalArgumentException("rope_theta must be positive, got " + theta);
        }
        this.headDim = headDim;
        int half = headDim / 2;
        invFreq = new double[half];
        for (int i = 0; i < half; i++) {
            invFreq[i] = 1.0 / StrictMath.pow(theta, (2.0 * i) / headDim);
        }
        if (scaling != null) {
            scale(invFreq, scaling);
        }
    }

    private static void scale(double[] f, RopeScaling s) {
        switch (s.type()) {
            case "default" -> {
            }
            case "linear" -> {
                for (int i = 0; i < f.length; i++) {
                    f[i] /= s.factor();
                }
            }
            case "llama3" -> {
                double old = s.originalMaxPositionEmbeddings();
                double lowWavelen = old / s.lowFreqFactor();
                double highWavelen = old / s.highFreqFactor();
                for (int i = 0; i < f.length; i++) {
                    double wavelen = 2 * Math.PI / f[i];
                    if (wavelen > lowWavelen) {
                        f[i] /= s.factor();
                    } else if (wavelen >= highWavelen) {
                        double smooth = (old / wavelen - s.lowFreqFactor()) / (s.highFreqFactor() - s.lowFreqFactor());
                        f[i] = (1 - smooth) * f[i] / s.factor() + smooth * f[i];
                    }
                }
            }
            default -> throw new IllegalArgumentException("rope scaling '" + s.type() + "' is not supported");
        }
    }

    /** Elements per head. */
    public int headDim() {
        return headDim;
    }

    /** Inverse frequency of pair {@code i} (radians per position). */
    public double invFreq(int i) {
        return invFreq[i];
    }

    /** {@code [cos | sin]} of each pair's angle at {@code position}, {@code headDim} floats. */
    public float[] table(long position) {
        float[] cs = new float[headDim];
        table(position, cs, 0);
        return cs;
    }

    /** {@link #table(long)} written into {@code out[off, off + headDim)} instead of a new array. */
    public void table(long position, float[] out, int off) {
        int half = headDim / 2;
        for (int i = 0; i < half; i++) {
            double angle = position * invFreq[i];
            out[off + i] = (float) StrictMath.cos(angle);
            out[off + half + i] = (float) StrictMath.sin(angle);
        }
    }

    /** Rotates {@code heads} heads of {@code x} at {@code off} ({@code [heads, headDim]}) in place for {@code position}. */
    public void apply(float[] x, int off, int heads, long position) {
        apply(x, off, heads, table(position));
    }

    /** Rotates {@code heads} heads in place with a {@link #table} computed for their position. */
    public void apply(float[] x, int off, int heads, float[] table) {
        apply(x, off, heads, table, 0);
    }

    /** Rotates {@code heads} heads in place with a {@link #table} held at {@code table[tableOff, tableOff + headDim)}. */
    public void apply(float[] x, int off, int heads, float[] table, int tableOff) {
        int half = headDim / 2;
        int bound = FLOATS.loopBound(half);
        for (int h = 0; h < heads; h++) {
            int a = off + h * headDim;
            int b = a + half;
            int i = 0;
            for (; i < bound; i += LANES) {
                FloatVector c = FloatVector.fromArray(FLOATS, table, tableOff + i);
                FloatVector s = FloatVector.fromArray(FLOATS, table, tableOff + half + i);
                FloatVector x0 = FloatVector.fromArray(FLOATS, x, a + i);
                FloatVector x1 = FloatVector.fromArray(FLOATS, x, b + i);
                x0.mul(c).sub(x1.mul(s)).intoArray(x, a + i);
                x1.mul(c).add(x0.mul(s)).intoArray(x, b + i);
            }
            for (; i < half; i++) {
                float c = table[tableOff + i];
                float s = table[tableOff + half + i];
                float x0 = x[a + i];
                float x1 = x[b + i];
                x[a + i] = x0 * c - x1 * s;
                x[b + i] = x1 * c + x0 * s;
            }
        }
    }
}
