package dev.strata.engine.sample;

import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;

/**
 * The sampling and stopping parameters of one request, with OpenAI request semantics, and the one
 * place where their ranges are checked: the HTTP server checks only that each JSON field has the
 * right type and hands the values to {@link Builder}, so a value is accepted or refused, with the
 * same message, whichever way it arrives. Field names in error messages are the request's
 * ({@code top_p}, {@code max_tokens}, ...); every breach is a {@link SamplingFieldException}
 * naming the field and the value.
 *
 * <ul>
 *   <li>{@code temperature} in [0, {@value #MAX_TEMPERATURE}] as OpenAI allows; 0 means greedy
 *       (argmax, ties to the lowest id) and then {@code top_k}, {@code top_p} and {@code seed}
 *       have no effect.</li>
 *   <li>{@code topP} in (0, 1]; 1 turns nucleus sampling off.</li>
 *   <li>{@code topK} ≥ 0, or -1; 0 and -1 turn top-k off (-1 is stored as 0).</li>
 *   <li>{@code maxTokens} ≥ 1, and at most the builder's {@link Builder#maxTokensLimit} when one
 *       is set (a server's cap): generated tokens, the stop token included when one is
 *       sampled.</li>
 *   <li>{@code seed}: when present, the same seed, logits and parameters give the same tokens;
 *       when absent, each {@link Sampler} draws its own seed.</li>
 *   <li>{@code stop}: at most {@value #MAX_STOP_STRINGS} non-empty strings as OpenAI allows; the
 *       text returned ends just before the first one produced.</li>
 *   <li>{@code stopTokenIds}: ids ≥ 0 (the model's end-of-sequence tokens) that end generation;
 *       their text is not returned.</li>
 *   <li>{@code presencePenalty}, {@code frequencyPenalty} in [-2, 2] as OpenAI allows: subtracted
 *       from the logit of each token already generated in this request, once if it occurred and
 *       once per occurrence respectively.</li>
 *   <li>{@code n} (builder only, not stored): choices per request, in [1, {@value #MAX_CHOICES}];
 *       the server runs one generation per choice.</li>
 * </ul>
 *
 * <p>Invariants: every instance is valid (the constructor checks all fields and throws
 * {@link SamplingFieldException} naming the field and the value); lists are immutable copies.
 *
 * <p>Threads: immutable; any thread.
 */
