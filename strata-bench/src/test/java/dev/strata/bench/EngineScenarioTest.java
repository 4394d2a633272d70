package dev.strata.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;

/** The engine scenario's quick run produces every figure with sane values (no speed is asserted). */
class EngineScenarioTest {
    @TempDir
    Path work;

    @Test
    void theQuickRunProducesEveryFigure() throws Exception {
        List<String> notes = new ArrayList<>();
        List<Figure> figures = new EngineScenario().run(new Scenario.Options(true, work, false), notes);
        Map<String, Figure> byName = figures.stream().collect(Collectors.toMap(Figure::name, Function.identity()));
        assertThat(byName.keySet()).containsExactlyInAnyOrder("decode_tokens_per_s_vs_roofline",
                "prefill_gflops_vs_matmul_peak_dense", "prefill_gflops_vs_matmul_peak_moe",
                "ttft_cross_instance_prefix_hit_1024tok", "ttft_slow_tier_prefix_hit_512tok", "expert_disk_decode_vs_static_streaming",
                "expert_disk_decode_vs_disk_bound", "constrained_decode_tokens_per_s",
                "constrained_mask_us_per_token_first_request", "constrained_mask_us_per_token_repeated_schema",
                "constrained_mask_vs_sampling_first_request_32k_vocab", "constrained_mask_vs_sampling_repeated_schema_32k_vocab");
        for (Figure f : figures) {
            assertThat(f.value()).as("%s value (%s)", f.name(), f.note()).isFinite().isPositive();
            assertThat(f.baselineValue()).as("%s baseline (%s)", f.name(), f.note()).isFinite().isPositive();
            FigureChecks.assertConsistent(f);
            assertThat(f.note()).as("%s note", f.name()).isNotBlank();
        }
        Figure ttft = byName.get("ttft_cross_instance_prefix_hit_1024tok");
        assertThat(ttft.unit()).isEqualTo("s");
        assertThat(ttft.note()).contains("the prefix hit loads 1008 tokens");
        assertThat(byName.get("ttft_slow_tier_prefix_hit_512tok").note()).as("every block loaded by the instance without the gate")
                .contains("loading every block instead took");
        assertThat(byName.get("expert_disk_decode_vs_static_streaming").unit()).isEqualTo("tokens/s");
        // the DISK tier's files are gone; the models stay for the next run
        assertThat(work.resolve("expert-disk")).satisfiesAnyOf(p -> assertThat(p).doesNotExist(),
                p -> assertThat(Files.list(p)).isEmpty());
        assertThat(work.resolve("models")).isDirectoryContaining(p -> p.getFileName().toString().startsWith("decode-moe-"));
        // a later run reuses the synthesised models
        long stamp = Files.getLastModifiedTime(firstModel()).toMillis();
        Path again = dev.strata.bench.engine.SyntheticModels.prepare(EngineScenario.Models.of(true).decodeMoe(), "decode-moe",
                work, System.err);
        assertThat(again.resolve("config.json")).isEqualTo(firstModel());
        assertThat(Files.getLastModifiedTime(firstModel()).toMillis()).isEqualTo(stamp);
    }

    private Path firstModel() throws Exception {
        try (var dirs = Files.list(work.resolve("models"))) {
            Path dir = dirs.filter(p -> p.getFileName().toString().startsWith("decode-moe-")).findFirst().orElseThrow();
            return dir.resolve("config.json");
        }
    }
}
