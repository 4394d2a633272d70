package dev.strata.engine.serve;

/** Why a generation ended; {@link #wireName()} is the OpenAI {@code finish_reason}. */
public enum FinishReason {
    /** The model produced its end-of-sequence token or the text reached a stop string. */
    STOP("stop"),
    /** {@code max_tokens} were generated. */
    LENGTH("length"),
    /** The handle was cancelled (for example the client disconnected). */
    CANCELLED("cancelled");

    private final String wireName;

    FinishReason(String wireName) {
        this.wireName = wireName;
    }

    public String wireName() {
        return wireName;
    }
}
