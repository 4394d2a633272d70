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

/**
 * The seeds scenario's quick run gives every row, each labelled measured or modelled, with sane
 * values (no speed is asserted).
 */
class SeedsScenarioTest {
    @TempDir
    Path work;

    private static final List<String> MEASURED = List.of("kv_offload_decode_vs_resident", "ttft_cross_instance_prefix_hit_1024tok",
            "ttft_cluster_hit_vs_pool_hit_1024tok", "wisp_expert_disk_decode_vs_static_streaming", "wisp_expert_disk_decode_vs_disk_bound",
            "wisp_expert_routing_turnover");
    private static final List<String> MODELLED = List.of("vllm_kv_bytes_per_block_per_gpu", "vllm_kv_blocks_gpu", "vllm_kv_blocks_cpu",
            "vllm_kv_blocks_ssd", "vllm_kv_sequences_gpu", "vllm_kv_sequences_cpu", "vllm_kv_sequences_ssd",
            "vllm_transfer_budget_per_decode_step_cpu", "vllm_transfer_budget_per_decode_step_ssd",
            "mvwsa_online_vs_oracle_qwen3_like", "mvwsa_cold_online_vs_oracle_qwen3_like", "mvwsa_offline_vs_oracle_qwen3_like", "mvwsa_online_vs_fifty_fifty_qwen3_like",
            "mvwsa_online_vs_kv_blind_qwen3_like", "harvest_expert_fetch_peer_vs_host_25pct", "harvest_kv_fetch_peer_vs_host_25pct",
            "harvest_expert_fetch_peer_vs_host_50pct", "harvest_kv_fetch_peer_vs_host_50pct", "harvest_expert_fetch_peer_vs_host_100pct",
            "harvest_kv_fetch_peer_vs_host_100pct");

    @Test
    void theQuickRunGivesEveryRowLabelled() throws Exception {
        SeedsScenario scenario = new SeedsScenario();
        List<String> notes = new ArrayList<>();
        List<Figure> figures = scenario.run(new Scenario.Options(true, work, false), notes);
        Map<String, Figure> byName = figures.stream().collect(Collectors.toMap(Figure::name, Function.identity()));
        List<String> all = new ArrayList<>(MEASURED);
        all.addAll(MODELLED);
        assertThat(byName.keySet()).containsExactlyInAnyOrderElementsOf(all);

        boolean redis = onPath("redis-server") && onPath("redis-cli");
        for (String name : MEASURED) {
            Figure f = byName.get(name);
            assertThat(f.note()).as("%s label", name).startsWith(SeedsScenario.MEASURED + " on this machine in this run | published: ");
            if (name.startsWith("ttft_cluster") && !redis) {
                assertThat(f.verdict()).isEqualTo(Verdict.NOT_JUDGED);
                assertThat(f.note()).contains("redis-server");
                continue;
            }
            assertThat(f.value()).as("%s value (%s)", name, f.note()).isFinite().isPositive();
            assertThat(f.rounds()).as("%s rounds", name).isPositive();
            FigureChecks.assertConsistent(f);
        }
        for (String name : MODELLED) {
            Figure f = byName.get(name);
            assertThat(f.note()).as("%s label", name).startsWith(SeedsScenario.MODELLED + " | published: ");
            assertThat(f.value()).as("%s value (%s)", name, f.note()).isFinite().isPositive();
            assertThat(f.rounds()).as("%s is computed, not measured", name).isZero();
        }

        // the vLLM table: Llama-2-70B at TP 4 keeps 80 layers x K,V x 2 KV heads x 128 x 2 bytes x 16 tokens per GPU and block
        assertThat(byName.get("vllm_kv_bytes_per_block_per_gpu").value()).isEqualTo(80.0 * 2 * 2 * 128 * 2 * 16);
        assertThat(byName.get("vllm_kv_blocks_cpu").value()).isGreaterThan(byName.get("vllm_kv_blocks_gpu").value());
        assertThat(byName.get("vllm_kv_blocks_ssd").value()).isGreaterThan(byName.get("vllm_kv_blocks_cpu").value());
        assertThat(byName.get("vllm_transfer_budget_per_decode_step_cpu").value())
                .isGreaterThan(byName.get("vllm_transfer_budget_per_decode_step_ssd").value());
        // turnover is a share
        assertThat(byName.get("wisp_expert_routing_turnover").value()).isBetween(0.0, 1.0);
        assertThat(byName.get("wisp_expert_routing_turnover").unit()).isEqualTo("share");
        // Harvest: a peer over NVLink is 12x faster than the host over PCIe Gen4, for both kinds
        for (String name : MODELLED.stream().filter(n -> n.startsWith("harvest")).toList()) {
            assertThat(byName.get(name).ratio()).as(name).isCloseTo(25.0 / 300.0, org.assertj.core.data.Offset.offset(1e-9));
        }
        assertThat(byName.get("harvest_expert_fetch_peer_vs_host_100pct").value())
                .isGreaterThan(byName.get("harvest_expert_fetch_peer_vs_host_50pct").value());
        assertThat(scenario.series()).hasSize(4).allSatisfy(s -> assertThat(s.x()).hasSize(21));
        assertThat(notes).anySatisfy(n -> assertThat(n).contains(SeedsScenario.MODELLED));
        // the DISK tiers' files are gone
        for (String dir : List.of("seeds-kv-disk", "seeds-expert-disk")) {
            assertThat(work.resolve(dir)).satisfiesAnyOf(p -> assertThat(p).doesNotExist(), p -> assertThat(Files.list(p)).isEmpty());
        }
    }

    private static boolean onPath(String program) {
        String path = System.getenv("PATH");
        return path != null && java.util.Arrays.stream(path.split(java.io.File.pathSeparator))
                .anyMatch(d -> Files.isExecutable(Path.of(d, program)));
    }
}
