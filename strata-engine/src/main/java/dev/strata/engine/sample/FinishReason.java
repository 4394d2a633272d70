package dev.strata.engine.sample;

/**
 * Why a sequence stopped generating, with the name the OpenAI API reports in {@code finish_reason}.
 *
 * <p>Threads: immutable; any thread.
 */
public enum FinishReason {
    /** A stop string was produced or a stop token id (end of sequence) was sampled. */
    STOP("stop"),
    /** {@code max_tokens} tokens were generated. */
    LENGTH("length");

    private final String openAiName;

    FinishReason(String openAiName) {
        this.openAiName = openAiName;
    }

    /** The value of {@code finish_reason} in an OpenAI response: "stop" or "length". */
    public String openAiName() {
        return openAiName;
    }
}
