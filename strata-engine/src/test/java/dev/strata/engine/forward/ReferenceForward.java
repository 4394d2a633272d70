package dev.strata.engine.forward;

import dev.strata.engine.model.ModelConfig;
import dev.strata.engine.model.ModelWeights;
import dev.strata.engine.model.QkNorm;
import dev.strata.engine.model.RopeScaling;
import dev.strata.engine.model.Tensor;

/**
 * A plain double-precision forward pass, the golden reference of the engine: written with its own
 * simple loops from the Hugging Face definitions of each family, sharing nothing with the engine
 * but the model loading. It recomputes the whole sequence each call (no cache) and returns the
 * logits of every position.
 *
 * <p>Per layer: RMSNorm → q/k/v projections (+bias) → clip (OLMoE) → q/k RMSNorm (per head for
 * Qwen3, over all heads for OLMoE) → RoPE rotate-half → causal GQA softmax attention → o
 * projection → residual → RMSNorm → dense SwiGLU, or MoE (router softmax → top-k → renormalised
 * when norm_topk_prob → weighted sum of expert SwiGLUs) → residual. Then the final norm and lm_head.
 */
final class ReferenceForward {
    private final ModelConfig c;
    private final ModelWeights w;

    ReferenceForward(ModelWeights weights) {
        this.w = weights;
        this.c = weights.config();
    }

    /** Logits {@code [position][vocab]} for every position of {@code tokens}. */
    double[][] logits(int[] tokens) {
        int n = tokens.length;
        int h = c.hiddenSize();
        double[][] x = new double[n][];
        for (int t = 0; t < n; t++) {
            x[t] = row(w.embedding(), tokens[t]);
        }
        for (int l = 0; l < c.numHiddenLayers(); l++) {
            ModelWeights.Layer layer = w.layer(l);
            double[][] attIn = new double[n][];
            for (int t = 0; t < n; t++) {
                attIn[t] = rmsNorm(x[t], vector(layer.inputNorm()));
            }
            double[][] att = attention(layer.attention(), attIn);
            for (int t = 0; t < n; t++) {
                for (int j = 0; j < h; j++) {
                    x[t][j] += att[t][j];
                }
                double[] xn = rmsNorm(x[t], vector(layer.postAttentionNorm()));
                double[] mlp = layer.moe() ? moe(layer, xn) : swiglu(layer.mlp(), xn);
                for (int j = 0; j < h; j++) {
                    x[t][j] += mlp[j];
                }
            }
        }
        double[][] out = new double[n][];
        for (int t = 0; t < n; t++) {
            out[t] = multiply(w.lmHead(), rmsNorm(x[t], vector(w.finalNorm())));
        }
        return out;
    }

    private double[][] attention(ModelWeights.Attention a, double[][] in) {
        int n = in.length;
        int heads = c.numAttentionHeads();
        int kvHeads = c.numKeyValueHeads();
        int d = c.headDim();
        double[][] q = new double[n][];
        double[][] k = new double[n][];
        double[][] v = new double[n][];
        for (int t = 0; t < n; t++) {
            q[t] = withBias(multiply(a.q(), in[t]), a.qBias());
            k[t] = withBias(multiply(a.k(), in[t]), a.kBias());
            v[t] = withBias(multiply(a.v(), in[t]), a.vBias());
            if (c.clipQkv() != null) {
                double clip = c.clipQkv();
                for (double[] y : new double[][] {q[t], k[t], v[t]}) {
                    for (int i = 0; i < y.length; i++) {
                        y[i] = Math.max(-clip, Math.min(clip, y[i]));
                    }
                }
            }
            if (c.qkNorm() == QkNorm.FULL_WIDTH) {
                q[t] = rmsNorm(q[t], vector(a.qNorm()));
                k[t] = rmsNorm(k[t], vector(a.kNorm()));
            } else if (c.qkNorm() == QkNorm.PER_HEAD) {
                perHeadNorm(q[t], heads, vector(a.qNorm()));
                perHeadNorm(k[t], kvHeads, vector(a.kNorm()));
            }
            rope(q[t], heads, t);
            rope(k[t], kvHeads, t);
        }
        int group = heads / kvHeads;
        double[][] out = new double[n][];
        for (int t = 0; t < n; t++) {
            double[] concat = new double[heads * d];
            for (int hq = 0; hq < heads; hq++) {
                int hk = hq / group;
                double[] scores = new double[t + 1];
                for (int s = 0; s <= t; s++) {
                    double dot = 0;
                    for (int i = 0; i < d; i++) {
                        dot += q[t][hq * d + i] * k[s][hk * d + i];
                    }
                    scores[s] = dot / Math.sqrt(d);
                }
                softmax(scores);
                for (int s = 0; s <= t; s++) {
                    for (int i = 0; i < d; i++) {
                        concat[hq * d + i] += scores[s] * v[s][hk * d + i];
                    }
                }
            }
            out[t] = withBias(multiply(a.o(), concat), a.oBias());
        }
        return out;
    }

