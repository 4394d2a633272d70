package dev.strata.engine.serve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.engine.model.ModelFamily;
import dev.strata.engine.schedule.PreemptionMode;
import dev.strata.engine.synth.ModelSynthesizer;
import dev.strata.engine.synth.SynthSpec;
import dev.strata.memory.TierKind;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A MoE model served with its expert masters on DISK (files under a directory, direct I/O) rather
 * than in HOST memory: only the DEVICE expert slots hold experts in memory, every miss is read
 * from the SSD, and the answers are identical to the same engine with HOST masters (greedy).
 */
class ServeEngineDiskExpertsTest {
    @TempDir
    Path dir;

    private static List<String> serve(ServeEngine engine) throws Exception {
        List<String> out = new ArrayList<>();
        SplittableRandom random = new SplittableRandom(77);
        try (ContinuousBatchingGenerator generator = new ContinuousBatchingGenerator(engine, new ServeMetrics(), PreemptionMode.SWAP)) {
            for (int i = 0; i < 6; i++) {
                ServeEngineSplitTest.Collect c = new ServeEngineSplitTest.Collect();
                generator.submit(GenerationRequest.greedy(random.ints(24, 10, 500).toArray(), 6), c);
                out.add(c.result.get(60, TimeUnit.SECONDS));
            }
        }
        return out;
    }

    @Test
    void expertMastersOnDiskServeTheSameAnswersAsInHostMemory() throws Exception {
        Path model = dir.resolve("moe");
        ModelSynthesizer.write(SynthSpec.small(ModelFamily.QWEN3_MOE, 17), model, (d, t, b, tb) -> { });
        List<String> host;
        try (ServeEngine engine = new ServeEngine(model, ServeEngine.Options.builder().threads(1).blockTokens(16).kvBlocks(16)
                .expertCap(2).conclude())) {
            assertThat(engine.pager().masters().tier().kind()).isEqualTo(TierKind.HOST);
            host = serve(engine);
        }
        Path masters = dir.resolve("masters");
        Files.createDirectories(masters);
        try (ServeEngine engine = new ServeEngine(model, ServeEngine.Options.builder().threads(1).blockTokens(16).kvBlocks(16)
                .expertCap(2).expertMasters(masters).conclude())) {
            assertThat(engine.pager().masters().tier().kind()).isEqualTo(TierKind.DISK);
            try (Stream<Path> files = Files.list(masters)) {
                assertThat(files.count()).as("the masters' files").isPositive();
            }
            assertThat(serve(engine)).isEqualTo(host);
            assertThat(engine.pager().stats().misses()).as("experts read from the SSD").isPositive();
        }
        try (Stream<Path> files = Files.list(masters)) {
            assertThat(files.count()).as("removed at close").isZero();
        }
        assertThatThrownBy(() -> ServeEngine.Options.builder().expertMasters(masters).conclude())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("expert cap");
    }
}
