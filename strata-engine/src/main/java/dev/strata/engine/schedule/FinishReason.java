package dev.strata.engine.schedule;

/** Why a request ended. */
public enum FinishReason {
    /** It produced its maximum of new tokens. */
    LENGTH,
    /** It produced one of the scheduler's stop tokens (which was passed to the sink). */
    STOP,
    /** It was cancelled. */
    CANCELLED,
    /** Its prompt plus maximum new tokens can never fit the KV cache, so it was not run. */
    TOO_LONG
}
