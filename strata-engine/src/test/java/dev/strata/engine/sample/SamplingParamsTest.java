package dev.strata.engine.sample;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.OptionalLong;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

class SamplingParamsTest {

    private static void rejects(UnaryOperator<SamplingParams.Builder> edit, String message) {
        assertThatThrownBy(() -> edit.apply(SamplingParams.builder()).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(message);
    }

    @Test
    void defaultsFollowOpenAi() {
        SamplingParams p = SamplingParams.defaults();
        assertThat(p.temperature()).isEqualTo(1.0);
        assertThat(p.topP()).isEqualTo(1.0);
        assertThat(p.topK()).isZero();
        assertThat(p.maxTokens()).isEqualTo(16);
        assertThat(p.seed()).isEmpty();
        assertThat(p.stop()).isEmpty();
        assertThat(p.isGreedy()).isFalse();
        assertThat(p.hasPenalties()).isFalse();
        assertThat(SamplingParams.greedy(5, List.of(7)).isGreedy()).isTrue();
    }

    @Test
    void acceptsBoundaryValues() {
        SamplingParams p = SamplingParams.builder().temperature(0).topP(1).topK(0).maxTokens(1).seed(-3)
                .stop(List.of("x".repeat(16).split(""))).stopTokenIds(List.of(0)).presencePenalty(-2).frequencyPenalty(2).build();
        assertThat(p.stop()).hasSize(16);
        assertThat(p.seed()).isEqualTo(OptionalLong.of(-3));
        assertThat(SamplingParams.builder().topP(Math.nextUp(0.0)).build().topP()).isPositive();
    }

    @Test
    void copiesListsSoLaterEditsDoNotLeakIn() {
        List<String> stops = new ArrayList<>(List.of("a"));
        SamplingParams p = SamplingParams.builder().stop(stops).build();
        stops.add("b");
        assertThat(p.stop()).containsExactly("a");
    }

    @Test
    void everyInvalidFieldIsNamedWithItsValue() {
        rejects(b -> b.temperature(-0.5), "temperature must be a finite number >= 0 (0 = greedy), got -0.5");
        rejects(b -> b.temperature(Double.NaN), "temperature must be a finite number >= 0 (0 = greedy), got NaN");
        rejects(b -> b.temperature(Double.POSITIVE_INFINITY),
                "temperature must be a finite number >= 0 (0 = greedy), got Infinity");
        rejects(b -> b.topP(0), "top_p must be in (0, 1], got 0.0");
        rejects(b -> b.topP(1.5), "top_p must be in (0, 1], got 1.5");
        rejects(b -> b.topP(-0.1), "top_p must be in (0, 1], got -0.1");
        rejects(b -> b.topP(Double.NaN), "top_p must be in (0, 1], got NaN");
        rejects(b -> b.topK(-1), "top_k must be >= 0 (0 = off), got -1");
        rejects(b -> b.maxTokens(0), "max_tokens must be >= 1, got 0");
        rejects(b -> b.maxTokens(-7), "max_tokens must be >= 1, got -7");
        rejects(b -> b.stop(null), "stop must be a list (possibly empty), got null");
        rejects(b -> b.stop(List.of("a".repeat(17).split(""))), "stop has 17 strings; at most 16 are allowed");
        rejects(b -> b.stop(List.of("a", "")), "stop[1] is the empty string; stop strings must be non-empty");
        rejects(b -> b.stop(Arrays.asList("a", "b", null)), "stop[2] is null; stop strings must be non-empty strings");
        rejects(b -> b.stopTokenIds(null), "stop_token_ids must be a list (possibly empty), got null");
        rejects(b -> b.stopTokenIds(List.of(3, -4)), "stop_token_ids[1] must be a token id >= 0, got -4");
        rejects(b -> b.stopTokenIds(Arrays.asList((Integer) null)), "stop_token_ids[0] must be a token id >= 0, got null");
        rejects(b -> b.presencePenalty(2.5), "presence_penalty must be in [-2, 2], got 2.5");
        rejects(b -> b.presencePenalty(Double.NaN), "presence_penalty must be in [-2, 2], got NaN");
        rejects(b -> b.frequencyPenalty(-2.01), "frequency_penalty must be in [-2, 2], got -2.01");
        assertThatThrownBy(() -> new SamplingParams(1, 1, 0, 1, null, List.of(), List.of(), 0, 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("seed must be OptionalLong.empty() when absent, got null");
    }

    @Test
    void samplerRejectsBadVocabAndShortRows() {
        assertThatThrownBy(() -> new Sampler(SamplingParams.defaults(), 0))
                .hasMessage("validVocab must be >= 1, got 0");
        Sampler s = new Sampler(SamplingParams.defaults(), 10);
        assertThatThrownBy(() -> s.sample(new float[9]))
                .hasMessage("logits row at offset 0 of an array of 9 floats is shorter than validVocab 10");
        assertThatThrownBy(() -> s.sample(new float[15], 6))
                .hasMessage("logits row at offset 6 of an array of 15 floats is shorter than validVocab 10");
        float[] masked = new float[10];
        Arrays.fill(masked, Float.NEGATIVE_INFINITY);
        assertThatThrownBy(() -> s.sample(masked))
                .hasMessage("logits must contain a finite value and no NaN or +Infinity; the largest of 10 is -Infinity at id 0");
        Sampler g = new Sampler(SamplingParams.greedy(4, List.of()), 10);
        assertThatThrownBy(() -> g.sample(masked))
                .hasMessage("logits must contain a finite value and no NaN or +Infinity; the largest of 10 is -Infinity at id 0");
    }
}