    private double[] moe(ModelWeights.Layer layer, double[] xn) {
        int experts = c.numExperts();
        int topK = c.numExpertsPerTok();
        double[] p = multiply(layer.router(), xn);
        softmax(p);
        boolean[] taken = new boolean[experts];
        int[] chosen = new int[topK];
        double[] weight = new double[topK];
        double sum = 0;
        for (int r = 0; r < topK; r++) {
            int best = -1;
            for (int e = 0; e < experts; e++) {
                if (!taken[e] && (best < 0 || p[e] > p[best])) {
                    best = e;
                }
            }
            taken[best] = true;
            chosen[r] = best;
            weight[r] = p[best];
            sum += p[best];
        }
        double[] out = new double[c.hiddenSize()];
        for (int r = 0; r < topK; r++) {
            double g = c.normTopkProb() ? weight[r] / sum : weight[r];
            double[] y = swiglu(layer.experts().get(chosen[r]).mlp(), xn);
            for (int j = 0; j < out.length; j++) {
                out[j] += g * y[j];
            }
        }
        return out;
    }

    private double[] swiglu(ModelWeights.Mlp m, double[] x) {
        double[] gate = multiply(m.gate(), x);
        double[] up = multiply(m.up(), x);
        for (int i = 0; i < gate.length; i++) {
            double g = gate[i];
            gate[i] = g / (1 + Math.exp(-g)) * up[i];
        }
        return multiply(m.down(), gate);
    }

    private void rope(double[] y, int heads, int position) {
        int d = c.headDim();
        int half = d / 2;
        for (int hh = 0; hh < heads; hh++) {
            int base = hh * d;
            for (int i = 0; i < half; i++) {
                double angle = position * inverseFrequency(i);
                double cos = Math.cos(angle);
                double sin = Math.sin(angle);
                double a = y[base + i];
                double b = y[base + half + i];
                y[base + i] = a * cos - b * sin;
                y[base + half + i] = b * cos + a * sin;
            }
        }
    }

    private double inverseFrequency(int i) {
        double f = Math.pow(c.ropeTheta(), -2.0 * i / c.headDim());
        RopeScaling s = c.ropeScaling();
        if (s == null || s.type().equals("default")) {
            return f;
        }
        if (s.type().equals("linear")) {
            return f / s.factor();
        }
        double wavelength = 2 * Math.PI / f;
        double lowWavelength = s.originalMaxPositionEmbeddings() / s.lowFreqFactor();
        double highWavelength = s.originalMaxPositionEmbeddings() / s.highFreqFactor();
        if (wavelength < highWavelength) {
            return f;
        }
        if (wavelength > lowWavelength) {
            return f / s.factor();
        }
        double smooth = (s.originalMaxPositionEmbeddings() / wavelength - s.lowFreqFactor())
                / (s.highFreqFactor() - s.lowFreqFactor());
        return (1 - smooth) * f / s.factor() + smooth * f;
    }

    private void perHeadNorm(double[] y, int heads, double[] weight) {
        int d = c.headDim();
        for (int hh = 0; hh < heads; hh++) {
            double[] head = new double[d];
            System.arraycopy(y, hh * d, head, 0, d);
            System.arraycopy(rmsNorm(head, weight), 0, y, hh * d, d);
        }
    }

    private double[] rmsNorm(double[] x, double[] weight) {
        double squares = 0;
        for (double v : x) {
            squares += v * v;
        }
        double r = 1 / Math.sqrt(squares / x.length + c.rmsNormEps());
        double[] out = new double[x.length];
        for (int i = 0; i < x.length; i++) {
            out[i] = x[i] * r * weight[i];
        }
        return out;
    }

    private static void softmax(double[] x) {
        double max = Double.NEGATIVE_INFINITY;
        for (double v : x) {
            max = Math.max(max, v);
        }
        double total = 0;
        for (int i = 0; i < x.length; i++) {
            x[i] = Math.exp(x[i] - max);
            total += x[i];
        }
        for (int i = 0; i < x.length; i++) {
            x[i] /= total;
        }
    }

    /** {@code W x} for W {@code [out, in]}. */
    private static double[] multiply(Tensor wt, double[] x) {
        int rows = (int) wt.dim(0);
        int cols = (int) wt.dim(1);
        if (cols != x.length) {
            throw new IllegalArgumentException(wt + " cannot multiply a vector of " + x.length);
        }
        double[] y = new double[rows];
        for (int r = 0; r < rows; r++) {
            double sum = 0;
            long base = (long) r * cols;
            for (int i = 0; i < cols; i++) {
                sum += wt.getFloat(base + i) * x[i];
            }
            y[r] = sum;
        }
        return y;
    }

    private static double[] withBias(double[] y, Tensor bias) {
        if (bias != null) {
            for (int i = 0; i < y.length; i++) {
                y[i] += bias.getFloat(i);
            }
        }
        return y;
    }

    private static double[] row(Tensor m, int r) {
        int cols = (int) m.dim(1);
        double[] out = new double[cols];
        for (int i = 0; i < cols; i++) {
            out[i] = m.getFloat((long) r * cols + i);
        }
        return out;
    }

    private static double[] vector(Tensor t) {
        double[] out = new double[(int) t.elements()];
        for (int i = 0; i < out.length; i++) {
            out[i] = t.getFloat(i);
        }
        return out;
    }
}
