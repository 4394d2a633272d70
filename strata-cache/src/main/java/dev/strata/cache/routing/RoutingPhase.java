package dev.strata.cache.routing;

/** What kind of forward pass a step was, as recorded; {@code UNKNOWN} when the recorder did not say. Any thread. */
public enum RoutingPhase {
    UNKNOWN(0), PREFILL(1), DECODE(2);

    private final int code; // the u8 stored in a step record

    RoutingPhase(int code) {
        this.code = code;
    }

    /** The code stored in a binary step record. */
    public int code() {
        return code;
    }

    /** The phase stored as {@code code}, or null when no phase has that code. */
    public static RoutingPhase ofCode(int code) {
        for (RoutingPhase p : values()) {
            if (p.code == code) {
                return p;
            }
        }
        return null;
    }
}
