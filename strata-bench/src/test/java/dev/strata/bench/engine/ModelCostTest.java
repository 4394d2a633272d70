package dev.strata.bench.engine;

import dev.strata.engine.model.ModelConfig;
import dev.strata.engine.model.ModelDirectory;
import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.synth.ModelSynthesizer;
import dev.strata.engine.synth.SynthSpec;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;

/** Active bytes and FLOPs counted from bound weights agree with the closed forms of the config. */
class ModelCostTest {
    @TempDir
    Path dir;

    @Test
    void aMoeTokenReadsAttentionRouterTopKExpertsEmbeddingRowAndLmHead() throws Exception {
        SynthSpec spec = SynthSpec.small(ModelFamily.QWEN3_MOE, 5);
        ModelSynthesizer.write(spec, dir.resolve("moe"), (a, b, c, d) -> { });
        try (ModelDirectory model = ModelDirectory.open(dir.resolve("moe"))) {
            ModelConfig c = model.config();
            long h = c.hiddenSize();
            long q = c.qDim();
            long kv = c.kvDim();
            long width = c.expertIntermediateSize();
            long attention = q * h + 2 * kv * h + h * q;
            long experts = (long) c.numExpertsPerTok() * 3 * width * h;
            long router = (long) c.numExperts() * h;
            long perLayerElements = 2 * h + attention + 2L * c.headDim() + router + experts; // norms, q/k norms per head
            long lmHead = (long) c.vocabSize() * h;
            long bytes = 2 * (h + c.numHiddenLayers() * perLayerElements + h + lmHead); // BF16
            ModelCost cost = ModelCost.of(model.weights());
            assertThat(cost.activeBytes()).isEqualTo(bytes);
            assertThat(cost.matrixFlopsPerToken()).isEqualTo(2 * c.numHiddenLayers() * (attention + router + experts));
            assertThat(cost.lmHeadFlops()).isEqualTo(2 * lmHead);
            int n = 37;
            double keys = 37.0 * 38 / 2;
            assertThat(cost.prefillFlops(n)).isEqualTo(n * (double) cost.matrixFlopsPerToken()
                    + keys * 4 * q * c.numHiddenLayers() + 2 * lmHead);
        }
    }

    @Test
    void aDenseTokenReadsTheWholeMlp() throws Exception {
        SynthSpec spec = SynthSpec.small(ModelFamily.LLAMA, 6);
        ModelSynthesizer.write(spec, dir.resolve("dense"), (a, b, c, d) -> { });
        try (ModelDirectory model = ModelDirectory.open(dir.resolve("dense"))) {
            ModelConfig c = model.config();
            long h = c.hiddenSize();
            long attention = (long) c.qDim() * h * 2 + 2L * c.kvDim() * h;
            long mlp = 3L * c.intermediateSize() * h;
            long lmHead = (long) c.vocabSize() * h;
            ModelCost cost = ModelCost.of(model.weights());
            assertThat(cost.activeBytes()).isEqualTo(2 * (h + c.numHiddenLayers() * (2 * h + attention + mlp) + h + lmHead));
            assertThat(cost.matrixFlopsPerToken()).isEqualTo(2 * c.numHiddenLayers() * (attention + mlp));
        }
    }
}
