package dev.strata.engine.sample;

/**
 * Why a generation ended, for every layer that reports it: the {@link StopChecker}, the
 * scheduler's sinks and the server's answers. {@link #openAiName()} is the value of an OpenAI
 * response's {@code finish_reason}.
 *
 * <p>Threads: immutable; any thread.
 */
public enum FinishReason {
    /** A stop string was produced or a stop token id (end of sequence) was sampled. */
    STOP("stop"),
    /** {@code max_tokens} tokens were generated. */
    LENGTH("length"),
    /** The generation was cancelled (for example its client disconnected). */
    CANCELLED("cancelled"),
    /**
     * Its prompt plus maximum new tokens can never fit the KV cache, so it was not run. Not an
     * OpenAI value: the server refuses such requests before they are queued.
     */
    TOO_LONG("too_long");

    private final String openAiName;

    FinishReason(String openAiName) {
        this.openAiName = openAiName;
    }

    /** The value of {@code finish_reason} in an OpenAI response: "stop", "length", or "cancelled". */
    public String openAiName() {
        return openAiName;
    }
}
