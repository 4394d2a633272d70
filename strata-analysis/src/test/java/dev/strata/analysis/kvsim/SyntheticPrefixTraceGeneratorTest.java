package dev.strata.analysis.kvsim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.analysis.kvtrace.MooncakeTraceReader;
import dev.strata.analysis.kvtrace.TraceRequest;
import dev.strata.cache.policy.PolicyKind;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SyntheticPrefixTraceGeneratorTest {
    @TempDir
    Path dir;

    @Test
    void isDeterministicPerSeedAndReadsBackThroughTheTraceReader() {
        var knobs = SyntheticPrefixTraceGenerator.Knobs.chat(400);
        List<TraceRequest> a = SyntheticPrefixTraceGenerator.generate(knobs, 11);
        assertThat(SyntheticPrefixTraceGenerator.generate(knobs, 11)).isEqualTo(a);
        assertThat(SyntheticPrefixTraceGenerator.generate(knobs, 12)).isNotEqualTo(a);
        Path file = dir.resolve("chat.jsonl");
        SyntheticPrefixTraceGenerator.write(a, file);
        List<TraceRequest> back = new ArrayList<>();
        MooncakeTraceReader.forEach(file, 512, back::add); // checks ids against lengths and timestamp order
        assertThat(back).isEqualTo(a);
    }

    @Test
    void conversationTurnsExtendTheirPreviousTurnAndPromptsAreShared() {
        List<TraceRequest> t = SyntheticPrefixTraceGenerator.generate(
                new SyntheticPrefixTraceGenerator.Knobs(300, 512, 3, 1.0, 1024, 2048, 0.2, 4, 100, 900, 10, 200, 0.0,
                        1000, 2000, 100_000, 10), 5);
        int extensions = 0;
        for (int i = 0; i < t.size(); i++) {
            TraceRequest r = t.get(i);
            for (int j = 0; j < i; j++) {
                TraceRequest prev = t.get(j);
                int full = prev.inputLength() / 512;
                if (full > 4 && r.blockCount() > full
                        && Arrays.equals(Arrays.copyOf(r.hashIds(), full), Arrays.copyOf(prev.hashIds(), full))
                        && r.inputLength() > prev.inputLength() + prev.outputLength()) {
                    extensions++; // a later turn holding all the full blocks of an earlier one, and more
                    break;
                }
            }
        }
        assertThat(extensions).isGreaterThan(100);
        // with 3 prompts of 2-4 full blocks, every request starts with one of 3 first ids
        assertThat(t.stream().mapToLong(r -> r.hashId(0)).distinct().count()).isLessThanOrEqualTo(3);
        assertThatThrownBy(() -> new SyntheticPrefixTraceGenerator.Knobs(1, 512, 0, 1, 1, 2, 0.5, 2, 1, 2, 1, 2, 0.1, 1, 2, 100, 1))
                .hasMessageContaining("inconsistent trace generator knobs");
    }

    @Test
    void thePrefixAwarePolicyBeatsLruOnGeneratedWorkloadsOfEachKind() {
        record Case(String name, SyntheticPrefixTraceGenerator.Knobs knobs, long seed) {
        }
        for (Case c : List.of(new Case("chat", SyntheticPrefixTraceGenerator.Knobs.chat(3000), 1),
                new Case("documents", SyntheticPrefixTraceGenerator.Knobs.documents(3000), 2),
                new Case("agents", SyntheticPrefixTraceGenerator.Knobs.agents(3000), 3))) {
            PrefixTrace t = PrefixTrace.of(SyntheticPrefixTraceGenerator.generate(c.knobs(), c.seed()));
            for (long capacity : new long[] {300, 1000, 3000}) {
                double lru = KvReplaySimulator.replay(t, KvReplaySimulator.Config.single(capacity, PolicyKind.LRU, 1)).hitRatio();
                double pa = KvReplaySimulator.replay(t, KvReplaySimulator.Config.single(capacity, PolicyKind.PREFIX_AWARE, 1)).hitRatio();
                double optimum = BeladyBound.hitRatio(t, capacity);
                assertThat(pa).as("%s at %d blocks: prefix-aware against LRU", c.name(), capacity).isGreaterThan(lru);
                assertThat(pa).as("%s at %d blocks: Belady bounds it", c.name(), capacity).isLessThanOrEqualTo(optimum);
            }
        }
    }
}