public record SamplingParams(double temperature, double topP, int topK, int maxTokens, OptionalLong seed,
                             List<String> stop, List<Integer> stopTokenIds, double presencePenalty,
                             double frequencyPenalty) {

    /** The highest temperature, as in the OpenAI API. */
    public static final double MAX_TEMPERATURE = 2.0;
    /** The most stop strings one request may give, as in the OpenAI API. */
    public static final int MAX_STOP_STRINGS = 4;
    /** The most choices ({@code n}) one request may ask for. */
    public static final int MAX_CHOICES = 16;
    /** The bound of the penalties' magnitude, as in the OpenAI API. */
    public static final double MAX_PENALTY = 2.0;

    /** Checks every field; see the class comment for the rules. */
    public SamplingParams {
        if (!(temperature >= 0 && temperature <= MAX_TEMPERATURE)) {
            throw breach("temperature", "be in [0, 2] (0 = greedy)", Double.toString(temperature));
        }
        if (!(topP > 0 && topP <= 1)) {
            throw breach("top_p", "be in (0, 1]", Double.toString(topP));
        }
        if (topK < -1) {
            throw breach("top_k", "be >= 0, or -1 (0 and -1 = off)", Integer.toString(topK));
        }
        topK = Math.max(0, topK);
        checkMaxTokens(maxTokens, Integer.MAX_VALUE);
        if (seed == null) {
            throw breach("seed", "be OptionalLong.empty() when absent", "null");
        }
        if (stop == null) {
            throw breach("stop", "be a list (possibly empty)", "null");
        }
        if (stop.size() > MAX_STOP_STRINGS) {
            throw breach("stop", "hold at most " + MAX_STOP_STRINGS + " strings", stop.size() + ": " + quoted(stop));
        }
        List<String> stopCopy = new ArrayList<>(stop.size());
        for (int i = 0; i < stop.size(); i++) {
            String s = stop.get(i);
            if (s == null || s.isEmpty()) {
                throw new SamplingFieldException("stop", "stop[" + i + "]", "be a non-empty string", s == null ? "null" : "\"\"");
            }
            stopCopy.add(s);
        }
        stop = List.copyOf(stopCopy);
        if (stopTokenIds == null) {
            throw breach("stop_token_ids", "be a list (possibly empty)", "null");
        }
        for (int i = 0; i < stopTokenIds.size(); i++) {
            Integer id = stopTokenIds.get(i);
            if (id == null || id < 0) {
                throw new SamplingFieldException("stop_token_ids", "stop_token_ids[" + i + "]", "be a token id >= 0", String.valueOf(id));
            }
        }
        stopTokenIds = List.copyOf(stopTokenIds);
        checkPenalty("presence_penalty", presencePenalty);
        checkPenalty("frequency_penalty", frequencyPenalty);
    }

    private static SamplingFieldException breach(String field, String rule, String value) {
        return new SamplingFieldException(field, field, rule, value);
    }

    private static void checkPenalty(String name, double value) {
        if (!(value >= -MAX_PENALTY && value <= MAX_PENALTY)) {
            throw breach(name, "be in [-2, 2]", Double.toString(value));
        }
    }

    /** {@code maxTokens} in [1, limit]; {@code limit} is {@link Integer#MAX_VALUE} when there is no cap. */
    private static void checkMaxTokens(int maxTokens, int limit) {
        if (maxTokens < 1 || maxTokens > limit) {
            throw breach("max_tokens", limit == Integer.MAX_VALUE ? "be >= 1" : "be in [1, " + limit + "]", Integer.toString(maxTokens));
        }
    }

    /** The strings as a JSON array would spell them, e.g. {@code ["a","b\"c"]}. */
    private static String quoted(List<String> strings) {
        StringBuilder out = new StringBuilder("[");
        for (int i = 0; i < strings.size(); i++) {
            String s = strings.get(i);
            out.append(i > 0 ? "," : "").append(s == null ? "null" : '"' + s.replace("\\", "\\\\").replace("\"", "\\\"") + '"');
        }
        return out.append(']').toString();
    }

    /** OpenAI's defaults: temperature 1, top_p 1, top_k off, max_tokens 16, no seed, no stops, no penalties. */
    public static SamplingParams defaults() {
        return builder().build();
    }

    /** Greedy decoding of at most {@code maxTokens} tokens, stopping at {@code stopTokenIds}. */
    public static SamplingParams greedy(int maxTokens, List<Integer> stopTokenIds) {
        return builder().temperature(0).maxTokens(maxTokens).stopTokenIds(stopTokenIds).build();
    }

    /** A builder starting from {@link #defaults()}' values. */
    public static Builder builder() {
        return new Builder();
    }

    /** True when tokens are chosen by argmax (temperature 0). */
    public boolean isGreedy() {
        return temperature == 0;
    }

    /** True when either penalty is non-zero. */
    public boolean hasPenalties() {
        return presencePenalty != 0 || frequencyPenalty != 0;
    }

    /**
     * Collects fields and validates them in {@link #build()}.
     *
     * <p>Threads: one thread.
     */
    public static final class Builder {
        private double temperature = 1.0;
        private double topP = 1.0;
        private int topK = 0;
        private int maxTokens = 16;
        private OptionalLong seed = OptionalLong.empty();
        private List<String> stop = List.of();
        private List<Integer> stopTokenIds = List.of();
        private double presencePenalty = 0;
        private double frequencyPenalty = 0;
        private int maxTokensLimit = Integer.MAX_VALUE; // the most max_tokens may be; MAX_VALUE: no cap
        private int n = 1;                               // choices asked for; checked, not stored

        private Builder() {
        }

        public Builder temperature(double v) {
            temperature = v;
            return this;
        }

        public Builder topP(double v) {
            topP = v;
            return this;
        }

        public Builder topK(int v) {
            topK = v;
            return this;
        }

        public Builder maxTokens(int v) {
            maxTokens = v;
            return this;
        }

        public Builder seed(long v) {
            seed = OptionalLong.of(v);
            return this;
        }

        public Builder stop(List<String> v) {
            stop = v;
            return this;
        }

        public Builder stopTokenIds(List<Integer> v) {
            stopTokenIds = v;
            return this;
        }

        public Builder presencePenalty(double v) {
            presencePenalty = v;
            return this;
        }

        public Builder frequencyPenalty(double v) {
            frequencyPenalty = v;
            return this;
        }

        /** The most {@code max_tokens} may be (a server's cap, at least 1); unset, only >= 1 is required. */
        public Builder maxTokensLimit(int v) {
            if (v < 1) {
                throw new IllegalArgumentException("max tokens limit must be >= 1, got " + v);
            }
            maxTokensLimit = v;
            return this;
        }

        /** Choices asked for, in [1, {@value SamplingParams#MAX_CHOICES}]; checked by {@link #build}, not stored. */
        public Builder n(int v) {
            n = v;
            return this;
        }

        /** Validates and builds; throws {@link SamplingFieldException} naming the bad field and value. */
        public SamplingParams build() {
            if (n < 1 || n > MAX_CHOICES) {
                throw breach("n", "be in [1, " + MAX_CHOICES + "] (choices per request)", Integer.toString(n));
            }
            checkMaxTokens(maxTokens, maxTokensLimit);
            return new SamplingParams(temperature, topP, topK, maxTokens, seed, stop, stopTokenIds, presencePenalty,
                    frequencyPenalty);
        }
    }
}
