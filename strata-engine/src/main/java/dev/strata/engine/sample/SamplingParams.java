package dev.strata.engine.sample;

import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;

/**
 * The sampling and stopping parameters of one request, with OpenAI request semantics: field names
 * in error messages are the request's ({@code top_p}, {@code max_tokens}, ...).
 *
 * <ul>
 *   <li>{@code temperature} ≥ 0 and finite; 0 means greedy (argmax, ties to the lowest id) and
 *       then {@code top_k}, {@code top_p} and {@code seed} have no effect.</li>
 *   <li>{@code topP} in (0, 1]; 1 turns nucleus sampling off.</li>
 *   <li>{@code topK} ≥ 0; 0 turns top-k off.</li>
 *   <li>{@code maxTokens} ≥ 1: generated tokens, the stop token included when one is sampled.</li>
 *   <li>{@code seed}: when present, the same seed, logits and parameters give the same tokens;
 *       when absent, each {@link Sampler} draws its own seed.</li>
 *   <li>{@code stop}: at most {@value #MAX_STOP_STRINGS} non-empty strings; the text returned ends
 *       just before the first one produced.</li>
 *   <li>{@code stopTokenIds}: ids ≥ 0 (the model's end-of-sequence tokens) that end generation;
 *       their text is not returned.</li>
 *   <li>{@code presencePenalty}, {@code frequencyPenalty} in [-2, 2] as OpenAI allows: subtracted
 *       from the logit of each token already generated in this request, once if it occurred and
 *       once per occurrence respectively.</li>
 * </ul>
 *
 * <p>Invariants: every instance is valid (the constructor checks all fields and throws
 * {@link IllegalArgumentException} naming the field and the value); lists are immutable copies.
 *
 * <p>Threads: immutable; any thread.
 */
public record SamplingParams(double temperature, double topP, int topK, int maxTokens, OptionalLong seed,
                             List<String> stop, List<Integer> stopTokenIds, double presencePenalty,
                             double frequencyPenalty) {

    /** The most stop strings one request may give. */
    public static final int MAX_STOP_STRINGS = 16;
    /** The bound of the penalties' magnitude, as in the OpenAI API. */
    public static final double MAX_PENALTY = 2.0;

    /** Checks every field; see the class comment for the rules. */
    public SamplingParams {
        if (!(temperature >= 0) || Double.isInfinite(temperature)) {
            throw new IllegalArgumentException("temperature must be a finite number >= 0 (0 = greedy), got " + temperature);
        }
        if (!(topP > 0 && topP <= 1)) {
            throw new IllegalArgumentException("top_p must be in (0, 1], got " + topP);
        }
        if (topK < 0) {
            throw new IllegalArgumentException("top_k must be >= 0 (0 = off), got " + topK);
        }
        if (maxTokens < 1) {
            throw new IllegalArgumentException("max_tokens must be >= 1, got " + maxTokens);
        }
        if (seed == null) {
            throw new IllegalArgumentException("seed must be OptionalLong.empty() when absent, got null");
        }
        if (stop == null) {
            throw new IllegalArgumentException("stop must be a list (possibly empty), got null");
        }
        if (stop.size() > MAX_STOP_STRINGS) {
            throw new IllegalArgumentException("stop has " + stop.size() + " strings; at most " + MAX_STOP_STRINGS + " are allowed");
        }
        List<String> stopCopy = new ArrayList<>(stop.size());
        for (int i = 0; i < stop.size(); i++) {
            String s = stop.get(i);
            if (s == null) {
                throw new IllegalArgumentException("stop[" + i + "] is null; stop strings must be non-empty strings");
            }
            if (s.isEmpty()) {
                throw new IllegalArgumentException("stop[" + i + "] is the empty string; stop strings must be non-empty");
            }
            stopCopy.add(s);
        }
        stop = List.copyOf(stopCopy);
        if (stopTokenIds == null) {
            throw new IllegalArgumentException("stop_token_ids must be a list (possibly empty), got null");
        }
        for (int i = 0; i < stopTokenIds.size(); i++) {
            Integer id = stopTokenIds.get(i);
            if (id == null || id < 0) {
                throw new IllegalArgumentException("stop_token_ids[" + i + "] must be a token id >= 0, got " + id);
            }
        }
        stopTokenIds = List.copyOf(stopTokenIds);
        checkPenalty("presence_penalty", presencePenalty);
        checkPenalty("frequency_penalty", frequencyPenalty);
    }

    private static void checkPenalty(String name, double value) {
        if (!(value >= -MAX_PENALTY && value <= MAX_PENALTY)) {
            throw new IllegalArgumentException(name + " must be in [-2, 2], got " + value);
        }
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

        /** Validates and builds; throws {@link IllegalArgumentException} naming the bad field and value. */
        public SamplingParams build() {
            return new SamplingParams(temperature, topP, topK, maxTokens, seed, stop, stopTokenIds, presencePenalty,
                    frequencyPenalty);
        }
    }
}
