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

    private static void rejects(UnaryOperator<SamplingParams.Builder> edit, String field, String message) {
        assertThatThrownBy(() -> edit.apply(SamplingParams.builder()).build())
                .isInstanceOfSatisfying(SamplingFieldException.class, e -> assertThat(e.field()).isEqualTo(field))
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
                .stop(List.of("x".repeat(4).split(""))).stopTokenIds(List.of(0)).presencePenalty(-2).frequencyPenalty(2).n(1).build();
        assertThat(p.stop()).hasSize(SamplingParams.MAX_STOP_STRINGS);
        assertThat(p.seed()).isEqualTo(OptionalLong.of(-3));
        assertThat(SamplingParams.builder().topP(Math.nextUp(0.0)).build().topP()).isPositive();
        assertThat(SamplingParams.builder().temperature(SamplingParams.MAX_TEMPERATURE).build().temperature()).isEqualTo(2.0);
        assertThat(SamplingParams.builder().maxTokens(7).maxTokensLimit(7).build().maxTokens()).isEqualTo(7);
        assertThat(SamplingParams.builder().topK(-1).build().topK()).as("-1 turns top-k off, like 0").isZero();
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
        rejects(b -> b.temperature(-0.5), "temperature", "temperature must be in [0, 2] (0 = greedy), got -0.5");
        rejects(b -> b.temperature(2.5), "temperature", "temperature must be in [0, 2] (0 = greedy), got 2.5");
        rejects(b -> b.temperature(Double.NaN), "temperature", "temperature must be in [0, 2] (0 = greedy), got NaN");
        rejects(b -> b.temperature(Double.POSITIVE_INFINITY), "temperature",
                "temperature must be in [0, 2] (0 = greedy), got Infinity");
        rejects(b -> b.topP(0), "top_p", "top_p must be in (0, 1], got 0.0");
        rejects(b -> b.topP(1.5), "top_p", "top_p must be in (0, 1], got 1.5");
        rejects(b -> b.topP(-0.1), "top_p", "top_p must be in (0, 1], got -0.1");
        rejects(b -> b.topP(Double.NaN), "top_p", "top_p must be in (0, 1], got NaN");
        rejects(b -> b.topK(-2), "top_k", "top_k must be >= 0, or -1 (0 and -1 = off), got -2");
        rejects(b -> b.maxTokens(0), "max_tokens", "max_tokens must be >= 1, got 0");
        rejects(b -> b.maxTokens(-7), "max_tokens", "max_tokens must be >= 1, got -7");
        rejects(b -> b.maxTokens(9).maxTokensLimit(8), "max_tokens", "max_tokens must be in [1, 8], got 9");
        rejects(b -> b.maxTokens(0).maxTokensLimit(8), "max_tokens", "max_tokens must be in [1, 8], got 0");
        rejects(b -> b.n(17), "n", "n must be in [1, 16] (choices per request), got 17");
        rejects(b -> b.n(0), "n", "n must be in [1, 16] (choices per request), got 0");
        rejects(b -> b.stop(null), "stop", "stop must be a list (possibly empty), got null");
        rejects(b -> b.stop(List.of("a", "b", "c", "d", "e\"")), "stop",
                "stop must hold at most 4 strings, got 5: [\"a\",\"b\",\"c\",\"d\",\"e\\\"\"]");
        rejects(b -> b.stop(List.of("a", "")), "stop", "stop[1] must be a non-empty string, got \"\"");
        rejects(b -> b.stop(Arrays.asList("a", "b", null)), "stop", "stop[2] must be a non-empty string, got null");
        rejects(b -> b.stopTokenIds(null), "stop_token_ids", "stop_token_ids must be a list (possibly empty), got null");
        rejects(b -> b.stopTokenIds(List.of(3, -4)), "stop_token_ids", "stop_token_ids[1] must be a token id >= 0, got -4");
        rejects(b -> b.stopTokenIds(Arrays.asList((Integer) null)), "stop_token_ids",
                "stop_token_ids[0] must be a token id >= 0, got null");
        rejects(b -> b.presencePenalty(2.5), "presence_penalty", "presence_penalty must be in [-2, 2], got 2.5");
        rejects(b -> b.presencePenalty(Double.NaN), "presence_penalty", "presence_penalty must be in [-2, 2], got NaN");
        rejects(b -> b.frequencyPenalty(-2.01), "frequency_penalty", "frequency_penalty must be in [-2, 2], got -2.01");
        assertThatThrownBy(() -> SamplingParams.builder().maxTokensLimit(0)).hasMessage("max tokens limit must be >= 1, got 0");
        assertThatThrownBy(() -> new SamplingParams(1, 1, 0, 1, null, List.of(), List.of(), 0, 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("seed must be OptionalLong.empty() when absent, got null");
        assertThat(new SamplingFieldException("max_tokens", "max_tokens", "be >= 1", "0").renamed("max_completion_tokens"))
                .hasMessage("max_completion_tokens must be >= 1, got 0")
                .satisfies(e -> assertThat(e.field()).isEqualTo("max_completion_tokens"));
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
